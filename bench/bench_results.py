"""``GET /experiments/:id/results/`` on the default demo, against the same funnel through ``POST /query``.

    python bench/bench_results.py [--repeat 15]

Starts the demo service (``hoglab.local.start_local_service(demo=True)``, ≈220,000 events) in a temporary data
directory and times, alternating, after one warm-up each:

* ``results?refresh=1``: the demo experiment's funnel metric recomputed (legacy filter read, the funnel broken
  down by ``$feature/new-checkout`` through the funnel runner, the verdict from ``hoglab.stats``);
* the baseline: the same FunnelsQuery (same steps, window, breakdown and dates) through ``POST /query`` with
  ``refresh: true``, so the ratio is what the results layer adds to the query it runs;
* ``secondary_results?id=0&refresh=1`` (a trend and its exposures: two trend queries) and a cached ``results``.

Prints medians and minimums (ms) and the ratios results / query (goal ≤ 1.2).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx

from hoglab.local import start_local_service


def _time(call: Callable[[], httpx.Response]) -> float:
    start = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    limits = {"query_rate_limit": "1000000/hour", "rate_limit_burst": "1000000/minute"}
    with tempfile.TemporaryDirectory(prefix="hoglab-bench-results-") as data_dir:
        service = start_local_service(data_dir, demo=True, config_overrides=limits)
        try:
            http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {service.api_key}"},
                                timeout=120)  # fmt: skip
            base = f"/api/projects/{service.project_id}"
            experiment = http.get(f"{base}/experiments/").json()["results"][0]
            url = f"{base}/experiments/{experiment['id']}"
            filters = experiment["filters"]
            funnel: dict[str, Any] = {
                "kind": "FunnelsQuery",
                "series": [{"kind": "EventsNode", "event": e["id"], "properties": e.get("properties") or []}
                           for e in filters["events"]],
                "dateRange": {"date_from": experiment["start_date"], "date_to": None, "explicitDate": True},
                "breakdownFilter": {"breakdown": "$feature/new-checkout", "breakdown_type": "event",
                                    "breakdown_limit": 10_000},
                "funnelsFilter": {"funnelWindowInterval": filters["funnel_window_interval"],
                                  "funnelWindowIntervalUnit": filters["funnel_window_interval_unit"]},
            }  # fmt: skip
            calls: dict[str, Callable[[], httpx.Response]] = {
                "results (refresh)": lambda: http.get(f"{url}/results/", params={"refresh": "1"}),
                "same funnel via /query": lambda: http.post(f"{base}/query/", json={"query": funnel, "refresh": True}),
                "secondary_results (refresh)": lambda: http.get(
                    f"{url}/secondary_results/", params={"id": 0, "refresh": "1"}
                ),
                "results (cached)": lambda: http.get(f"{url}/results/"),
            }
            times: dict[str, list[float]] = {name: [] for name in calls}
            for call in calls.values():
                _time(call)
            for _ in range(args.repeat):
                for name, call in calls.items():
                    times[name].append(_time(call))
            events = http.post(f"{base}/query/", json={"query": {"kind": "HogQLQuery",
                                                                  "query": "select count() from events"}})  # fmt: skip
            print(f"demo events: {events.json()['results'][0][0]:,}; {args.repeat} runs each, alternating")
            for name, values in times.items():
                print(f"{name:30s} median {statistics.median(values):7.1f} ms   min {min(values):7.1f} ms")
            mine, baseline = times["results (refresh)"], times["same funnel via /query"]
            print(f"ratio results / query: median {statistics.median(mine) / statistics.median(baseline):.2f}, "
                  f"min {min(mine) / min(baseline):.2f}")  # fmt: skip
        finally:
            service.stop()


if __name__ == "__main__":
    main()
