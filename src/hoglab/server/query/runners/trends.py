"""``TrendsQuery``: one line per series (and breakdown value), one point per interval, PostHog's result items.

For example (a sketch of a call and its answer, not run)::

    POST /api/projects/1/query {"query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode",
      "event": "$pageview", "math": "dau"}], "dateRange": {"date_from": "-7d"}}}
    -> {"results": [{"data": [..8 values..], "labels": ["1-Jun-2025", ...], "days": ["2025-06-01", ...],
         "count": 42.0, "label": "$pageview", "breakdown_value": null, "action": {...}}], "hasMore": false, ...}

Every series (and, with ``compareFilter``, every series again for the previous period) is one query
(``trends_sql``); zero-filling, smoothing, cumulative sums, labels and formulas happen here. A series that names
an action is labelled with the action's name; one naming an action the project does not have is left out of the
results, as PostHog leaves it out.
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime
from typing import Any

from hoglab.schema import TrendsQuery
from hoglab.schema.queries import TOTAL_VALUE_DISPLAYS
from hoglab.translate.actions import Actions
from hoglab.translate.dates import QueryDateRange, resolve_date_range
from hoglab.translate.params import Params
from hoglab.translate.series import get, is_action, series_action, series_label

from ...errors import ValidationFailed
from .base import RunContext, register
from .breakdowns import BREAKDOWN_NULL, BREAKDOWN_OTHER, has_breakdown
from .common import first_event_time
from .formulas import evaluate_formula, formula_letters
from .trends_sql import series_sql

__all__ = ["previous_range", "run_trends", "trends_items"]


def previous_range(rng: QueryDateRange, compare_to: str | None) -> QueryDateRange:
    """The period a comparison looks at: the same number of intervals just before (or ``compare_to`` ago)."""
    if compare_to:
        from hoglab.translate.dates import parse_relative

        moved = parse_relative(compare_to, rng.date_from, attr="compareFilter.compare_to")
        if moved is None or not compare_to.startswith("-"):
            raise ValidationFailed("compare_to must be a relative date such as '-1w'.", attr="compareFilter.compare_to")
        delta = rng.date_from.replace(tzinfo=None) - moved.replace(tzinfo=None)
        tz = rng.date_from.tzinfo
        if compare_to[-1] in "dwmqy":  # parse_relative truncated to the day: keep the time of day instead
            delta = rng.date_from.replace(tzinfo=None) - _exact_back(rng.date_from, compare_to)
        return QueryDateRange(
            date_from=(rng.date_from.replace(tzinfo=None) - delta).replace(tzinfo=tz),
            date_to=(rng.date_to.replace(tzinfo=None) - delta).replace(tzinfo=tz),
            interval=rng.interval,
            timezone=rng.timezone,
            explicit=rng.explicit,
        )
    return rng.shifted(-len(rng.buckets()))


def _exact_back(dt: datetime, text: str) -> datetime:
    from hoglab.translate.dates import _add

    count = int(text[1:-1] or 1)
    return _add(dt.replace(tzinfo=None), text[-1], -count)


def _smooth(data: list[float], n: int) -> list[float]:
    # PostHog: floor of the average of the last n points (fewer at the start).
    out = []
    for i in range(len(data)):
        window = data[max(0, i - n + 1) : i + 1]
        out.append(float(math.floor(sum(window) / len(window))))
    return out


def _clean(value: Any) -> float:
    if value is None:
        return 0.0
    number = float(value)
    return 0.0 if math.isnan(number) or math.isinf(number) else number


def _is_other(bv: Any) -> bool:
    """Whether a breakdown value is the "other" bucket (one marker, or one per breakdown of several)."""
    if isinstance(bv, tuple | list):
        return bool(bv) and all(v == BREAKDOWN_OTHER for v in bv)
    return bool(bv == BREAKDOWN_OTHER)


def _sort_key(item: dict[str, Any]) -> tuple[Any, ...]:
    bv = item.get("breakdown_value")
    special = 2 if _is_other(bv) else 1 if bv == BREAKDOWN_NULL else 0
    aggregated = item.get("aggregated_value")
    total = float(aggregated) if aggregated is not None else float(sum(item.get("data") or []))
    return (special, -total, str(bv))


def _action(series: Any, order: int, days: list[str], actions: Actions) -> dict[str, Any]:
    label = series_label(series, actions)
    return {
        "days": days,
        # PostHog puts the action's name where an event series has its event (and keeps the type "events").
        "id": label if is_action(series) else get(series, "event"),
        "type": "events",
        "order": order,
        "name": label,
        "custom_name": get(series, "custom_name"),
        "math": get(series, "math"),
        "math_property": get(series, "math_property"),
        "math_hogql": get(series, "math_hogql"),
        "math_group_type_index": get(series, "math_group_type_index"),
        "properties": {},
    }


def trends_items(
    query: TrendsQuery, ctx: RunContext, rng: QueryDateRange, *, compare_label: str | None, hogql: list[str]
) -> tuple[list[list[dict[str, Any]]], bool]:
    """The result items of every series over ``rng`` (one list per series) and whether values were cut off."""
    tf = query.trendsFilter
    display = (tf.display if tf else None) or "ActionsLineGraph"
    total_value = display in TOTAL_VALUE_DISPLAYS
    cumulative = display == "ActionsLineGraphCumulative"
    smoothing = (tf.smoothingIntervals if tf else None) or 1
    breakdown = has_breakdown(query.breakdownFilter)
    hide_other = bool(query.breakdownFilter and query.breakdownFilter.breakdown_hide_other_aggregation)
    buckets = rng.buckets()
    keys = [rng.key(b) for b in buckets]
    days = [rng.day_text(b) for b in buckets]
    labels = [rng.label(b) for b in buckets]
    action_days = [b.isoformat() for b in buckets]
    has_more = False
    per_series: list[list[dict[str, Any]]] = []
    for index, series in enumerate(query.series):
        if is_action(series) and series_action(series, ctx.actions, f"series.{index}") is None:
            per_series.append([])  # an action the project does not have: the series is left out
            continue
        p = Params()
        sql = series_sql(
            query, series, rng, p, project=ctx.project, total_value=total_value, cumulative=cumulative,
            attr=f"series.{index}", actions=ctx.actions,
        )  # fmt: skip
        compiled = ctx.compile(sql.hogql, values=sql.values, max_limit=sql.max_rows)
        hogql.append(compiled.hogql)
        found = ctx.execute(compiled).to_pylist()
        values: dict[Any, dict[str, float]] = {}
        for row in found:
            bucket, bv, value = row.values()  # (bucket, bv, value) or the ranked names, in this order
            bv = tuple(bv) if isinstance(bv, list) else bv
            values.setdefault(bv, {})[bucket] = _clean(value)
        if not breakdown:
            values = {None: values.get("", {})}
        items = []
        for bv, by_bucket in values.items():
            if _is_other(bv):
                has_more = True
                if hide_other:
                    continue
            item: dict[str, Any] = {"label": series_label(series, ctx.actions)}
            if total_value:
                item.update(data=[], days=[], count=0, aggregated_value=by_bucket.get("", 0.0))
            else:
                data = [by_bucket.get(k, 0.0) for k in keys]
                if smoothing > 1:
                    data = _smooth(data, smoothing)
                if cumulative:
                    data = list(itertools.accumulate(data))
                count = data[-1] if cumulative and data else float(sum(data))
                item.update(data=data, labels=labels, days=days, count=count)
            item["breakdown_value"] = list(bv) if isinstance(bv, tuple) else bv
            if breakdown:
                shown = "::".join(bv) if isinstance(bv, tuple) else str(bv)
                item["label"] = f"{item['label']} - {shown}" if len(query.series) > 1 else shown
            item["action"] = _action(series, index, action_days, ctx.actions)
            item["filter"] = _filter(query, rng)
            if compare_label:
                item.update(compare=True, compare_label=compare_label)
            items.append(item)
        per_series.append(sorted(items, key=_sort_key) if breakdown else items)
    return per_series, has_more


def _filter(query: TrendsQuery, rng: QueryDateRange) -> dict[str, Any]:
    out: dict[str, Any] = {
        "insight": "TRENDS",
        "date_from": rng.date_from.isoformat(),
        "date_to": rng.date_to.isoformat(),
        "interval": rng.interval,
        # PostHog's flag: an explicit range counts from date_from itself, a relative one from the start of the
        # first interval (so only an explicit range can make the first period partial).
        "explicit_date": rng.explicit,
        "filter_test_accounts": bool(query.filterTestAccounts),
    }
    if query.trendsFilter and query.trendsFilter.display:
        out["display"] = query.trendsFilter.display
    if query.breakdownFilter and query.breakdownFilter.breakdown is not None:
        out["breakdown"] = query.breakdownFilter.breakdown
        out["breakdown_type"] = query.breakdownFilter.breakdown_type
        if query.breakdownFilter.breakdown_group_type_index is not None:
            out["breakdown_group_type_index"] = query.breakdownFilter.breakdown_group_type_index
    if query.aggregation_group_type_index is not None:
        # Echoed only, as PostHog: a trend counts groups through a series' unique_group math.
        out["aggregation_group_type_index"] = query.aggregation_group_type_index
    return out


def _formulas(query: TrendsQuery) -> list[tuple[str, str | None]]:
    tf = query.trendsFilter
    if tf is None:
        return []
    if tf.formulaNodes:
        return [(node.formula, node.custom_name) for node in tf.formulaNodes]
    if tf.formulas:
        return [(f, None) for f in tf.formulas]
    return [(tf.formula, None)] if tf.formula else []


def _apply_formula(
    formula: str, name: str | None, per_series: list[list[dict[str, Any]]], total_value: bool, attr: str
) -> list[dict[str, Any]]:
    groups: dict[Any, list[dict[str, Any] | None]] = {}
    for i, items in enumerate(per_series):
        for item in items:
            bv = item.get("breakdown_value")
            key = tuple(bv) if isinstance(bv, list) else bv
            groups.setdefault(key, [None] * len(per_series))[i] = item
    out = []
    for members in groups.values():
        base = dict(next(m for m in members if m is not None))
        if total_value:
            columns = [[m["aggregated_value"] if m else 0.0] for m in members]
            base.update(aggregated_value=evaluate_formula(formula, columns, attr=attr)[0], data=[], count=0)
        else:
            length = len(base["data"])
            columns = [m["data"] if m else [0.0] * length for m in members]
            data = evaluate_formula(formula, columns, attr=attr)
            base.update(data=data, count=float(sum(data)))
        base.update(label=name or f"Formula ({formula})", action=None)
        out.append(base)
    return sorted(out, key=_sort_key)


@register("TrendsQuery")
def run_trends(query: TrendsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a TrendsQuery as PostHog does: ``results``, ``hasMore``, ``resolved_date_range``, ``hogql``."""
    tf = query.trendsFilter
    display = (tf.display if tf else None) or "ActionsLineGraph"
    total_value = display in TOTAL_VALUE_DISPLAYS
    interval = "day" if total_value else (query.interval or "day")
    formulas = _formulas(query)
    for i, (formula, _) in enumerate(formulas):
        for letter in formula_letters(formula, attr=f"trendsFilter.formulaNodes.{i}.formula"):
            if ord(letter) - ord("A") >= len(query.series):
                raise ValidationFailed(
                    f"Formula {formula!r} uses {letter}, but there is no such series.",
                    attr=f"trendsFilter.formulaNodes.{i}.formula",
                )
    rng = resolve_date_range(
        query.dateRange, interval, now=ctx.now, timezone=ctx.timezone, first_event=lambda: first_event_time(ctx)
    )
    compare = bool(query.compareFilter and query.compareFilter.compare)
    periods = [(rng, "current" if compare else None)]
    if compare:
        compare_to = query.compareFilter.compare_to if query.compareFilter else None
        periods.append((previous_range(rng, compare_to), "previous"))
    hogql: list[str] = []
    results: list[dict[str, Any]] = []
    has_more = False
    for period, label in periods:
        per_series, more = trends_items(query, ctx, period, compare_label=label, hogql=hogql)
        has_more = has_more or more
        if formulas:
            for i, (formula, name) in enumerate(formulas):
                attr = f"trendsFilter.formulaNodes.{i}.formula"
                results += _apply_formula(formula, name, per_series, total_value, attr)
        else:
            results += [item for items in per_series for item in items]
    return {
        "results": results,
        "hasMore": has_more,
        "timezone": ctx.timezone,
        "resolved_date_range": rng.to_json(),
        "hogql": "\nUNION ALL\n".join(hogql),
        "timings": ctx.timings.to_list(),
    }
