"""Materialized person properties: a person-property filter + group by over HTTP, reading the JSON against reading
``pmat_`` columns, in one run.

    python bench/bench_person_props.py [--events 5000000] [--runs 5]

Data (generated in the engine, ``INSERT ... SELECT FROM numbers``): N events over 30 days, 90% in the benchmark's
project and 10% in a neighbour; one person per 25 events (``person_id`` a hash of the distinct id), each person
a ``persons`` row whose JSON holds ``plan`` (3 values, missing for a fifth), ``country`` (5 values), ``email`` and
ten more keys of the kind PostHog's ``$initial_*`` person properties are (about 600 bytes in all); a tenth of the
persons have a second, newer version with another ``plan`` (what the persons view's argMax picks).

Questions (``POST /query/`` with ``refresh: "force_blocking"``, no result cache):

* HogQL: ``person.properties.plan`` counted over events whose ``person.properties.country = 'DE'``;
* a TrendsQuery: daily ``$pageview`` counts filtered on the person's ``country`` and broken down by their ``plan``.

Each is asked with the columns (``materialized.materialize(..., "persons")``, filled before timing) and without
(``materialized.suspended()``: the compiler reads the JSON, as before the columns existed); the answers are
compared first, then the two alternate, medians of ``--runs`` after a warm-up. The ratio is JSON / column (above
1: the column is faster). The machine is shared: compare ratios of one run, not times across runs.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

os.environ.setdefault("HOGLAB_AUTO_MATERIALIZE", "0")  # this run materializes by hand, between its two plans

from bench_query import bench_arguments, bench_service

from hoglab.server.engine import materialized
from hoglab.server.engine.ddl import DATABASE

START_US = 1_756_684_800_000_000  # 2025-09-01 UTC
DAYS = 30
KEYS = ["plan", "country"]
_FILLER = ", ".join(
    f"',\"$initial_{name}\":\"', {value}, '\"'"
    for name, value in [
        ("referrer", "'https://www.google.com/search?q=shop'"),
        ("referring_domain", "'www.google.com'"),
        ("utm_source", "['google', 'newsletter', 'twitter'][k % 3 + 1]"),
        ("utm_campaign", "concat('spring-', toString(k % 11))"),
        ("current_url", "concat('https://shop.example.com/landing/', toString(k % 977))"),
        ("pathname", "concat('/landing/', toString(k % 977))"),
        ("browser", "['Chrome', 'Firefox', 'Safari', 'Edge'][k % 4 + 1]"),
        ("browser_version", "toString(100 + k % 30)"),
        ("os", "['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'][k % 5 + 1]"),
        ("device_type", "['Desktop', 'Mobile', 'Tablet'][k % 3 + 1]"),
    ]
)


def _person_json(plan: str) -> str:
    return (
        "concat('{\"email\":\"user', toString(k), '@example.com\"', "
        f"if(k % 5 = 0, '', concat(',\"plan\":\"', {plan}, '\"')), "
        "',\"country\":\"', ['DE', 'US', 'FR', 'GB', 'BR'][intHash32(k) % 5 + 1], '\"', "
        f"{_FILLER}, '}}')"
    )


def generate(engine: Any, team: int, other: int, events: int) -> int:
    """The events and their persons; how many persons."""
    people = max(events // 25, 1)
    span_us = DAYS * 86400 * 1_000_000
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT if(number % 10 = 0, {other}, {team}), generateUUIDv4(number), if(h % 100 < 60, '$pageview', 'click'),
          concat('user-', toString(k)), reinterpretAsUUID(sipHash128(concat('user-', toString(k)))),
          fromUnixTimestamp64Micro(toInt64({START_US} + intHash64(number + 1) % {span_us}), 'UTC'),
          '{{"$browser":"Chrome"}}', '', now64(6)
        FROM (SELECT number, intHash64(number) AS h, sipHash64(number) % {people} AS k FROM numbers({events}))""",
        settings={"max_execution_time": 0},
    )
    for version, plan, share in (
        (1, "['free', 'pro', 'team'][k % 3 + 1]", ""),
        (2, "'enterprise'", "WHERE k % 10 = 3"),
    ):
        engine.command(
            f"""INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted,
            version)
            SELECT team, reinterpretAsUUID(sipHash128(concat('user-', toString(k)))),
              fromUnixTimestamp64Micro(toInt64({START_US}), 'UTC'), {_person_json(plan)}, 1, 0, {version}
            FROM (SELECT number AS k, arrayJoin([{team}, {other}]) AS team FROM numbers({people})) {share}""",
            settings={"max_execution_time": 0},
        )
    engine.command(f"OPTIMIZE TABLE {DATABASE}.events FINAL", settings={"max_execution_time": 0})
    return people


