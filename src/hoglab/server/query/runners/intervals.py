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

from hoglab.translate.dates import bucket_key_sql, start_of_interval_sql
from hoglab.translate.params import Params

from ...errors import ValidationFailed

__all__ = ["MAX_HOURS", "interval_number_sql", "interval_start_sql"]

MAX_HOURS = 366 * 24
"""Hours are numbered through a list of their keys written into the query: past a year of them the query
outgrows the engine's size limit (after seconds of parsing), so such a range is refused up front."""


def interval_number_sql(
    interval: str, first: datetime, column: str, p: Params, *, keys: list[str], attr: str = "interval"
) -> str:
    """HogQL numbering ``column``'s interval from ``first`` (0) on; ``keys`` (the intervals' wall-clock keys from
    ``first`` on) number hours, where an hour outside them is -1. Over ``MAX_HOURS`` hours: a 400 naming ``attr``."""
    origin = p.add(first.strftime("%Y-%m-%d"))
    if interval == "day":
        return f"dateDiff('day', toDate({origin}), toDate({column}))"
    if interval == "week":
        return f"intDiv(dateDiff('day', toDate({origin}), toStartOfWeek({column}, 0)), 7)"
    if interval == "month":
        return f"dateDiff('month', toDate({origin}), toStartOfMonth({column}))"
    if len(keys) > MAX_HOURS:
        raise ValidationFailed(
            f"{len(keys):,} hours is over the {MAX_HOURS:,} an hourly insight can number: use days or a shorter range.",
            attr=attr,
        )
    return f"(indexOf({p.add(keys)}, {bucket_key_sql(interval, column)}) - 1)"


def interval_start_sql(interval: str, column: str = "timestamp") -> str:
    """HogQL for the start of ``column``'s interval, as a value to group by (a Date for days and longer, the
    wall-clock key for hours)."""
    if interval in ("day", "week", "month"):
        return start_of_interval_sql(interval, column)
    return bucket_key_sql(interval, column)
