"""HogQL compile time against chDB execution time of the same compiled SQL.

Generates N events (default 1,000,000) for two projects in a temporary chDB, then for each typical query
measures ``compile_hogql`` (median of many runs) and the execution of the compiled SQL (median of a few runs),
and prints a Markdown table: compile ms, execute ms, compile as a share of end to end.

    .venv/bin/python bench/bench_compile.py [--events 1000000] [--compile-runs 200] [--exec-runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from hoglab.server.engine.ddl import create_statements
from hoglab.server.hogql import PERSON_OVERRIDES_DDL, compile_hogql

DATABASE = "hoglab_bench"
SETTINGS = "SETTINGS readonly = 2, join_use_nulls = 1, max_threads = 2"

QUERIES = {
    "count by event": "select event, count() from events group by event order by 2 desc",
    "daily uniques, 30 days": (
        "select toStartOfDay(timestamp) as day, uniq(person_id) from events "
        "where event = '$pageview' and timestamp >= toDateTime('2026-01-01') "
        "and timestamp < toDateTime('2026-01-31') group by day order by day"
    ),
    "daily uniques, 30 days, Europe/Berlin": (
        "select toStartOfDay(timestamp) as day, uniq(person_id) from events "
        "where event = '$pageview' and timestamp >= toDateTime('2026-01-01') "
        "and timestamp < toDateTime('2026-01-31') group by day order by day"
    ),
    "property filter + group by": (
        "select properties.plan, count() from events where properties.$browser = 'Chrome' group by 1 order by 1"
    ),
    "person properties join": (
        "select person.properties.plan as plan, count() from events where event = 'purchase' group by plan"
    ),
    "1,000 rows of *": "select * from events order by timestamp desc limit 1000",
    "funnel (windowFunnel)": (
        "select countIf(s >= 1), countIf(s >= 2), countIf(s >= 3) from (select person_id, "
        "windowFunnel(1209600)(toDateTime(timestamp), event = '$pageview', event = 'signup', event = 'purchase') as s "
        "from events where event in ('$pageview', 'signup', 'purchase') group by person_id)"
    ),
    "CTE + union + IN subquery": (
        "with buyers as (select distinct person_id from events where event = 'purchase') "
        "select 'buyers' as kind, count() from events where person_id in (select person_id from buyers) "
        "union all select 'others', count() from events where person_id not in (select person_id from buyers)"
    ),
}


# The same questions written by hand against the physical table, guard inline: how much the views cost.
HAND_WRITTEN = {
    "count by event": f"SELECT event, count() FROM {DATABASE}.events WHERE team_id = 1 GROUP BY event ORDER BY 2 DESC",
    "daily uniques, 30 days": (
        f"SELECT toStartOfDay(timestamp) AS day, uniq(person_id) FROM {DATABASE}.events WHERE team_id = 1 "
        "AND event = '$pageview' AND timestamp >= toDateTime('2026-01-01', 'UTC') "
        "AND timestamp < toDateTime('2026-01-31', 'UTC') GROUP BY day ORDER BY day"
    ),
    "property filter + group by": (
        f"SELECT JSONExtract(properties, 'plan', 'Nullable(String)') AS plan, count() FROM {DATABASE}.events "
        "WHERE team_id = 1 AND JSONExtract(properties, '$browser', 'Nullable(String)') = 'Chrome' "
        "GROUP BY plan ORDER BY plan"
    ),
    "1,000 rows of *": (
        f"SELECT uuid, event, properties, timestamp, distinct_id, elements_chain, created_at, `$session_id`, "
        f"JSONExtractString(properties, '$window_id') FROM {DATABASE}.events WHERE team_id = 1 "
        "ORDER BY timestamp DESC LIMIT 1000"
    ),
}


def _setup(conn: object, events: int) -> None:
    query = conn.query  # type: ignore[attr-defined]
    for statement in create_statements(DATABASE):
        query(statement)
    query(" ".join(PERSON_OVERRIDES_DDL.split()).format(db=DATABASE))
    people = max(events // 25, 1)
    query(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT if(number % 10 = 0, 2, 1), generateUUIDv4(),
          ['$pageview', '$pageview', '$pageview', 'signup', 'purchase', '$autocapture'][number % 6 + 1],
          toString(number % {people}),
          toUUID(concat('00000000-0000-0000-0000-', leftPad(toString(number % {people}), 12, '0'))),
          toDateTime64('2026-01-01 00:00:00', 6, 'UTC') + toIntervalSecond(number * 90 % (60 * 86400)),
          concat('{{"$browser":"', ['Chrome', 'Firefox', 'Safari'][number % 3 + 1], '","plan":"',
                 ['free', 'pro', 'team'][intHash32(number) % 3 + 1], '","price":', toString(number % 100), '}}'),
          '', now64(6)
        FROM numbers({events})"""
    )
    query(
        f"""INSERT INTO {DATABASE}.persons SELECT 1, toUUID(concat('00000000-0000-0000-0000-',
        leftPad(toString(number), 12, '0'))), now64(6), concat('{{"plan":"', ['free', 'pro'][number % 2 + 1], '"}}'),
        1, 0, 1 FROM numbers({people})"""
    )
    query(f"OPTIMIZE TABLE {DATABASE}.events FINAL")


def _median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--compile-runs", type=int, default=200)
    parser.add_argument("--exec-runs", type=int, default=5)
    args = parser.parse_args()

    import chdb  # imported here: importing chdb starts the embedded engine

    with tempfile.TemporaryDirectory() as tmp:
        conn = chdb.connect(tmp)
        start = time.perf_counter()
        _setup(conn, args.events)
        print(f"{args.events:,} events generated in {time.perf_counter() - start:.1f} s\n")
        print("| query | compile ms | execute ms | compile / end to end | hand-written SQL ms |")
        print("|---|---:|---:|---:|---:|")
        for name, hogql in QUERIES.items():
            zone = "Europe/Berlin" if name.endswith("Europe/Berlin") else "UTC"

            def compile_it(q: str = hogql, tz: str = zone) -> str:
                return compile_hogql(q, team_id=1, database=DATABASE, timezone=tz).sql

            compile_ms = _median_ms(compile_it, args.compile_runs)
            sql = compile_it()
            conn.query(f"{sql} {SETTINGS}", "Arrow")  # warm-up
            exec_ms = _median_ms(lambda s=sql: conn.query(f"{s} {SETTINGS}", "Arrow"), args.exec_runs)
            share = compile_ms / (compile_ms + exec_ms)
            hand = HAND_WRITTEN.get(name)
            hand_ms = "–"
            if hand:
                conn.query(f"{hand} {SETTINGS}", "Arrow")
                hand_ms = f"{_median_ms(lambda s=hand: conn.query(f'{s} {SETTINGS}', 'Arrow'), args.exec_runs):.1f}"
            print(f"| {name} | {compile_ms:.2f} | {exec_ms:.1f} | {share:.1%} | {hand_ms} |")
        conn.close()


if __name__ == "__main__":
    main()
