"""Retention, lifecycle, stickiness and paths answers to tidy DataFrames.

Counts are nullable ``Int64`` (``<NA>`` where the answer has no number, such as a retention period that has
not happened yet), rates ``Float64``, dates tz-aware in the answer's ``timezone`` (UTC when it names none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from ..errors import InvalidArgument
from ._insights import _dates, _series_index, _tidy_breakdown
from ._tables import as_dict, frame_metadata

__all__ = [
    "LIFECYCLE_STATUSES",
    "lifecycle_frame",
    "paths_frame",
    "retention_frame",
    "retention_table",
    "stickiness_frame",
]

LIFECYCLE_STATUSES = ("new", "returning", "resurrecting", "dormant")
"""PostHog's four lifecycle statuses, in the order its chart stacks them."""

_PERIOD_LABEL = re.compile(r"^\s*(Hour|Day|Week|Month)\s+(\d+)\s*$", re.I)
_STICKY_LABEL = re.compile(r"^\s*\d+\s+(minute|hour|day|week|month)s?\b", re.I)
_STEP_KEY = re.compile(r"^(\d+)_(.*)$", re.S)
_RETENTION_COLUMNS = (
    "cohort",
    "cohort_date",
    "period",
    "period_date",
    "cohort_size",
    "count",
    "rate",
    "rate_previous",
)


def _instants(values: Sequence[Any], tz: str) -> pd.DatetimeIndex:
    # Retention dates are instants ("2025-06-02T00:00:00Z"); a string without an offset is wall-clock time in tz.
    if not values:
        return pd.DatetimeIndex([], dtype=f"datetime64[us, {tz}]")
    return _dates([str(v) for v in values], tz)


def _period_offset(unit: str, n: int) -> pd.DateOffset:
    if unit == "month":
        return pd.DateOffset(months=n)  # calendar months: Jan 31 + 1 month is Feb 28
    if unit == "week":
        return pd.DateOffset(weeks=n)
    if unit == "hour":
        return pd.DateOffset(hours=n)
    return pd.DateOffset(days=n)


def _whole(values: Sequence[Any]) -> Any:
    # PostHog sends counts as floats (lifecycle) or numbers (paths); persons are whole, NULL stays <NA>.
    return pd.Series(pd.array(list(values), dtype="Float64")).round().astype("Int64").array


def _unit_and_index(label: Any, fallback: int) -> tuple[str | None, int]:
    match = _PERIOD_LABEL.match(str(label or ""))
    if match:
        return match.group(1).lower(), int(match.group(2))
    return None, fallback


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    num = numerator.astype("Float64")
    den = denominator.astype("Float64")
    return (num / den.where(den != 0)).astype("Float64")


