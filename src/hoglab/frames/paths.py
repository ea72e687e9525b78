"""PathsQuery answers to an edge list: one row per edge between numbered steps, heaviest first."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from .cells import whole_counts
from .tables import as_dict, frame_metadata

__all__ = ["paths_frame"]

_STEP_KEY = re.compile(r"^(\d+)_(.*)$", re.S)


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
            "value": whole_counts([item.get("value") for item in items]),
            "average_conversion_time": np.array(
                [item.get("average_conversion_time") for item in items], dtype=np.float64
            ),
        }
    )
    df.attrs.update(frame_metadata(data))
    return df
