"""Trend and funnel insights end to end over HTTP against hand-written chDB SQL of the same meaning, same run.

    python bench/bench_insights.py [--events 10000000] [--runs 5]

Data (generated in the engine, ``INSERT ... SELECT FROM numbers``, ~45 s for 10M): N events over 100 days ending
at the current hour, 90% in the benchmark's project and 10% in a neighbour; one person per 20 events, each with
several distinct ids (``anon-k``; ``user-k`` for half of them; ``device2-k`` for a tenth), and the tenth with a
second device were *merged*: their ``device2`` events carry the absorbed person's id and ``person_overrides``
maps it to the survivor (~3% of events), so person resolution goes through overrides as in real data. Events:
55% ``$pageview`` (a fifth of them on ``/checkout``), 25% ``$autocapture``, 10% ``$pageleave``, 5% ``signup``, 5%
``purchase``; JSON properties ``$current_url``, ``$browser`` (40 values, skewed, missing or empty for some
persons: the top-25, other and null buckets all occur), ``$feature/new-checkout`` (the person's variant, on 80%
of events), ``price``.

Questions, each asked as ``POST /api/projects/:id/query/`` with ``refresh: "force_blocking"`` (no cache) to the
real service started in this process (uvicorn on 127.0.0.1, httpx), and as hand-written SQL run with
``execute_json`` on the service's own engine (same guard-rail settings, same JSON output):

* trend: 90-day daily unique persons of ``$pageview`` broken down by ``$browser``;
* funnel: ``$pageview`` → ``$pageview`` on ``/checkout`` → ``purchase`` within 14 days, by the variant
  (first touch), with each step's count and average/median conversion time.

The hand-written SQL means the same: persons resolved through ``person_overrides`` (newest version), the bounds
the runner resolved, the breakdown's null bucket and top 25 + other ranking, and for the funnel PostHog's
per-person replay (ties in time in step order, the first attempt to reach the furthest step gives the times),
written for this 3-step question; it runs with the same aggregation settings as the runner. Both answers are
compared before timing. The two paths alternate, medians of ``--runs`` after one warm-up; the ratio is end to
end / raw. ``windowFunnel`` (step counts only, and ClickHouse's semantics) is timed for reference.
"""

from __future__ import annotations

import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
from bench_query import bench_arguments, bench_service  # the same service set-up (this script runs from bench/)

from hoglab.server.engine.ddl import DATABASE
from hoglab.server.query.runners.funnels_sql import PERSON_ROWS_SETTINGS

WINDOW_US = 14 * 86400 * 1_000_000
TREND = {"kind": "TrendsQuery", "dateRange": {"date_from": "-90d"},
         "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
         "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}}  # fmt: skip
FUNNEL = {"kind": "FunnelsQuery", "dateRange": {"date_from": "-90d"},
          "series": [{"kind": "EventsNode", "event": "$pageview"},
                     {"kind": "EventsNode", "event": "$pageview", "properties": [
                         {"key": "$current_url", "value": "/checkout", "operator": "icontains", "type": "event"}]},
                     {"kind": "EventsNode", "event": "purchase"}],
          "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"},
          "breakdownFilter": {"breakdown": "$feature/new-checkout", "breakdown_type": "event"}}  # fmt: skip

DAY_US = 86400 * 1_000_000
BROWSERS = 40  # more values than the breakdown limit, so the "other" bucket is exercised


def person_uuid(key: str) -> str:
    """SQL of a stable person uuid for person number ``k`` (``key`` is ``'p'`` or ``'d2'``)."""
    return f"reinterpretAsUUID(sipHash128(concat('{key}-', toString(k))))"


