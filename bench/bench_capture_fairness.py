"""Fair capture: project B's one-event ``/batch/`` while project A keeps posting 150,000-event batches.

    python bench/bench_capture_fairness.py [--big 150000] [--senders 2] [--probes 40] [--rounds 3]

Runs ``hoglab serve`` in a subprocess on a fresh data directory holding two projects. Project B first times
``--probes`` one-event ``/batch/`` requests alone (its unloaded latency, one every 50 ms); then ``--senders``
threads of project A post ``--big``-event batches back to back (each body built once, before the clock starts,
so the bench spends no CPU on them) while B times its probes again, one every 200 ms, until A has stored
``--rounds`` batches per sender. Prints B's p50 / p95 / max alone and under load, the ratio of each to B's unloaded
p50, and A's throughput (events stored per second while loaded).

Every answer is checked (200 and ``kept`` = events sent), and afterwards the stored counts are read through HogQL:
A holds every big batch and B every probe.
"""

from __future__ import annotations

import argparse
import gzip
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Served:
    """``hoglab serve`` on ``data_dir`` in a subprocess; ``url`` once it answers."""

    def __init__(self, data_dir: Path) -> None:
        script = Path(sys.executable).with_name("hoglab")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "hoglab.cli"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "HOGLAB_RATE_LIMITS": "off"}
        argv = [*command, "serve", "--port", "0", "--data-dir", str(data_dir)]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if " at http://" not in first:
            self.process.kill()
            raise RuntimeError(f"hoglab serve did not start: {first!r}")
        self.url = first.split(" at ")[1].split()[0]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(120)


def _probe(http: httpx.Client, token: str, n: int) -> float:
    body = {"api_key": token, "batch": [{"event": "probe", "distinct_id": f"b-{n}", "properties": {"n": n}}]}
    start = time.perf_counter()
    answer = http.post("/batch/", json=body)
    elapsed = time.perf_counter() - start
    assert answer.status_code == 200 and answer.json().get("kept", 1) == 1, answer.text
    return elapsed


def _big_body(token: str, size: int, seed: int) -> bytes:
    events = [{"event": "$pageview" if i % 3 else "signup", "distinct_id": f"a-{(seed * 7919 + i) % 20000}",
               "properties": {"$current_url": f"/p/{i % 50}", "$set": {"plan": "pro" if i % 2 else "free"}}}
              for i in range(size)]  # fmt: skip
    return gzip.compress(orjson.dumps({"api_key": token, "batch": events}), compresslevel=1)


def _count(http: httpx.Client, project: int, event: str) -> int:
    body = {"query": {"kind": "HogQLQuery", "query": f"select count() from events where event {event}"},
            "refresh": "force_blocking"}  # fmt: skip
    answer = http.post(f"/api/projects/{project}/query/", json=body)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["results"][0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=150_000, help="events in each of A's batches")
    parser.add_argument("--senders", type=int, default=2, help="A's concurrent senders")
    parser.add_argument("--rounds", type=int, default=3, help="big batches per sender")
    parser.add_argument("--probes", type=int, default=40, help="B's unloaded probes")
    args = parser.parse_args()

    from hoglab.server.store import Store

    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-capture-fairness-"))
    with Store.open_at(data_dir) as store:
        a, b = store.projects.create("A"), store.projects.create("B")
        _, key = store.keys.create(store.users.default().id, ["*"], None, label="bench")
    bodies = [_big_body(a.api_token, args.big, s) for s in range(args.senders * args.rounds)]
    served = Served(data_dir)
    try:
        with httpx.Client(base_url=served.url, timeout=600) as http:
            for n in range(3):  # warm-up: the writer thread, person caches, dedup
                _probe(http, b.api_token, -1 - n)
            alone = []
            for n in range(args.probes):
                alone.append(_probe(http, b.api_token, n))
                time.sleep(0.05)

            stored_a: list[float] = []
            done = threading.Event()
            lock = threading.Lock()

            def send(sender: int) -> None:
                with httpx.Client(base_url=served.url, timeout=600) as mine:
                    for r in range(args.rounds):
                        headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
                        answer = mine.post("/batch/", content=bodies[sender * args.rounds + r], headers=headers)
                        kept = answer.json().get("kept", args.big) if answer.status_code == 200 else None
                        assert kept == args.big, answer.text[:300]
                        with lock:
                            stored_a.append(time.perf_counter())

            senders = [threading.Thread(target=send, args=(s,)) for s in range(args.senders)]
            start = time.perf_counter()
            for t in senders:
                t.start()

            def wait_all() -> None:
                for t in senders:
                    t.join()
                done.set()

            threading.Thread(target=wait_all).start()
            time.sleep(1.0)  # A's first batches are being read and written
            loaded = []
            n = args.probes
            while not done.is_set():
                loaded.append(_probe(http, b.api_token, n))
                n += 1
                time.sleep(0.2)
            seconds = max(stored_a) - start
            key_http = httpx.Client(base_url=served.url, timeout=600, headers={"Authorization": f"Bearer {key}"})
            assert _count(key_http, a.id, "!= 'probe'") == args.big * args.senders * args.rounds
            assert _count(key_http, b.id, "= 'probe'") == n + 3
            key_http.close()
    finally:
        served.stop()

    base = statistics.median(alone)
    print(f"project A: {args.senders} senders x {args.rounds} batches of {args.big:,} events; "
          f"project B: one-event /batch/ probes")  # fmt: skip
    print(f"{'B':<22}{'p50':>10}{'p95':>10}{'max':>10}{'n':>6}")
    for label, values in (("alone", alone), ("while A sends", loaded)):
        print(f"{label:<22}{statistics.median(values) * 1000:>8.1f}ms{_percentile(values, 0.95) * 1000:>8.1f}ms"
              f"{max(values) * 1000:>8.1f}ms{len(values):>6}")  # fmt: skip
    print(f"ratio loaded / unloaded p50: p50 {statistics.median(loaded) / base:.1f}x, "
          f"p95 {_percentile(loaded, 0.95) / base:.1f}x, max {max(loaded) / base:.1f}x")
    total = args.big * args.senders * args.rounds
    print(f"A: {total:,} events stored in {seconds:.1f} s ({total / seconds:,.0f} events/s)")


if __name__ == "__main__":
    main()
