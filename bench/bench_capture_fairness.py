"""Fair capture: project B's one-event ``/batch/`` while project A keeps posting 150,000-event batches.

    python bench/bench_capture_fairness.py [--big 150000] [--senders 2] [--rounds 3] [--probes 40] [--slices 5000]

Runs ``hoglab serve`` in a subprocess on a fresh data directory holding two projects, once per ``--slices`` value
(``HOGLAB_CAPTURE_SLICE_EVENTS``, the writer's slice of a big request; e.g. ``--slices 2000,5000``, or a huge
value to see one request written whole, as before the slices). Project B first times
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
import uuid
from pathlib import Path

import httpx
import orjson
from bench_fairness import percentile  # (this script runs from bench/)


class Served:
    """``hoglab serve`` on ``data_dir`` in a subprocess; ``url`` once it answers."""

    def __init__(self, data_dir: Path, slice_events: int, *args: str) -> None:
        script = Path(sys.executable).with_name("hoglab")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "hoglab.cli"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "HOGLAB_RATE_LIMITS": "off",
               "HOGLAB_CAPTURE_SLICE_EVENTS": str(slice_events)}  # fmt: skip
        argv = [*command, "serve", "--port", "0", "--data-dir", str(data_dir), *args]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if " at http://" not in first:
            self.process.kill()
            raise RuntimeError(f"hoglab serve did not start: {first!r}")
        self.url = first.split(" at ")[1].split()[0]
        deadline = time.monotonic() + 120
        while True:  # the line comes before the socket listens
            try:
                httpx.get(f"{self.url}/api/projects/", timeout=5)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    self.process.kill()
                    raise
                time.sleep(0.1)

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
    # As posthog-python sends them: each with its uuid (looked up by the writer's dedup) and a $set.
    events = [{"event": "view" if i % 3 else "signup", "distinct_id": f"a{(seed * 7919 + i) % 20000}",
               "uuid": str(uuid.uuid4()),
               "properties": {"$set": {"plan": "pro" if i % 2 else "free"}}}
              for i in range(size)]  # fmt: skip
    return gzip.compress(orjson.dumps({"api_key": token, "batch": events}), compresslevel=1)


def _count(http: httpx.Client, project: int, event: str) -> int:
    body = {"query": {"kind": "HogQLQuery", "query": f"select count() from events where event {event}"},
            "refresh": "force_blocking"}  # fmt: skip
    answer = http.post(f"/api/projects/{project}/query/", json=body)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["results"][0][0])


def run(args: argparse.Namespace, slice_events: int) -> tuple[list[float], list[float], float]:
    """One service: B's probes alone and while A sends; the seconds A took to have everything stored."""
    from hoglab.server.store import Store

    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-capture-fairness-"))
    with Store.open_at(data_dir) as store:
        a, b = store.projects.create("A"), store.projects.create("B")
        _, key = store.keys.create(store.users.default().id, ["*"], None, label="bench")
    bodies = [_big_body(a.api_token, args.big, s) for s in range(args.senders * args.rounds)]
    served = Served(data_dir, slice_events)
    try:
        with httpx.Client(base_url=served.url, timeout=600) as http:
            for n in range(3):  # warm-up: the writer thread, person caches, dedup
                _probe(http, b.api_token, -1 - n)
            alone = []
            for n in range(args.probes):
                alone.append(_probe(http, b.api_token, n))
                time.sleep(0.05)

            stored_a: list[float] = []
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
            time.sleep(1.0)  # A's first batches are being read and written
            loaded = []
            n = args.probes
            while any(t.is_alive() for t in senders):
                loaded.append(_probe(http, b.api_token, n))
                n += 1
                time.sleep(0.2)
            for t in senders:
                t.join()
            with httpx.Client(base_url=served.url, timeout=600, headers={"Authorization": f"Bearer {key}"}) as keyed:
                assert _count(keyed, a.id, "!= 'probe'") == args.big * args.senders * args.rounds
                assert _count(keyed, b.id, "= 'probe'") == n + 3
    finally:
        served.stop()
    return alone, loaded, max(stored_a) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=150_000, help="events in each of A's batches")
    parser.add_argument("--senders", type=int, default=2, help="A's concurrent senders")
    parser.add_argument("--rounds", type=int, default=3, help="big batches per sender")
    parser.add_argument("--probes", type=int, default=40, help="B's unloaded probes")
    parser.add_argument("--slices", default="5000", help="writer slice sizes to run, comma-separated")
    args = parser.parse_args()
    total = args.big * args.senders * args.rounds
    print(f"project A: {args.senders} senders x {args.rounds} batches of {args.big:,} events; "
          f"project B: one-event /batch/ probes")  # fmt: skip
    print(f"{'slice':>10} {'B':<15}{'p50':>10}{'p95':>10}{'max':>10}{'n':>6}   loaded / unloaded p50   A events/s")
    for slice_events in (int(v) for v in args.slices.split(",")):
        alone, loaded, seconds = run(args, slice_events)
        base = statistics.median(alone)
        for label, values in (("alone", alone), ("while A sends", loaded)):
            ratios = "" if values is alone else (
                f"   p50 {statistics.median(values) / base:.1f}x, p95 {percentile(values, 0.95) / base:.1f}x, "
                f"max {max(values) / base:.1f}x   {total / seconds:,.0f}")  # fmt: skip
            p50, p95 = statistics.median(values) * 1000, percentile(values, 0.95) * 1000
            print(f"{slice_events:>10} {label:<15}{p50:>8.1f}ms{p95:>8.1f}ms{max(values) * 1000:>8.1f}ms"
                  f"{len(values):>6}{ratios}")  # fmt: skip


if __name__ == "__main__":
    main()
