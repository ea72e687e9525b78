"""Events deduplicated by ``(project, uuid)`` at insert: an SDK that resends a batch (its answer was lost) must not
count twice, and readers must not pay for ``FINAL`` on every query.

PostHog's own events table is a ReplacingMergeTree on ``(team_id, toDate(timestamp), event, cityHash64(distinct_id),
cityHash64(uuid))``: a resent event collapses into the first when both share the day and the event name, and only
after a background merge. hoglab checks before writing instead, so a duplicate is never visible: the one writer
thread (``writer.py``) drops

* a repeated ``(project, uuid)`` inside a group or a request, and
* one already stored for that project with the same event name within a day of its timestamp (a retry's
  ``timestamp`` is recomputed from its new ``sent_at``, so it may move by milliseconds, even across midnight).

:func:`stored_uuids` is the lookup. It filters on the table's sort-key prefix ``(team_id, toDate(timestamp),
event)``, so it reads only the granules of those days and events (``bench/bench_dedup.py`` measures it), but all
of them however few uuids it asks about: the writer asks once per group for its small requests, and once per
:data:`LOOKUP_SPAN` events of a big request written in slices (it remembers what it found, and what it wrote
since, for the rest of the request).

>>> from datetime import UTC, datetime
>>> days = lookup_days(datetime(2026, 1, 2, 0, 0, 1, tzinfo=UTC))
>>> [str(d) for d in days]
['2026-01-01', '2026-01-02', '2026-01-03']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from ..engine.settings import quote_string

if TYPE_CHECKING:
    from ..engine.base import Engine
    from .events import CapturedEvent

__all__ = ["LOOKUP_SPAN", "lookup_days", "stored_uuids"]

LOOKUP_SPAN = 25_000
"""Uuids asked about in one statement (~1 MB of SQL): each lookup reads every uuid of the days and event names it
names, however few it asks about, so one long IN list costs less than several short ones."""
_MAX_LOOKUP_SQL = 64 * 1024 * 1024
# Event names are the sender's (up to 200 characters each, thousands of them in a group): the statement may outgrow
# ClickHouse's default max_query_size (256 KiB) and its 50,000-element syntax tree, which a capture must never
# fail on. The lookup is the service's own statement, so its size is bounded by the group, not by a user.
_LOOKUP_SETTINGS = {"max_query_size": _MAX_LOOKUP_SQL, "max_ast_elements": 10_000_000,
                    "max_expanded_ast_elements": 10_000_000}  # fmt: skip


def lookup_days(timestamp: datetime | date) -> tuple[date, date, date]:
    """The days a stored copy of an event at ``timestamp`` (or on that day) may sit in."""
    day = timestamp.date() if isinstance(timestamp, datetime) else timestamp
    return day - timedelta(days=1), day, day + timedelta(days=1)


def stored_uuids(engine: Engine, team_id: int, events: Sequence[CapturedEvent]) -> set[str]:
    """The uuids of ``events`` that project ``team_id`` already holds (on the days around each, same name)."""
    found: set[str] = set()
    for start in range(0, len(events), LOOKUP_SPAN):
        chunk = events[start : start + LOOKUP_SPAN]
        # The distinct (day, name) pairs first: a big group has few of them, and three days for each.
        pairs = {(e.timestamp.date(), e.event) for e in chunk}
        keys = {(day, name) for first, name in pairs for day in lookup_days(first)}
        key_list = ",".join(f"(toDate('{day.isoformat()}'),{quote_string(name)})" for day, name in sorted(keys))
        uuid_list = ",".join(f"'{e.uuid}'" for e in chunk)  # canonical UUIDs (events.py), nothing to escape
        sql = (
            f"SELECT DISTINCT toString(uuid) AS uuid FROM hoglab.events WHERE team_id = {int(team_id)} "
            f"AND (toDate(timestamp), event) IN ({key_list}) AND uuid IN ({uuid_list})"
        )
        table = engine.execute(sql, settings=_LOOKUP_SETTINGS)
        found.update(str(value) for value in table.column("uuid").to_pylist())
    return found
