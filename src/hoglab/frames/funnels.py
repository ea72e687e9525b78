"""FunnelsQuery answers to a DataFrame: one row per step (and breakdown value), a conversion-time histogram, or
conversion per interval as a trends frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from .cells import breakdown_array, tidy_breakdown
from .tables import as_dict, frame_metadata
from .trends import trends_frame

__all__ = ["funnel_frame"]


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
            breakdowns += [tidy_breakdown(value)] * len(steps)
    if not columns:
        columns = {key: [] for key in _step_rows([])}
    df = pd.DataFrame(
        {
            **({"breakdown_value": breakdown_array(breakdowns)} if grouped else {}),
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
