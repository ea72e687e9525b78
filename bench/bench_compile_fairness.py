"""Compile time as an attack: project B's ``select 1`` while project A keeps 4 requests of HogQL with 1,000
subqueries compiling (~66 KB of text, ~1.1 MB of SQL once compiled).

    python bench/bench_compile_fairness.py [--small 40] [--attackers 4]

Runs the real service (uvicorn in this process, a fresh data directory) twice, each in a subprocess of its own
(chDB allows one data directory per process): once as before issue 23 (``HOGLAB_FAIR_SHARE=off`` and a compile
budget too large to matter: every statement compiles to the end, four at once) and once with the defaults (a
project compiles one statement at a time, each within 3 s of CPU and 262,144 bytes of SQL: ``hogql/budget.py``,
``query/fairness.py``). In each run B times ``--small`` blocking ``select 1`` alone, then again while A's
attackers keep sending the statement (each starts another as soon as one is answered). Prints B's p50/p99, the
time A waits for its 400, and the ratio before / after for B under load.
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
from bench_fairness import percentile, two_projects  # (this script runs from bench/)


def attack_text(nonce: int) -> str:
    """A new statement each time (an attacker would not let the compiled-statement cache answer for it)."""
    return "select " + " + ".join(
        f"(select count() from events where person.properties.p = 'e{i}-{nonce}')" for i in range(1000)
    )


SMALL = "select 1"


def _post(http: httpx.Client, project: int, sql: str) -> httpx.Response:
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}
    return http.post(f"/api/projects/{project}/query/", json=body)


def _time_small(http: httpx.Client, project: int, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        answer = _post(http, project, SMALL)
        times.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
        time.sleep(0.05)
    return times


def run_once(small: int, attackers: int) -> dict[str, Any]:
    """One service, one mode (from the environment): B alone, then B while A's attackers compile."""
    from hoglab.local import start_local_service

    data_dir = tempfile.mkdtemp(prefix="hoglab-compile-")
    with start_local_service(data_dir, config_overrides={"rate_limits_enabled": False}) as service:
        a, b, headers = two_projects(service)
        with httpx.Client(base_url=service.url, headers=headers[1], timeout=900) as bystander:
            _time_small(bystander, b, 3)  # warm-up: compile, sessions
            idle = _time_small(bystander, b, small)
            stop = threading.Event()
            attacks: list[tuple[float, int, str]] = []

            nonces = iter(range(10**9))

            def attack() -> None:
                with httpx.Client(base_url=service.url, headers=headers[0], timeout=900) as http:
                    while not stop.is_set():
                        text = attack_text(next(nonces))
                        start = time.perf_counter()
                        answer = _post(http, a, text)
                        attacks.append((time.perf_counter() - start, answer.status_code, answer.text[:120]))

            threads = [threading.Thread(target=attack) for _ in range(attackers)]
            for t in threads:
                t.start()
            time.sleep(2)  # the compiles are under way
            loaded = _time_small(bystander, b, small)
            stop.set()
            for t in threads:
                t.join()
    return {"idle": idle, "loaded": loaded, "attacks": attacks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(args.small, args.attackers)))
        return
    unlimited = {"HOGLAB_MAX_COMPILE_SECONDS": "100000", "HOGLAB_MAX_COMPILED_SQL_BYTES": "1GiB"}
    modes: dict[str, dict[str, str]] = {"before": {"HOGLAB_FAIR_SHARE": "off", **unlimited}, "after": {}}
    results = {}
    for mode, extra in modes.items():
        env = {**os.environ, **extra}
        argv = [sys.executable, __file__, "--child", "--small", str(args.small), "--attackers", str(args.attackers)]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"project B: {args.small} blocking `{SMALL}`; project A: {args.attackers} requests of 1,000 subqueries "
          f"({len(attack_text(0)):,} characters, a new one each time) kept compiling")  # fmt: skip
    print(f"{'mode':<8}{'B alone p50':>13}{'B alone p99':>13}{'B loaded p50':>14}{'B loaded p99':>14}"
          f"{'A answered p50':>16}  A's answer")  # fmt: skip
    for mode, r in results.items():
        seconds = [t for t, _, _ in r["attacks"]]
        status, text = r["attacks"][0][1], r["attacks"][0][2]
        print(f"{mode:<8}{statistics.median(r['idle']) * 1000:>11.1f}ms{percentile(r['idle'], 0.99) * 1000:>11.1f}ms"
              f"{statistics.median(r['loaded']) * 1000:>12.1f}ms{percentile(r['loaded'], 0.99) * 1000:>12.1f}ms"
              f"{statistics.median(seconds):>15.1f}s  {status} {text[:70]}")  # fmt: skip
    before, after = results["before"]["loaded"], results["after"]["loaded"]
    print(
        f"ratio before/after, B loaded: p50 {statistics.median(before) / statistics.median(after):.1f}x, "
        f"p99 {percentile(before, 0.99) / percentile(after, 0.99):.1f}x"
    )


if __name__ == "__main__":
    main()
