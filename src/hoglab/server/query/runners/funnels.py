"""``FunnelsQuery``: how many persons (or groups, ``aggregation_group_type_index``) go through 1 to 20 steps within
a window, in PostHog's shapes.

For example (a sketch of a call and its answer, not run)::

    {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"},
                                        {"kind": "EventsNode", "event": "purchase"}]}
    -> {"results": [{"order": 0, "name": "$pageview", "count": 100, ...},
                    {"order": 1, "name": "purchase", "count": 40, "average_conversion_time": 3600.0, ...}]}

``steps``: a list of steps (with a breakdown, a list of such lists, one per value, breakdown values as lists);
``time_to_convert``: ``{"average_conversion_time", "bins": [[seconds, persons], ...]}``; ``trends``: conversion
rate (%) per interval of entering the funnel. The per-person replay is in ``funnels_sql``. A step (or exclusion)
may name an action: the step is named after it (``type: "actions"``, ``action_id`` its id); an action the project
does not have is a 400 naming the step, as PostHog's.
"""

from __future__ import annotations

import math
from typing import Any

from hoglab.schema import FunnelsQuery
from hoglab.translate.actions import Actions
from hoglab.translate.dates import QueryDateRange, bucket_key_sql, resolve_date_range
from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index, hogql_expression
from hoglab.translate.series import get, is_action, require_action, series_label

from ...errors import ValidationFailed
from .base import RunContext, register
from .breakdowns import breakdown_items, breakdown_limit
from .common import first_event_time
from .funnels_sql import PERSON_ROWS_SETTINGS, person_rows_sql, window_micros

__all__ = ["funnel_person_rows", "run_funnels"]

OTHER = "Other"


def _filter(query: FunnelsQuery) -> Any:
    from hoglab.schema.queries import FunnelsFilter

    return query.funnelsFilter or FunnelsFilter()


def _bv_expr(query: FunnelsQuery, p: Params) -> str | None:
    items = breakdown_items(query.breakdownFilter)
    if not items:
        return None
    if len(items) > 1:
        raise ValidationFailed("Funnels break down by one property.", attr="breakdownFilter.breakdowns")
    if items[0].kind == "hogql":  # PostHog's HogQL breakdown: any expression of the event (hoglab.by_variant's)
        return f"ifNull(toString({hogql_expression(items[0].prop, 'breakdownFilter.breakdown')}), {p.add('')})"
    if items[0].kind not in ("event", "person", "group"):
        raise ValidationFailed("Funnels break down by an event, person or group property, or a HogQL expression.",
                               attr="breakdownFilter")  # fmt: skip
    return f"ifNull(toString({items[0].expr()}), {p.add('')})"


def funnel_person_rows(query: FunnelsQuery, ctx: RunContext, p: Params) -> tuple[str, QueryDateRange]:
    """HogQL of the per-person rows (``actor_id, pv, step_reached, times``) and the resolved range."""
    ff = _filter(query)
    interval = query.interval or "day"
    rng = resolve_date_range(
        query.dateRange, interval, now=ctx.now, timezone=ctx.timezone, first_event=lambda: first_event_time(ctx),
        default_from="-7d",
    )  # fmt: skip
    order = ff.funnelOrderType or "ordered"
    exclusions = list(ff.exclusions or [])
    n = len(query.series)
    if order == "unordered" and exclusions:
        for ex in exclusions:
            if ex.funnelFromStep != 0 or ex.funnelToStep != n - 1:
                raise ValidationFailed(
                    "Partial exclusions are not allowed in unordered funnels.", attr="funnelsFilter.exclusions"
                )
    attribution = ff.breakdownAttributionType or "first_touch"
    attribution_step = int(ff.breakdownAttributionValue or 0)
    if attribution == "step" and attribution_step >= n:
        raise ValidationFailed(
            "breakdownAttributionValue must name a step.", attr="funnelsFilter.breakdownAttributionValue"
        )
    for i, step in enumerate(query.series):
        require_action(step, ctx.actions, f"series.{i}")
    for j, ex in enumerate(exclusions):
        require_action(ex, ctx.actions, f"funnelsFilter.exclusions.{j}")
    aggregate_by = ff.funnelAggregateByHogQL
    actor = hogql_expression(aggregate_by, "funnelsFilter.funnelAggregateByHogQL") if aggregate_by else "person_id"
    actor_condition = "true"
    if query.aggregation_group_type_index is not None:
        # Groups go through the funnel instead of persons (PostHog's aggregation target); events without a group of
        # that type take no part.
        column = f"`$group_{group_type_index(query.aggregation_group_type_index, 'aggregation_group_type_index')}`"
        actor, actor_condition = column, f"{column} != ''"
    start, end = rng.bounds_utc()
    sql = person_rows_sql(
        query, list(query.series), p, project=ctx.project, time_from=p.add(rng.date_from), time_to=p.add(end),
        bv_expr=_bv_expr(query, p), attribution=attribution, attribution_step=attribution_step, order=order,
        window=window_micros(ff), exclusions=exclusions if order != "unordered" else [], actor=actor,
        actor_condition=actor_condition,
        actions=ctx.actions,
    )  # fmt: skip
    del start
    return sql, rng


