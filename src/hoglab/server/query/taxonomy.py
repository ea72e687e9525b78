"""Names a statement reads that its project has never seen: warnings with a did-you-mean, not a silent NULL.

A property key nobody ever sent reads as NULL and an event name nobody ever sent matches nothing, both without a
word. The compiler lists what a statement reads (``CompiledQuery.reads``: property keys, and event names compared
with ``event``); :func:`unseen_names` asks the project's own data about each, and answers a warning per name it has
never seen, in PostHog's ``HogQLNotice`` shape (``{message, start, end, fix}``, ``fix`` the closest name the project
has). Only the caller's project is ever read, so a suggestion never names another project's property or event.

What it costs: a name in the property sample (``property_types.sampled_keys``, kept anyway for PostHog's numeric
typing) costs nothing; another is looked up once (``LIMIT 1``: it stops at the first row that has it) and, when
found, remembered for good (data is only added); a name not found is asked again only after the data changed.
At most :data:`MAX_CHECKED` names of one statement are looked up. A project with no events (or no persons) yet is
not warned about: every name would be "never seen".

>>> notice(NameRead("events", "$browsr", 7, 14), ["$browser", "$os"])["fix"]
'$browser'
>>> notice(NameRead("event", "zzz"), ["signup"])["message"]
"Event 'zzz' has never been seen in this project: it matches no event."
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from hoglab.translate.values import escape_identifier

from ..engine.settings import quote_string
from ..hogql.props import NameRead
from ..hogql.suggest import close_matches
from .cache import data_version
from .property_types import sampled_keys

__all__ = ["MAX_CHECKED", "notice", "unseen_names"]

MAX_CHECKED = 20
"""Names of one statement looked up in the data at most (the rest are not warned about)."""
_MAX_REMEMBERED = 10_000  # names remembered as seen per project and kind; past it the memory starts over
_EVENT_NAMES = 1_000  # event names read as did-you-mean candidates (the most frequent)

_DOLLAR_NAME = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")

_lock = threading.Lock()
_seen: dict[tuple[int, str], set[str]] = {}  # (team, kind) -> names found in the data
_missing: dict[tuple[int, str, str], int] = {}  # (team, kind, name) -> the data version it was not found at
_events: dict[int, tuple[int, list[str]]] = {}  # team -> (data version, event names)

_WHAT = {"events": "Property", "persons": "Person property", "event": "Event"}
_WHERE = {"events": "on this project's events", "persons": "on this project's persons", "event": "in this project"}
_EFFECT = {"events": "it reads as NULL", "persons": "it reads as NULL", "event": "it matches no event"}


def notice(read: NameRead, candidates: Iterable[str]) -> dict[str, Any]:
    """The warning for one name never seen: where it is, and the closest of ``candidates`` as ``fix`` (written
    as the statement wrote the name: a string literal or a name)."""
    best = close_matches(read.name, candidates, n=1)
    message = f"{_WHAT[read.kind]} '{read.name}' has never been seen {_WHERE[read.kind]}: {_EFFECT[read.kind]}"
    fix = None
    if best:
        message += f"; did you mean '{best[0]}'?"
        fix = quote_string(best[0]) if read.literal else _name(best[0])
    else:
        message += "."
    return {"message": message, "start": read.start, "end": read.end, "fix": fix}


def _name(key: str) -> str:
    # PostHog's own keys ($browser) read bare after "properties.", as HogQL writes them; others as HogQL escapes
    return key if _DOLLAR_NAME.fullmatch(key) else escape_identifier(key)


def _found(engine: Any, team_id: int, kind: str, name: str) -> bool:
    if kind == "event":
        sql = f"SELECT 1 AS x FROM events WHERE team_id = {int(team_id)} AND event = {quote_string(name)} LIMIT 1"
    else:
        sql = (f"SELECT 1 AS x FROM {kind} WHERE team_id = {int(team_id)} "
               f"AND JSONHas(properties, {quote_string(name)}) LIMIT 1")  # fmt: skip
    return bool(engine.execute(sql).num_rows)


def _event_names(engine: Any, team_id: int, version: int) -> list[str]:
    with _lock:
        cached = _events.get(team_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    rows = engine.execute(
        f"SELECT event FROM events WHERE team_id = {int(team_id)} GROUP BY event ORDER BY count() DESC "
        f"LIMIT {_EVENT_NAMES}"
    ).to_pylist()
    names = [str(row["event"]) for row in rows]
    with _lock:
        _events[team_id] = (version, names)
    return names


def _is_seen(engine: Any, team_id: int, read: NameRead, sample: frozenset[str], version: int) -> bool:
    if read.name in sample:
        return True
    with _lock:
        if read.name in _seen.get((team_id, read.kind), ()):
            return True
        if _missing.get((team_id, read.kind, read.name)) == version:
            return False
    found = _found(engine, team_id, read.kind, read.name)
    with _lock:
        if found:
            names = _seen.setdefault((team_id, read.kind), set())
            if len(names) >= _MAX_REMEMBERED:
                names.clear()
            names.add(read.name)
            _missing.pop((team_id, read.kind, read.name), None)
        else:
            if len(_missing) >= _MAX_REMEMBERED:
                _missing.clear()
            _missing[(team_id, read.kind, read.name)] = version
    return found


def unseen_names(engine: Any, team_id: int, reads: Sequence[NameRead]) -> list[dict[str, Any]]:
    """A warning (PostHog's ``HogQLNotice``) for each name of ``reads`` project ``team_id`` has never seen."""
    if not reads:
        return []
    version = data_version(engine)
    keys = sampled_keys(engine, team_id)
    events: list[str] | None = None
    warnings: list[dict[str, Any]] = []
    for read in reads[:MAX_CHECKED]:
        if read.kind == "event":
            events = _event_names(engine, team_id, version) if events is None else events
            if not events:
                continue  # no events at all: nothing to compare with
            sample, candidates = frozenset(events), events
        else:
            sample = keys.get(read.kind, frozenset())
            if not sample:
                continue  # no properties at all (or no rows) in this table yet
            candidates = sorted(sample)
        if not _is_seen(engine, team_id, read, sample, version):
            warnings.append(notice(read, candidates))
    return warnings
