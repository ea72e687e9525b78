"""Events deduplicated by ``(project, uuid)`` at insert: an SDK that resends a batch (its answer was lost) must not
count twice, and readers must not pay for ``FINAL`` on every query.

PostHog's own events table is a ReplacingMergeTree on ``(team_id, toDate(timestamp), event, cityHash64(distinct_id),
cityHash64(uuid))``: a resent event collapses into the first when both share the day and the event name, and only
after a background merge. hoglab checks before writing instead, so a duplicate is never visible: the one writer
thread (``writer.py``) drops from each group

* a repeated ``(project, uuid)`` inside the group, and
* one already stored for that project with the same event name within a day of its timestamp (a retry's
  ``timestamp`` is recomputed from its new ``sent_at``, so it may move by milliseconds, even across midnight).

The lookup filters on the table's sort-key prefix ``(team_id, toDate(timestamp), event)``, so it reads only the
granules of those days and events (``bench/bench_dedup.py`` measures it).

>>> from datetime import UTC, datetime
>>> days = lookup_days(datetime(2026, 1, 2, 0, 0, 1, tzinfo=UTC))
>>> [str(d) for d in days]
['2026-01-01', '2026-01-02', '2026-01-03']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from ..engine.settings import quote_string

if TYPE_CHECKING:
    from ..engine.base import Engine
    from .events import CapturedEvent

__all__ = ["drop_duplicates", "lookup_days"]

# One lookup per group commit: a group is cut to ``Ingestor.slice_events`` (5,000) events of a big request. Each
# lookup reads every uuid of the days and event names it names, however few it asks about, so one big IN list
# costs less than several small ones (10,000 uuids: ~400 KB of SQL).
_LOOKUP_CHUNK = 10_000
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


def _stored_uuids(engine: Engine, team_id: int, events: Sequence[CapturedEvent]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(events), _LOOKUP_CHUNK):
        chunk = events[start : start + _LOOKUP_CHUNK]
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


def drop_duplicates(engine: Engine, batches: Iterable[tuple[int, list[CapturedEvent]]]) -> list[list[CapturedEvent]]:
    """Each batch without the events already stored or already earlier in ``batches`` (same project and uuid)."""
    batches = list(batches)
    by_team: dict[int, list[CapturedEvent]] = {}
    for team_id, events in batches:
        by_team.setdefault(team_id, []).extend(events)
    stored = {team_id: _stored_uuids(engine, team_id, events) for team_id, events in by_team.items() if events}
    seen: dict[int, set[str]] = {}
    kept: list[list[CapturedEvent]] = []
    for team_id, events in batches:
        known, already_stored = seen.setdefault(team_id, set()), stored.get(team_id, set())
        fresh: list[CapturedEvent] = []
        for event in events:
            if event.uuid in known or event.uuid in already_stored:
                continue
            known.add(event.uuid)
            fresh.append(event)
        kept.append(fresh)
    return kept
