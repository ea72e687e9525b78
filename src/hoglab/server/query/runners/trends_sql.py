"""The HogQL of one trend series: rows ``(bucket, bv, value)`` for one period, whatever the math.

``bucket`` is the interval's wall-clock key (``dates.bucket_key_sql``; ``''`` for total-value displays), ``bv`` the
breakdown value (``''`` without a breakdown), ``value`` the math. Every math is one query:

* ``total`` ``count()``; ``dau`` ``uniqExact(person_id)``; ``unique_session`` ``uniqExact($session_id)``, the
  events without a session counting as one session ``''`` (PostHog's); ``unique_group`` ``uniqExact($group_N)``
  of ``math_group_type_index`` N (PostHog's
  "unique organizations"), events without a group of that type left out (also for ``dau``, ``weekly_active`` and
  ``monthly_active`` with a ``math_group_type_index``: PostHog still counts persons there, of events that have
  the group); property math ``sum/avg/min/max`` of ``toFloat(property)``, percentiles with
  ``quantileExactInclusive`` (exact, numpy's default "linear" method); ``hogql`` the expression.
* ``*_count_per_actor``: events per person per interval, then the aggregate over persons.
* ``weekly_active``/``monthly_active``: for each day (hour), persons active in the 7 (30) days ending with it.
* ``first_time_for_user`` (``first_matching_event_for_user``): persons whose first event (first matching
  event) ever falls in the range and matches the filters, counted in the interval of that event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hoglab.schema.nodes import COUNT_PER_ACTOR_MATH, PROPERTY_MATH
from hoglab.translate.actions import Actions
from hoglab.translate.dates import QueryDateRange, bucket_key_sql
from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index, hogql_expression, property_access
from hoglab.translate.series import get, series_conditions, series_match

from ...errors import ValidationFailed
from .breakdowns import (
    BREAKDOWN_OTHER,
    breakdown_items,
    breakdown_limit,
    breakdown_value_sql,
    has_breakdown,
    histogram_bins,
    histogram_value_sql,
    ranked_sql,
)

__all__ = ["GROUPS_MATH", "SeriesSQL", "group_actor", "series_sql"]

GROUPS_MATH = frozenset({"unique_group", "dau", "weekly_active", "monthly_active"})
"""Maths that a ``math_group_type_index`` restricts to events with a group of that type (PostHog's
``is_groups_math``); ``unique_group`` also counts those groups instead of persons."""


def group_actor(series: Any, attr: str) -> str | None:
    """``$group_N`` when the series counts groups (``math: unique_group``), else ``None`` (it counts persons)."""
    if get(series, "math") != "unique_group":
        return None
    return f"`$group_{group_type_index(get(series, 'math_group_type_index'), f'{attr}.math_group_type_index')}`"


def group_condition(series: Any, attr: str) -> str | None:
    """The condition a groups math adds (``$group_N != ''``), or ``None``."""
    index = get(series, "math_group_type_index")
    if index is None or get(series, "math") not in GROUPS_MATH:
        return None
    return f"`$group_{group_type_index(index, f'{attr}.math_group_type_index')}` != ''"

_QUANTILES = {"median": 0.5, "p75": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99}
_ACTIVE_DAYS = {"weekly_active": 7, "monthly_active": 30}


@dataclass(frozen=True)
class SeriesSQL:
    hogql: str
    values: dict[str, Any]
    max_rows: int


def _value_expr(series: Any, p: Params, attr: str) -> str:
    """HogQL for the numeric property a property math aggregates."""
    prop = get(series, "math_property")
    kind = "person" if get(series, "math_property_type") == "person_properties" else "event"
    return f"toFloat({property_access(str(prop), kind)})"


def _aggregate(math: str, expr: str) -> str:
    if math in ("sum", "avg", "min", "max"):
        return f"ifNull({math}({expr}), 0)"
    return f"ifNull(quantileExactInclusive({_QUANTILES[math]})({expr}), 0)"


def _plain_value(series: Any, math: str, p: Params, attr: str) -> str:
    if math == "total":
        return "count()"
    if math == "dau":
        return "uniqExact(person_id)"
    if math == "unique_session":
        return "uniqExact(`$session_id`)"  # PostHog's rule: events without a session are one session, ''
    if math == "unique_group":
        return f"uniqExact({group_actor(series, attr)})"
    if math == "hogql":
        return hogql_expression(get(series, "math_hogql"), f"{attr}.math_hogql")
    if math in PROPERTY_MATH:
        return _aggregate(math, _value_expr(series, p, attr))
    raise ValidationFailed(f"Unsupported math {math!r}.", attr=f"{attr}.math")


def effective_math(series: Any, interval: str) -> str:
    """The series' math, with PostHog's conversion of active users that an interval makes meaningless."""
    math = str(get(series, "math") or "total")
    if math == "weekly_active" and interval in ("week", "month"):
        return "dau"
    if math == "monthly_active" and interval == "month":
        return "dau"
    return math


def series_sql(
    query: Any,
    series: Any,
    rng: QueryDateRange,
    p: Params,
    *,
    project: Any,
    total_value: bool,
    cumulative: bool,
    attr: str,
    actions: Actions | None = None,
) -> SeriesSQL:
    """The query for one series over ``rng``; ``conditions`` are its event/property filters (with ``p``);
    ``actions``: the project's, for a series that names an action."""
    math = effective_math(series, rng.interval)
    bf = get(query, "breakdownFilter")
    with_breakdown = has_breakdown(bf)
    bv = breakdown_value_sql(bf, p) if with_breakdown else "''"
    bucket = "''" if total_value else bucket_key_sql(rng.interval)
    start, end = rng.bounds_utc()
    time_from, time_to = p.add(start), p.add(end)
    conditions = series_conditions(query, series, p, project=project, attr=attr, event=False)
    grouped = group_condition(series, attr)
    if grouped:
        conditions.append(grouped)
    filters = " AND ".join(conditions) or "true"
    timezone = getattr(project, "timezone", None) or "UTC"
    event_cond = series_match(series, p, actions=actions, timezone=timezone, attr=attr) or "true"
    where = f"{event_cond} AND {filters}"
    n_buckets = 1 if total_value else len(rng.buckets())
    bins = histogram_bins(bf) if with_breakdown else None
    if bins is not None:
        bv = histogram_value_sql(bf, bins, f"timestamp >= {time_from} AND timestamp <= {time_to} AND {where}")

    if math in ("first_time_for_user", "first_matching_event_for_user"):
        inner = _first_time_sql(
            math, event_cond, filters, rng.interval if not total_value else None, bv, time_from, time_to
        )
    elif math in _ACTIVE_DAYS:
        inner = _active_sql(math, where, bucket, bv, rng, p, total_value)
    elif math in COUNT_PER_ACTOR_MATH:
        agg = math.removesuffix("_count_per_actor")
        final = _aggregate(agg, "c")
        inner = f"""
            SELECT bucket, bv, {final} AS value FROM (
                SELECT {bucket} AS bucket, {bv} AS bv, person_id, count() AS c FROM events
                WHERE timestamp >= {time_from} AND timestamp <= {time_to} AND {where}
                GROUP BY bucket, bv, person_id
            ) GROUP BY bucket, bv"""
    elif cumulative and math in ("dau", "unique_group") and not total_value:
        # Cumulative unique users count each person once, in the interval of their first event (PostHog); unique
        # groups each group once the same way.
        actor = group_actor(series, attr) or "person_id"
        inner = f"""
            SELECT bucket, bv, count() AS value FROM (
                SELECT min({bucket}) AS bucket, {bv} AS bv, {actor} AS actor FROM events
                WHERE timestamp >= {time_from} AND timestamp <= {time_to} AND {where}
                GROUP BY actor, bv
            ) GROUP BY bucket, bv"""
    else:
        value = _plain_value(series, math, p, attr)
        inner = f"""
            SELECT {bucket} AS bucket, {bv} AS bv, {value} AS value FROM events
            WHERE timestamp >= {time_from} AND timestamp <= {time_to} AND {where}
            GROUP BY bucket, bv"""
    if with_breakdown:
        limit = breakdown_limit(bf)
        ascending = math == "min"
        # Several breakdowns: the value is an array, and so is "other" (one marker per breakdown), or the ranked
        # value would mix an array and a string.
        many = len(breakdown_items(bf))
        other = [BREAKDOWN_OTHER] * many if get(bf, "breakdowns") else BREAKDOWN_OTHER
        inner = ranked_sql(inner, limit, p.add(other), ascending=ascending)
        max_rows = (limit + 1) * n_buckets + 1
    else:
        max_rows = n_buckets + 1
    return SeriesSQL(hogql=inner, values=p.values, max_rows=max_rows)


