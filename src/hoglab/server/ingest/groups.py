"""Groups (PostHog's group analytics) as ingestion applies them: group types, ``$groups`` and ``$groupidentify``.

PostHog's rules, restated (its plugin server's group-type manager and group store):

* A project has at most five group types. An unknown type name met in an event's ``$groups`` (or as the
  ``$group_type`` of a ``$groupidentify``) is created with the next index: the number of types the project has,
  moved past any index taken (first seen 0, next 1, ...). A sixth type is dropped: no index, no ``$group_N``.
  Types are never created by flags or queries.
* ``$groups`` (an object ``{"company": "acme"}``; anything else is ignored) puts ``$group_<index> = <key>`` in the
  event's properties for each known type; the key is kept as text (``42`` → ``"42"``); an empty or non-scalar
  key is skipped. The events table derives its ``$group_N`` columns from those properties.
* ``$groupidentify`` (``$group_type``, ``$group_key``, ``$group_set``) creates or updates the group: ``$group_set``
  is merged into its properties (a key is set when absent or different; keys not mentioned are kept); there is no
  set-once and no unset by event; updates apply in the order events arrive (their timestamps are not compared).
  A new group's ``created_at`` is the event's timestamp. An empty type or key skips the event's group part.
* Events with ``$groups`` but no ``$groupidentify`` create no group row (only the type).

>>> state = GroupState(1)
>>> props = {"$groups": {"company": "acme", "project": 42}}
>>> state.enrich(props, _T0)
True
>>> props["$group_0"], props["$group_1"]
('acme', '42')
>>> state.identify({"$group_type": "company", "$group_key": "acme", "$group_set": {"plan": "pro"}}, _T0)
>>> state.groups[(0, "acme")].properties
{'plan': 'pro'}
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa

from ..engine.base import Engine
from ..engine.ddl import DATABASE, MAX_GROUP_TYPES
from ..engine.memory import MemoryBudget
from ..engine.settings import quote_string
from .persons import next_version

__all__ = [
    "MAX_GROUP_KEY",
    "MAX_GROUP_TYPES",
    "CachedGroup",
    "CachedGroupType",
    "GroupRows",
    "GroupState",
    "GroupStore",
    "group_key_text",
]

MAX_GROUP_KEY = 400
"""Longest group key and group type name kept (PostHog's column width)."""
_T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_CACHE_BYTES = 64 * 1024**2
"""The group cache's bound until the service sizes it from the memory budget (``MemoryBudget.group_cache_bytes``)."""
_GROUP_COST = 400  # a cached group's objects besides its properties (key, times, dict, the LRU's entry)
_ABSENT_COST = 150  # a key looked up and not found
_LOAD_SETTINGS = {"max_result_rows": 0, "max_execution_time": 0}

_stores: weakref.WeakKeyDictionary[Any, GroupStore] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def group_key_text(value: Any) -> str | None:
    """A group key as PostHog keeps it: text (numbers as their JSON text), at most 400 characters; ``None`` for
    an empty key or one that is not a scalar.

    >>> group_key_text(42), group_key_text(" acme "), group_key_text(""), group_key_text({"a": 1})
    ('42', ' acme ', None, None)
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        text = str(int(value)) if value.is_integer() else repr(value)
    elif isinstance(value, str):
        text = value
    else:
        return None
    text = text[:MAX_GROUP_KEY]
    return text if text.strip() else None


def _type_name(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value[:MAX_GROUP_KEY]


@dataclass(slots=True)
class CachedGroupType:
    """One group type of a project: its name, index and the names PostHog's UI shows (``update_metadata``)."""

    index: int
    name: str
    created_at: datetime
    name_singular: str | None = None
    name_plural: str | None = None
    default_columns: list[str] | None = None

    def to_api(self) -> dict[str, Any]:
        """PostHog's ``GroupType`` object."""
        return {
            "group_type": self.name,
            "group_type_index": self.index,
            "name_singular": self.name_singular,
            "name_plural": self.name_plural,
            "detail_dashboard": None,
            "default_columns": self.default_columns,
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
        }


@dataclass(slots=True)
class CachedGroup:
    """One group: its key within its type, its properties and when it was first identified."""

    index: int
    key: str
    created_at: datetime
    properties: dict[str, Any] = field(default_factory=dict)
    updated_at: datetime | None = None


@dataclass
class GroupRows:
    """Rows to append: group types and groups, one commit's worth."""

    types: list[tuple[int, int, str, str | None, str | None, str | None, datetime, int, int]] = field(
        default_factory=list
    )
    groups: list[tuple[int, int, str, datetime, str, datetime, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.types or self.groups)


_TYPES_SCHEMA = pa.schema([
    ("team_id", pa.int64()), ("group_type_index", pa.uint8()), ("group_type", pa.string()),
    ("name_singular", pa.string()), ("name_plural", pa.string()), ("default_columns", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")), ("is_deleted", pa.uint8()), ("version", pa.uint64()),
])  # fmt: skip
_GROUPS_SCHEMA = pa.schema([
    ("team_id", pa.int64()), ("group_type_index", pa.uint8()), ("group_key", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")), ("group_properties", pa.string()),
    ("updated_at", pa.timestamp("us", tz="UTC")), ("version", pa.uint64()),
])  # fmt: skip


def _table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.table([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


class GroupState:
    """The group types of one project and the groups it has read or changed, with the changes not yet written.

    ``types`` is the whole list (at most five); ``groups`` holds the groups looked up so far (``GroupStore``
    loads them by key before a batch uses them) and every group changed here.
    """

    def __init__(self, team_id: int) -> None:
        self.team_id = team_id
        self.types: dict[str, CachedGroupType] = {}
        self.deleted: set[int] = set()
        self.groups: dict[tuple[int, str], CachedGroup] = {}
        self._dirty_types: set[int] = set()
        self._dirty_groups: set[tuple[int, str]] = set()

    # -- types ------------------------------------------------------------------------------------------------

    def by_index(self, index: int) -> CachedGroupType | None:
        return next((t for t in self.types.values() if t.index == index), None)

    def type_index(self, name: Any, at: datetime, *, create: bool = True) -> int | None:
        """The index of type ``name``, created with the next free index if new (``None``: no sixth type)."""
        type_name = _type_name(name)
        if type_name is None:
            return None
        known = self.types.get(type_name)
        if known is not None:
            return known.index
        if not create:
            return None
        taken = {t.index for t in self.types.values()}
        index = len(taken)
        while index in taken:
            index += 1
        if index >= MAX_GROUP_TYPES:
            return None
        self.types[type_name] = CachedGroupType(index, type_name, at)
        self.deleted.discard(index)
        self._dirty_types.add(index)
        return index

    def put_type(self, group_type: CachedGroupType) -> None:
        """Add or replace a type at its own index (a pull or a file keeps the source's indexes)."""
        for name, existing in list(self.types.items()):
            if existing.index == group_type.index or name == group_type.name:
                del self.types[name]
        self.types[group_type.name] = group_type
        self.deleted.discard(group_type.index)
        self._dirty_types.add(group_type.index)

    def delete_type(self, index: int) -> bool:
        found = self.by_index(index)
        if found is None:
            return False
        del self.types[found.name]
        self.deleted.add(index)
        self._dirty_types.add(index)
        return True

    def touch_type(self, index: int) -> None:
        """Mark a type changed in place (its names or columns) so the next rows write it."""
        self._dirty_types.add(index)

    # -- events -----------------------------------------------------------------------------------------------

    def enrich(self, properties: dict[str, Any], at: datetime) -> bool:
        """Write ``$group_<index>`` for each group of ``properties["$groups"]`` (creating types); whether any was."""
        groups = properties.get("$groups")
        if not isinstance(groups, dict) or not groups:
            return False
        changed = False
        for name, raw_key in groups.items():
            key = group_key_text(raw_key)
            if key is None:
                continue
            index = self.type_index(name, at)
            if index is not None and properties.get(f"$group_{index}") != key:
                properties[f"$group_{index}"] = key
                changed = True
        return changed

    def identify(self, properties: Mapping[str, Any], at: datetime) -> None:
        """Apply a ``$groupidentify`` event's ``$group_set`` to its group (created at ``at`` if new)."""
        key = group_key_text(properties.get("$group_key"))
        if key is None or _type_name(properties.get("$group_type")) is None:
            return
        index = self.type_index(properties.get("$group_type"), at)
        if index is None:
            return
        updates = properties.get("$group_set")
        self.upsert(index, key, updates if isinstance(updates, dict) else {}, at)

    def upsert(self, index: int, key: str, updates: Mapping[str, Any], at: datetime, *, replace: bool = False,
               created_at: datetime | None = None, updated_at: datetime | None = None) -> CachedGroup:  # fmt: skip
        """Merge ``updates`` into the group's properties (``replace``: they become its properties), creating it
        (first seen ``at``, or ``created_at``). ``updated_at`` defaults to the time the change is written."""
        group = self.groups.get((index, key))
        if group is None:
            group = self.groups[(index, key)] = CachedGroup(index, key, created_at or at, dict(updates), updated_at)
            self._dirty_groups.add((index, key))
            return group
        changed = False
        if replace:
            if group.properties != updates:
                group.properties = dict(updates)
                changed = True
            if created_at is not None and created_at != group.created_at:
                group.created_at = created_at
                changed = True
        else:
            for name, value in updates.items():
                if name not in group.properties or type(group.properties[name]) is not type(value) or \
                        group.properties[name] != value:  # fmt: skip
                    group.properties[name] = value
                    changed = True
        if changed:
            group.updated_at = updated_at
            self._dirty_groups.add((index, key))
        return group

    def unset(self, index: int, key: str, names: Iterable[str]) -> bool:
        """Remove properties of a group (PostHog's ``delete_property``); whether it had any of them."""
        group = self.groups.get((index, key))
        if group is None:
            return False
        removed = [n for n in names if n in group.properties]
        for name in removed:
            del group.properties[name]
        if removed:
            group.updated_at = None
            self._dirty_groups.add((index, key))
        return bool(removed)

    def take_rows(self, version: int, now: datetime) -> GroupRows:
        """Rows recording every change since the last call, at ``version``."""
        rows = GroupRows()
        team = self.team_id
        for index in sorted(self._dirty_types):
            t = self.by_index(index)
            if t is None:
                rows.types.append((team, index, "", None, None, None, now, 1, version))
                continue
            columns = orjson.dumps(t.default_columns).decode() if t.default_columns is not None else None
            rows.types.append((team, t.index, t.name, t.name_singular, t.name_plural, columns, t.created_at, 0,
                               version))  # fmt: skip
        for index, key in sorted(self._dirty_groups):
            g = self.groups[(index, key)]
            g.updated_at = g.updated_at or now
            rows.groups.append((team, index, key, g.created_at, orjson.dumps(g.properties).decode(), g.updated_at,
                                version))  # fmt: skip
        self._dirty_types.clear()
        self._dirty_groups.clear()
        return rows

    @property
    def dirty(self) -> bool:
        return bool(self._dirty_types or self._dirty_groups)


def _cost(group: CachedGroup | None) -> int:
    if group is None:
        return _ABSENT_COST
    return _GROUP_COST + len(group.key) + 2 * len(orjson.dumps(group.properties, option=orjson.OPT_NON_STR_KEYS))


class GroupStore:
    """The group types and groups of every project of one engine, cached, written with their changes.

    One per engine (``GroupStore.for_engine``), shared by capture, file loads, the flags service, pulls and the
    groups API; ``lock`` serialises changes and their writes. A project's types are read once (at most five
    rows); its groups are read by key when a batch or a flag needs them, and kept in a least-recently-used cache
    of at most ``max_bytes`` (estimated: twice their properties' JSON and 400 bytes each; the service sizes it
    from the memory budget): past it, the groups used longest ago are forgotten (never one with changes not yet
    written) and read again when next named. A public token can add groups, never memory past the bound.
    """

    def __init__(self, engine: Engine, *, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.engine = engine
        self.lock = threading.RLock()
        self.max_bytes = int(max_bytes)
        self._states: dict[int, GroupState] = {}
        # (team, index, key) of every group held or known absent, least recently used first -> its bytes.
        self._known: OrderedDict[tuple[int, int, str], int] = OrderedDict()
        self._bytes = 0

    @classmethod
    def for_engine(cls, engine: Engine) -> GroupStore:
        """The engine's store, its cache sized from the engine's memory budget (``group_cache_bytes``)."""
        with _stores_lock:
            store = _stores.get(engine)
            if store is None:
                budget = getattr(engine, "memory", None)
                size = budget.group_cache_bytes if isinstance(budget, MemoryBudget) else DEFAULT_CACHE_BYTES
                store = _stores[engine] = cls(engine, max_bytes=size)
            return store

    def state(self, team_id: int) -> GroupState:
        """The project's state with its group types loaded (call with ``lock`` held)."""
        team = int(team_id)
        state = self._states.get(team)
        if state is None:
            state = self._states[team] = self._load_types(team)
        return state

    def types(self, team_id: int) -> list[CachedGroupType]:
        """The project's group types by index."""
        with self.lock:
            return sorted(self.state(team_id).types.values(), key=lambda t: t.index)

    def mapping(self, team_id: int) -> dict[str, int]:
        """Type name -> index."""
        return {t.name: t.index for t in self.types(team_id)}

    def with_groups(self, team_id: int, keys: Iterable[tuple[int, str]]) -> GroupState:
        """The project's state holding these groups (those that exist), read from the engine once each."""
        state = self.state(team_id)
        team = state.team_id
        wanted: set[tuple[int, str]] = set()
        for index, key in keys:
            known = (team, index, key)
            if known in self._known:
                self._known.move_to_end(known)
            elif (index, key) not in state.groups:
                wanted.add((index, key))
        if wanted:
            for group in self._read_groups(team, sorted(wanted)):
                state.groups.setdefault((group.index, group.key), group)
            for index, key in sorted(wanted):
                self._remember(team, index, key, state.groups.get((index, key)))
            self._trim(keep=wanted)
        return state

    def _remember(self, team: int, index: int, key: str, group: CachedGroup | None) -> None:
        known = (team, index, key)
        self._bytes += _cost(group) - self._known.pop(known, 0)
        self._known[known] = _cost(group)

    def _trim(self, keep: set[tuple[int, str]] | None = None) -> None:
        """Forget the groups used longest ago until the cache is within ``max_bytes`` (not those with changes
        not yet written, nor ``keep``, the batch in hand)."""
        skipped: list[tuple[tuple[int, int, str], int]] = []
        while self._bytes > self.max_bytes and self._known:
            known, cost = self._known.popitem(last=False)
            team, index, key = known
            state = self._states.get(team)
            if state is not None and ((index, key) in state._dirty_groups or (keep and (index, key) in keep)):
                skipped.append((known, cost))
                continue
            self._bytes -= cost
            if state is not None:
                state.groups.pop((index, key), None)
        for known, cost in skipped:
            self._known[known] = cost
            self._known.move_to_end(known, last=False)

    @property
    def cached_bytes(self) -> int:
        """The groups held now, in the cache's estimate (bench_groups.py watches it)."""
        return self._bytes

    def group(self, team_id: int, index: int, key: str) -> CachedGroup | None:
        """One group as stored (a copy), or ``None``."""
        with self.lock:
            found = self.with_groups(team_id, [(index, key)]).groups.get((index, key))
            if found is None:
                return None
            return CachedGroup(found.index, found.key, found.created_at, dict(found.properties), found.updated_at)

    def write(self, rows: GroupRows) -> None:
        """Append group rows; call before inserting the events that name them."""
        if rows.types:
            self.engine.insert_arrow("group_type_mapping", _table(rows.types, _TYPES_SCHEMA))
        if rows.groups:
            self.engine.insert_arrow("groups", _table(rows.groups, _GROUPS_SCHEMA))

    def commit(self, state: GroupState, now: datetime | None = None) -> None:
        """Write what ``state`` changed (call with ``lock`` held); on failure the cached state is dropped."""
        if not state.dirty:
            return
        changed = list(state._dirty_groups)
        try:
            self.write(state.take_rows(next_version(), now or datetime.now(UTC)))
        except BaseException:
            self.invalidate(state.team_id)
            raise
        for index, key in changed:
            self._remember(state.team_id, index, key, state.groups.get((index, key)))
        self._trim()

    def invalidate(self, team_id: int | None = None) -> None:
        """Forget cached state (after a failed write or a load): the next use reads what the tables hold."""
        with self.lock:
            if team_id is None:
                self._states.clear()
                self._known.clear()
                self._bytes = 0
            else:
                team = int(team_id)
                self._states.pop(team, None)
                for known in [k for k in self._known if k[0] == team]:
                    self._bytes -= self._known.pop(known)

    # -- reading ----------------------------------------------------------------------------------------------

    def _load_types(self, team: int) -> GroupState:
        rows = self.engine.execute(
            f"""SELECT group_type_index AS i, argMax(group_type, version) AS name,
                       argMax(tuple(name_singular), version).1 AS singular,
                       argMax(tuple(name_plural), version).1 AS plural,
                       argMax(tuple(default_columns), version).1 AS columns,
                       argMax(created_at, version) AS created, argMax(is_deleted, version) AS deleted
                FROM {DATABASE}.group_type_mapping WHERE team_id = {team} GROUP BY i ORDER BY i""",
            settings=_LOAD_SETTINGS,
        ).to_pylist()
        state = GroupState(team)
        for row in rows:
            if row["deleted"]:
                state.deleted.add(int(row["i"]))
                continue
            columns = orjson.loads(row["columns"]) if row["columns"] else None
            created = row["created"] if row["created"].tzinfo else row["created"].replace(tzinfo=UTC)
            kept = columns if isinstance(columns, list) else None
            state.types[row["name"]] = CachedGroupType(int(row["i"]), row["name"], created, row["singular"],
                                                       row["plural"], kept)  # fmt: skip
        return state

    def _read_groups(self, team: int, keys: list[tuple[int, str]]) -> list[CachedGroup]:
        found: list[CachedGroup] = []
        # Keys come in batches of a capture request or a flags request: a literal list stays small.
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            wanted = ", ".join(f"({int(i)}, {quote_string(k)})" for i, k in chunk)
            rows = self.engine.execute(
                f"""SELECT group_type_index AS i, group_key AS k, argMax(created_at, version) AS created,
                           argMax(group_properties, version) AS props, argMax(updated_at, version) AS updated
                    FROM {DATABASE}.groups
                    WHERE team_id = {team} AND (group_type_index, group_key) IN ({wanted})
                    GROUP BY i, k""",
                settings=_LOAD_SETTINGS,
            ).to_pylist()
            for row in rows:
                try:
                    props = orjson.loads(row["props"] or "{}")
                except orjson.JSONDecodeError:
                    props = {}
                found.append(CachedGroup(int(row["i"]), row["k"], _aware(row["created"]),
                                   props if isinstance(props, dict) else {}, _aware(row["updated"])))  # fmt: skip
        return found


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
