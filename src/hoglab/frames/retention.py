"""RetentionQuery answers to a tidy cohort × period frame, and its wide table.

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
from .cells import instants, tidy_breakdown, whole_counts
from .tables import as_dict, frame_metadata

__all__ = ["retention_frame", "retention_table"]

_PERIOD_LABEL = re.compile(r"^\s*(Hour|Day|Week|Month)\s+(\d+)\s*$", re.I)
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


def _period_offset(unit: str, n: int) -> pd.DateOffset:
    if unit == "month":
        return pd.DateOffset(months=n)  # calendar months: Jan 31 + 1 month is Feb 28
    if unit == "week":
        return pd.DateOffset(weeks=n)
    if unit == "hour":
        return pd.DateOffset(hours=n)
    return pd.DateOffset(days=n)


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
    resolved ``date_to`` (or after the answer was computed, its ``last_refresh``), is ``<NA>``; a cohort that starts
    after them is not listed (it is no data, not an empty cohort).

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
    end = instants([date_to], tz)[0] if date_to else None
    refreshed = data.get("last_refresh")
    if refreshed:
        # A date range reaching past the moment of the answer: what starts after it has not happened yet.
        now = instants([refreshed], tz)[0]
        end = now if end is None or now < end else end

    cohorts, breakdowns, counts, periods = [], [], [], []
    seen: dict[Any, int] = {}
    for item in items:
        breakdown = tidy_breakdown(item.get("breakdown_value"))
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
    cohort_dates = instants([item.get("date") for item in items for _ in range(width)], tz)
    period_dates = pd.DatetimeIndex(
        [d + _period_offset(unit, p) for d, p in zip(cohort_dates, periods, strict=True)],
        dtype=cohort_dates.dtype,
    )
    count = pd.Series(whole_counts(counts))
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
    if end is not None and len(df):
        # A cohort that starts after the answer's end (or its moment) is no data: it is not listed.
        df = df[np.asarray(df["cohort_date"] < end)].reset_index(drop=True)
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
