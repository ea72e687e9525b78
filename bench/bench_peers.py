"""hoglab over HTTP against the analyst's alternative: DuckDB in process over a Parquet export of the same events.

    python bench/bench_peers.py [--events 10000000] [--runs 5] [--skip-paged]

Data (generated in the engine, ``INSERT ... SELECT FROM numbers``): N events over 90 days, 90% in the benchmark's
project and 10% in a neighbour; one person per 25 events (``person_id`` a hash of the distinct id, no merges, so
"unique users" means the same on both sides); 55% ``$pageview``, 20% ``$autocapture``, 15% ``signup``, 10%
``purchase``; JSON properties ``$browser`` (4 values), ``plan`` (3 values, missing on a fifth of events),
``price``, ``$current_url``. The project's events are exported once to Parquet (``uuid``, ``event``,
``distinct_id``, ``person_id``, ``timestamp``, ``properties`` as JSON text), which DuckDB reads with
``read_parquet`` in each query, as an analyst's notebook would.

Questions (hoglab: ``POST /query/`` with ``refresh: "force_blocking"``, no result cache; the rows as parsed JSON.
DuckDB: the same question in SQL, ``fetchall()``), answers compared before timing:

* count by event (HogQL);
* daily unique users over the last 30 days (HogQL ``count(distinct person_id)``);
* a JSON property filter + group by: ``$browser = 'Chrome'`` by ``plan`` (HogQL);
* 90-day DAU trend of ``$pageview`` by ``$browser`` (a TrendsQuery);
* 3-step funnel ``$pageview`` → ``signup`` → ``purchase`` within 14 days (a FunnelsQuery; DuckDB computes the
  same exact ordered funnel with ASOF joins: from every first-step event, the earliest later step 2, then the
  earliest step 3 after it, within the window from the first step, best over a person's first-step events);
* then the property filter, the trend and the funnel again once ``$browser`` and ``plan`` are materialized
  columns (``hoglab materialize``), against the same questions on the JSON in the same pass;
* 1,000,000 rows to a DataFrame: ``client.hogql(..., all_rows=True)`` (the Arrow bulk answer) against DuckDB's
  ``.df()``; with the keyset pages (the path against PostHog, and hoglab's before the bulk answer) timed once.

The two sides alternate, medians of ``--runs`` after a warm-up; the ratio is hoglab / DuckDB (below 1: hoglab is
faster). The machine is shared: compare ratios of one run, not times across runs.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import httpx
import orjson

os.environ.setdefault("HOGLAB_AUTO_MATERIALIZE", "0")  # this run materializes by hand, between its two passes

from bench_query import bench_arguments, bench_service

from hoglab.client import Client
from hoglab.server.engine import materialized
from hoglab.server.engine.ddl import DATABASE

START = datetime(2025, 9, 1, tzinfo=UTC)
DAYS = 90
END = START + timedelta(days=DAYS)
LAST30 = START + timedelta(days=DAYS - 30)
ROWS = 1_000_000


def generate(engine: Any, team: int, other: int, events: int) -> None:
    people = max(events // 25, 1)
    start_us = int(START.timestamp() * 1_000_000)
    span_us = DAYS * 86400 * 1_000_000
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT if(number % 10 = 0, {other}, {team}), generateUUIDv4(number), event, concat('user-', toString(k)),
          reinterpretAsUUID(sipHash128(concat('user-', toString(k)))),
          fromUnixTimestamp64Micro(toInt64({start_us} + intHash64(number + 1) % {span_us}), 'UTC'),
          concat('{{"$browser":"', ['Chrome', 'Firefox', 'Safari', 'Edge'][k % 4 + 1], '"',
                 if(h % 5 = 0, '', concat(',"plan":"', ['free', 'pro', 'team'][intHash32(number) % 3 + 1], '"')),
                 ',"price":', toString(h % 100), ',"$current_url":"https://shop.example.com/p/',
                 toString(h % 5000), '"}}'),
          '', now64(6)
        FROM (SELECT number, intHash64(number) AS h, sipHash64(number) % {people} AS k,
                     multiIf(h % 100 < 55, '$pageview', h % 100 < 75, '$autocapture', h % 100 < 90, 'signup',
                             'purchase') AS event
              FROM numbers({events}))"""
    )
    engine.command(f"OPTIMIZE TABLE {DATABASE}.events FINAL")


def export_parquet(engine: Any, team: int, path: Path) -> None:
    engine.command(
        f"""INSERT INTO FUNCTION file('{path}', Parquet)
        SELECT toString(uuid) AS uuid, toString(event) AS event, distinct_id, toString(person_id) AS person_id,
               timestamp, properties
        FROM {DATABASE}.events WHERE team_id = {team} ORDER BY timestamp""",
        settings={"output_format_parquet_compression_method": "zstd", "max_execution_time": 0},
    )


def _day(value: Any) -> str:
    return str(value)[:10]


