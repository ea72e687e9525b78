"""Date ranges and intervals of insight queries, resolved in the project's time zone as PostHog resolves them.

A ``dateRange`` (``{"date_from": "-7d", "date_to": null}``) becomes a :class:`QueryDateRange`: two aware
datetimes and the list of interval starts the answer has one data point for (zeros where nothing happened).

* Relative strings ``-<n><unit>[Start|End]``: units ``s`` seconds, ``M`` minutes, ``h`` hours, ``d`` days,
  ``w`` weeks, ``m`` months, ``q`` quarters, ``y`` years; ``mStart`` = the start of this month, ``-1mEnd`` = the end
  of the previous one. Day-or-longer units are truncated to the start of the day (PostHog's ``always_truncate``).
* ``"all"``: from the first event of the project (start of that day).
* ISO dates (``2025-06-01``) and datetimes (``2025-06-01T10:00:00``, with or without an offset); no offset means
  the project's zone.
* ``date_from`` defaults to ``-7d``; ``date_to`` to now. Unless ``explicitDate``, ``date_to`` is moved to the end of
  its day (of its hour for hour and minute intervals), and a date-only ``date_to`` means the end of that day.
* With ``explicitDate`` the range is exactly ``date_from``..``date_to``: events before ``date_from`` in its first
  interval are left out too (PostHog's ``use_start_of_interval`` is false then); experiment results rely on it.
* Weeks start on Sunday (PostHog's default ``week_start_day``; ClickHouse ``toStartOfWeek(x, 0)``).

>>> from datetime import datetime, UTC
>>> r = resolve_date_range({"date_from": "-2d"}, "day", now=datetime(2025, 6, 3, 15, tzinfo=UTC), timezone="UTC")
>>> [d.strftime("%Y-%m-%d") for d in r.buckets()]
['2025-06-01', '2025-06-02', '2025-06-03']
>>> r.date_to.isoformat()
'2025-06-03T23:59:59.999999+00:00'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from hoglab.schema import parse_relative_date

from .errors import TranslationFailed
from .params import Params

__all__ = [
    "FIRST_YEAR",
    "INTERVALS",
    "LAST_YEAR",
    "QueryDateRange",
    "bucket_key",
    "bucket_key_sql",
    "date_hogql",
    "moment_before",
    "parse_relative",
    "resolve_date_range",
    "shift",
    "start_of_interval",
    "start_of_interval_sql",
]

INTERVALS = ("minute", "hour", "day", "week", "month")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_FIXED = {"s": timedelta(seconds=1), "M": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1),
          "w": timedelta(weeks=1), "q": timedelta(weeks=13)}  # fmt: skip
_END_US = timedelta(microseconds=1)


def _add_months(dt: datetime, months: int) -> datetime:
    """``dt`` plus ``months`` calendar months, the day clipped to the month's length (31 Mar - 1 month = 28 Feb)."""
    index = dt.year * 12 + dt.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    next_month = date(year + month // 12, month % 12 + 1, 1)
    last_day = (next_month - timedelta(days=1)).day
    return dt.replace(year=year, month=month, day=min(dt.day, last_day))


def _add(dt: datetime, unit: str, n: int) -> datetime:
    """Naive wall-clock ``dt`` plus ``n`` of ``unit`` (``s M h d w q`` fixed lengths, ``m``/``y`` calendar)."""
    if unit == "m":
        return _add_months(dt, n)
    if unit == "y":
        return _add_months(dt, 12 * n)
    return dt + _FIXED[unit] * n


def _wall(dt: datetime, tz: ZoneInfo) -> datetime:
    """A naive wall-clock time made aware in ``tz`` (fold=0: the first of two repeated times)."""
    return dt.replace(tzinfo=tz)


def _start_of_unit(dt: datetime, unit: str) -> datetime:
    """Start of the unit containing ``dt`` (naive wall-clock arithmetic)."""
    if unit == "s":
        return dt.replace(microsecond=0)
    if unit == "M":
        return dt.replace(second=0, microsecond=0)
    if unit == "h":
        return dt.replace(minute=0, second=0, microsecond=0)
    day = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "d":
        return day
    if unit == "w":
        return day - timedelta(days=(day.weekday() + 1) % 7)  # Sunday
    if unit == "m":
        return day.replace(day=1)
    if unit == "q":
        return day.replace(day=1, month=(day.month - 1) // 3 * 3 + 1)
    return day.replace(day=1, month=1)


def _end_of_unit(dt: datetime, unit: str) -> datetime:
    start = _start_of_unit(dt, unit)
    following = _add_months(start, 3) if unit == "q" else _add(start, unit, 1)
    return following - _END_US


def moment_before(now: datetime, count: int, unit: str) -> datetime:
    """``count`` units (``s M h d w m q y``) before the aware ``now``, on the wall clock, without truncation.

    >>> moment_before(datetime(2025, 3, 31, 10, tzinfo=ZoneInfo("UTC")), 1, "m").isoformat()
    '2025-02-28T10:00:00+00:00'
    """
    return _add(now.replace(tzinfo=None), unit, -count).replace(tzinfo=now.tzinfo)


def parse_relative(text: str, now: datetime, *, attr: str) -> datetime | None:
    """``-7d`` etc. relative to ``now`` (aware); ``None`` when ``text`` is not a relative date.

    >>> from datetime import datetime
    >>> parse_relative("-1mStart", datetime(2025, 3, 15, 10, tzinfo=ZoneInfo("UTC")), attr="x").isoformat()
    '2025-02-01T00:00:00+00:00'
    """
    relative = parse_relative_date(text)
    if relative is None:
        return None
    tz = now.tzinfo
    assert isinstance(tz, ZoneInfo)
    unit, pos = relative.unit, relative.position
    wall = _add(now.replace(tzinfo=None), unit, -relative.count)
    if pos == "Start":
        wall = _start_of_unit(wall, unit)
    elif pos == "End":
        wall = _end_of_unit(wall, unit)
    elif unit in "dwmqy":
        wall = _start_of_unit(wall, "d")
    return _wall(wall, tz)


_SQL_UNITS = {"s": "Second", "M": "Minute", "h": "Hour", "d": "Day", "w": "Week", "m": "Month", "q": "Quarter",
              "y": "Year"}  # fmt: skip


def date_hogql(text: str, timezone: str, params: Params) -> str:
    """A date of a range as HogQL that ClickHouse evaluates when the statement runs (values go to ``params``).

    The same moments as :func:`parse_relative` and :func:`_parse_absolute`, written as ``now64()`` arithmetic so a
    compiled statement stays valid (and cacheable) as time passes; ISO dates are read in the project's zone.

    >>> from .params import Params
    >>> date_hogql("-1mStart", "UTC", Params())
    'toDateTime64(toStartOfMonth(subtractMonths(now64(6, {p0}), 1)), 6, {p0})'
    >>> p = Params(); date_hogql("2025-06-01", "Europe/Berlin", p), p.values
    ('parseDateTime64BestEffort({p1}, 6, {p0})', {'p0': 'Europe/Berlin', 'p1': '2025-06-01'})
    """
    tz = params.add(timezone)
    relative = parse_relative_date(text)
    if relative is None:
        return f"parseDateTime64BestEffort({params.add(text)}, 6, {tz})"
    unit = relative.unit
    moment = f"now64(6, {tz})"
    if relative.count:
        # A quarter back is 13 weeks, as parse_relative counts it.
        back, amount = ("Week", 13 * relative.count) if unit == "q" else (_SQL_UNITS[unit], relative.count)
        moment = f"subtract{back}s({moment}, {amount})"
    if relative.position is not None or unit in "dwmqy":
        truncate_to = unit if relative.position is not None else "d"
        start = f"toStartOf{_SQL_UNITS[truncate_to]}({moment}{', 0' if truncate_to == 'w' else ''})"
        moment = f"toDateTime64({start}, 6, {tz})"
        if relative.position == "End":
            following = f"addMonths({moment}, 3)" if unit == "q" else f"add{_SQL_UNITS[unit]}s({moment}, 1)"
            moment = f"subtractMicroseconds({following}, 1)"
    return moment


def _parse_absolute(text: str, tz: ZoneInfo, *, attr: str) -> tuple[datetime, bool]:
    """An ISO date or datetime; ``(aware datetime, is_date_only)``."""
    try:
        if _ISO_DATE.match(text):
            return _wall(datetime.combine(date.fromisoformat(text), time()), tz), True
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise TranslationFailed(
            f"Invalid date {text!r}: use a relative date such as '-7d', '-1mStart' or 'all', or an ISO date.",
            attr=attr,
        ) from None
    if parsed.tzinfo is None:
        return _wall(parsed, tz), False
    return parsed.astimezone(tz), False


def start_of_interval(dt: datetime, interval: str) -> datetime:
    """Start of the ``interval`` containing ``dt``, in ``dt``'s zone (wall clock; weeks start on Sunday)."""
    unit = {"minute": "M", "hour": "h", "day": "d", "week": "w", "month": "m"}[interval]
    tz = dt.tzinfo
    return _start_of_unit(dt.replace(tzinfo=None), unit).replace(tzinfo=tz)


def shift(dt: datetime, interval: str, n: int) -> datetime:
    """``dt`` moved by ``n`` intervals on the wall clock (days stay days across DST)."""
    unit = {"minute": "M", "hour": "h", "day": "d", "week": "w", "month": "m"}[interval]
    tz = dt.tzinfo
    return _add(dt.replace(tzinfo=None), unit, n).replace(tzinfo=tz)


def bucket_key_sql(interval: str, column: str = "timestamp") -> str:
    """HogQL for an interval's wall-clock key of ``column`` (already in the project zone), e.g. ``'2025-06-01'``.

    Keys are text so that Python and SQL agree without any time zone arithmetic on either side.
    """
    form = {"minute": "%Y-%m-%d %H:%i:00", "hour": "%Y-%m-%d %H:00:00"}.get(interval, "%Y-%m-%d")
    return f"formatDateTime({start_of_interval_sql(interval, column)}, '{form}')"


def start_of_interval_sql(interval: str, column: str = "timestamp") -> str:
    """HogQL for the start of ``column``'s interval (``start_of_interval`` in SQL): a DateTime for minutes and
    hours, a Date for days and longer.

    >>> start_of_interval_sql("week", "t")
    'toStartOfWeek(t, 0)'
    """
    if interval == "minute":
        return f"toStartOfMinute({column})"
    if interval == "hour":
        return f"toStartOfHour({column})"
    if interval == "day":
        return f"toDate({column})"
    if interval == "week":
        return f"toStartOfWeek({column}, 0)"
    return f"toStartOfMonth({column})"


def bucket_key(interval: str, bucket: datetime) -> str:
    """The text key :func:`bucket_key_sql` gives for the interval starting at ``bucket``.

    >>> bucket_key("hour", datetime(2025, 6, 1, 13))
    '2025-06-01 13:00:00'
    >>> bucket_key("week", datetime(2025, 6, 1))
    '2025-06-01'
    """
    if interval == "minute":
        return bucket.strftime("%Y-%m-%d %H:%M:00")
    if interval == "hour":
        return bucket.strftime("%Y-%m-%d %H:00:00")
    return bucket.strftime("%Y-%m-%d")


@dataclass(frozen=True)
class QueryDateRange:
    """A resolved range: ``date_from``/``date_to`` are aware datetimes in the project's zone, both inclusive."""

    date_from: datetime
    date_to: datetime
    interval: str
    timezone: str
    explicit: bool = False

    @property
    def first_bucket(self) -> datetime:
        return start_of_interval(self.date_from, self.interval)

    def buckets(self) -> list[datetime]:
        """Every interval start from the one holding ``date_from`` to the one holding ``date_to``."""
        out: list[datetime] = []
        first = current = self.first_bucket
        i = 0
        while current <= self.date_to:
            out.append(current)
            i += 1
            current = shift(first, self.interval, i)
            if i > 100_000:
                raise TranslationFailed(
                    "The date range has too many intervals (over 100,000): use a longer interval.", attr="interval"
                )
        return out

    def key(self, bucket: datetime) -> str:
        """The text key :func:`bucket_key_sql` gives for the interval starting at ``bucket``."""
        return bucket_key(self.interval, bucket)

    def day_text(self, bucket: datetime) -> str:
        """PostHog's ``days`` entry: ``%Y-%m-%d`` (with `` %H:%M:%S`` for hour and minute intervals)."""
        return bucket.strftime("%Y-%m-%d %H:%M:%S" if self.interval in ("minute", "hour") else "%Y-%m-%d")

    def label(self, bucket: datetime) -> str:
        """PostHog's ``labels`` entry: ``1-Jun-2025``, ``1-Jun 13:00``, ``Jun 2025``, weeks as ``1–7 Jun``."""
        if self.interval in ("minute", "hour"):
            return f"{bucket.day}-{bucket.strftime('%b %H:%M')}"
        if self.interval == "month":
            return bucket.strftime("%b %Y")
        if self.interval == "week":
            start = max(bucket.date(), self.date_from.date())
            end = max(min(bucket.date() + timedelta(days=6), self.date_to.date()), start)
            return _date_range_label(start, end)
        return f"{bucket.day}-{bucket.strftime('%b-%Y')}"

    def bounds_utc(self) -> tuple[datetime, datetime]:
        """The SQL filter bounds: from the start of the first interval (PostHog's adjusted start), or from
        ``date_from`` itself for an explicit range, to ``date_to``."""
        return (self.date_from if self.explicit else self.first_bucket), self.date_to

    def to_json(self) -> dict[str, str]:
        return {"date_from": self.date_from.isoformat(), "date_to": self.date_to.isoformat()}

    def shifted(self, n: int) -> QueryDateRange:
        """The same range ``n`` intervals later (negative: earlier), for the previous period of a comparison."""
        return replace(
            self, date_from=shift(self.date_from, self.interval, n), date_to=shift(self.date_to, self.interval, n)
        )


def _date_range_label(start: date, end: date) -> str:
    if start == end:
        return f"{start.day}-{start.strftime('%b-%Y')}"
    if start.year != end.year:
        return f"{start.day}-{start.strftime('%b-%Y')} – {end.day}-{end.strftime('%b-%Y')}"
    if start.month != end.month:
        return f"{start.day}-{start.strftime('%b')} – {end.day}-{end.strftime('%b')}"
    return f"{start.day}–{end.day} {end.strftime('%b')}"


def _field(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


# The engine's calendar runs from 1900 to 2299; a year is kept in hand at each end for what reaches a period
# beyond the range (a comparison's previous range, retention's cohorts before date_to, a month's next month).
FIRST_YEAR, LAST_YEAR = 1901, 2298


def resolve_date_range(
    date_range: Any,
    interval: str,
    *,
    now: datetime,
    timezone: str,
    first_event: Callable[[], datetime | None] | None = None,
    attr: str = "dateRange",
    default_from: str = "-7d",
    empty_when_inverted: bool = False,
) -> QueryDateRange:
    """Resolve a ``DateRange`` (model or dict) for ``interval`` in ``timezone`` at ``now``.

    ``first_event`` answers ``"all"`` (the first event's time, or ``None`` when the project has none).
    Malformed strings raise ``TranslationFailed`` naming ``<attr>.date_from``/``date_to``; so does a range that
    ends before it starts, unless ``empty_when_inverted`` (PostHog's paths answer such a range with nothing).
    """
    tz = ZoneInfo(timezone)
    local_now = now.astimezone(tz)
    hourly = interval in ("minute", "hour")
    explicit = bool(_field(date_range, "explicitDate"))
    text_from = _field(date_range, "date_from") or default_from
    text_to = _field(date_range, "date_to")

    if text_from == "all":
        first = first_event() if first_event else None
        date_from = _start_of_unit((first or local_now).astimezone(tz).replace(tzinfo=None), "d").replace(tzinfo=tz)
    else:
        date_from = _resolve_one(text_from, local_now, tz, attr=f"{attr}.date_from")[0]

    if text_to:
        date_to, date_only = _resolve_one(text_to, local_now, tz, attr=f"{attr}.date_to")
        absolute = parse_relative(text_to, local_now, attr=f"{attr}.date_to") is None
        try:
            # PostHog's rule: by the hour, an absolute date_to is the instant it names (a date is its midnight,
            # so 2020-01-09 to 2020-01-09 is one hour); by the day or longer, a date runs to the end of that day
            if date_only and not hourly:
                date_to = _wall(date_to.replace(tzinfo=None) + timedelta(days=1) - _END_US, tz)
            if not explicit and not (hourly and absolute):
                date_to = _wall(_end_of_unit(date_to.replace(tzinfo=None), "h" if hourly else "d"), tz)
        except OverflowError:
            raise TranslationFailed(f"{text_to!r} is past the last date there is.", attr=f"{attr}.date_to") from None
    elif not explicit:
        date_to = _wall(_end_of_unit(local_now.replace(tzinfo=None), "h" if hourly else "d"), tz)
    else:
        date_to = local_now
    if date_to < date_from and not empty_when_inverted:
        raise TranslationFailed("The date range ends before it starts.", attr=f"{attr}.date_to")
    for name, value in (("date_to", date_to), ("date_from", date_from)):
        if not FIRST_YEAR <= value.year <= LAST_YEAR:
            raise TranslationFailed(
                f"Dates are read between {FIRST_YEAR} and {LAST_YEAR}; {name} falls in {value.year}.",
                attr=f"{attr}.{name}",
            )
    return QueryDateRange(date_from=date_from, date_to=date_to, interval=interval, timezone=timezone, explicit=explicit)


def _resolve_one(text: str, now: datetime, tz: ZoneInfo, *, attr: str) -> tuple[datetime, bool]:
    relative = parse_relative(text, now, attr=attr)
    if relative is not None:
        return relative, False
    return _parse_absolute(text, tz, attr=attr)
