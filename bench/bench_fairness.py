"""Fair use of the engine: project B's latency for small queries while project A runs 8 heavy queries at once.

    python bench/bench_fairness.py [--small 40] [--heavy 8]

Runs the real service (uvicorn in this process, a fresh data directory) twice, each time in a subprocess of its
own (chDB allows one data directory per process): once with ``HOGLAB_FAIR_SHARE=off`` (before: one shared pool
of 8 read sessions, first come first served) and once with the fair share on (after: a project and a key hold
at most 4 sessions). In each run, project B first times ``--small`` blocking ``select 1`` queries alone (its
idle latency), then again while project A keeps ``--heavy`` heavy queries running (each thread starts another
as soon as one ends). Prints B's p50/p99 in both runs and the ratio before / after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import httpx

HEAVY = "select count() from numbers(10000000) where sipHash64(number + {i}) % 7 = 3"
SMALL = "select 1"


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``, the nearest rank (no interpolation). Also used by the other fairness
    benches and bench_arrow.py."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def two_projects(service: Any) -> tuple[int, int, list[dict[str, str]]]:
    """Projects A (the heavy one) and B (the bystander) on ``service``, each with a key of its own: ``(a, b,
    [A's auth headers, B's])``."""
    store = service.state.store
    user = store.users.default()
    projects = [store.projects.create(name) for name in ("A", "B")]
    keys = [store.keys.create(user.id, ["*"], [p.id])[1] for p in projects]
    a, b = (p.id for p in projects)
    return a, b, [{"Authorization": f"Bearer {k}"} for k in keys]


def _time_small(http: httpx.Client, project: int, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        answer = http.post(f"/api/projects/{project}/query/",
                           json={"query": {"kind": "HogQLQuery", "query": SMALL}, "refresh": "force_blocking"})
        times.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
    return times


def run_once(small: int, heavy: int) -> dict[str, Any]:
    """One service, one mode (from the environment): B alone, then B while A saturates."""
    from hoglab.local import start_local_service

    data_dir = tempfile.mkdtemp(prefix="hoglab-fairness-")
    overrides = {"rate_limits_enabled": False, "max_execution_time": 600}
    with start_local_service(data_dir, config_overrides=overrides) as service:
        a, b, headers = two_projects(service)
        clients = [httpx.Client(base_url=service.url, headers=h, timeout=900) for h in headers]
        _time_small(clients[1], b, 3)  # warm-up: compile, sessions
        idle = _time_small(clients[1], b, small)
        stop = threading.Event()
        heavy_times: list[float] = []

        def keep_busy(i: int) -> None:
            with httpx.Client(base_url=service.url, headers=headers[0], timeout=900) as h:
                n = 0
                while not stop.is_set():
                    start = time.perf_counter()
                    body = {"query": {"kind": "HogQLQuery", "query": HEAVY.format(i=i * 1000 + n)},
                            "refresh": "force_blocking"}  # fmt: skip
                    h.post(f"/api/projects/{a}/query/", json=body)
                    heavy_times.append(time.perf_counter() - start)
                    n += 1

        threads = [threading.Thread(target=keep_busy, args=(i,)) for i in range(heavy)]
        for t in threads:
            t.start()
        time.sleep(3)  # let A fill what it can take
        loaded = _time_small(clients[1], b, small)
        stop.set()
        for t in threads:
            t.join()
        for c in clients:
            c.close()
    return {"idle": idle, "loaded": loaded, "heavy": heavy_times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--heavy", type=int, default=8)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(args.small, args.heavy)))
        return
    results = {}
    for mode in ("off", "on"):
        env = {**os.environ, "HOGLAB_FAIR_SHARE": mode}
        argv = [sys.executable, __file__, "--child", "--small", str(args.small), "--heavy", str(args.heavy)]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"project B: {args.small} blocking `{SMALL}`; project A: {args.heavy} heavy queries kept running")
    print(f"{'fair share':<12}{'B alone p50':>14}{'B alone p99':>14}{'B loaded p50':>15}{'B loaded p99':>15}"
          f"{'A heavy p50':>14}")  # fmt: skip
    for mode, r in results.items():
        print(f"{mode:<12}{statistics.median(r['idle']) * 1000:>12.1f}ms{percentile(r['idle'], 0.99) * 1000:>12.1f}ms"
              f"{statistics.median(r['loaded']) * 1000:>13.1f}ms{percentile(r['loaded'], 0.99) * 1000:>13.1f}ms"
              f"{statistics.median(r['heavy']):>13.1f}s")  # fmt: skip
    off, on = results["off"]["loaded"], results["on"]["loaded"]
    print(f"ratio before/after, B loaded: p50 {statistics.median(off) / statistics.median(on):.1f}x, "
          f"p99 {percentile(off, 0.99) / percentile(on, 0.99):.1f}x")


if __name__ == "__main__":
    main()