def _first_time_sql(
    math: str, event_cond: str, filters: str, interval: str | None, bv: str, time_from: str, time_to: str
) -> str:
    first = "min(timestamp)" if math == "first_time_for_user" else f"minIf(timestamp, {filters})"
    bucket = bucket_key_sql(interval, "first_in_range") if interval else "''"
    # minIf over no rows is 1970-01-01, never equal to a real first event: such persons drop out in HAVING.
    return f"""
        SELECT {bucket} AS bucket, bv, count() AS value FROM (
            SELECT person_id, {first} AS first_ts,
                   minIf(timestamp, timestamp >= {time_from} AND {filters}) AS first_in_range,
                   argMinIf({bv}, timestamp, timestamp >= {time_from} AND {filters}) AS bv
            FROM events WHERE {event_cond} AND timestamp <= {time_to}
            GROUP BY person_id
            HAVING first_ts = first_in_range
        ) GROUP BY bucket, bv"""


def _active_sql(math: str, where: str, bucket: str, bv: str, rng: QueryDateRange, p: Params, total_value: bool) -> str:
    days = _ACTIVE_DAYS[math]
    start, end = rng.bounds_utc()
    if total_value:
        # PostHog: a total of weekly (monthly) active users is the unique users of the 7 (30) days before date_to.
        since = p.add(end.astimezone(start.tzinfo) - timedelta(days=days))
        return f"""
            SELECT '' AS bucket, {bv} AS bv, uniqExact(person_id) AS value FROM events
            WHERE timestamp > {since} AND timestamp <= {p.add(end)} AND {where}
            GROUP BY bucket, bv"""
    if rng.interval == "day":
        unit, fmt, span = "toDate(timestamp)", "'%Y-%m-%d'", days
        step = "addDays(active, k)"
    elif rng.interval == "hour":
        unit, fmt, span = "toStartOfHour(timestamp)", "'%Y-%m-%d %H:00:00'", days * 24
        step = "addHours(active, k)"
    else:
        raise ValidationFailed(f"{math} needs a day or hour interval.", attr="interval")
    lookback = rng.first_bucket - timedelta(days=days)
    first_key = p.add(rng.key(rng.first_bucket))
    last_key = p.add(rng.key(rng.buckets()[-1]))
    # Each (person, active day) counts for that day and the days-1 following ones: a day's value is then the
    # persons active in the window of `days` days ending with it.
    return f"""
        SELECT bucket, bv, uniqExact(person_id) AS value FROM (
            SELECT person_id, bv, formatDateTime({step}, {fmt}) AS bucket
            FROM (
                SELECT person_id, {bv} AS bv, {unit} AS active FROM events
                WHERE timestamp >= {p.add(lookback)} AND timestamp <= {p.add(end)} AND {where}
                GROUP BY person_id, bv, active
            )
            ARRAY JOIN range({span}) AS k
        )
        WHERE bucket >= {first_key} AND bucket <= {last_key}
        GROUP BY bucket, bv"""
