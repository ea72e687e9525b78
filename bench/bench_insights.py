"""Insight runners against hand-written chDB SQL of the same meaning, in the same run.

    python bench/bench_insights.py [--events 10000000] [--repeat 3]

Loads N demo events (``hoglab.demo.generate_events``, repeated with other seeds up to N) into a fresh engine in
a temporary data directory, then times, min of ``--repeat`` runs after one warm-up:

* trend: 90 days of daily unique persons of ``$pageview`` broken down by ``$browser`` (TrendsQuery runner, through
  ``RunContext`` — the query endpoint is not on this branch) against the same query written by hand on the raw
  table (team filter, JSONExtract, the same top-25 ranking);
* funnel: ``$pageview`` → ``$pageview`` on /checkout → ``purchase`` by ``$feature/new-checkout`` (FunnelsQuery
  runner) against the same per-person replay written by hand on the raw table, and, for reference, ClickHouse's
  ``windowFunnel`` (step counts only, no conversion times).

Prints each time and the ratio runner / hand-written (goal ≤ 1.3).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hoglab.demo import generate_events
from hoglab.schema import parse_query
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import load_file
from hoglab.server.runners import RunContext, has_person_overrides, load_runners
from hoglab.server.runners.funnels_sql import fold_expr
from hoglab.server.store.records import ProjectRecord

END = datetime(2026, 1, 1, tzinfo=UTC)
TEAM = 1


def make_file(n: int, path: Path) -> int:
    tables, total, seed = [], 0, 1
    while total < n:
        table = generate_events(seed=seed, end=END, users=max(1000, n // 11))
        tables.append(table)
        total += table.num_rows
        seed += 1
    pq.write_table(pa.concat_tables(tables).slice(0, n), path, compression="zstd")
    return min(total, n)


def timed(fn: Any, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def hand_trend(engine: ChdbEngine, since: datetime, until: datetime) -> Any:
    return engine.execute(f"""
        SELECT bucket, if(rk <= 25, b0, '$$_posthog_breakdown_other_$$') AS bv, sum(v0) AS value FROM (
          SELECT bucket, b0, v0, dense_rank() OVER (ORDER BY total DESC, b0 ASC) AS rk FROM (
            SELECT bucket, b AS b0, v AS v0, sum(v) OVER (PARTITION BY b) AS total FROM (
              SELECT formatDateTime(toDate(timestamp), '%Y-%m-%d') AS bucket,
                     ifNull(nullIf(JSONExtract(properties, '$browser', 'Nullable(String)'), ''),
                            '$$_posthog_breakdown_null_$$') AS b,
                     uniqExact(person_id) AS v
              FROM hoglab.events WHERE team_id = {TEAM} AND event = '$pageview'
                AND timestamp >= toDateTime64('{since:%Y-%m-%d %H:%M:%S}', 6, 'UTC')
                AND timestamp <= toDateTime64('{until:%Y-%m-%d %H:%M:%S.%f}', 6, 'UTC')
              GROUP BY bucket, b)))
        GROUP BY bucket, bv""")


def hand_funnel(engine: ChdbEngine, since: datetime, until: datetime) -> Any:
    window = 14 * 86400 * 1_000_000
    fold = fold_expr(3, window, strict=False, attribution_step=None)
    return engine.execute(f"""
        SELECT pv, countIf(r >= 0) AS s0, countIf(r >= 1) AS s1, countIf(r >= 2) AS s2,
               avgIf((times[2] - times[1]) / 1e6, r >= 1 AND times[2] > times[1]) AS a1,
               avgIf((times[3] - times[2]) / 1e6, r >= 2 AND times[3] > times[2]) AS a2
        FROM (
          SELECT pv, {fold} AS f, if(f.6 = 1, -2, f.4 - 1) AS r, f.7 AS times FROM (
            SELECT person_id, arraySort(e -> (e.1, e.2), groupArray((t0, m0))) AS ev,
                   arrayMap(e -> e.1, ev) AS ts, arrayMap(e -> e.2, ev) AS m,
                   arrayWithConstant(length(ev), toInt64(0)) AS x, arrayWithConstant(length(ev), '') AS b,
                   argMinIf(b0, t0, b0 != '') AS pv
            FROM (
              SELECT person_id, toUnixTimestamp64Micro(timestamp) AS t0,
                     toInt64(if(event = '$pageview', 1, 0) + if(event = '$pageview' AND
                       JSONExtract(properties, '$current_url', 'Nullable(String)') LIKE '%/checkout%', 2, 0)
                       + if(event = 'purchase', 4, 0)) AS m0,
                     ifNull(JSONExtract(properties, '$feature/new-checkout', 'Nullable(String)'), '') AS b0
              FROM hoglab.events WHERE team_id = {TEAM}
                AND timestamp >= toDateTime64('{since:%Y-%m-%d %H:%M:%S}', 6, 'UTC')
                AND timestamp <= toDateTime64('{until:%Y-%m-%d %H:%M:%S.%f}', 6, 'UTC'))
            WHERE m0 != 0 GROUP BY person_id))
        WHERE r >= 0 GROUP BY pv""")


def window_funnel(engine: ChdbEngine, since: datetime, until: datetime) -> Any:
    return engine.execute(f"""
        SELECT pv, countIf(l >= 1), countIf(l >= 2), countIf(l >= 3) FROM (
          SELECT person_id, argMinIf(b0, timestamp, b0 != '') AS pv,
                 windowFunnel(1209600)(toDateTime(timestamp), event = '$pageview',
                   event = '$pageview'
                     AND JSONExtract(properties, '$current_url', 'Nullable(String)') LIKE '%/checkout%',
                   event = 'purchase') AS l
          FROM (SELECT *, ifNull(JSONExtract(properties, '$feature/new-checkout', 'Nullable(String)'), '') AS b0
                FROM hoglab.events WHERE team_id = {TEAM}
                  AND timestamp >= toDateTime64('{since:%Y-%m-%d %H:%M:%S}', 6, 'UTC')
                  AND timestamp <= toDateTime64('{until:%Y-%m-%d %H:%M:%S.%f}', 6, 'UTC'))
          GROUP BY person_id) WHERE l >= 1 GROUP BY pv""")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.parquet"
        started = time.perf_counter()
        n = make_file(args.events, path)
        engine = ChdbEngine(Path(tmp) / "data")
        load_file(engine, TEAM, path)
        print(f"{n:,} events generated and loaded in {time.perf_counter() - started:.1f} s")
        project = ProjectRecord(TEAM, "bench", "bench", "phc_bench", "UTC", END)
        runners = load_runners()
        now = END - timedelta(seconds=1)
        overrides = has_person_overrides(engine, TEAM)

        def run(query: dict[str, Any]) -> Any:
            ctx = RunContext(project=project, engine=engine, now=now, tag="bench", person_overrides=overrides)
            model = parse_query(query)
            return runners[model.kind](model, ctx)

        date_range = {"date_from": "-90d"}
        trend = {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
                 "dateRange": date_range, "breakdownFilter": {"breakdown": "$browser"}}  # fmt: skip
        funnel = {"kind": "FunnelsQuery", "dateRange": date_range,
                  "series": [{"kind": "EventsNode", "event": "$pageview"},
                             {"kind": "EventsNode", "event": "$pageview", "properties": [
                                 {"key": "$current_url", "value": "/checkout", "operator": "icontains", "type": "event"}]},  # noqa: E501
                             {"kind": "EventsNode", "event": "purchase"}],
                  "breakdownFilter": {"breakdown": "$feature/new-checkout"}}  # fmt: skip
        rng = run(trend)["resolved_date_range"]
        since = datetime.fromisoformat(rng["date_from"]).astimezone(UTC)
        until = datetime.fromisoformat(rng["date_to"]).astimezone(UTC)
        print("person overrides:", overrides, "| range", since, "→", until)
        funnel_answer = run(funnel)["results"]
        print(
            "funnel (runner):", [[s["count"] for s in steps] + steps[0]["breakdown_value"] for steps in funnel_answer]
        )
        print("funnel (by hand):", hand_funnel(engine, since, until).to_pylist())
        rows = [
            ("trend: 90-day DAU by $browser", lambda: run(trend), lambda: hand_trend(engine, since, until)),
            ("funnel: 3 steps by variant", lambda: run(funnel), lambda: hand_funnel(engine, since, until)),
        ]
        print(f"{'query':34} {'runner':>9} {'by hand':>9} {'ratio':>6}")
        for name, mine, theirs in rows:
            a, b = timed(mine, args.repeat), timed(theirs, args.repeat)
            print(f"{name:34} {a * 1000:8.0f}ms {b * 1000:8.0f}ms {a / b:6.2f}")
        wf = timed(lambda: window_funnel(engine, since, until), args.repeat)
        print(f"{'reference: windowFunnel counts':34} {wf * 1000:8.0f}ms")
        engine.close()


if __name__ == "__main__":
    main()