def retention_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A RetentionQuery answer as a tidy cohort × period frame, one row per cell.

    Columns: ``breakdown_value`` (only when broken down), ``cohort`` (0-based, as PostHog labels them),
    ``cohort_date`` (start of the cohort's interval), ``period`` (intervals since the cohort's, 0 = the cohort
    itself), ``period_date``, ``cohort_size`` (the period-0 count), ``count`` (persons who came back in that
    period, or in it or later when the query asked for ``cumulative``), ``rate`` (``count / cohort_size``) and
    ``rate_previous`` (``count`` / the previous period's count, PostHog's ``retentionReference="previous"``).
    Every cohort has the same periods: a period the answer leaves out, or one that starts after the answer's
    resolved ``date_to``, is ``<NA>``.

    >>> df = retention_frame({"results": [
    ...     {"date": "2025-06-02T00:00:00Z", "label": "Day 0", "values": [{"count": 4}, {"count": 2}]},
    ...     {"date": "2025-06-03T00:00:00Z", "label": "Day 1", "values": [{"count": 5}]}]})
    >>> df[["cohort", "period", "count", "rate"]].astype(object).values.tolist()
    [[0, 0, 4, 1.0], [0, 1, 2, 0.5], [1, 0, 5, 1.0], [1, 1, <NA>, <NA>]]
    >>> str(df["period_date"].iloc[1])
    '2025-06-03 00:00:00+00:00'
    """
    data = as_dict(response)
    items: Sequence[Mapping[str, Any]] = data.get("results") or []
    tz = data.get("timezone") or "UTC"
    broken_down = any(item.get("breakdown_value") is not None for item in items)
    width = max((len(item.get("values") or []) for item in items), default=0)
    unit = next((u for u in (_unit_and_index(i.get("label"), 0)[0] for i in items) if u), None) or "day"
    date_to = (data.get("resolved_date_range") or {}).get("date_to")
    end = _instants([date_to], tz)[0] if date_to else None

    cohorts, breakdowns, counts, periods = [], [], [], []
    seen: dict[Any, int] = {}
    for item in items:
        breakdown = _tidy_breakdown(item.get("breakdown_value"))
        position = seen.get(breakdown, 0)
        seen[breakdown] = position + 1
        cohort = _unit_and_index(item.get("label"), position)[1]
        values = list(item.get("values") or [])
        for period in range(width):
            cell = values[period] if period < len(values) else None
            counts.append(cell.get("count") if isinstance(cell, Mapping) else None)
            periods.append(period)
            cohorts.append(cohort)
            breakdowns.append(breakdown)
    cohort_dates = _instants([item.get("date") for item in items for _ in range(width)], tz)
    period_dates = pd.DatetimeIndex(
        [d + _period_offset(unit, p) for d, p in zip(cohort_dates, periods, strict=True)],
        dtype=cohort_dates.dtype,
    )
    count = pd.Series(_whole(counts))
    if end is not None and len(count):
        # A period starting at (an exclusive) or after (an inclusive) resolved date_to has not happened yet.
        count = count.mask(np.asarray(period_dates >= end), pd.NA)
    columns: dict[str, Any] = {}
    if broken_down:
        columns["breakdown_value"] = np.fromiter(breakdowns, dtype=object, count=len(breakdowns))
    columns.update(
        cohort=pd.array(cohorts, dtype="Int64"),
        cohort_date=cohort_dates,
        period=pd.array(periods, dtype="Int64"),
        period_date=period_dates,
        count=count.array,
    )
    df = pd.DataFrame(columns)
    groups = df.groupby(["breakdown_value", "cohort"] if broken_down else ["cohort"], sort=False, dropna=False)
    df["cohort_size"] = groups["count"].transform("first").astype("Int64")
    df["rate"] = _ratio(df["count"], df["cohort_size"])
    df["rate_previous"] = _ratio(df["count"], groups["count"].shift(1).fillna(df["count"]))
    df = df[[*(["breakdown_value"] if broken_down else []), *_RETENTION_COLUMNS]]
    df.attrs.update(frame_metadata(data))
    df.attrs["period"] = unit
    return df


def retention_table(df: pd.DataFrame, values: str = "rate") -> pd.DataFrame:
    """The wide view of :func:`retention_frame`: a row per cohort (``cohort_date``; with a breakdown,
    ``(breakdown_value, cohort_date)``), a column per period, ``values`` (``rate``, ``count``...) in the cells.

    >>> df = retention_frame({"results": [
    ...     {"date": "2025-06-02", "label": "Week 0", "values": [{"count": 10}, {"count": 4}]},
    ...     {"date": "2025-06-09", "label": "Week 1", "values": [{"count": 8}]}]})
    >>> retention_table(df, "count").astype(object).values.tolist()
    [[10, 4], [8, <NA>]]
    """
    missing = [c for c in ("cohort_date", "period", values) if c not in df.columns]
    if missing:
        raise InvalidArgument(f"retention_table needs a retention_frame; the frame lacks {missing}", argument="df")
    index = ["breakdown_value", "cohort_date"] if "breakdown_value" in df.columns else ["cohort_date"]
    table = df.pivot(index=index, columns="period", values=values)
    table.columns.name = "period"
    return table


def lifecycle_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A LifecycleQuery answer in long form: one row per interval and status.

    Columns: ``date`` (start of the interval, tz-aware), ``status`` (``new``, ``returning``, ``resurrecting``,
    ``dormant``) and ``count`` (persons; dormant counts are negative, as PostHog charts them below zero).
    Rows are ordered by date, then status in that order.

    >>> df = lifecycle_frame({"results": [
    ...     {"status": "dormant", "data": [0.0, -2.0], "days": ["2025-06-01", "2025-06-02"]},
    ...     {"status": "new", "data": [3.0, 1.0], "days": ["2025-06-01", "2025-06-02"]}]})
    >>> df[["status", "count"]].values.tolist()
    [['new', 3], ['dormant', 0], ['new', 1], ['dormant', -2]]
    """
    data = as_dict(response)
    items: Sequence[Mapping[str, Any]] = data.get("results") or []
    tz = data.get("timezone") or "UTC"
    statuses, counts, days = [], [], []
    for item in items:
        values = list(item.get("data") or [])
        statuses += [str(item.get("status") or "")] * len(values)
        counts += values
        days += [str(d) for d in item.get("days") or []]
    order = {status: i for i, status in enumerate(LIFECYCLE_STATUSES)}
    df = pd.DataFrame(
        {
            "date": _instants(days, tz),
            "status": pd.array(statuses, dtype=pd.StringDtype()),
            "count": _whole(counts),
        }
    )
    rank = np.array([order.get(s, len(order)) for s in statuses], dtype=np.int64)
    df = df.iloc[np.lexsort((rank, df["date"].to_numpy()))].reset_index(drop=True)
    df.attrs.update(frame_metadata(data))
    return df


