"""The units frame of an experiment (``client.experiments.units``) against its ``ExperimentQuery``, 1M exposed units.

    python bench/bench_units.py [--units 1000000] [--runs 3]

Data, written by SQL in the engine (no Python rows): ``--units`` persons, each exposed once (a
``$feature_flag_called`` with the variant, half control, half test), about two ``purchase`` events per person with
a ``price``, and a ``plan`` person property; a finished experiment over them with one mean metric (the sum of
``price`` of ``purchase`` per person).

Timed, alternating, medians of ``--runs`` after one warm-up:

* the ``ExperimentQuery`` over HTTP (``refresh: "force_blocking"``): the per-variant sums and the statistics;
* ``client.experiments.units(id)``: the same per-unit stage, every row over ``POST /query/arrow/`` and the typed
  frame built in the client (one row per unit: id, variant, first exposure, the metric's value);
* the same with ``properties=["plan"]`` (a join with the persons).

Before timing, the frame's per-variant sums are checked against the ExperimentQuery answer. The process's peak
RSS is printed (the service runs in this process).
"""

from __future__ import annotations

import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from bench_insights import person_uuid, timed  # the same person ids (this script runs from bench/)
from bench_query import bench_arguments, bench_service

from hoglab.client import Client
from hoglab.server.engine.ddl import DATABASE

FLAG = "units-bench"
METRIC = {"kind": "ExperimentMetric", "metric_type": "mean", "name": "Revenue",
          "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}  # fmt: skip
DAY_US = 86_400 * 1_000_000


def generate(engine: Any, team: int, units: int, start: datetime) -> None:
    """Exposures, purchases and persons for ``units`` persons of ``team``, over the experiment's 14 days."""
    start_us = int(start.timestamp() * 1_000_000)
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT {team}, generateUUIDv4(number), '$feature_flag_called', concat('u-', toString(k)), {person_uuid("p")},
               fromUnixTimestamp64Micro(toInt64({start_us} + intHash64(k) % {7 * DAY_US}), 'UTC'),
               concat('{{"$feature_flag":"{FLAG}","$feature_flag_response":"', if(k % 2 = 0, 'control', 'test'),
                      '"}}'), '', now64(6)
        FROM (SELECT number, number AS k FROM numbers({units}))"""
    )
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT {team}, generateUUIDv4(number + {units}), 'purchase', concat('u-', toString(k)), {person_uuid("p")},
               fromUnixTimestamp64Micro(toInt64({start_us} + {7 * DAY_US} + intHash64(number) % {7 * DAY_US}), 'UTC'),
               concat('{{"price":', toString(intHash32(number) % 200 + if(k % 2 = 0, 0, 5)), '}}'), '', now64(6)
        FROM (SELECT number, sipHash64(number) % {units} AS k FROM numbers({2 * units}))"""
    )
    engine.command(
        f"""INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)
        SELECT {team}, {person_uuid("p")}, now64(6), concat('{{"plan":"', ['free', 'pro', 'team'][k % 3 + 1], '"}}'),
               1, 0, 1
        FROM (SELECT number AS k FROM numbers({units}))"""
    )
    engine.command(f"OPTIMIZE TABLE {DATABASE}.events FINAL")


def main() -> None:
    parser = bench_arguments(__doc__, runs=3)
    parser.add_argument("--units", type=int, default=1_000_000)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-bench-units-"))
    service, team, _other, _key = bench_service(data_dir)
    try:
        from hoglab.server.experiments.rules import create_with_flag

        engine, store = service.state.engine, service.state.store
        start = datetime(2026, 3, 2, tzinfo=UTC)
        began = time.perf_counter()
        generate(engine, team, args.units, start)
        print(f"{args.units:,} exposed units ({3 * args.units:,} events) generated in "
              f"{time.perf_counter() - began:.1f} s")  # fmt: skip
        experiment, _ = create_with_flag(store, team, store.users.default().id, {
            "name": "units bench", "feature_flag_key": FLAG, "start_date": start.isoformat(),
            "end_date": (start + timedelta(days=15)).isoformat(), "metrics": [METRIC],
            "stats_config": {"method": "frequentist"}})  # fmt: skip
        _, key = store.keys.create(store.users.default().id, ["*"], [team])
        http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=900)
        client = Client(service.url, key, team, progress=False, timeout=900)
        held: dict[str, Any] = {}
        body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment.id, "metric": METRIC},
                "refresh": "force_blocking"}  # fmt: skip

        def query() -> None:
            response = http.post(f"/api/projects/{team}/query/", json=body)
            response.raise_for_status()
            held["answer"] = response.json()

        def units() -> None:
            held["units"] = client.experiments.units(experiment.id)

        def units_with_plan() -> None:
            held["plan"] = client.experiments.units(experiment.id, properties=["plan"])

        query()
        units()
        units_with_plan()
        arms = {arm["key"]: arm for arm in [held["answer"]["baseline"], *held["answer"]["variant_results"]]}
        for variant, g in held["units"].groupby("variant"):
            assert len(g) == arms[variant]["number_of_samples"], variant
            assert abs(g["Revenue"].sum() - arms[variant]["sum"]) <= 1e-9 * arms[variant]["sum"], variant
        assert len(held["units"]) == args.units and held["plan"]["plan"].notna().all()
        times: dict[str, list[float]] = {"query": [], "units": [], "plan": []}
        for _ in range(args.runs):
            times["query"].append(timed(query))
            times["units"].append(timed(units))
            times["plan"].append(timed(units_with_plan))
        q = statistics.median(times["query"])
        print("\n| what | median ms (min-max) | / ExperimentQuery |")
        print("|---|---:|---:|")
        for name, label in (("query", "ExperimentQuery (sums + statistics)"),
                            ("units", "units frame (1 metric)"), ("plan", "units frame + a person property")):
            m = statistics.median(times[name])
            print(f"| {label} | {m:.0f} ({min(times[name]):.0f}-{max(times[name]):.0f}) | **{m / q:.2f}x** |")
        frame_mb = held["plan"].memory_usage(deep=True).sum() / 2**20
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        print(f"\nframe with the property: {frame_mb:.0f} MiB; peak RSS of the process: {peak:.0f} MiB")
        client.close()
        http.close()
    finally:
        service.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
