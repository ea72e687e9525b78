"""Persons: who each distinct id is, kept in the engine's tables and cached per project in the owning process.

State lives in three versioned tables (``ReplacingMergeTree``: the row with the highest ``version`` wins):
``persons`` (id, properties, is_identified, is_deleted), ``person_distinct_ids`` (distinct id → person) and
``person_overrides`` (absorbed person → surviving person). One process owns the data (chDB allows no other), so
the current state of a project is loaded once, lazily, and then kept in memory; every change is written as new
rows before the events that caused it, and the cache is dropped if that write fails.

PostHog's rules, as its ingestion applies them:

* An unknown distinct id gets a new person, id ``uuid5(namespace, "<team>:<distinct id>")`` (deterministic).
* ``$identify`` (``$anon_distinct_id``) and ``$create_alias`` (``properties.alias``) join two distinct ids: if only
  one has a person the other joins it; if both do, the anonymous side's person is merged into the other one,
  unless it is already identified (two identified users are never merged; ``$merge_dangerously`` does anyway).
  A merge moves the distinct ids, merges properties (the survivor's win), keeps the earlier ``created_at``,
  deletes the absorbed person and records an override, kept flat (``A→B`` then ``B→C`` rewrites ``A→C``).
* ``$set_once``, then ``$set``, then ``$unset`` (in properties, or top level, which normalisation moves in).
* ``$process_person_profile: false`` events touch no person; their person id is the known one or the
  deterministic id the distinct id would get.

>>> state = PersonState(1)
>>> anon = state.process("$pageview", "anon-1", {"$set": {"plan": "free"}}, _T0)
>>> user = state.process("$identify", "user@x.com", {"$anon_distinct_id": "anon-1"}, _T0)
>>> anon == user, state.persons[user].properties, state.persons[user].is_identified
(True, {'plan': 'free'}, True)
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

__all__ = ["CachedPerson", "PersonRows", "PersonState", "next_version", "person_uuid", "valid_other_id"]

# The namespace of person ids derived from "<team>:<distinct id>", as PostHog derives them.
PERSON_NAMESPACE = uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22")
_NAMESPACE_BYTES = PERSON_NAMESPACE.bytes
_T0 = datetime(2026, 1, 1, tzinfo=UTC)

# Distinct ids that buggy clients send for everyone; PostHog refuses to merge on them, and so do we.
_ILLEGAL_IDS = {
    "anonymous", "guest", "distinctid", "distinct_id", "id", "not_authenticated", "email", "undefined", "true",
    "false", "null", "0", "[object object]", "nan", "none", "", "-1",
}  # fmt: skip

_version_lock = threading.Lock()
_last_version = 0


def next_version(at_least: int = 0) -> int:
    """A version above every one handed out or seen: microseconds since the epoch, forced to increase."""
    global _last_version
    with _version_lock:
        _last_version = max(_last_version + 1, time.time_ns() // 1000, at_least + 1)
        return _last_version


def person_uuid(team_id: int, distinct_id: str) -> str:
    """The id a new person gets for ``distinct_id`` in project ``team_id``.

    >>> person_uuid(1, "user-1") == str(uuid.uuid5(PERSON_NAMESPACE, "1:user-1"))
    True
    """
    # uuid.uuid5 by hand: the same bytes, without building UUID objects (file loads call this per new person).
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + f"{team_id}:{distinct_id}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass(slots=True)
class CachedPerson:
    id: str
    created_at: datetime
    raw_properties: str = "{}"
    is_identified: bool = False
    distinct_ids: set[str] = field(default_factory=set)
    _props: dict[str, Any] | None = None

    @property
    def properties(self) -> dict[str, Any]:
        # Parsed on first use: a project can hold many persons whose properties never change here.
        if self._props is None:
            try:
                parsed = orjson.loads(self.raw_properties or "{}")
            except orjson.JSONDecodeError:
                parsed = {}
            self._props = parsed if isinstance(parsed, dict) else {}
        return self._props

    def properties_json(self) -> str:
        if self._props is None:
            return self.raw_properties or "{}"
        return orjson.dumps(self._props).decode()


@dataclass
class PersonRows:
    """Rows to append, as column lists, one commit's worth (``rows.py`` turns them into Arrow)."""

    persons: list[tuple[int, str, datetime, str, int, int, int]] = field(default_factory=list)
    distinct_ids: list[tuple[int, str, str, int, int]] = field(default_factory=list)
    overrides: list[tuple[int, str, str, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.persons or self.distinct_ids or self.overrides)

    def extend(self, other: PersonRows) -> None:
        self.persons += other.persons
        self.distinct_ids += other.distinct_ids
        self.overrides += other.overrides


def valid_other_id(value: Any) -> str | None:
    """The other distinct id a merge event names (a number read as text, at most 200 characters), or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return None
    value = value[:200]
    return None if value.strip().lower() in _ILLEGAL_IDS else value


class PersonState:
    """The persons of one project and the changes not yet written."""

    def __init__(self, team_id: int, *, max_version: int = 0) -> None:
        self.team_id = team_id
        self.pdi: dict[str, str] = {}
        self.persons: dict[str, CachedPerson] = {}
        self.overrides: dict[str, str] = {}
        self.max_version = max_version
        self._dirty_persons: set[str] = set()
        self._deleted: dict[str, CachedPerson] = {}
        self._dirty_pdi: set[str] = set()
        self._dirty_overrides: set[str] = set()

    # -- reading ----------------------------------------------------------------------------------------------

    def resolve(self, distinct_id: str) -> str | None:
        return self.pdi.get(distinct_id)

    def person_id_for(self, distinct_id: str) -> str:
        """The person of ``distinct_id``, or the id it would get, without creating anything."""
        return self.pdi.get(distinct_id) or person_uuid(self.team_id, distinct_id)

    # -- changes ----------------------------------------------------------------------------------------------

    def add_person(self, person_id: str, created_at: datetime, distinct_ids: list[str]) -> CachedPerson:
        """A person with these distinct ids (used by file loads that bring their own person ids)."""
        person = self.persons.get(person_id)
        if person is None:
            person = CachedPerson(person_id, created_at)
            self.persons[person_id] = person
            self._dirty_persons.add(person_id)
        elif created_at < person.created_at:
            person.created_at = created_at
            self._dirty_persons.add(person_id)
        for distinct_id in distinct_ids:
            self._attach(distinct_id, person)
        return person

    def ensure_person(self, distinct_id: str, at: datetime) -> str:
        """The person of ``distinct_id``, created (first seen ``at``) if it has none."""
        return self._get_or_create(distinct_id, at).id

    def add_override(self, old_id: str, new_id: str) -> None:
        """Record that events stamped ``old_id`` belong to ``new_id`` (kept flat)."""
        new_id = self.overrides.get(new_id, new_id)
        if old_id == new_id:
            return
        for old, target in self.overrides.items():
            if target == old_id:
                self.overrides[old] = new_id
                self._dirty_overrides.add(old)
        self.overrides[old_id] = new_id
        self._dirty_overrides.add(old_id)

    def _attach(self, distinct_id: str, person: CachedPerson) -> None:
        previous = self.pdi.get(distinct_id)
        if previous == person.id:
            return
        if previous is not None and previous in self.persons:
            self.persons[previous].distinct_ids.discard(distinct_id)
        self.pdi[distinct_id] = person.id
        person.distinct_ids.add(distinct_id)
        self._dirty_pdi.add(distinct_id)

    def _get_or_create(self, distinct_id: str, at: datetime) -> CachedPerson:
        person_id = self.pdi.get(distinct_id)
        if person_id is not None:
            person = self.persons.get(person_id)
            if person is None:  # a distinct id whose person row is missing: give it one
                person = self.persons[person_id] = CachedPerson(person_id, at, distinct_ids={distinct_id})
                self._dirty_persons.add(person_id)
            return person
        new_id = person_uuid(self.team_id, distinct_id)
        if new_id in self.persons or new_id in self.overrides:
            new_id = str(uuid.uuid4())
        person = self.persons[new_id] = CachedPerson(new_id, at)
        self._dirty_persons.add(new_id)
        self._attach(distinct_id, person)
        return person

    def _join(self, other_id: str, into_id: str, at: datetime, *, force: bool = False) -> None:
        other_pid, into_pid = self.pdi.get(other_id), self.pdi.get(into_id)
        if other_pid is not None and into_pid is not None:
            if other_pid != into_pid:
                other, into = self._get_or_create(other_id, at), self._get_or_create(into_id, at)
                if force or not other.is_identified:
                    self._merge(other, into)
        elif other_pid is not None:
            self._attach(into_id, self._get_or_create(other_id, at))
        elif into_pid is not None:
            self._attach(other_id, self._get_or_create(into_id, at))
        else:
            self._attach(other_id, self._get_or_create(into_id, at))

    def _merge(self, other: CachedPerson, into: CachedPerson) -> None:
        merged = {**other.properties, **into.properties}
        into._props = merged
        into.created_at = min(into.created_at, other.created_at)
        into.is_identified = into.is_identified or other.is_identified
        for distinct_id in list(other.distinct_ids):
            self._attach(distinct_id, into)
        del self.persons[other.id]
        self._dirty_persons.discard(other.id)
        self._deleted[other.id] = other
        self._dirty_persons.add(into.id)
        self.add_override(other.id, into.id)

    def process(
        self, event: str, distinct_id: str, properties: Mapping[str, Any], at: datetime, *, personless: bool = False
    ) -> str:
        """Apply one event's person effects; the id of the person the event belongs to."""
        if personless:
            return self.person_id_for(distinct_id)
        identified = False
        if event in ("$identify", "$create_alias", "$merge_dangerously"):
            key = "$anon_distinct_id" if event == "$identify" else "alias"
            other = valid_other_id(properties.get(key))
            if other is not None and other != distinct_id and distinct_id.strip().lower() not in _ILLEGAL_IDS:
                self._join(other, distinct_id, at, force=event == "$merge_dangerously")
            identified = event != "$merge_dangerously"
        person = self._get_or_create(distinct_id, at)
        changed = identified and not person.is_identified
        person.is_identified = person.is_identified or identified
        changed = _apply_property_updates(person, properties) or changed
        if changed:
            self._dirty_persons.add(person.id)
        return person.id

    def take_rows(self, version: int) -> PersonRows:
        """The rows that record every change since the last call, all at ``version``."""
        rows = PersonRows()
        team = self.team_id
        for person_id in self._dirty_persons:
            p = self.persons[person_id]
            rows.persons.append((team, p.id, p.created_at, p.properties_json(), int(p.is_identified), 0, version))
        for p in self._deleted.values():
            rows.persons.append((team, p.id, p.created_at, "{}", 0, 1, version))
        for distinct_id in self._dirty_pdi:
            rows.distinct_ids.append((team, distinct_id, self.pdi[distinct_id], 0, version))
        for old in self._dirty_overrides:
            rows.overrides.append((team, old, self.overrides[old], version))
        self._dirty_persons.clear()
        self._deleted.clear()
        self._dirty_pdi.clear()
        self._dirty_overrides.clear()
        self.max_version = max(self.max_version, version)
        return rows


def _apply_property_updates(person: CachedPerson, properties: Mapping[str, Any]) -> bool:
    """``$set_once``, ``$set``, ``$unset`` in that order; whether anything changed (no copy: loads call this a lot)."""
    set_once, set_, unset = properties.get("$set_once"), properties.get("$set"), properties.get("$unset")
    if not (set_once or set_ or unset):
        return False
    props = person.properties
    changed = False
    if isinstance(set_once, dict):
        for key, value in set_once.items():
            if key not in props:
                props[key] = value
                changed = True
    if isinstance(set_, dict):
        for key, value in set_.items():
            if key not in props or type(props[key]) is not type(value) or props[key] != value:
                props[key] = value
                changed = True
    if isinstance(unset, list | tuple | dict):
        for key in unset:
            if isinstance(key, str) and key in props:
                del props[key]
                changed = True
    return changed
