"""Interval numbers in SQL for the insights that do arithmetic on intervals (retention, lifecycle, stickiness).

Day, week and month numbers come from calendar dates in the project's zone (``timestamp`` is already in it), so
they are integers without text formatting per event; hours go through the wall-clock keys of
``dates.bucket_key_sql`` (a repeated or skipped hour at a DST change stays one interval, as in trends).

>>> from datetime import datetime
>>> p = Params()
>>> interval_number_sql("week", datetime(2025, 6, 1), "timestamp", p, keys=["2025-06-01"])
"intDiv(dateDiff('day', toDate({p0}), toStartOfWeek(timestamp, 0)), 7)"
>>> p.values
{'p0': '2025-06-01'}
"""

from __future__ import annotations

from datetime import datetime

from ...filters.dates import bucket_key_sql
from ...filters.properties import Params

__all__ = ["interval_number_sql", "interval_start_sql"]


def interval_number_sql(interval: str, first: datetime, column: str, p: Params, *, keys: list[str]) -> str:
    """HogQL numbering ``column``'s interval from ``first`` (0) on; ``keys`` (the intervals' wall-clock keys from
    ``first`` on) number hours, where an hour outside them is -1."""
    origin = p.add(first.strftime("%Y-%m-%d"))
    if interval == "day":
        return f"dateDiff('day', toDate({origin}), toDate({column}))"
    if interval == "week":
        return f"intDiv(dateDiff('day', toDate({origin}), toStartOfWeek({column}, 0)), 7)"
    if interval == "month":
        return f"dateDiff('month', toDate({origin}), toStartOfMonth({column}))"
    return f"(indexOf({p.add(keys)}, {bucket_key_sql(interval, column)}) - 1)"


def interval_start_sql(interval: str, column: str = "timestamp") -> str:
    """HogQL for the start of ``column``'s interval, as a value to group by (a Date for days and longer)."""
    if interval == "day":
        return f"toDate({column})"
    if interval == "week":
        return f"toStartOfWeek({column}, 0)"
    if interval == "month":
        return f"toStartOfMonth({column})"
    return bucket_key_sql(interval, column)
