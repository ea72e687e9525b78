"""How an insight answer's cells read as pandas values, for every insight frame.

Breakdown values, the series a line belongs to, interval dates in the answer's time zone, and counts of persons.

>>> tidy_breakdown(["Chrome"]), tidy_breakdown(["Chrome", "Mac"]), series_index({"action": {"order": 1}})
('Chrome', ('Chrome', 'Mac'), 1)
>>> whole_counts([3.0, None, -2.0]).tolist()
[3, <NA>, -2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["breakdown_array", "instants", "interval_dates", "series_index", "tidy_breakdown", "whole_counts"]


def tidy_breakdown(value: Any) -> Any:
    """A breakdown value as a frame holds it: one value as a scalar, several as a tuple."""
    # PostHog sends property breakdown values as lists (["Chrome"]); one value reads better as a scalar, and
    # several (multiple breakdowns) as a tuple, which, unlike a list, can be grouped on.
    if isinstance(value, list):
        return value[0] if len(value) == 1 else tuple(value)
    return value


def breakdown_array(values: Sequence[Any]) -> Any:
    """The ``breakdown_value`` column: ``string`` when every value is a string, else objects."""
    if values and all(isinstance(v, str) for v in values):
        return pd.array(list(values), dtype=pd.StringDtype())
    return np.fromiter(values, dtype=object, count=len(values))


def series_index(item: Mapping[str, Any]) -> Any:
    """The 0-based position of the series a result line belongs to (``None`` for a formula's line)."""
    action = item.get("action")
    if isinstance(action, Mapping) and isinstance(action.get("order"), int):
        return action["order"]
    return None  # formula results name no series


def interval_dates(days: Sequence[str], tz: str) -> pd.DatetimeIndex:
    """Interval starts (dates or instants) as tz-aware microsecond timestamps in ``tz``."""
    parsed = pd.to_datetime(pd.Series(list(days), dtype=object), format="ISO8601")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        return pd.DatetimeIndex(parsed.dt.tz_convert(tz).dt.as_unit("us"))
    return pd.DatetimeIndex(parsed.dt.tz_localize(tz).dt.as_unit("us"))


def instants(values: Sequence[Any], tz: str) -> pd.DatetimeIndex:
    """:func:`interval_dates` of any values (stringified), empty when there are none."""
    # Retention dates are instants ("2025-06-02T00:00:00Z"); a string without an offset is wall-clock time in tz.
    if not values:
        return pd.DatetimeIndex([], dtype=f"datetime64[us, {tz}]")
    return interval_dates([str(v) for v in values], tz)


def whole_counts(values: Sequence[Any]) -> Any:
    """Counts of persons as ``Int64``: PostHog sends them as floats or numbers; NULL stays ``<NA>``."""
    # PostHog sends counts as floats (lifecycle) or numbers (paths); persons are whole, NULL stays <NA>.
    return pd.Series(pd.array(list(values), dtype="Float64")).round().astype("Int64").array
