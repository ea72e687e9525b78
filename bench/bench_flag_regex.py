"""Flag regexes: a planted ``^(a+)+$`` against ``"a" * n + "!"``, matched by Python's ``re`` (before) and by RE2
(after, ``server/filters/patterns.py``), through the real ``/flags`` endpoint, and what it does to another project.

    python bench/bench_flag_regex.py [--sizes 16,18,20,22,24] [--bystander 30] [--flood 4] [--flood-size 22]

Runs the real service (uvicorn in this process, a fresh data directory) twice, each time in a subprocess of its
own (chDB allows one data directory per process): with the matcher as before (``re.search`` with the old length
caps, put back in place of ``patterns.search`` for that run) and as it is. In each run project A has a flag whose
condition is ``name regex ^(a+)+$`` and project B a flag for everyone; it times

* ``POST /flags/`` of A with ``person_properties.name = "a" * n + "!"`` for each ``--sizes`` n (median of 3),
  against the baseline of the same request for a flag whose condition is ``name exact x`` (same run);
* B's ``POST /flags/`` alone, then while ``--flood`` threads of A keep asking with n = ``--flood-size``.

Prints A's latency by n (and the ratio to the baseline), B's p50/p99 alone and under A's flood, per run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import httpx

REDOS = "^(a+)+$"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _old_search(pattern: Any, subject: Any) -> bool | None:
    """The matcher before RE2: Python's re, with its length caps (flags/properties.py until this change)."""
    from hoglab.server.filters.patterns import text_of

    text, value = text_of(pattern), text_of(subject)
    if len(text) > 1_000 or len(value) > 10_000:
        return None
    try:
        return re.search(text, value) is not None
    except (re.error, RecursionError):
        return None


def _ask(http: httpx.Client, token: str, name: str) -> float:
    start = time.perf_counter()
    answer = http.post("/flags/?v=2", json={"api_key": token, "distinct_id": "u", "person_properties": {"name": name}})
    elapsed = time.perf_counter() - start
    assert answer.status_code == 200, answer.text
    return elapsed


def run_once(engine: str, sizes: list[int], bystander: int, flood: int, flood_size: int) -> dict[str, Any]:
    from hoglab.local import start_local_service
    from hoglab.server.flags import properties

    if engine == "re":
        properties.search = _old_search  # type: ignore[assignment]
    data_dir = tempfile.mkdtemp(prefix="hoglab-flag-regex-")
    with start_local_service(data_dir, config_overrides={"rate_limits_enabled": False}) as service:
        store = service.state.store
        a, b, plain = (store.projects.create(name) for name in ("A", "B", "plain"))
        for project, operator, value in ((a, "regex", REDOS), (plain, "exact", "x")):
            condition = {"key": "name", "operator": operator, "value": value, "type": "person"}
            groups = [{"properties": [condition], "rollout_percentage": 100}]
            store.flags.create(project.id, "f", filters={"groups": groups})
        store.flags.create(b.id, "everyone", filters={"groups": [{"properties": [], "rollout_percentage": 100}]})
        http = httpx.Client(base_url=service.url, timeout=900)
        for _ in range(3):  # warm-up
            _ask(http, plain.api_token, "x")
            _ask(http, b.api_token, "x")
        by_size = {}
        for n in sizes:
            name = "a" * n + "!"
            redos = statistics.median(_ask(http, a.api_token, name) for _ in range(3))
            baseline = statistics.median(_ask(http, plain.api_token, name) for _ in range(3))
            by_size[n] = {"redos": redos, "baseline": baseline}
        idle = [_ask(http, b.api_token, "x") for _ in range(bystander)]
        stop = threading.Event()
        flood_times: list[float] = []

        def keep_asking() -> None:
            with httpx.Client(base_url=service.url, timeout=900) as own:
                while not stop.is_set():
                    flood_times.append(_ask(own, a.api_token, "a" * flood_size + "!"))

        threads = [threading.Thread(target=keep_asking) for _ in range(flood)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        loaded = [_ask(http, b.api_token, "x") for _ in range(bystander)]
        stop.set()
        for thread in threads:
            thread.join()
        http.close()
    return {"by_size": by_size, "idle": idle, "loaded": loaded, "flood": flood_times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,18,20,22,24")
    parser.add_argument("--bystander", type=int, default=30)
    parser.add_argument("--flood", type=int, default=4)
    parser.add_argument("--flood-size", type=int, default=22)
    parser.add_argument("--child", choices=("re", "re2"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    if args.child:
        print(json.dumps(run_once(args.child, sizes, args.bystander, args.flood, args.flood_size)))
        return
    results = {}
    for engine in ("re", "re2"):
        argv = [sys.executable, __file__, "--child", engine, "--sizes", args.sizes, "--bystander",
                str(args.bystander), "--flood", str(args.flood), "--flood-size", str(args.flood_size)]  # fmt: skip
        out = subprocess.run(argv, env=dict(os.environ), capture_output=True, text=True, check=True)
        results[engine] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"A: POST /flags/ with name regex {REDOS} against 'a' * n + '!' (median of 3; baseline: an exact condition)")
    print(f"{'n':>4}" + "".join(f"{e + ' ms':>12}{e + ' / base':>12}" for e in results))
    for n in sizes:
        row = f"{n:>4}"
        for r in results.values():
            cell = r["by_size"][str(n)]
            row += f"{cell['redos'] * 1000:>12.1f}{cell['redos'] / cell['baseline']:>12.1f}"
        print(row)
    print(f"B: POST /flags/ alone and while {args.flood} threads of A ask with n = {args.flood_size}")
    print(f"{'engine':<8}{'alone p50':>12}{'alone p99':>12}{'loaded p50':>12}{'loaded p99':>12}{'A p50':>12}")
    for engine, r in results.items():
        print(f"{engine:<8}{statistics.median(r['idle']) * 1000:>10.1f}ms{_percentile(r['idle'], 0.99) * 1000:>10.1f}ms"
              f"{statistics.median(r['loaded']) * 1000:>10.1f}ms{_percentile(r['loaded'], 0.99) * 1000:>10.1f}ms"
              f"{statistics.median(r['flood']) * 1000:>10.1f}ms")  # fmt: skip


if __name__ == "__main__":
    main()