def generate(engine: Any, team: int, other: int, events: int, end: datetime) -> dict[str, int]:
    """Events, persons, distinct ids and merges for ``team`` (90%) and ``other`` (10%), in the engine."""
    people = max(events // 20, 10)
    start_us = int(end.timestamp() * 1_000_000) - 100 * DAY_US
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT if(number % 10 = 0, {other}, {team}), generateUUIDv4(number), event,
          multiIf(k % 10 = 0 AND h % 3 = 0, concat('device2-', toString(k)),
                  k % 2 = 0 AND h % 2 = 0, concat('user-', toString(k)), concat('anon-', toString(k))),
          if(k % 10 = 0 AND h % 3 = 0, {person_uuid("d2")}, {person_uuid("p")}),
          fromUnixTimestamp64Micro(toInt64({start_us} + intHash64(number + 1) % {100 * DAY_US}), 'UTC'),
          concat('{{"$current_url":"https://shop.example.com/', url, '"',
                 if(k % 17 = 0, '', concat(',"$browser":"', browser, '"')),
                 if(intHash32(number) % 5 = 0, '', concat(',"$feature/new-checkout":"',
                    if(k % 2 = 0, 'control', 'test'), '"')),
                 ',"price":', toString(h % 200), '}}'),
          '', now64(6)
        FROM (
          SELECT number, intHash64(number) AS h, sipHash64(number) % {people} AS k,
                 multiIf(h % 100 < 55, '$pageview', h % 100 < 80, '$autocapture', h % 100 < 90, '$pageleave',
                         h % 100 < 95, 'signup', 'purchase') AS event,
                 if(event = '$pageview' AND intHash32(h) % 5 = 0, 'checkout', concat('p/', toString(h % 997))) AS url,
                 if(k % 23 = 0, '', concat('Browser ', toString(toUInt32(pow((intHash32(k) % 1000) / 1000, 3)
                    * {BROWSERS})))) AS browser
          FROM numbers({events}))"""
    )
    for project in (team, other):
        engine.command(
            f"""INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)
            SELECT {project}, {person_uuid("p")}, now64(6), concat('{{"email":"u', toString(k), '@example.com"}}'),
                   k % 2 = 0, 0, 1 FROM (SELECT number AS k FROM numbers({people}))
            UNION ALL
            SELECT {project}, {person_uuid("d2")}, now64(6), '{{}}', 0, 1, 2
            FROM (SELECT number AS k FROM numbers({people})) WHERE k % 10 = 0"""
        )
        engine.command(
            f"""INSERT INTO {DATABASE}.person_distinct_ids (team_id, distinct_id, person_id, is_deleted, version)
            SELECT {project}, concat(prefix, toString(k)), {person_uuid("p")}, 0, 2
            FROM (SELECT number AS k FROM numbers({people}))
            ARRAY JOIN ['anon-', 'user-', 'device2-'] AS prefix
            WHERE prefix = 'anon-' OR (prefix = 'user-' AND k % 2 = 0) OR (prefix = 'device2-' AND k % 10 = 0)"""
        )
        engine.command(
            f"""INSERT INTO {DATABASE}.person_overrides (team_id, old_person_id, override_person_id, version)
            SELECT {project}, {person_uuid("d2")}, {person_uuid("p")}, 1
            FROM (SELECT number AS k FROM numbers({people})) WHERE k % 10 = 0"""
        )
    engine.command(f"OPTIMIZE TABLE {DATABASE}.events FINAL")
    return {"people": people}


def events_of(team: int, since: str, until: str, events: str) -> str:
    """The project's events in the range with ``person`` resolved through the overrides (newest version).

    ``assumeNotNull``: with ``join_use_nulls`` (the service's setting) the joined id is Nullable, and a Nullable
    person id would make every grouping by person slower.
    """
    return f"""
        SELECT if(o.matched = 1, assumeNotNull(o.new_id), e.person_id) AS person, e.event AS event,
               e.timestamp AS timestamp, e.properties AS properties
        FROM {DATABASE}.events AS e
        LEFT JOIN (SELECT old_person_id, argMax(override_person_id, version) AS new_id, 1 AS matched
                   FROM {DATABASE}.person_overrides WHERE team_id = {team} GROUP BY old_person_id) AS o
          ON o.old_person_id = e.person_id
        WHERE e.team_id = {team} AND e.event IN ({events})
          AND e.timestamp >= toDateTime64('{since}', 6, 'UTC') AND e.timestamp <= toDateTime64('{until}', 6, 'UTC')"""


def hand_trend(team: int, since: str, until: str) -> str:
    return f"""
        SELECT day, if(rank <= 25, browser, '$$_posthog_breakdown_other_$$') AS breakdown, sum(users) AS users
        FROM (
          SELECT day, browser, users, dense_rank() OVER (ORDER BY total DESC, browser ASC) AS rank
          FROM (
            SELECT day, browser, users, sum(users) OVER (PARTITION BY browser) AS total
            FROM (
              SELECT formatDateTime(toDate(timestamp), '%Y-%m-%d') AS day,
                     ifNull(nullIf(JSONExtract(properties, '$browser', 'Nullable(String)'), ''),
                            '$$_posthog_breakdown_null_$$') AS browser,
                     uniqExact(person) AS users
              FROM ({events_of(team, since, until, "'$pageview'")})
              GROUP BY day, browser)))
        GROUP BY day, breakdown"""


def hand_funnel(team: int, since: str, until: str) -> str:
    # The replay's state: (done, furthest step, its entry, its step-2 time, its step-3 time,
    #                      entry of the attempt at step 1, 2, 3, step-2 time of the attempt at 2, at 3, step-3 time)
    w = WINDOW_US
    a1 = "(bitTest(mm, 0) AND s.6 != t)"
    a2 = f"(bitTest(mm, 1) AND s.6 > 0 AND t - s.6 <= {w} AND s.7 != s.6)"
    a3 = f"(bitTest(mm, 2) AND s.7 > 0 AND t - s.7 <= {w} AND s.8 != s.7)"
    step = f"""arrayMap(c -> tuple(toInt64({a3} OR s.8 > 0), toInt64(if(c > 0, c, s.2)),
                                   toInt64(multiIf(c = 1, t, c = 2, s.6, c = 3, s.7, s.3)),
                                   toInt64(multiIf(c = 2, t, c = 3, s.9, c > 0, 0, s.4)),
                                   toInt64(multiIf(c = 3, t, c > 0, 0, s.5)),
                                   toInt64(if({a1}, t, s.6)), toInt64(if({a2}, s.6, s.7)), toInt64(if({a3}, s.7, s.8)),
                                   toInt64(if({a2}, t, s.9)), toInt64(if({a3}, s.9, s.10)), toInt64(if({a3}, t, s.11))),
                     [multiIf({a3} AND s.2 < 3, 3, {a2} AND s.2 < 2, 2, {a1} AND s.2 < 1, 1, 0)])[1]"""
    zero = ", ".join(["toInt64(0)"] * 11)
    mask = ("if(event = '$pageview', 1, 0) + if(event = '$pageview' AND JSONExtract(properties, '$current_url', "
            "'Nullable(String)') ILIKE '%/checkout%', 2, 0) + if(event = 'purchase', 4, 0)")  # fmt: skip
    aggregates = ", ".join(
        [f"countIf(reached >= {j}) AS s{j}" for j in range(3)]
        + [f"{agg}((t{j} - t{j - 1}) / 1e6, reached >= {j} AND t{j} > t{j - 1}) AS {name}{j}"
           for j in (1, 2) for agg, name in (("avgIf", "a"), ("quantileExactInclusiveIf(0.5)", "md"))]
    )  # fmt: skip
    return f"""
        SELECT variant, {aggregates}
        FROM (
          SELECT variant, arrayFold((s, t, mm) -> if(s.1 = 1, s, {step}), ts, m, tuple({zero})) AS f,
                 f.2 - 1 AS reached, f.3 AS t0, f.4 AS t1, f.5 AS t2
          FROM (
            SELECT person, argMinIf(b, ts0, b != '') AS variant,
                   arraySort(e -> (e.1, e.2), arrayZip(groupArray(ts0), groupArray(first_step), groupArray(m0))) AS ev,
                   arrayMap(e -> e.1, ev) AS ts, arrayMap(e -> e.3, ev) AS m
            FROM (
              SELECT person, toUnixTimestamp64Micro(timestamp) AS ts0, toInt64({mask}) AS m0,
                     toInt64(log2(bitAnd(m0, -m0))) AS first_step,
                     ifNull(JSONExtract(properties, '$feature/new-checkout', 'Nullable(String)'), '') AS b
              FROM ({events_of(team, since, until, "'$pageview', 'purchase'")}))
            WHERE m0 != 0
            GROUP BY person))
        WHERE reached >= 0
        GROUP BY variant"""


def window_funnel(team: int, since: str, until: str) -> str:
    return f"""
        SELECT variant, countIf(level >= 1), countIf(level >= 2), countIf(level >= 3) FROM (
          SELECT person, argMinIf(b, timestamp, b != '') AS variant,
                 windowFunnel({WINDOW_US})(toUInt64(toUnixTimestamp64Micro(timestamp)), event = '$pageview',
                   event = '$pageview'
                     AND JSONExtract(properties, '$current_url', 'Nullable(String)') ILIKE '%/checkout%',
                   event = 'purchase') AS level
          FROM (SELECT *, ifNull(JSONExtract(properties, '$feature/new-checkout', 'Nullable(String)'), '') AS b
                FROM ({events_of(team, since, until, "'$pageview', 'purchase'")}))
          GROUP BY person) WHERE level >= 1 GROUP BY variant"""


def check_trend(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    got = {(item["breakdown_value"], day): value for item in answer["results"]
           for day, value in zip(item["days"], item["data"], strict=True) if value}  # fmt: skip
    want = {(breakdown, day): float(users) for day, breakdown, users in rows if users}
    assert got == want, "the trend runner and the hand-written SQL disagree"


def check_funnel(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    def same(a: float | None, b: float | None) -> bool:
        return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9))

    want = {variant: rest for variant, *rest in rows}
    got = {}
    for steps in answer["results"]:
        counts = [step["count"] for step in steps]
        times = [(step["average_conversion_time"], step["median_conversion_time"]) for step in steps[1:]]
        got[steps[0]["breakdown_value"][0]] = (counts, times)
    assert set(got) == set(want), (sorted(got), sorted(want))
    for variant, (counts, times) in got.items():
        s0, s1, s2, a1, md1, a2, md2 = want[variant]
        assert counts == [s0, s1, s2], (variant, counts, [s0, s1, s2])
        assert all(same(x, y) for x, y in zip([t for pair in times for t in pair], [a1, md1, a2, md2], strict=True))


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def query_asker(client: httpx.Client, team: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``ask(query)``: the Query endpoint's answer for project ``team``, computed afresh (``force_blocking``)."""

    def ask(query: dict[str, Any]) -> dict[str, Any]:
        response = client.post(f"/api/projects/{team}/query/", json={"query": query, "refresh": "force_blocking"})
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    return ask


def time_against_hand(
    name: str,
    ask: Callable[[dict[str, Any]], dict[str, Any]],
    query: dict[str, Any],
    raw_rows: Callable[[], Any],
    check: Callable[[dict[str, Any], Any], None],
    runs: int,
    compile_ms: float | None,
) -> None:
    """One table row: the endpoint's answer and the hand-written SQL's rows agree (before and after timing), then
    the medians of both, alternating, the endpoint's own execute time and (unless None) the first compile's."""
    held: dict[str, Any] = {}

    def http() -> None:
        held["answer"] = ask(query)

    def raw() -> None:
        held["rows"] = raw_rows()

    http()
    raw()
    check(held["answer"], held["rows"])
    raw_ms, http_ms, execute_ms = [], [], []
    for _ in range(runs):
        raw_ms.append(timed(raw))
        http_ms.append(timed(http))
        execute_ms.append(sum(t["t"] for t in held["answer"]["timings"] if t["k"] == "./execute") * 1000)
    check(held["answer"], held["rows"])
    r, h = statistics.median(raw_ms), statistics.median(http_ms)
    compiled = "" if compile_ms is None else f" {compile_ms:.0f} |"
    print(f"| {name} | {r:.0f} ({min(raw_ms):.0f}-{max(raw_ms):.0f}) | {h:.0f} ({min(http_ms):.0f}-"
          f"{max(http_ms):.0f}) | **{h / r:.2f}x** | {statistics.median(execute_ms):.0f} |{compiled}")  # fmt: skip


@dataclass(frozen=True)
class Generated:
    """A bench's service with ``generate``'s events in its project: the engine, the project, a client, the end."""

    service: Any
    team: int
    client: httpx.Client
    ask: Callable[[dict[str, Any]], dict[str, Any]]
    people: int
    end: datetime


@contextmanager
def generated_service(name: str, events: int, *, timeout: float = 600) -> Iterator[Generated]:
    """The real service on a temporary data dir with ``events`` generated events (ending this hour), a query:read
    client on it, the line saying what was made printed; everything stopped and removed afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix=f"hoglab-bench-{name}-"))
    service, team, other, key = bench_service(data_dir)
    try:
        engine = service.state.engine
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        start = time.perf_counter()
        stats = generate(engine, team, other, events, end)
        mine = engine.execute(f"SELECT count() AS n FROM {DATABASE}.events WHERE team_id = {team}").to_pylist()[0]["n"]
        print(f"{events:,} events generated in {time.perf_counter() - start:.1f} s ({mine:,} in the project, "
              f"{stats['people']:,} persons, {stats['people'] // 10:,} merged)\n")  # fmt: skip
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout) as client:
            yield Generated(service, team, client, query_asker(client, team), stats["people"], end)
    finally:
        service.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def resolved_bounds(answer: dict[str, Any]) -> tuple[str, str]:
    """The answer's ``resolved_date_range`` as the engine's UTC literals: what hand-written SQL must use."""

    def utc(text: str) -> str:
        return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    bounds = answer["resolved_date_range"]
    return utc(bounds["date_from"]), utc(bounds["date_to"])


def main() -> None:
    parser = bench_arguments(__doc__, runs=5)
    args = parser.parse_args()

    with generated_service("insights", args.events) as made:
        engine, team, ask = made.service.state.engine, made.team, made.ask
        first = ask(TREND)  # also resolves the range the hand-written SQL must use
        since, until = resolved_bounds(first)
        print(f"range {since} → {until}\n")
        questions = [
            ("trend: 90-day DAU by $browser", TREND, hand_trend(team, since, until), {}, check_trend),
            ("funnel: 3 steps by variant", FUNNEL, hand_funnel(team, since, until), PERSON_ROWS_SETTINGS,
             check_funnel),
        ]  # fmt: skip
        print("| question | raw engine ms | end to end ms | ratio | endpoint's execute ms | compile ms (first) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, query, sql, settings, check in questions:
            first = ask(query) if query is not TREND else first  # the first request compiles; later ones don't
            compile_ms = sum(t["t"] for t in first["timings"] if t["k"] == "./compile") * 1000

            def raw(sql: str = sql, settings: dict[str, Any] = settings) -> Any:
                return orjson.loads(engine.execute_json(sql, settings={"join_use_nulls": 1, **settings}).data)

            time_against_hand(name, ask, query, raw, check, args.runs, compile_ms)
        reference = window_funnel(team, since, until)
        engine.execute_json(reference)
        wf = statistics.median(timed(lambda: engine.execute_json(reference)) for _ in range(args.runs))
        print(f"\nreference: windowFunnel step counts only (ClickHouse's semantics, no times): {wf:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
