"""Retention, lifecycle, stickiness and paths end to end over HTTP against hand-written chDB SQL, same run.

    python bench/bench_product_insights.py [--events 10000000] [--runs 5]

The data is ``bench_insights.py``'s (its ``generate``: N events over 100 days ending at the current hour, 90% in
the project, one person per 20 events, a tenth of them merged through ``person_overrides``; 55% ``$pageview`` on
~1,000 URLs). Each question is asked as ``POST /api/projects/:id/query/`` with ``refresh: "force_blocking"`` to
the real service started in this process, and as hand-written SQL of the same meaning (persons resolved through
the overrides, the bounds the runner resolved, interval numbers from ``dateDiff`` instead of the runner's interval
keys) run with ``execute_json`` on the service's engine. Both answers are compared before and after timing; the
two paths alternate, medians of ``--runs`` after one warm-up; the ratio is end to end / raw.

* retention: 8 daily cohorts of ``$pageview`` returning with ``$pageview`` (recurring);
* lifecycle: 30 days of ``$pageview``, daily (``created_at`` from ``persons``);
* stickiness: 30 days of ``$pageview``, people by active days;
* paths: 7 days of ``$pageview`` paths, 30-minute sessions, 5 steps, the 50 heaviest edges.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from bench_insights import (  # the same data set (this script runs from bench/)
    events_of,
    generated_service,
    time_against_hand,
)
from bench_query import bench_arguments

from hoglab.server.engine.ddl import DATABASE
from hoglab.server.query.runners.paths import reachable_edges

PAGEVIEW = {"kind": "EventsNode", "event": "$pageview"}
RETENTION = {"kind": "RetentionQuery", "retentionFilter": {"retentionType": "retention_recurring", "totalIntervals": 8}}
LIFECYCLE = {"kind": "LifecycleQuery", "series": [PAGEVIEW], "dateRange": {"date_from": "-30d"}}
STICKINESS = {"kind": "StickinessQuery", "series": [PAGEVIEW], "dateRange": {"date_from": "-30d"}}
PATHS = {"kind": "PathsQuery", "dateRange": {"date_from": "-7d"}, "pathsFilter": {"includeEventTypes": ["$pageview"]}}


def utc_text(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def day(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d")


def hand_retention(team: int, bounds: dict[str, str]) -> str:
    since, until = utc_text(bounds["date_from"]), utc_text(bounds["date_to"])
    return f"""
        SELECT start, period, count() AS n FROM (
          SELECT person, start, arrayJoin(arrayConcat([0], arrayFilter(d -> d > 0 AND d < 8,
                 arrayMap(r -> r - start, active)))) AS period
          FROM (SELECT person, groupUniqArray(toInt64(dateDiff('day', toDate('{day(bounds["date_from"])}'),
                       toDate(timestamp)))) AS active
                FROM ({events_of(team, since, until, "'$pageview'")})
                WHERE timestamp < toDateTime64('{until}', 6, 'UTC')
                GROUP BY person)
          ARRAY JOIN active AS start)
        GROUP BY start, period"""


def hand_lifecycle(team: int, bounds: dict[str, str]) -> str:
    first = datetime.fromisoformat(bounds["date_from"]).astimezone(UTC)
    last = datetime.fromisoformat(bounds["date_to"]).astimezone(UTC)
    before = (first.date().toordinal() - 1, last.date().toordinal() + 1)
    since = datetime.fromordinal(before[0]).strftime("%Y-%m-%d 00:00:00")
    until = datetime.fromordinal(before[1]).strftime("%Y-%m-%d 00:00:00")
    origin = datetime.fromordinal(before[0]).strftime("%Y-%m-%d")
    n = before[1] - before[0] - 1
    return f"""
        SELECT pair.1 AS i, pair.2 AS status, count() AS n FROM (
          SELECT arrayJoin(arrayConcat(
                   arrayZip(active, arrayMap((a, j) -> if(j = 1, if(a = created, 'new', 'resurrecting'),
                            if(active[j - 1] = a - 1, 'returning', 'resurrecting')), active, arrayEnumerate(active))),
                   arrayMap(a -> (a + 1, 'dormant'), arrayFilter(a -> NOT has(active, a + 1), active)))) AS pair
          FROM (
            SELECT a.active AS active, toInt64(dateDiff('day', toDate('{origin}'), toDate(p.created_at))) AS created
            FROM (
              SELECT person, arraySort(groupUniqArray(toInt64(dateDiff('day', toDate('{origin}'), toDate(timestamp)))))
                       AS active
              FROM ({events_of(team, since, until, "'$pageview'")})
              WHERE timestamp < toDateTime64('{until}', 6, 'UTC')
                AND ifNull(JSONExtract(properties, '$process_person_profile', 'Nullable(String)') != 'false', 1)
              GROUP BY person) AS a
            LEFT JOIN (SELECT id, argMax(created_at, version) AS created_at FROM {DATABASE}.persons
                       WHERE team_id = {team} GROUP BY id HAVING argMax(is_deleted, version) = 0) AS p
              ON p.id = a.person))
        WHERE i BETWEEN 1 AND {n}
        GROUP BY i, status"""


def hand_stickiness(team: int, bounds: dict[str, str]) -> str:
    since, until = utc_text(bounds["date_from"]), utc_text(bounds["date_to"])
    return f"""
        SELECT active, count() AS n FROM (
          SELECT person, uniqExact(toDate(timestamp)) AS active FROM ({events_of(team, since, until, "'$pageview'")})
          GROUP BY person)
        GROUP BY active"""


def hand_paths(team: int, bounds: dict[str, str]) -> str:
    since, until = utc_text(bounds["date_from"]), utc_text(bounds["date_to"])
    url = r"replaceRegexpAll(ifNull(JSONExtract(properties, '$current_url', 'Nullable(String)'), ''), '(.)/$', '\\1')"
    return f"""
        SELECT source, target, count() AS value, avg(gap) * 1000 AS ms FROM (
          SELECT concat(toString(step.4), '_', step.1) AS target, concat(toString(step.4 - 1), '_', step.3) AS source,
                 step.2 AS gap
          FROM (
            SELECT arraySlice(arrayFilter((x, k) -> k, items, keep), 1, 5) AS p,
                   arraySlice(arrayFilter((x, k) -> k, stamps, keep), 1, 5) AS t,
                   arrayZip(p, arrayDifference(t), arrayPopBack(arrayPushFront(p, '')), arrayEnumerate(p)) AS steps
            FROM (
              SELECT arrayMap(x -> x.2, session) AS items, arrayMap(x -> x.1, session) AS stamps,
                     arrayMap((x, y) -> x != y, items, arrayPopFront(arrayPushBack(items, ''))) AS keep
              FROM (
                SELECT arraySplit((x, gap) -> gap >= 1800, evs, arrayDifference(arrayMap(x -> x.1, evs))) AS sessions
                FROM (SELECT person, arraySort(x -> x.1, groupArray((toUnixTimestamp64Micro(timestamp) / 1e6, {url})))
                               AS evs
                      FROM ({events_of(team, since, until, "'$pageview'")}) GROUP BY person))
              ARRAY JOIN sessions AS session))
          ARRAY JOIN steps AS step
          WHERE step.4 > 1)
        GROUP BY source, target ORDER BY value DESC, source, target LIMIT 50"""


def check_retention(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    want = {(int(s), int(k)): int(n) for s, k, n in rows if int(s) < len(answer["results"])}
    got = {(i, k): v["count"] for i, c in enumerate(answer["results"]) for k, v in enumerate(c["values"]) if v["count"]}
    assert got == want, "retention: the runner and the hand-written SQL disagree"


def check_lifecycle(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    want = {(int(i) - 1, status): float(n) for i, status, n in rows}
    got = {(i, item["status"]): abs(v) for item in answer["results"] for i, v in enumerate(item["data"]) if v}
    assert got == want, "lifecycle: the runner and the hand-written SQL disagree"


def check_stickiness(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    want = {int(active): int(n) for active, n in rows}
    got = {i + 1: v for i, v in enumerate(answer["results"][0]["data"]) if v}
    assert got == want, "stickiness: the runner and the hand-written SQL disagree"


def check_paths(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    want = reachable_edges([{"source": s, "target": t, "value": int(v), "ms": ms} for s, t, v, ms in rows])
    got = answer["results"]
    edges = [(r["source"], r["target"], r["value"]) for r in got]
    assert edges == [(r["source"], r["target"], r["value"]) for r in want], "paths: the runner and the SQL disagree"
    for a, b in zip(got, want, strict=True):
        assert abs(a["average_conversion_time"] - b["ms"]) <= 1e-6 * max(1.0, b["ms"]), (a, b)


def main() -> None:
    parser = bench_arguments(__doc__, runs=5)
    args = parser.parse_args()

    with generated_service("product", args.events) as made:
        engine, team, ask = made.service.state.engine, made.team, made.ask
        questions: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], str], Any]] = [
            ("retention: 8 daily cohorts", RETENTION, lambda a: hand_retention(team, a["resolved_date_range"]),
             check_retention),
            ("lifecycle: 30 days, daily", LIFECYCLE, lambda a: hand_lifecycle(team, a["resolved_date_range"]),
             check_lifecycle),
            ("stickiness: 30 days", STICKINESS, lambda a: hand_stickiness(team, a["resolved_date_range"]),
             check_stickiness),
            ("paths: 7 days of pageviews", PATHS, lambda a: hand_paths(team, a["resolved_date_range"]), check_paths),
        ]  # fmt: skip
        print("| question | raw engine ms | end to end ms | ratio | endpoint's execute ms | compile ms (first) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, query, hand, check in questions:
            first = ask(query)
            compile_ms = sum(t["t"] for t in first["timings"] if t["k"] == "./compile") * 1000
            sql = hand(first)
            def raw(sql: str = sql) -> Any:
                return orjson.loads(engine.execute_json(sql, settings={"join_use_nulls": 1}).data)

            time_against_hand(name, ask, query, raw, check, args.runs, compile_ms)


if __name__ == "__main__":
    sys.exit(main())