def questions() -> list[tuple[str, dict[str, Any]]]:
    hogql = (
        "select person.properties.plan as plan, count() as c from events "
        "where person.properties.country = 'DE' group by plan order by plan"
    )
    trend = {
        "kind": "TrendsQuery",
        "dateRange": {"date_from": "2025-09-01", "date_to": "2025-09-30"},
        "series": [{"kind": "EventsNode", "event": "$pageview", "properties": [
            {"key": "country", "value": ["DE"], "operator": "exact", "type": "person"}]}],
        "breakdownFilter": {"breakdown": "plan", "breakdown_type": "person"},
    }  # fmt: skip
    return [("person property filter + group by (HogQL)", {"kind": "HogQLQuery", "query": hogql}),
            ("daily trend, person filter, person breakdown", trend)]  # fmt: skip


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def wait_for_fill(engine: Any, timeout: float = 900) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if all(s.done for s in materialized.fill_status(engine) if s.table == "persons"):
            return time.perf_counter() - start
        time.sleep(1)
    raise SystemExit("the person columns did not fill in time")


def main() -> None:
    parser = bench_arguments(__doc__, runs=5, events=5_000_000)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-bench-person-props-"))
    service, team, other, key = bench_service(data_dir)
    try:
        engine = service.state.engine
        started = time.perf_counter()
        people = generate(engine, team, other, args.events)
        size = engine.execute(
            f"SELECT sum(data_uncompressed_bytes) AS b FROM system.parts WHERE database = '{DATABASE}' "
            "AND table = 'persons' AND active"
        ).to_pylist()[0]["b"]
        print(f"{args.events:,} events and {people:,} persons per project (+10% second versions, "
              f"{size / 1e6:,.0f} MB of persons uncompressed) in {time.perf_counter() - started:.0f} s\n")  # fmt: skip
        made = materialized.materialize(engine, KEYS, "persons")
        print(f"materialized {made}; filled in {wait_for_fill(engine):.1f} s\n", flush=True)
        http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=600)

        def ask(body: dict[str, Any], *, columns: bool) -> Any:
            def post() -> dict[str, Any]:
                response = http.post(f"/api/projects/{team}/query/", json={"query": body, "refresh": "force_blocking"})
                response.raise_for_status()
                answer: dict[str, Any] = response.json()
                return answer

            if columns:
                return post()
            with materialized.suspended():
                return post()

        print("| question | JSON ms (min–max) | column ms (min–max) | JSON / column |")
        print("|---|---:|---:|---:|")
        for name, body in questions():
            fast, slow = ask(body, columns=True), ask(body, columns=False)
            if fast["results"] != slow["results"]:
                sys.exit(f"{name}: the two plans answer differently:\n{fast['results']}\n{slow['results']}")
            if "clickhouse" in fast:
                assert "pmat_plan" in fast["clickhouse"] and "pmat_plan" not in slow["clickhouse"]
            json_ms, column_ms = [], []
            for _ in range(args.runs):
                json_ms.append(timed(lambda b=body: ask(b, columns=False))[0])
                column_ms.append(timed(lambda b=body: ask(b, columns=True))[0])
            j, c = statistics.median(json_ms), statistics.median(column_ms)
            print(f"| {name} | {j:,.0f} ({min(json_ms):,.0f}–{max(json_ms):,.0f}) | {c:,.0f} "
                  f"({min(column_ms):,.0f}–{max(column_ms):,.0f}) | **{j / c:.2f}×** |", flush=True)  # fmt: skip
        http.close()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