def stickiness_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A StickinessQuery answer in long form: one row per series and number of active intervals.

    Columns: ``series`` (0-based position of the series), ``label``, ``compare_label`` (``current`` or
    ``previous``, only with a comparison), ``intervals`` (1, 2, ... active intervals in the range) and
    ``persons`` (how many were active in exactly that many intervals; in that many or more when the query asked
    for ``computedAs="cumulative"``).

    >>> df = stickiness_frame({"results": [
    ...     {"label": "$pageview", "data": [5, 2, 1], "days": [1, 2, 3], "action": {"order": 0}}]})
    >>> df[["intervals", "persons"]].values.tolist()
    [[1, 5], [2, 2], [3, 1]]
    """
    data = as_dict(response)
    items: Sequence[Mapping[str, Any]] = data.get("results") or []
    with_compare = any(item.get("compare_label") for item in items)
    series, labels, compares, intervals, persons = [], [], [], [], []
    for item in items:
        values = list(item.get("data") or [])
        days = list(item.get("days") or range(1, len(values) + 1))
        series += [_series_index(item)] * len(values)
        labels += [str(item.get("label", ""))] * len(values)
        compares += [item.get("compare_label")] * len(values)
        intervals += [int(d) for d in days]
        persons += values
    columns: dict[str, Any] = {
        "series": pd.array(series, dtype="Int64"),
        "label": pd.array(labels, dtype=pd.StringDtype()),
    }
    if with_compare:
        columns["compare_label"] = pd.array(compares, dtype=pd.StringDtype())
    columns["intervals"] = pd.array(intervals, dtype="Int64")
    columns["persons"] = _whole(persons)
    df = pd.DataFrame(columns)
    df.attrs.update(frame_metadata(data))
    # PostHog's labels ("1 day", "3 weeks or more") name the interval, which plots put on their axis.
    first = next((str(lb) for item in items for lb in item.get("labels") or []), "")
    unit = _STICKY_LABEL.match(first)
    if unit:
        df.attrs["interval"] = unit.group(1).lower()
    return df


def _step_and_name(key: Any) -> tuple[int | None, str]:
    match = _STEP_KEY.match(str(key))
    if match is None:
        return None, str(key)
    return int(match.group(1)), match.group(2)


def paths_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A PathsQuery answer as an edge list, one row per edge, heaviest first (as PostHog sends them).

    PostHog names each node ``"<step>_<item>"`` (``"1_/home"``); the frame splits that into ``step_from`` and
    ``source``, ``step_to`` and ``target``. ``value`` is the number of persons who took the edge and
    ``average_conversion_time`` the mean time between the two steps, in the answer's unit.

    >>> df = paths_frame({"results": [
    ...     {"source": "1_/home", "target": "2_/pricing", "value": 7, "average_conversion_time": 12000.0}]})
    >>> df.astype(object).values.tolist()
    [[1, '/home', 2, '/pricing', 7, 12000.0]]
    """
    data = as_dict(response)
    items: Sequence[Mapping[str, Any]] = data.get("results") or []
    sources = [_step_and_name(item.get("source")) for item in items]
    targets = [_step_and_name(item.get("target")) for item in items]
    df = pd.DataFrame(
        {
            "step_from": pd.array([s for s, _ in sources], dtype="Int64"),
            "source": pd.array([n for _, n in sources], dtype=pd.StringDtype()),
            "step_to": pd.array([s for s, _ in targets], dtype="Int64"),
            "target": pd.array([n for _, n in targets], dtype=pd.StringDtype()),
            "value": _whole([item.get("value") for item in items]),
            "average_conversion_time": np.array(
                [item.get("average_conversion_time") for item in items], dtype=np.float64
            ),
        }
    )
    df.attrs.update(frame_metadata(data))
    return df
