"""Insight answers (TrendsQuery, FunnelsQuery) to tidy, long-form DataFrames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from ._tables import as_dict, frame_metadata

__all__ = ["funnel_frame", "trends_frame"]


def _tidy_breakdown(value: Any) -> Any:
    # PostHog sends property breakdown values as lists (["Chrome"]); one value reads better as a scalar, and
    # several (multiple breakdowns) as a tuple, which, unlike a list, can be grouped on.
    if isinstance(value, list):
        return value[0] if len(value) == 1 else tuple(value)
    return value


def _breakdown_array(values: Sequence[Any]) -> Any:
    if values and all(isinstance(v, str) for v in values):
        return pd.array(list(values), dtype=pd.StringDtype())
    return np.fromiter(values, dtype=object, count=len(values))


def _series_index(item: Mapping[str, Any]) -> Any:
    action = item.get("action")
    if isinstance(action, Mapping) and isinstance(action.get("order"), int):
        return action["order"]
    return None  # formula results name no series


def _dates(days: Sequence[str], tz: str) -> pd.DatetimeIndex:
    parsed = pd.to_datetime(pd.Series(list(days), dtype=object), format="ISO8601")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        return pd.DatetimeIndex(parsed.dt.tz_convert(tz).dt.as_unit("us"))
    return pd.DatetimeIndex(parsed.dt.tz_localize(tz).dt.as_unit("us"))


def trends_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A TrendsQuery answer in long form: one row per series, breakdown value and interval.

    Columns: ``series`` (0-based position of the series; ``<NA>`` for formula lines), ``label``,
    ``breakdown_value``, ``compare_label`` (only with ``compare``), ``date`` (start of the interval, tz-aware in the
    answer's ``timezone``) and ``value``. Total-value displays (``BoldNumber``, ``ActionsPie``, ``ActionsTable``...)
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
        series += [_series_index(item)] * n
        labels += [str(item.get("label", ""))] * n
        breakdowns += [_tidy_breakdown(item.get("breakdown_value"))] * n
        compares += [item.get("compare_label")] * n
        if total_value:
            values.append(item.get("aggregated_value"))
        else:
            values += list(item.get("data") or [])
            dates.append(_dates(item.get("days") or [], tz))
    columns: dict[str, Any] = {
        "series": pd.array(series, dtype="Int64"),
        "label": pd.array(labels, dtype=pd.StringDtype()),
        "breakdown_value": _breakdown_array(breakdowns),
    }
    if with_compare:
        columns["compare_label"] = pd.array(compares, dtype=pd.StringDtype())
    if not total_value:
        empty = pd.DatetimeIndex([], dtype=f"datetime64[us, {tz}]")
        columns["date"] = dates[0].append(dates[1:]) if dates else empty
    columns["value"] = np.array(values, dtype=np.float64)
    df = pd.DataFrame(columns)
    df.attrs.update(frame_metadata(data))
    return df


def _step_rows(steps: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    counts = [int(step.get("count") or 0) for step in steps]
    first = counts[0] if counts else 0
    rows: dict[str, list[Any]] = {
        "step": [],
        "name": [],
        "action_id": [],
        "count": counts,
        "conversion_rate": [],
        "step_conversion_rate": [],
        "drop_off": [],
        "average_conversion_time": [],
        "median_conversion_time": [],
    }
    for i, step in enumerate(steps):
        previous = counts[i - 1] if i else counts[i]
        rows["step"].append(int(step.get("order", i)) + 1)
        rows["name"].append(step.get("custom_name") or step.get("name"))
        rows["action_id"].append(None if step.get("action_id") is None else str(step.get("action_id")))
        rows["conversion_rate"].append(counts[i] / first if first else np.nan)
        rows["step_conversion_rate"].append(counts[i] / previous if previous else np.nan)
        rows["drop_off"].append(previous - counts[i])
        rows["average_conversion_time"].append(step.get("average_conversion_time"))
        rows["median_conversion_time"].append(step.get("median_conversion_time"))
    return rows


def funnel_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A FunnelsQuery answer, one row per step (and breakdown value).

    Columns: ``breakdown_value`` (only with a breakdown), ``step`` (1-based, as FunnelsActorsQuery counts),
    ``name``, ``action_id``, ``count``, ``conversion_rate`` (against the first step), ``step_conversion_rate``
    (against the previous step), ``drop_off`` (people lost since the previous step) and the
    ``average_conversion_time``/``median_conversion_time`` from the previous step, in seconds.
    A ``time_to_convert`` answer gives its histogram (``seconds``, ``count``); a ``trends`` one, the trends frame.

    >>> df = funnel_frame({"results": [{"order": 0, "name": "a", "count": 10},
    ...                                {"order": 1, "name": "b", "count": 4, "average_conversion_time": 60.0}]})
    >>> df[["step", "count", "conversion_rate", "drop_off"]].values.tolist()
    [[1, 10, 1.0, 0], [2, 4, 0.4, 6]]
    """
    data = as_dict(response)
    results = data.get("results")
    if isinstance(results, Mapping):  # time_to_convert: a histogram of conversion times
        bins = results.get("bins") or []
        df = pd.DataFrame(
            {
                "seconds": np.array([b[0] for b in bins], dtype=np.float64),
                "count": pd.array([b[1] for b in bins], dtype="Int64"),
            }
        )
        df.attrs.update(frame_metadata(data))
        df.attrs["average_conversion_time"] = results.get("average_conversion_time")
        return df
    results = list(results or [])
    if results and isinstance(results[0], Mapping) and "data" in results[0]:
        return trends_frame(data)  # funnelVizType "trends": conversion % per interval
    grouped = bool(results) and isinstance(results[0], list)
    groups: list[Sequence[Mapping[str, Any]]] = results if grouped else [results]
    columns: dict[str, list[Any]] = {}
    breakdowns: list[Any] = []
    for steps in groups:
        rows = _step_rows(steps)
        for key, values in rows.items():
            columns.setdefault(key, []).extend(values)
        if grouped:
            value = steps[0].get("breakdown_value", steps[0].get("breakdown")) if steps else None
            breakdowns += [_tidy_breakdown(value)] * len(steps)
    if not columns:
        columns = {key: [] for key in _step_rows([])}
    df = pd.DataFrame(
        {
            **({"breakdown_value": _breakdown_array(breakdowns)} if grouped else {}),
            "step": pd.array(columns["step"], dtype="Int64"),
            "name": pd.array(columns["name"], dtype=pd.StringDtype()),
            "action_id": pd.array(columns["action_id"], dtype=pd.StringDtype()),
            "count": pd.array(columns["count"], dtype="Int64"),
            "conversion_rate": np.array(columns["conversion_rate"], dtype=np.float64),
            "step_conversion_rate": np.array(columns["step_conversion_rate"], dtype=np.float64),
            "drop_off": pd.array(columns["drop_off"], dtype="Int64"),
            "average_conversion_time": np.array(columns["average_conversion_time"], dtype=np.float64),
            "median_conversion_time": np.array(columns["median_conversion_time"], dtype=np.float64),
        }
    )
    df.attrs.update(frame_metadata(data))
    return df
