"""The Arrow endpoint against ``/query/`` for the same work: a statement whose scalar subquery is the heavy part
(run once on both now; describing it used to run it a second time), and project B's ``select 1`` while project
A sends 10 heavy requests at once through each endpoint.

    python bench/bench_arrow.py [--runs 5] [--small 30] [--flood 10]

One real service (uvicorn in this process, a fresh data directory). The baseline of each figure is the same
work through ``POST /query/`` in the same run, as issue 23 compared them (10.3 s against 5.3 s; B waited 19 s
behind A's Arrow requests and 0.03 s behind the same load through ``/query/``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time

import httpx
from bench_fairness import percentile, two_projects  # (this script runs from bench/)

SCALAR = ("select (select count() from numbers(10000000) where sipHash64(number) % 7 = 3) as c, number "
          "from numbers(3)")  # fmt: skip
HEAVY = "select count() as c from numbers(10000000) where sipHash64(number + {i}) % 7 = 3"
SMALL = "select 1"


def _post(http: httpx.Client, project: int, sql: str, endpoint: str) -> float:
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}
    start = time.perf_counter()
    answer = http.post(f"/api/projects/{project}/query/{endpoint}", json=body)
    assert answer.status_code == 200, answer.text[:300]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", type=int, default=30)
    parser.add_argument("--flood", type=int, default=10)
    args = parser.parse_args()
    from hoglab.local import start_local_service

    data_dir = tempfile.mkdtemp(prefix="hoglab-arrow-")
    with start_local_service(data_dir, config_overrides={"rate_limits_enabled": False}) as service:
        a, b, headers = two_projects(service)
        with httpx.Client(base_url=service.url, headers=headers[0], timeout=900) as http:
            _post(http, a, SCALAR, ""), _post(http, a, SCALAR, "arrow/")  # warm-up
            scalar = {endpoint: [_post(http, a, SCALAR, endpoint) for _ in range(args.runs)]
                      for endpoint in ("", "arrow/")}  # fmt: skip
        flood: dict[str, list[float]] = {}
        with httpx.Client(base_url=service.url, headers=headers[1], timeout=900) as bystander:
            for endpoint in ("", "arrow/"):
                stop = threading.Event()

                def keep_busy(i: int, endpoint: str = endpoint, stop: threading.Event = stop) -> None:
                    with httpx.Client(base_url=service.url, headers=headers[0], timeout=900) as h:
                        n = 0
                        while not stop.is_set():
                            _post(h, a, HEAVY.format(i=i * 1000 + n), endpoint)
                            n += 1

                threads = [threading.Thread(target=keep_busy, args=(i,)) for i in range(args.flood)]
                for t in threads:
                    t.start()
                time.sleep(2)
                times = []
                for _ in range(args.small):
                    times.append(_post(bystander, b, SMALL, ""))
                    time.sleep(0.05)
                flood[endpoint] = times
                stop.set()
                for t in threads:
                    t.join()
    query, arrow = statistics.median(scalar[""]), statistics.median(scalar["arrow/"])
    print(f"scalar-subquery statement, median of {args.runs}: /query/ {query:.2f} s, /query/arrow/ {arrow:.2f} s, "
          f"ratio {arrow / query:.2f}x")  # fmt: skip
    print(f"project B `{SMALL}` while A keeps {args.flood} heavy requests running:")
    for endpoint, label in (("", "/query/"), ("arrow/", "/query/arrow/")):
        times = flood[endpoint]
        print(f"  through {label:<15} p50 {statistics.median(times) * 1000:7.1f} ms, "
              f"p99 {percentile(times, 0.99) * 1000:7.1f} ms")  # fmt: skip
    ratio = percentile(flood["arrow/"], 0.99) / percentile(flood[""], 0.99)
    print(f"  ratio Arrow / query, p99: {ratio:.2f}x")


if __name__ == "__main__":
    main()
