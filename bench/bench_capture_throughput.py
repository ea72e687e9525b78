"""Capture throughput of normal batches, this tree against another (issue 35: "unchanged within 5%").

    python bench/bench_capture_throughput.py --baseline /path/to/other/checkout [--batches 60] [--size 500]

Each round starts ``hoglab serve`` from each tree in turn (``PYTHONPATH`` = its ``src``) on a fresh data dir with
one project, then posts ``--batches`` batches of ``--size`` events to ``/batch/`` with the project's token, one after
the other, as an SDK flushes: events as posthog-python sends them (a uuid each, a ``$set`` on some, a few
properties). It prints events/s by the wall clock and the serving process's CPU seconds per 1,000 events (from
``/proc``, steadier than the wall clock on a shared machine), the median of ``--repeat`` rounds, and the ratio
this tree / the baseline (below 1: this tree spends less). Run it from the repository root.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# Made by the tree under test itself: the store's schema is that tree's.
_PROJECT = """
import sys
from hoglab.server.store import Store
with Store.open_at(sys.argv[1]) as store:
    store.users.default()
    print(store.projects.create("capture").api_token)
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def _batch(n: int, size: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for i in range(size):
        properties: dict[str, object] = {"$browser": "Chrome" if i % 3 else "Safari", "path": f"/p/{i % 40}"}
        if i % 7 == 0:
            properties["$set"] = {"plan": "pro" if i % 2 else "free"}
        events.append({"event": "$pageview" if i % 4 else "signup", "distinct_id": f"u{(n * size + i) % 5000}",
                       "uuid": str(uuid.uuid4()), "properties": properties})  # fmt: skip
    return events


def run_once(src: Path, batches: int, size: int) -> tuple[float, float]:
    """(events/s, CPU seconds per 1,000 events) of one ``hoglab serve`` from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONUNBUFFERED": "1", "HOGLAB_RATE_LIMITS": "off"}
    with tempfile.TemporaryDirectory(prefix="hoglab-capture-") as tmp:
        data = Path(tmp) / "data"
        token = subprocess.run([sys.executable, "-c", _PROJECT, str(data)], env=env, check=True,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
        process = subprocess.Popen([sys.executable, "-m", "hoglab.cli", "serve", "--port", "0", "--data-dir",
                                    str(data)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                   env=env)  # fmt: skip
        try:
            assert process.stdout is not None
            url = process.stdout.readline().split(" at ")[1].split()[0]
            with httpx.Client(base_url=url, timeout=120) as http:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        http.get("/api/projects/")
                        break
                    except httpx.TransportError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
                bodies = [{"api_key": token, "batch": _batch(n, size)} for n in range(batches)]
                http.post("/batch/", json=bodies[0])  # warm: first-request imports are not capture's cost
                cpu, start = _cpu_seconds(process.pid), time.perf_counter()
                for body in bodies[1:]:
                    answer = http.post("/batch/", json=body)
                    assert answer.status_code == 200, answer.text
                elapsed, spent = time.perf_counter() - start, _cpu_seconds(process.pid) - cpu
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(120)
    events = (batches - 1) * size
    return events / elapsed, spent / events * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout (its src/ is served)")
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trees = {"this tree": ROOT / "src", "baseline": args.baseline.resolve() / "src"}
    rates: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.repeat):  # alternating, so both see the same machine
        for name, src in trees.items():
            rate, cpu = run_once(src, args.batches, args.size)
            rates[name].append(rate)
            cpus[name].append(cpu)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{(args.batches - 1) * args.size:,} events in batches of {args.size}, median of {args.repeat} (load {load})")
    for name in trees:
        print(f"  {name:10} {statistics.median(rates[name]):>10,.0f} events/s   "
              f"{statistics.median(cpus[name]):.3f} CPU s per 1,000 events")  # fmt: skip
    rate = statistics.median(rates["this tree"]) / statistics.median(rates["baseline"])
    cpu = statistics.median(cpus["this tree"]) / statistics.median(cpus["baseline"])
    print(f"  ratio this tree / baseline: events/s x{rate:.3f}, CPU per event x{cpu:.3f}")


if __name__ == "__main__":
    main()