def questions(parquet: str) -> list[tuple[str, Any, str, Callable[[Any], Any], Callable[[list[Any]], Any]]]:
    """``(name, hoglab query, DuckDB SQL, the hoglab answer as comparable data, DuckDB rows as the same)``."""
    ev = f"read_parquet('{parquet}')"
    since, until, since30 = (d.strftime("%Y-%m-%d %H:%M:%S") for d in (START, END, LAST30))
    browser = """json_extract_string(properties, '$."$browser"')"""
    plan = """json_extract_string(properties, '$."plan"')"""
    rows = lambda a: [list(r) for r in a["results"]]  # noqa: E731
    plain = lambda r: [list(x) for x in r]  # noqa: E731
    trend = {"kind": "TrendsQuery", "dateRange": {"date_from": START.date().isoformat(),
                                                   "date_to": (END.date() - timedelta(days=1)).isoformat()},
             "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
             "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}}  # fmt: skip
    funnel = {"kind": "FunnelsQuery", "dateRange": trend["dateRange"],
              "series": [{"kind": "EventsNode", "event": e} for e in ("$pageview", "signup", "purchase")],
              "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"}}  # fmt: skip

    def trend_cells(answer: dict[str, Any]) -> dict[tuple[str, str], int]:
        cells = {}
        for series in answer["results"]:
            for day, value in zip(series["days"], series["data"], strict=True):
                if value:
                    cells[(str(series["breakdown_value"]), _day(day))] = int(value)
        return cells

    def funnel_counts(answer: dict[str, Any]) -> list[int]:
        return [int(step["count"]) for step in answer["results"]]

    return [
        ("count by event", "select event, count() as c from events group by event order by event",
         f"SELECT event, count(*) AS c FROM {ev} GROUP BY event ORDER BY event", rows, plain),
        ("daily unique users, 30 days",
         f"select toDate(timestamp) as d, count(distinct person_id) as u from events "
         f"where timestamp >= toDateTime('{since30}') and timestamp < toDateTime('{until}') group by d order by d",
         f"SELECT CAST(timestamp AS DATE) AS d, count(DISTINCT person_id) AS u FROM {ev} "
         f"WHERE timestamp >= TIMESTAMPTZ '{since30}+00' AND timestamp < TIMESTAMPTZ '{until}+00' "
         "GROUP BY d ORDER BY d",
         lambda a: [[_day(d), u] for d, u in a["results"]], lambda r: [[_day(d), u] for d, u in r]),
        ("JSON property filter + group by",
         "select properties.plan as plan, count() as c from events where properties.$browser = 'Chrome' "
         "group by plan order by plan",
         f"SELECT {plan} AS plan, count(*) AS c FROM {ev} WHERE {browser} = 'Chrome' GROUP BY plan "
         "ORDER BY plan NULLS LAST", rows, plain),
        ("90-day DAU trend by $browser", trend,
         f"SELECT {browser} AS b, CAST(timestamp AS DATE) AS d, count(DISTINCT person_id) AS u FROM {ev} "
         f"WHERE event = '$pageview' AND timestamp >= TIMESTAMPTZ '{since}+00' AND timestamp < TIMESTAMPTZ "
         f"'{until}+00' GROUP BY b, d",
         trend_cells, lambda r: {(str(b), _day(d)): int(u) for b, d, u in r}),
        ("3-step funnel (exact, 14 days)", funnel,
         f"""WITH e AS (SELECT person_id AS p, timestamp AS t, event FROM {ev}
                        WHERE timestamp >= TIMESTAMPTZ '{since}+00' AND timestamp < TIMESTAMPTZ '{until}+00'),
              s1 AS (SELECT p, t FROM e WHERE event = '$pageview'),
              s2 AS (SELECT p, t FROM e WHERE event = 'signup'),
              s3 AS (SELECT p, t FROM e WHERE event = 'purchase'),
              a AS (SELECT s1.p, s1.t AS t1, s2.t AS t2 FROM s1 ASOF LEFT JOIN s2 ON s1.p = s2.p AND s2.t >= s1.t),
              b AS (SELECT a.p, a.t1, a.t2, s3.t AS t3 FROM a ASOF LEFT JOIN s3 ON a.p = s3.p AND s3.t >= a.t2),
              per AS (SELECT p, max(CASE WHEN t3 IS NOT NULL AND t3 <= t1 + INTERVAL 14 DAY THEN 3
                                         WHEN t2 IS NOT NULL AND t2 <= t1 + INTERVAL 14 DAY THEN 2 ELSE 1 END) AS lvl
                      FROM b GROUP BY p)
         SELECT count(*), count(*) FILTER (WHERE lvl >= 2), count(*) FILTER (WHERE lvl >= 3) FROM per""",
         funnel_counts, lambda r: [int(x) for x in r[0]]),
    ]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def compare(name: str, runs: int, ours: Callable[[], Any], theirs: Callable[[], Any]) -> tuple[float, float]:
    ours()
    theirs()
    a, b = [], []
    for _ in range(runs):
        a.append(timed(ours)[0])
        b.append(timed(theirs)[0])
    h, d = statistics.median(a), statistics.median(b)
    print(f"| {name} | {h:,.0f} ({min(a):,.0f}–{max(a):,.0f}) | {d:,.0f} ({min(b):,.0f}–{max(b):,.0f}) | "
          f"**{h / d:.2f}×** |", flush=True)  # fmt: skip
    return h, d


