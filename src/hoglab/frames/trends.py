"""TrendsQuery answers to a tidy, long-form DataFrame: one row per series, breakdown value and interval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from .cells import breakdown_array, interval_dates, series_index, tidy_breakdown
from .tables import as_dict, frame_metadata

__all__ = ["trends_frame"]


def trends_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A TrendsQuery answer in long form: one row per series, breakdown value and interval.

    Columns: ``series`` (0-based position of the series; ``<NA>`` for formula lines), ``label``,
    ``breakdown_value``, ``compare_label`` (only with ``compare``), ``date`` (start of the interval, tz-aware in the
    answer's ``timezone``) and ``value``. ``df.attrs`` keeps the answer's metadata (``resolved_date_range``,
    ``last_refresh``...) and, from its ``filter``, ``interval`` and ``explicit_date``: what the plot needs to mark
    partial periods. Total-value displays (``BoldNumber``, ``ActionsPie``, ``ActionsTable``...)
    give one row per series and breakdown value, without ``date``.

    >>> df = trends_frame({"timezone": "UTC", "results": [
    ...     {"label": "$pageview", "data": [3, 5], "days": ["2025-06-01", "2025-06-02"],
    ...      "count": 8, "breakdown_value": ["Chrome"], "action": {"order": 0}}]})
    >>> df[["series", "breakdown_value", "value"]].values.tolist()
    [[0, 'Chrome', 3.0], [0, 'Chrome', 5.0]]
    >>> str(df["date"].dtype)
    'datetime64[us, UTC]'
    """
    data = as_dict(response)
    items: Sequence[Mapping[str, Any]] = data.get("results") or []
    tz = data.get("timezone") or "UTC"
    total_value = bool(items) and all(
        not item.get("data") and item.get("aggregated_value") is not None for item in items
    )
    with_compare = any(item.get("compare_label") for item in items)
    # Repeat each item's scalars once per interval, then build every column in one step.
    lengths = [1 if total_value else len(item.get("data") or []) for item in items]
    series, labels, breakdowns, compares, values = [], [], [], [], []
    dates: list[pd.DatetimeIndex] = []
    for item, n in zip(items, lengths, strict=True):
        series += [series_index(item)] * n
        labels += [str(item.get("label", ""))] * n
        breakdowns += [tidy_breakdown(item.get("breakdown_value"))] * n
        compares += [item.get("compare_label")] * n
        if total_value:
            values.append(item.get("aggregated_value"))
        else:
            values += list(item.get("data") or [])
            dates.append(interval_dates(item.get("days") or [], tz))
    columns: dict[str, Any] = {
        "series": pd.array(series, dtype="Int64"),
        "label": pd.array(labels, dtype=pd.StringDtype()),
        "breakdown_value": breakdown_array(breakdowns),
    }
    if with_compare:
        columns["compare_label"] = pd.array(compares, dtype=pd.StringDtype())
    if not total_value:
        empty = pd.DatetimeIndex([], dtype=f"datetime64[us, {tz}]")
        columns["date"] = dates[0].append(dates[1:]) if dates else empty
    columns["value"] = np.array(values, dtype=np.float64)
    df = pd.DataFrame(columns)
    df.attrs.update(frame_metadata(data))
    applied: Mapping[str, Any] = next((i["filter"] for i in items if isinstance(i.get("filter"), Mapping)), {})
    for name in ("interval", "explicit_date"):
        if name in applied:
            df.attrs[name] = applied[name]
    return df
