"""``StickinessQuery``: how many people were active in exactly 1, 2, ... N intervals of the range.

For example (a sketch of a call and its answer, not run)::

    {"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}],
     "dateRange": {"date_from": "-6d"}}
    -> {"results": [{"label": "$pageview", "data": [12, 5, 3, 0, 1, 0, 0], "days": [1, 2, 3, 4, 5, 6, 7],
                     "labels": ["1 day", "2 days", ...], "count": 21, "action": {...}}]}

PostHog's semantics (``StickinessQueryRunner``), restated:

* An interval counts for a person when they did the series' event in it at least once, or as many times as
  ``stickinessFilter.stickinessCriteria`` asks (``gte``/``lte``/``exact`` a number of events).
* ``intervalCount`` ``k`` groups the intervals ``k`` at a time, counted back from ``date_to`` (ClickHouse's ``age``:
  whole intervals between the event and ``date_to``); ``days`` then run to ``ceil(intervals / k)``.
* ``computedAs: cumulative``: ``data[i]`` is the people active in ``i + 1`` intervals *or more*.
* ``compareFilter``: each series is followed by the same series over the previous period (``compare_label``).
* ``math: "hogql"`` counts distinct values of ``math_hogql`` instead of persons; ``math: "unique_group"`` counts
  the groups of ``math_group_type_index`` (events without one left out; StickinessQuery has no
  ``aggregation_group_type_index``, as PostHog's); other maths count persons.
* A series naming an action is labelled with the action's name; one naming an action the project does not have
  is left out of the results (PostHog's ``1 = 2`` filter, series dropped).
"""

from __future__ import annotations

import math
from typing import Any

from hoglab.schema import StickinessQuery
from hoglab.translate.actions import Actions
from hoglab.translate.dates import QueryDateRange, resolve_date_range
from hoglab.translate.params import Params
from hoglab.translate.properties import hogql_expression
from hoglab.translate.series import get, is_action, series_action, series_conditions, series_label

from .base import RunContext, register
from .common import first_event_time
from .intervals import interval_start_sql
from .trends import previous_range
from .trends_sql import group_actor, group_condition

__all__ = [
    "is_cumulative",
    "run_stickiness",
    "stickiness_actor_rows_sql",
    "stickiness_periods",
    "stickiness_ranges",
]

_OPERATORS = {"gte": ">=", "lte": "<=", "exact": "="}


def stickiness_ranges(query: StickinessQuery, ctx: RunContext) -> list[tuple[QueryDateRange, str | None]]:
    """The range, and with ``compareFilter`` the previous one: ``[(range, compare label or None), ...]``."""
    rng = resolve_date_range(
        query.dateRange,
        query.interval or "day",
        now=ctx.now,
        timezone=ctx.timezone,
        first_event=lambda: first_event_time(ctx),
    )
    if not (query.compareFilter and query.compareFilter.compare):
        return [(rng, None)]
    return [(rng, "current"), (previous_range(rng, query.compareFilter.compare_to), "previous")]


def is_cumulative(query: StickinessQuery) -> bool:
    """Whether ``data[i]`` counts people active in ``i + 1`` intervals or more (``computedAs: cumulative``)."""
    return bool(query.stickinessFilter and query.stickinessFilter.computedAs == "cumulative")


def stickiness_periods(query: StickinessQuery, rng: QueryDateRange) -> int:
    """How many periods (``days``) the answer has: the intervals of the range, ``intervalCount`` at a time."""
    return math.ceil(len(rng.buckets()) / (query.intervalCount or 1))