def main() -> None:
    parser = bench_arguments(__doc__, runs=5)
    parser.add_argument("--skip-paged", action="store_true", help="do not time the 100 keyset pages once")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-bench-peers-"))
    service, team, other, key = bench_service(data_dir)
    try:
        engine = service.state.engine
        started = time.perf_counter()
        generate(engine, team, other, args.events)
        parquet = data_dir / "events.parquet"
        export_parquet(engine, team, parquet)
        mine = engine.execute(f"SELECT count() AS n FROM {DATABASE}.events WHERE team_id = {team}").to_pylist()[0]["n"]
        print(f"{args.events:,} events generated and {mine:,} exported to Parquet "
              f"({parquet.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - started:.0f} s; "
              f"DuckDB {duckdb.__version__}\n", flush=True)  # fmt: skip
        http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=600)
        duck = duckdb.connect()

        def ask(query: Any) -> dict[str, Any]:
            body = {"kind": "HogQLQuery", "query": query} if isinstance(query, str) else query
            response = http.post(f"/api/projects/{team}/query/", json={"query": body, "refresh": "force_blocking"})
            response.raise_for_status()
            answer: dict[str, Any] = orjson.loads(response.content)
            return answer

        print("| question | hoglab ms (min–max) | DuckDB ms (min–max) | hoglab / DuckDB |")
        print("|---|---:|---:|---:|")
        for name, query, sql, ours_as, theirs_as in questions(str(parquet)):
            got, want = ours_as(ask(query)), theirs_as(duck.sql(sql).fetchall())
            if got != want:
                raise SystemExit(f"{name}: the answers differ\nhoglab: {str(got)[:600]}\nDuckDB: {str(want)[:600]}")
            compare(name, args.runs, lambda q=query: ask(q), lambda s=sql: duck.sql(s).fetchall())

        print("\nThe same questions once `$browser` and `plan` are materialized columns (filled in the background "
              "first); JSON = the rows above, re-timed in this pass:\n")
        print("| question | JSON ms | materialized ms | JSON / materialized | materialized / DuckDB |")
        print("|---|---:|---:|---:|---:|")
        hot = [q for q in questions(str(parquet)) if q[0].startswith(("JSON property", "90-day", "3-step"))]
        timings: dict[str, list[float]] = {}
        for name, query, *_ in hot:
            timings[name] = [statistics.median(timed(lambda q=query: ask(q))[0] for _ in range(args.runs))]
        materialized.materialize(engine, ["$browser", "plan"])
        while not all(s.done for s in materialized.fill_status(engine)):
            time.sleep(2)
        for name, query, sql, ours_as, theirs_as in hot:
            answer = ask(query)
            assert ours_as(answer) == theirs_as(duck.sql(sql).fetchall()), name
            fast = statistics.median(timed(lambda q=query: ask(q))[0] for _ in range(args.runs))
            duck_ms = statistics.median(timed(lambda s=sql: duck.sql(s).fetchall())[0] for _ in range(args.runs))
            slow = timings[name][0]
            line = f"| {name} | {slow:,.0f} | {fast:,.0f} | **{slow / fast:.1f}×** | {fast / duck_ms:.2f}× |"
            print(line, flush=True)

        with Client(service.url, key, team, progress=False) as client:
            select = "select uuid, event, distinct_id, timestamp, properties.$browser as browser from events"
            hogql = f"{select} order by timestamp limit {ROWS}"
            duck_sql = (f"SELECT uuid, event, distinct_id, timestamp, {questions_browser()} AS browser "
                        f"FROM read_parquet('{parquet}') ORDER BY timestamp LIMIT {ROWS}")  # fmt: skip
            frame = client.hogql(hogql, all_rows=True)
            theirs = duck.sql(duck_sql).df()
            assert len(frame) == len(theirs) == min(ROWS, mine), (len(frame), len(theirs))
            assert sorted(frame["uuid"].tolist()) == sorted(theirs["uuid"].tolist()), "the rows differ"
            compare(f"{ROWS:,} rows to a DataFrame", args.runs, lambda: client.hogql(hogql, all_rows=True),
                    lambda: duck.sql(duck_sql).df())  # fmt: skip
            if not args.skip_paged:
                client._bulk_rows = False  # as against PostHog: keyset pages of 10,000 rows
                ms, paged = timed(lambda: client.hogql(f"{select} order by timestamp", all_rows=True, limit=ROWS))
                assert len(paged) == len(frame)
                print(f"\nthe same {ROWS:,} rows in keyset pages of 10,000 (PostHog's way): {ms:,.0f} ms once")
        http.close()
        duck.close()
    finally:
        service.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def questions_browser() -> str:
    return """json_extract_string(properties, '$."$browser"')"""


if __name__ == "__main__":
    sys.exit(main())
