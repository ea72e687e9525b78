"""FunnelCorrelationQuery answers to a frame: one row per correlated event or property value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from pydantic import BaseModel

from .tables import as_dict, frame_metadata

__all__ = ["CORRELATION_COLUMNS", "funnel_correlation_frame"]

CORRELATION_COLUMNS = ["name", "correlation_type", "odds_ratio", "success_count", "failure_count", "actors"]
"""The columns of :func:`funnel_correlation_frame`, in order."""


def funnel_correlation_frame(response: Mapping[str, Any] | BaseModel) -> pd.DataFrame:
    """A FunnelCorrelationQuery answer as a frame, in the answer's order (the strongest ``success`` first, then
    the strongest ``failure``).

    Columns: ``name`` (the event, ``event::property::value`` or ``property::value``), ``correlation_type``
    (``success`` or ``failure``), ``odds_ratio``, ``success_count`` and ``failure_count`` (the actors who did it
    and converted, or not) and ``actors`` (their sum). ``df.attrs["skewed"]``: converted and dropped off are more
    than ten to one apart (the ratios are then less telling).

    >>> df = funnel_correlation_frame({"results": {"skewed": False, "events": [
    ...     {"event": {"event": "watched video", "properties": {}, "elements": []}, "success_count": 5,
    ...      "failure_count": 1, "odds_ratio": 16.5, "correlation_type": "success"}]}})
    >>> df[["name", "odds_ratio", "actors"]].values.tolist(), df.attrs["skewed"]
    ([['watched video', 16.5, 6]], False)
    """
    data = as_dict(response)
    results = data.get("results") or {}
    items = [i for i in (results.get("events") or []) if isinstance(i, Mapping)]
    rows = []
    for item in items:
        named = item.get("event")
        name = named.get("event") if isinstance(named, Mapping) else named
        success, failure = int(item.get("success_count") or 0), int(item.get("failure_count") or 0)
        rows.append({"name": name, "correlation_type": item.get("correlation_type"),
                     "odds_ratio": item.get("odds_ratio"), "success_count": success, "failure_count": failure,
                     "actors": success + failure})  # fmt: skip
    df = pd.DataFrame(rows, columns=CORRELATION_COLUMNS)
    for column in ("name", "correlation_type"):
        df[column] = pd.array([None if v is None else str(v) for v in df[column]], dtype=pd.StringDtype())
    df["odds_ratio"] = pd.to_numeric(df["odds_ratio"], errors="coerce").astype("float64")
    for column in ("success_count", "failure_count", "actors"):
        df[column] = pd.array(df[column].tolist(), dtype="Int64")
    df.attrs.update(frame_metadata(data))
    df.attrs["skewed"] = bool(results.get("skewed"))
    return df
