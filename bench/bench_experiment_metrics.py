"""A 3-metric experiment (mean, funnel, ratio) end to end over HTTP against hand-written chDB SQL of the same sums.

    python bench/bench_experiment_metrics.py [--events 10000000] [--runs 3]

Data: bench_insights.py's generator (N events over 100 days, one person per 20 events, a tenth of them merged
through ``person_overrides``; ``$feature/new-checkout`` = the person's variant on 80% of events, ``price``). The
experiment runs on the flag ``new-checkout`` over those 100 days with a custom exposure, the first ``$pageview``
carrying the variant (``exposure_config``; the generator sends no ``$feature_flag_called``), and three metrics:

* mean: the sum of ``price`` of ``purchase`` per person;
* funnel: ``signup`` → ``purchase`` after the exposure (ordered, no conversion window);
* ratio: the sum of ``price`` of ``purchase`` / the number of ``$pageview``, per person.

Each is asked as ``POST /api/projects/:id/query/`` (``ExperimentQuery``, ``refresh: "force_blocking"``) and as
hand-written SQL run with ``execute_json`` on the service's own engine: persons resolved through
``person_overrides`` (bench_insights.events_of), exposures per person with PostHog's ``exclude`` rule, per-person
values from the first exposure on, the funnel by ``windowFunnel`` over the exposure and the two steps (the same
answer as PostHog's replay when no two events of a person share a microsecond). Both answers are compared before
timing. The paths alternate; medians of ``--runs`` after one warm-up; the ratio is end to end / by hand (the
HTTP side also computes the statistics and the verdict).
"""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

import orjson
from bench_insights import (  # the same data (this script runs from bench/)
    events_of,
    generated_service,
    time_against_hand,
)
from bench_query import bench_arguments

FLAG = "new-checkout"
PRICE = {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}
METRICS = {
    "mean: revenue per person": {"kind": "ExperimentMetric", "metric_type": "mean", "source": PRICE},
    "funnel: signup → purchase": {"kind": "ExperimentMetric", "metric_type": "funnel", "series": [
        {"kind": "EventsNode", "event": "signup"}, {"kind": "EventsNode", "event": "purchase"}]},
    "ratio: revenue per page view": {"kind": "ExperimentMetric", "metric_type": "ratio", "numerator": PRICE,
                                     "denominator": {"kind": "EventsNode", "event": "$pageview"}},
}  # fmt: skip
VARIANT = f"JSONExtractString(properties, '$feature/{FLAG}')"
THREE_YEARS_US = 3 * 365 * 86400 * 1_000_000


def exposures(team: int, since: str, until: str) -> str:
    return f"""
        SELECT person, if(uniqExact(v) > 1, '$multiple', any(v)) AS variant, min(timestamp) AS first
        FROM (SELECT person, timestamp, {VARIANT} AS v FROM ({events_of(team, since, until, "'$pageview'")})
              WHERE v IN ('control', 'test'))
        GROUP BY person"""


def per_person(team: int, since: str, until: str, event: str, value: str) -> str:
    return f"""
        SELECT x.person AS person, x.variant AS variant, sumIf(e.value, e.timestamp >= x.first) AS value
        FROM x LEFT JOIN (SELECT person, timestamp, {value} AS value
                          FROM ({events_of(team, since, until, f"'{event}'")})) AS e ON e.person = x.person
        GROUP BY x.person, x.variant"""


def hand_sql(name: str, team: int, since: str, until: str) -> str:
    x = exposures(team, since, until)
    price = "JSONExtractFloat(properties, 'price')"
    if name.startswith("mean"):
        return f"""WITH x AS ({x}), m AS ({per_person(team, since, until, "purchase", price)})
            SELECT variant, count() AS n, sum(value) AS total, sum(value * value) AS squares
            FROM m WHERE variant != '$multiple' GROUP BY variant ORDER BY variant"""
    if name.startswith("ratio"):
        return f"""WITH x AS ({x}), nu AS ({per_person(team, since, until, "purchase", price)}),
                        de AS ({per_person(team, since, until, "$pageview", "1.0")})
            SELECT nu.variant AS variant, count() AS n, sum(nu.value) AS total, sum(nu.value * nu.value) AS squares,
                   sum(de.value) AS dsum, sum(de.value * de.value) AS dsquares, sum(nu.value * de.value) AS product
            FROM nu INNER JOIN de ON nu.person = de.person
            WHERE variant != '$multiple' GROUP BY variant ORDER BY variant"""
    relevant = events_of(team, since, until, "'$pageview', 'signup', 'purchase'")
    return f"""WITH x AS ({x}),
        f AS (SELECT person, windowFunnel({THREE_YEARS_US})(toUInt64(toUnixTimestamp64Micro(timestamp)),
                     event = '$pageview' AND {VARIANT} IN ('control', 'test'), event = 'signup',
                     event = 'purchase') AS level
              FROM ({relevant}) GROUP BY person)
        SELECT x.variant AS variant, count() AS n, countIf(f.level >= 2) AS s1, countIf(f.level >= 3) AS s2
        FROM x LEFT JOIN f ON f.person = x.person
        WHERE variant != '$multiple' GROUP BY variant ORDER BY variant"""


def same(answer: dict[str, Any], rows: list[list[Any]], name: str) -> None:
    """The HTTP answer's sums equal the hand-written ones (exactly for counts, to 1e-9 for sums)."""
    got = {item["key"]: item for item in [answer["baseline"], *answer["variant_results"]]}
    for row in rows:
        item = got[row[0]]
        if name.startswith("funnel"):
            assert (item["number_of_samples"], item["step_counts"]) == (row[1], [row[2], row[3]]), (item, row)
            continue
        names = ["number_of_samples", "sum", "sum_squares"]
        names += ["denominator_sum", "denominator_sum_squares", "numerator_denominator_sum_product"] * (len(row) > 4)
        for field, value in zip(names, row[1:], strict=True):
            assert abs(item[field] - value) <= 1e-9 * max(1.0, abs(value)), (name, field, item[field], value)


def main() -> None:
    parser = bench_arguments(__doc__, runs=3)
    args = parser.parse_args()

    from hoglab.server.experiments.rules import create_with_flag

    with generated_service("metrics", args.events, timeout=900) as made:
        engine, store = made.service.state.engine, made.service.state.store
        team, ask, end = made.team, made.ask, made.end
        begin, stop = end - timedelta(days=101), end + timedelta(hours=1)
        experiment, _ = create_with_flag(store, team, store.users.default().id, {
            "name": "bench", "feature_flag_key": FLAG, "start_date": begin.isoformat(), "end_date": stop.isoformat(),
            "exposure_criteria": {"exposure_config": {"event": "$pageview", "properties": []}},
            "metrics": list(METRICS.values())})  # fmt: skip
        since, until = (d.strftime("%Y-%m-%d %H:%M:%S.%f") for d in (begin, stop))

        print("\n| metric | by hand ms | end to end ms | ratio | endpoint's execute ms |")
        print("|---|---:|---:|---:|---:|")
        for name, metric in METRICS.items():
            query = {"kind": "ExperimentQuery", "experiment_id": experiment.id, "metric": metric}
            sql = hand_sql(name, team, since, until)

            def raw(sql: str = sql) -> Any:
                return orjson.loads(engine.execute_json(sql, settings={"join_use_nulls": 1}).data)

            def check(answer: dict[str, Any], rows: Any, name: str = name) -> None:
                same(answer, rows, name)

            time_against_hand(name, ask, query, raw, check, args.runs, None)


if __name__ == "__main__":
    sys.exit(main())
