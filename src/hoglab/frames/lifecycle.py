"""LifecycleQuery answers to a long frame: one row per interval and status, dormant counts below zero."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from .cells import instants, whole_counts
from .tables import as_dict, frame_metadata

__all__ = ["LIFECYCLE_STATUSES", "lifecycle_frame"]

LIFECYCLE_STATUSES = ("new", "returning", "resurrecting", "dormant")
"""PostHog's four lifecycle statuses, in the order its chart stacks them."""


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
            "date": instants(days, tz),
            "status": pd.array(statuses, dtype=pd.StringDtype()),
            "count": whole_counts(counts),
        }
    )
    rank = np.array([order.get(s, len(order)) for s in statuses], dtype=np.int64)
    df = df.iloc[np.lexsort((rank, df["date"].to_numpy()))].reset_index(drop=True)
    df.attrs.update(frame_metadata(data))
    return df
