"""StickinessQuery answers to a long frame: one row per series and number of active intervals."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel

from .cells import series_index, whole_counts
from .tables import as_dict, frame_metadata

__all__ = ["stickiness_frame"]

_STICKY_LABEL = re.compile(r"^\s*\d+\s+(minute|hour|day|week|month)s?\b", re.I)


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
        series += [series_index(item)] * len(values)
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
    columns["persons"] = whole_counts(persons)
    df = pd.DataFrame(columns)
    df.attrs.update(frame_metadata(data))
    # PostHog's labels ("1 day", "3 weeks or more") name the interval, which plots put on their axis.
    first = next((str(lb) for item in items for lb in item.get("labels") or []), "")
    unit = _STICKY_LABEL.match(first)
    if unit:
        df.attrs["interval"] = unit.group(1).lower()
    return df
