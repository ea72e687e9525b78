"""Funnel correlation end to end over HTTP against hand-written chDB SQL of the same counts, same run.

    python bench/bench_correlation.py [--events 10000000] [--runs 5]

Data: bench_insights.py's (N events over 100 days, 90% in the project, persons resolved through overrides; 55%
``$pageview``, 25% ``$autocapture``, 10% ``$pageleave``, 5% ``signup``, 5% ``purchase``). The question:
``FunnelCorrelationQuery`` of events over the funnel ``signup`` → ``purchase`` within 14 days, last 90 days, asked
as ``POST /api/projects/:id/query/`` with ``refresh: "force_blocking"`` to the real service started in this process.

The hand-written SQL counts the same thing the way one would write it for this question: each person's events of
the two steps sorted (a signup before a purchase at the same instant), the latest signup before each purchase
(``arrayFill``), the first purchase within 14 days of it converting the person (those two times bound its time in
the funnel), else the first signup and 14 days; then every event of the person joined to it, each person's set of
other event names inside its time counted among successes and failures, with a totals row. It runs on the
service's own engine with the same aggregation settings; both answers' counts and odds ratios are compared before
timing. The two alternate, medians of ``--runs`` after one warm-up; the ratio is end to end / raw.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
from bench_insights import events_of, generated_service, resolved_bounds, time_against_hand
from bench_query import bench_arguments

from hoglab.server.query.runners.funnel_correlation import TOTAL, correlations
from hoglab.server.query.runners.funnels_sql import PERSON_ROWS_SETTINGS

WINDOW_US = 14 * 86400 * 1_000_000
QUERY = {"kind": "FunnelCorrelationQuery", "funnelCorrelationType": "events",
         "source": {"kind": "FunnelsActorsQuery", "source": {
             "kind": "FunnelsQuery", "dateRange": {"date_from": "-90d"},
             "series": [{"kind": "EventsNode", "event": "signup"}, {"kind": "EventsNode", "event": "purchase"}],
             "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"}}}}  # fmt: skip
ALL_EVENTS = "'$pageview', '$autocapture', '$pageleave', 'signup', 'purchase'"


def hand_correlation(team: int, since: str, until: str) -> str:
    until_us = f"toUnixTimestamp64Micro(toDateTime64('{until}', 6, 'UTC'))"
    actors = f"""
        SELECT person, idx > 0 AS success,
               if(success, filled[idx], arrayFirst(x -> x.2 = 0, ev).1) AS first_us,
               if(success, ev[idx].1, NULL) AS final_us
        FROM (
          SELECT person, arraySort(groupArray((toUnixTimestamp64Micro(timestamp), toUInt8(event = 'purchase'))))
                   AS ev,
                 arrayFill(x -> x != 0, arrayMap(x -> if(x.2 = 0, x.1, 0), ev)) AS filled,
                 arrayFirstIndex((x, e) -> x.2 = 1 AND e > 0 AND x.1 - e <= {WINDOW_US}, ev, filled) AS idx
          FROM ({events_of(team, since, until, "'signup', 'purchase'")})
          GROUP BY person)
        WHERE has(arrayMap(x -> x.2, ev), 0)"""
    ts = "toUnixTimestamp64Micro(e.timestamp)"
    inside = f"{ts} > a.first_us AND {ts} < coalesce(a.final_us, a.first_us + {WINDOW_US}) AND {ts} <= {until_us}"
    return f"""
        SELECT name, countIf(success) AS success_count, countIf(NOT success) AS failure_count
        FROM (
          SELECT e.person AS person, any(a.success) AS success,
                 arrayJoin(arrayPushBack(groupUniqArrayIf(e.event, {inside}
                   AND e.event NOT IN ('signup', 'purchase')), '{TOTAL}')) AS name
          FROM ({events_of(team, since, until, ALL_EVENTS)}) AS e
          INNER JOIN ({actors}) AS a ON e.person = a.person
          GROUP BY person)
        GROUP BY name"""


def check(answer: dict[str, Any], rows: list[list[Any]]) -> None:
    counted = [{"name": n, "success_count": s, "failure_count": f} for n, s, f in rows]
    want, skewed = correlations(counted, "events")
    assert answer["results"]["skewed"] == skewed, (answer["results"]["skewed"], skewed)
    assert answer["results"]["events"] == want, (answer["results"]["events"], want)
    assert want, "the question must find correlations"


def main() -> None:
    parser = bench_arguments(__doc__, runs=5)
    args = parser.parse_args()
    with generated_service("correlation", args.events, timeout=1200) as made:
        engine, team, ask = made.service.state.engine, made.team, made.ask
        first = ask(QUERY)
        since, until = resolved_bounds(first)
        compile_ms = sum(t["t"] for t in first["timings"] if t["k"] == "./compile") * 1000
        print(f"range {since} → {until}; answer: {[(e['event']['event'], e['success_count'], e['failure_count'], round(e['odds_ratio'], 4)) for e in first['results']['events']]}\n")  # noqa: E501
        sql = hand_correlation(team, since, until)

        def raw() -> Any:
            body = engine.execute_json(sql, settings={"join_use_nulls": 1, **PERSON_ROWS_SETTINGS}).data
            return [[name, int(s), int(f)] for name, s, f in orjson.loads(body)]

        print("| question | raw engine ms | end to end ms | ratio | endpoint's execute ms | compile ms (first) |")
        print("|---|---:|---:|---:|---:|---:|")
        time_against_hand("funnel correlation: events, signup → purchase, 90 days", ask, QUERY, raw, check,
                          args.runs, compile_ms)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
