"""PostHog's relative dates, the one grammar both halves read: ``-7d``, ``-1mStart``, ``dStart``, ``-2wEnd``, ``all``.

``-<n><unit>[Start|End]``, where the unit is ``s`` seconds, ``M`` minutes, ``h`` hours, ``d`` days, ``w`` weeks,
``m`` months, ``q`` quarters or ``y`` years; ``n`` defaults to 0 (``mStart``: the start of this month); ``Start`` or
``End`` moves to the start or end of that unit. ``all`` means "from the project's first event". Anything else is
an ISO date or datetime. The client checks arguments with this grammar; the service resolves matches to moments
(insight runners) or to ``now()`` arithmetic (HogQL ``{filters}``) in ``hoglab.translate.dates``.

>>> parse_relative_date("-1mStart")
RelativeDate(count=1, unit='m', position='Start')
>>> parse_relative_date("dStart"), parse_relative_date("2025-06-01")
(RelativeDate(count=0, unit='d', position='Start'), None)
>>> is_date_text("all"), is_date_text("-7d"), is_date_text("2025-06-01T10:00:00Z"), is_date_text("last week")
(True, True, True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = ["RELATIVE_DATE_UNITS", "RelativeDate", "is_date_text", "parse_relative_date"]

RELATIVE_DATE_UNITS = {
    "s": "second",
    "M": "minute",
    "h": "hour",
    "d": "day",
    "w": "week",
    "m": "month",
    "q": "quarter",
    "y": "year",
}
_RELATIVE = re.compile(r"-?(?P<count>\d+)?(?P<unit>[sMhdwmqy])(?P<position>Start|End)?\Z")


@dataclass(frozen=True)
class RelativeDate:
    """``count`` units before now (a unit of ``RELATIVE_DATE_UNITS``), optionally at that unit's start or end."""

    count: int
    unit: str
    position: Literal["Start", "End"] | None


def parse_relative_date(text: str) -> RelativeDate | None:
    """The relative date ``text`` spells, or ``None`` when it is not one (``all`` and ISO dates are not)."""
    match = _RELATIVE.match(text.strip())
    if match is None:
        return None
    position: Literal["Start", "End"] | None = None
    if match["position"] == "Start":
        position = "Start"
    elif match["position"] == "End":
        position = "End"
    return RelativeDate(int(match["count"] or 0), match["unit"], position)


def is_date_text(text: str) -> bool:
    """Whether ``text`` is a date PostHog accepts in a date range: ``all``, a relative date, or ISO 8601."""
    text = text.strip()
    if text == "all" or parse_relative_date(text) is not None:
        return True
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