def stickiness_actor_rows_sql(
    query: StickinessQuery, series: Any, index: int, rng: QueryDateRange, p: Params, *, project: Any,
    actions: Actions | None = None,
) -> str:  # fmt: skip
    """HogQL with one row per actor of the series: ``actor_id, active`` (the number of active periods). The events
    are ``e``, as PostHog's stickiness names them, so ``math_hogql`` may say ``e.properties.x``."""
    start, end = rng.bounds_utc()
    where = series_conditions(query, series, p, project=project, attr=f"series.{index}", actions=actions)
    where += [f"timestamp >= {p.add(start)}", f"timestamp <= {p.add(end)}"]
    if query.intervalCount is None:
        period = interval_start_sql(rng.interval)
    else:
        # Whole intervals on the project's wall clock (the zone given, or ClickHouse would count them in UTC).
        age = f"age({p.add(rng.interval)}, timestamp, {p.add(end)}, {p.add(rng.timezone)})"
        period = age if query.intervalCount == 1 else f"floor({age} / {int(query.intervalCount)})"
    actor = group_actor(series, f"series.{index}") or "person_id"
    grouped = group_condition(series, f"series.{index}")
    if grouped:
        where.append(grouped)
    if series.math == "hogql" and series.math_hogql:
        actor = hogql_expression(series.math_hogql, f"series.{index}.math_hogql")
    criteria = query.stickinessFilter.stickinessCriteria if query.stickinessFilter else None
    if criteria is None:
        # Any event makes the period active: count each actor's distinct periods in one pass.
        return f"""
        SELECT {actor} AS actor_id, uniqExact({period}) AS active FROM events AS e
        WHERE {" AND ".join(where)}
        GROUP BY actor_id"""
    having = f"count() {_OPERATORS[criteria.operator]} {p.add(criteria.value)}"
    return f"""
        SELECT actor_id, count() AS active FROM (
            SELECT {actor} AS actor_id, {period} AS period FROM events AS e
            WHERE {" AND ".join(where)}
            GROUP BY actor_id, period
            HAVING {having}
        ) GROUP BY actor_id"""


def _interval_label(n: int, interval: str, cumulative: bool) -> str:
    return f"{n} {interval}{'' if n == 1 else 's'}{' or more' if cumulative else ''}"


@register("StickinessQuery")
def run_stickiness(query: StickinessQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a StickinessQuery as PostHog does: one item per series (and per compared period)."""
    cumulative = is_cumulative(query)
    ranges = stickiness_ranges(query, ctx)
    results: list[dict[str, Any]] = []
    hogql: list[str] = []
    for index, series in enumerate(query.series):
        if is_action(series) and series_action(series, ctx.actions, f"series.{index}") is None:
            continue  # an action the project does not have: the series is left out
        for rng, compare_label in ranges:
            p = Params()
            rows = stickiness_actor_rows_sql(query, series, index, rng, p, project=ctx.project, actions=ctx.actions)
            n = stickiness_periods(query, rng)
            compiled = ctx.compile(
                f"SELECT active, count() AS people FROM ({rows}) GROUP BY active", values=p.values, max_limit=n + 1
            )
            hogql.append(compiled.hogql)
            counts = {int(r["active"]): int(r["people"]) for r in ctx.execute(compiled).to_pylist()}
            data = [counts.get(i, 0) for i in range(1, n + 1)]
            total = sum(data)
            if cumulative:
                data = [sum(data[i:]) for i in range(n)]
            label = series_label(series, ctx.actions)
            item: dict[str, Any] = {
                "count": total,
                "data": data,
                "days": list(range(1, n + 1)),
                "label": label,
                "labels": [_interval_label(i, rng.interval, cumulative) for i in range(1, n + 1)],
                "action": {"order": index, "type": "events", "name": label,
                           "id": label if is_action(series) else get(series, "event"),
                           "custom_name": series.custom_name},
            }  # fmt: skip
            if compare_label:
                item.update(compare=True, compare_label=compare_label)
            results.append(item)
    return {
        "results": results,
        "timezone": ctx.timezone,
        "resolved_date_range": ranges[0][0].to_json(),
        "hogql": "\nUNION ALL\n".join(hogql),
        "timings": ctx.timings.to_list(),
    }