def _step_aggregates(n: int) -> str:
    parts = [f"countIf(step_reached >= {j}) AS s{j}" for j in range(n)]
    for j in range(1, n):
        diff = f"(times[{j + 1}] - times[{j}]) / 1000000"
        cond = f"step_reached >= {j} AND times[{j + 1}] - times[{j}] > 0"
        parts.append(f"avgIf({diff}, {cond}) AS a{j}")
        parts.append(f"quantileExactInclusiveIf(0.5)({diff}, {cond}) AS md{j}")
    return ", ".join(parts)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _steps(
    query: FunnelsQuery, row: dict[str, Any], breakdown: list[str] | None, actions: Actions
) -> list[dict[str, Any]]:
    out = []
    for j, series in enumerate(query.series):
        action = is_action(series)
        step: dict[str, Any] = {
            "action_id": get(series, "id") if action else get(series, "event"),
            # an "any event" step has no name in PostHog's funnel answer (its trends call it "All events")
            "name": series_label(series, actions) if action or get(series, "event") is not None else None,
            "custom_name": get(series, "custom_name"),
            "order": j,
            "people": [],
            "count": int(row[f"s{j}"]),
            "type": "actions" if action else "events",
            "average_conversion_time": _number(row.get(f"a{j}")) if j else None,
            "median_conversion_time": _number(row.get(f"md{j}")) if j else None,
        }
        if breakdown is not None:
            step["breakdown"] = breakdown
            step["breakdown_value"] = breakdown
        out.append(step)
    return out


def _run_steps(query: FunnelsQuery, ctx: RunContext, hogql: list[str]) -> tuple[Any, QueryDateRange]:
    p = Params()
    persons, rng = funnel_person_rows(query, ctx, p)
    n = len(query.series)
    grouped = breakdown_items(query.breakdownFilter)
    sql = f"SELECT pv AS bv, {_step_aggregates(n)} FROM ({persons}) WHERE step_reached >= 0 GROUP BY bv"
    compiled = ctx.compile(sql, values=p.values, max_limit=1_000_000)
    hogql.append(compiled.hogql)
    found = ctx.execute(compiled, settings=PERSON_ROWS_SETTINGS).to_pylist()
    if not grouped:
        row = found[0] if found else {f"s{j}": 0 for j in range(n)}
        return _steps(query, row, None, ctx.actions), rng
    found.sort(key=lambda r: (tuple(-int(r[f"s{j}"]) for j in reversed(range(n))), str(r["bv"])))
    limit = breakdown_limit(query.breakdownFilter)
    if len(found) > limit:
        top = [r["bv"] for r in found[:limit]]
        p2 = Params("q")
        persons2, _ = funnel_person_rows(query, ctx, p2)
        merged = (
            f"SELECT if(pv IN {p2.add(top)}, pv, {p2.add(OTHER)}) AS bv, {_step_aggregates(n)} "
            f"FROM ({persons2}) WHERE step_reached >= 0 GROUP BY bv"
        )
        compiled = ctx.compile(merged, values=p2.values, max_limit=limit + 2)
        found = ctx.execute(compiled, settings=PERSON_ROWS_SETTINGS).to_pylist()
        found.sort(key=lambda r: (r["bv"] == OTHER, tuple(-int(r[f"s{j}"]) for j in reversed(range(n))), str(r["bv"])))
    return [_steps(query, row, [row["bv"]], ctx.actions) for row in found], rng


def _run_time_to_convert(query: FunnelsQuery, ctx: RunContext, hogql: list[str]) -> tuple[Any, QueryDateRange]:
    ff = _filter(query)
    n = len(query.series)
    first = int(ff.funnelFromStep or 0)
    last = int(ff.funnelToStep) if ff.funnelToStep is not None else n - 1
    if not 0 <= first < last < n:
        raise ValidationFailed(
            "funnelFromStep must come before funnelToStep, both steps of the funnel.", attr="funnelsFilter.funnelToStep"
        )
    p = Params()
    persons, rng = funnel_person_rows(query, ctx, p)
    diff = f"(times[{last + 1}] - times[{first + 1}]) / 1000000"
    sql = f"SELECT groupArray({diff}) AS seconds FROM ({persons}) WHERE step_reached >= {last}"
    compiled = ctx.compile(sql, values=p.values, max_limit=10)
    hogql.append(compiled.hogql)
    found = ctx.execute(compiled, settings=PERSON_ROWS_SETTINGS).to_pylist()
    seconds = sorted(float(s) for s in (found[0]["seconds"] if found else []))
    return {"average_conversion_time": sum(seconds) / len(seconds) if seconds else None,
            "bins": time_bins(seconds, ff.binCount)}, rng  # fmt: skip


