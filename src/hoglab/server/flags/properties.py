"""One property filter of a flag condition against a person's properties, with PostHog's flag-matching rules.

These are the rules of PostHog's flags service (``match_property``), which differ from HogQL's in places:
text comparisons are case-insensitive, ``exact`` with a list means "any of", ``"true"``/``True`` compare as
booleans, a missing property matches only the negative operators (``is_not``, ``not_icontains``,
``not_regex``, ``is_not_set``), ``gt``/``lt`` compare numbers only, and dates are read in the project's zone.

>>> match_property({"key": "plan", "operator": "exact", "value": ["Pro", "team"]}, {"plan": "pro"})
True
>>> match_property({"key": "plan", "operator": "is_not", "value": "pro"}, {})
True
>>> match_property({"key": "age", "operator": "gt", "value": "30"}, {"age": 31})
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from hoglab.errors import HoglabError
from hoglab.schema import parse_relative_date

from ..filters.dates import moment_before
from ..filters.patterns import search, text_of

__all__ = ["UnsupportedFilter", "match_property", "text_of"]

# PostHog's flags service reads only these units of a relative date, and moves back without truncating.
_FLAG_DATE_UNITS = frozenset("hdwmy")


class UnsupportedFilter(HoglabError):
    """The filter cannot be decided here (an operator PostHog reserves for cohorts or flag dependencies)."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        parsed = float(text_of(value).strip())
    except ValueError:
        return None
    return parsed if not math.isnan(parsed) else None


def _truthy_or_falsy(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value.lower() in ("true", "false")
    if isinstance(value, list):
        return all(_truthy_or_falsy(v) for v in value)
    return False


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true"
    if isinstance(value, list):
        return all(_truthy(v) for v in value)
    return False


def _exact(expected: Any, actual: Any) -> bool:
    # A boolean-looking filter compares truthiness, so "True", "true" and true are the same value.
    if _truthy_or_falsy(expected):
        return _truthy(expected) == _truthy(actual)
    target = text_of(actual).lower()
    if isinstance(expected, list):
        return any(text_of(v).lower() == target for v in expected)
    return text_of(expected).lower() == target


def _zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone)
    except (KeyError, ValueError):
        return ZoneInfo("UTC")


def parse_date(value: Any, timezone: str = "UTC", now: datetime | None = None) -> datetime | None:
    """A filter or property value as an aware datetime: ISO text (naive = the project's zone), a relative date
    (``-7d``, ``-2w``, ``-1m``, ``-1y``, ``-12h`` before now), or a Unix timestamp in seconds.

    >>> parse_date("2024-06-01", "Europe/Berlin").isoformat()
    '2024-06-01T00:00:00+02:00'
    """
    zone = _zone(timezone)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    relative = parse_relative_date(text)
    if relative is not None and text.startswith("-") and relative.position is None and relative.count:
        if relative.unit not in _FLAG_DATE_UNITS:
            return None
        try:
            return moment_before((now or datetime.now(UTC)).astimezone(UTC), relative.count, relative.unit)
        except (OverflowError, ValueError):
            return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
        except ValueError:
            return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=zone)


def _compare_dates(operator: str, expected: Any, actual: Any, timezone: str) -> bool:
    person = parse_date(actual, timezone)
    wanted = parse_date(expected, timezone) if isinstance(expected, str) else None
    if person is None or wanted is None:
        return False
    if operator == "is_date_before":
        return person < wanted
    if operator == "is_date_after":
        return person > wanted
    return person == wanted


def match_property(flt: Mapping[str, Any], properties: Mapping[str, Any], *, timezone: str = "UTC") -> bool:
    """Whether ``properties`` (the person's, request overrides applied) satisfy one filter.

    ``UnsupportedFilter`` for operators that belong to cohort or flag-dependency matching. A filter whose value
    can't be compared (a non-numeric ``gt``, a pattern RE2 cannot compile) does not match, as in PostHog.
    """
    key = flt.get("key")
    operator = flt.get("operator") or "exact"
    present = isinstance(key, str) and key in properties
    actual = properties.get(key) if present and isinstance(key, str) else None
    if operator == "is_set":
        return present
    if operator == "is_not_set":
        return not present
    if operator in ("in", "not_in", "flag_evaluates_to"):
        raise UnsupportedFilter(operator)
    expected = flt.get("value")
    if expected is None:
        return False
    negative = operator in ("is_not", "not_icontains", "not_regex", "not_icontains_multi", "not_between")
    if not present:
        return negative
    if operator in ("exact", "is_not"):
        return _exact(expected, actual) != (operator == "is_not")
    if operator in ("icontains", "not_icontains"):
        return (text_of(expected).lower() in text_of(actual).lower()) != (operator == "not_icontains")
    if operator in ("regex", "not_regex"):
        found = search(expected, actual)  # RE2: linear in the value, whatever the pattern (filters/patterns.py)
        return False if found is None else found != (operator == "not_regex")
    if operator in ("gt", "gte", "lt", "lte"):
        left, right = _number(actual), _number(expected)
        if left is None or right is None:
            return False
        return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}[operator]
    if operator in ("between", "not_between"):
        bounds = expected if isinstance(expected, list) and len(expected) == 2 else None
        low, high = (_number(bounds[0]), _number(bounds[1])) if bounds else (None, None)
        value = _number(actual)
        if low is None or high is None or low > high or value is None:
            return False
        return (low <= value <= high) != (operator == "not_between")
    if operator in ("is_date_before", "is_date_after", "is_date_exact"):
        return _compare_dates(operator, expected, actual, timezone)
    raise UnsupportedFilter(operator)
