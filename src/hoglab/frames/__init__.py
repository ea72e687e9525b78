"""Query answers to tidy pandas DataFrames (and Arrow tables or polars frames).

Each function takes an answer as parsed JSON (a dict, the fast path) or as its :mod:`hoglab.schema` response
model, and returns a DataFrame whose dtypes follow the answer's ClickHouse ``types`` (see the table in
:mod:`hoglab.frames.columns`, which Arrow answers read by too, :mod:`hoglab.frames.arrow`). The answer's
metadata (``hogql``, ``clickhouse``, ``timings``, ``hasMore``, ``types``, cache fields) is kept in ``df.attrs``;
its rows are not. One module per kind: ``tables`` (HogQL, events, actors, groups), ``trends``, ``funnels``,
``correlation`` (``FunnelCorrelationQuery``), ``retention``, ``lifecycle``, ``stickiness``, ``paths``,
``experiments`` (``ExperimentQuery`` and ``ExperimentExposureQuery``); ``cells`` is how their cells read.

>>> answer = {"results": [["2025-06-01T10:00:00Z", 2]], "columns": ["day", "n"],
...           "types": [["day", "DateTime64(6, 'UTC')"], ["n", "UInt64"]], "hasMore": False}
>>> df = to_frame(answer, "HogQLQuery")
>>> df.dtypes.astype(str).tolist()
['datetime64[us, UTC]', 'Int64']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from pydantic import BaseModel

from .arrow import to_arrow, to_polars
from .columns import CHType, convert, parse_type
from .correlation import funnel_correlation_frame
from .experiments import experiment_frame, exposure_frame
from .funnels import funnel_frame
from .lifecycle import LIFECYCLE_STATUSES, lifecycle_frame
from .paths import paths_frame
from .retention import retention_frame, retention_table
from .stickiness import stickiness_frame
from .tables import frame_metadata, table_frame
from .trends import trends_frame

__all__ = [
    "LIFECYCLE_STATUSES",
    "CHType",
    "convert",
    "experiment_frame",
    "exposure_frame",
    "frame_metadata",
    "funnel_correlation_frame",
    "funnel_frame",
    "lifecycle_frame",
    "parse_type",
    "paths_frame",
    "retention_frame",
    "retention_table",
    "stickiness_frame",
    "table_frame",
    "to_arrow",
    "to_frame",
    "to_polars",
    "trends_frame",
]

_TABLE_KINDS = frozenset({"HogQLQuery", "EventsQuery", "ActorsQuery", "GroupsQuery"})
_INSIGHT_FRAMES: dict[str, Callable[[Any], pd.DataFrame]] = {
    "TrendsQuery": trends_frame,
    "FunnelsQuery": funnel_frame,
    "RetentionQuery": retention_frame,
    "LifecycleQuery": lifecycle_frame,
    "StickinessQuery": stickiness_frame,
    "PathsQuery": paths_frame,
    "ExperimentQuery": experiment_frame,
    "ExperimentExposureQuery": exposure_frame,
    "FunnelCorrelationQuery": funnel_correlation_frame,
}


def to_frame(response: Mapping[str, Any] | BaseModel, kind: str, **options: Any) -> pd.DataFrame:
    """The tidy frame of an answer to a query of ``kind``; ``options`` go to :func:`table_frame` for tables.

    >>> to_frame({"results": []}, "TrendsQuery").columns.tolist()
    ['series', 'label', 'breakdown_value', 'date', 'value']
    """
    if kind in _TABLE_KINDS:
        return table_frame(response, **options)
    frame = _INSIGHT_FRAMES.get(kind)
    if frame is not None:
        return frame(response)
    raise ValueError(f"No frame for query kind {kind!r}; use query_raw() for the answer as a model.")