def time_bins(seconds: list[float], bin_count: int | None) -> list[list[float | int]]:
    """``[[bin start (s), persons], ...]``: equal-width bins from the fastest to the slowest conversion.

    The bin count defaults to the cube root of the number of conversions (at least 1, at most 90); the width is
    a whole number of seconds (at least 1); the slowest conversion falls in the last bin.

    >>> time_bins([10, 20, 30, 100], 3)
    [[10, 3], [40, 0], [70, 1]]
    """
    if not seconds:
        return []
    count = bin_count or max(1, min(90, round(len(seconds) ** (1 / 3))))
    low, high = math.floor(min(seconds)), max(seconds)
    width = max(1, math.ceil((high - low) / count))
    counts = [0] * count
    for value in seconds:
        counts[min(count - 1, int((value - low) // width))] += 1
    return [[low + i * width, counts[i]] for i in range(count)]


def _run_trends(query: FunnelsQuery, ctx: RunContext, hogql: list[str]) -> tuple[Any, QueryDateRange]:
    ff = _filter(query)
    n = len(query.series)
    first = int(ff.funnelFromStep or 0)
    last = int(ff.funnelToStep) if ff.funnelToStep is not None else n - 1
    p = Params()
    persons, rng = funnel_person_rows(query, ctx, p)
    entered = f"fromUnixTimestamp64Micro(times[1], {p.add(ctx.timezone)})"
    bucket = bucket_key_sql(rng.interval, entered)
    sql = (
        f"SELECT {bucket} AS bucket, countIf(step_reached >= {first}) AS entered, "
        f"countIf(step_reached >= {last}) AS converted FROM ({persons}) WHERE step_reached >= 0 GROUP BY bucket"
    )
    compiled = ctx.compile(sql, values=p.values, max_limit=len(rng.buckets()) + 1)
    hogql.append(compiled.hogql)
    by_bucket = {r["bucket"]: r for r in ctx.execute(compiled, settings=PERSON_ROWS_SETTINGS).to_pylist()}
    buckets = rng.buckets()
    data = []
    for b in buckets:
        r = by_bucket.get(rng.key(b))
        data.append(round(100.0 * r["converted"] / r["entered"], 2) if r and r["entered"] else 0.0)
    item = {
        "data": data,
        "days": [rng.day_text(b) for b in buckets],
        "labels": [rng.label(b) for b in buckets],
        "count": len(data),
        "breakdown_value": None,
    }
    return [item], rng


SPLIT_WARNING_SHARE = 0.01
"""The share of people split between breakdown values above which a funnel by an event property is warned."""


def breakdown_warning(query: FunnelsQuery, ctx: RunContext, rng: QueryDateRange) -> str | None:
    """A warning when a funnel breaks down by an *event* property with ``all_events`` or ``step`` attribution
    and the steps' events do not all carry it alike: each value then keeps only its own events, so a later step
    without the first step's value is not counted (a breakdown by ``$feature/<flag>``, which events before the
    exposure lack). First- and last-touch attribution give each person one value, and are not warned."""
    items = breakdown_items(query.breakdownFilter)
    attribution = _filter(query).breakdownAttributionType or "first_touch"
    if not items or items[0].kind != "event" or attribution not in ("all_events", "step"):
        return None
    p = Params()
    names = [get(series, "event") for series in query.series]
    where = [f"timestamp >= {p.add(rng.date_from)}", f"timestamp < {p.add(rng.bounds_utc()[1])}"]
    if None not in names:
        where.append(f"event IN {p.add(sorted({str(n) for n in names}))}")
    sql = f"""
        SELECT count() AS people, countIf(n > 1) AS split
        FROM (SELECT person_id, uniqExact({_bv_expr(query, p)}) AS n FROM events WHERE {" AND ".join(where)}
              GROUP BY person_id)"""
    row = ctx.execute(ctx.compile(sql, values=p.values)).to_pylist()
    people, split = (int(row[0]["people"]), int(row[0]["split"])) if row else (0, 0)
    if not people or split / people <= SPLIT_WARNING_SHARE:
        return None
    return (f"{split:,} of {people:,} people ({split / people:.0%}) have step events with different values of the "
            f"event property {items[0].prop!r} (or without it): with {attribution} attribution a value keeps only "
            "its own events, so their later steps without it are not counted. Use first-touch attribution, a "
            "person property, or an experiment's variant with hoglab.by_variant(query, experiment).")


@register("FunnelsQuery")
def run_funnels(query: FunnelsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a FunnelsQuery (``steps``, ``time_to_convert`` or ``trends``) as PostHog does."""
    viz = _filter(query).funnelVizType or "steps"
    hogql: list[str] = []
    if viz == "time_to_convert":
        results, rng = _run_time_to_convert(query, ctx, hogql)
    elif viz == "trends":
        results, rng = _run_trends(query, ctx, hogql)
    else:
        results, rng = _run_steps(query, ctx, hogql)
    warning = breakdown_warning(query, ctx, rng)
    return {
        "results": results,
        # PostHog's place for an answer's warnings (HogQLNotice messages): the client issues them.
        **({"metadata": {"warnings": [{"message": warning}]}} if warning else {}),
        "isUdf": False,
        "timezone": ctx.timezone,
        "resolved_date_range": rng.to_json(),
        "hogql": "\n".join(hogql),
        "timings": ctx.timings.to_list(),
    }
