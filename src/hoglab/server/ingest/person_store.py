"""The persons of every project of one engine: loaded lazily, cached, written with their changes.

One :class:`PersonStore` per engine (``PersonStore.for_engine``) is shared by the capture writer and file loads,
so both see the same persons; its ``lock`` serialises person changes and their writes.

Nothing needs a big project's whole person state in Python. Capture and ``/flags`` ask for the persons of the
distinct ids in hand (``state_for``): a project of fewer than ``whole_state_max_ids`` distinct ids is loaded whole and
answered from memory; a bigger one gets a cached state that grows with the ids it has been asked about, each new
id looked up in the engine once (a project of 4M persons answered its first captured event after 68 s and 4.2 GiB
when the whole state was loaded; now after 0.6 s, reading a handful of rows). A file load asks for the few
persons its merges touch (``partial_state``, not cached; the load drops the cached state afterwards). ``state``
(the whole project) remains for callers that need every person.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from ..engine.base import Engine, EngineError
from ..engine.ddl import DATABASE
from ..engine.memory import MemoryBudget
from .persons import CachedPerson, PersonRows, PersonState, person_uuid
from .rows import person_tables

__all__ = ["PersonStore"]

# Internal reads of a whole project's persons: no row cap, no time limit (they are not user queries).
_LOAD_SETTINGS = {"max_result_rows": 0, "max_execution_time": 0}

_stores: weakref.WeakKeyDictionary[Any, PersonStore] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


DEFAULT_CACHE_BYTES = 512 * 1024**2
"""The person cache's bound until the engine's memory budget sizes it (``MemoryBudget.person_cache_bytes``)."""
ID_COST = 1_000
"""Bytes a cached distinct id holds with its share of its person (about 100 MB per 100,000 ids, measured)."""


class PersonStore:
    """The persons of every project of one engine, cached per project, at most ``max_bytes`` in all (estimated
    at :data:`ID_COST` a distinct id held): past it, the projects used longest ago are forgotten and read again
    when next needed; a project's own state that grew past it (ids looked up one batch after another) is
    started again from the ids in hand."""

    def __init__(self, engine: Engine, *, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.engine = engine
        self.lock = threading.RLock()
        self.max_bytes = int(max_bytes)
        self._states: dict[int, PersonState] = {}
        self._partials: dict[int, tuple[PersonState, set[str]]] = {}  # state_for's states, and the ids looked up
        self._used: OrderedDict[int, None] = OrderedDict()  # projects with a cached state, least recently used first
        self.persons_read = 0  # persons ever read into Python (tests check a load reads only the few it needs)

    whole_state_max_ids = 200_000
    """Below this many distinct ids ``state_for`` loads the project's whole state (about 0.2 s and 100 MB per
    100,000 ids) and answers every later request from memory; above it, only the ids asked about. Never more
    than half of what the cache may hold."""

    @classmethod
    def for_engine(cls, engine: Engine) -> PersonStore:
        """The engine's store, its cache sized from the engine's memory budget (``person_cache_bytes``)."""
        with _stores_lock:
            store = _stores.get(engine)
            if store is None:
                budget = getattr(engine, "memory", None)
                size = budget.person_cache_bytes if isinstance(budget, MemoryBudget) else DEFAULT_CACHE_BYTES
                store = _stores[engine] = cls(engine, max_bytes=size)
            return store

    def _held_ids(self, team: int) -> int:
        whole = self._states.get(team)
        if whole is not None:
            return len(whole.pdi)
        partial = self._partials.get(team)
        return len(partial[1]) + len(partial[0].pdi) if partial is not None else 0

    def _make_room(self, team: int) -> None:
        """Before serving ``team``: forget the projects used longest ago while the cache is over its bound, and
        ``team``'s own partial state if it alone is (it is read again for the ids in hand)."""
        self._used[team] = None
        self._used.move_to_end(team)
        held = sum(self._held_ids(t) for t in self._used) * ID_COST
        for other in list(self._used):
            if held <= self.max_bytes or other == team:
                continue
            held -= self._held_ids(other) * ID_COST
            self._forget(other)
        if held > self.max_bytes and team in self._partials:
            self._forget(team)
            self._used[team] = None

    def _forget(self, team: int) -> None:
        self._states.pop(team, None)
        self._partials.pop(team, None)
        self._used.pop(team, None)

    def state(self, team_id: int) -> PersonState:
        """The project's persons, all of them (call with ``lock`` held)."""
        state = self._states.get(team_id)
        if state is None:
            self._partials.pop(team_id, None)  # one cached state per project: the whole one supersedes it
            state = self._states[team_id] = self._load(team_id)
        self._used[team_id] = None
        self._used.move_to_end(team_id)
        return state

    def state_for(self, team_id: int, distinct_ids: Iterable[str]) -> PersonState:
        """A cached state that holds what PostHog's rules need for these distinct ids (call with ``lock`` held).

        The project's whole state when it is loaded; otherwise the project's cached partial state, extended with
        the ids it has not looked up yet (their persons, those persons' other ids, the persons their derived ids
        would collide with: see ``partial_state``). Ids it already holds are answered from memory: every change
        to them goes through this state, and a load or a pull drops it (``invalidate``).
        """
        team = int(team_id)
        self._make_room(team)
        whole = self._states.get(team)
        if whole is not None:
            return whole
        cached = self._partials.get(team)
        whole_max = min(self.whole_state_max_ids, self.max_bytes // ID_COST // 2)
        if cached is None and self._distinct_id_count(team) < whole_max:
            return self.state(team)  # small enough to hold: every later request is answered from memory
        if cached is None:
            ids = set(distinct_ids)
            state = self.partial_state(team, ids)
            self._partials[team] = (state, ids)
            return state
        state, looked_up = cached
        new = {d for d in distinct_ids if d not in looked_up and d not in state.pdi}  # no copy of what is held
        if new:
            self._add_ids(state, new)
            looked_up |= new
        return state

    def _add_ids(self, state: PersonState, distinct_ids: Iterable[str], person_ids: Iterable[str] = ()) -> None:
        """Bring into ``state`` what the rules need for these ids (their persons, and the derived ids' persons)."""
        team = state.team_id
        ids = sorted({d for d in distinct_ids if d not in state.pdi})
        pdi = self._pdi(team, ids)
        candidates = {person_uuid(team, d) for d in ids} | set(person_ids)
        self.extend(state, {pid for pid, deleted in pdi.values() if not deleted} | candidates)
        for distinct_id, (pid, deleted) in pdi.items():
            if not deleted and distinct_id not in state.pdi:
                state.pdi[distinct_id] = pid
                if pid in state.persons:
                    state.persons[pid].distinct_ids.add(distinct_id)

    def is_cached(self, team_id: int) -> bool:
        """Whether the project's whole state is held in memory."""
        return team_id in self._states

    def partial_state(self, team_id: int, distinct_ids: Iterable[str], person_ids: Iterable[str] = ()) -> PersonState:
        """A state holding only what PostHog's rules need for these distinct ids (call with ``lock`` held).

        That is: their persons, every distinct id of those persons (a merge moves them all), the persons
        ``person_ids`` names (a file's given ids), the persons and overrides the ids' derived person ids would
        collide with, and the overrides pointing at any loaded person (kept flat on a merge). Not cached.
        """
        team = int(team_id)
        state = PersonState(team, max_version=self._max_version(team))
        self._add_ids(state, distinct_ids, person_ids)
        return state

    def extend(self, state: PersonState, person_ids: Iterable[str]) -> None:
        """Add these persons (those live and not yet held), their distinct ids and the overrides into them."""
        team = state.team_id
        wanted = sorted({str(p) for p in person_ids} - set(state.persons))
        if not wanted:
            return
        with self._id_table(wanted) as table:
            persons = self.engine.execute(
                f"""SELECT toString(id) AS id, argMax(created_at, version) AS created_at,
                           argMax(properties, version) AS properties, argMax(is_identified, version) AS identified,
                           argMax(is_deleted, version) AS deleted
                    FROM {DATABASE}.persons
                    WHERE team_id = {team} AND id IN (SELECT toUUID(v) FROM {table}) GROUP BY id""",
                settings=_LOAD_SETTINGS,
            ).to_pydict()
            pdi = self.engine.execute(
                f"""SELECT distinct_id, toString(argMax(person_id, version)) AS person_id,
                           argMax(is_deleted, version) AS deleted
                    FROM {DATABASE}.person_distinct_ids
                    WHERE team_id = {team} AND distinct_id IN (
                        SELECT distinct_id FROM {DATABASE}.person_distinct_ids
                        WHERE team_id = {team} AND person_id IN (SELECT toUUID(v) FROM {table}))
                    GROUP BY distinct_id""",
                settings=_LOAD_SETTINGS,
            ).to_pydict()
            overrides = self.engine.execute(
                f"""SELECT toString(old_person_id) AS old, toString(argMax(override_person_id, version)) AS new
                    FROM {DATABASE}.person_overrides WHERE team_id = {team} GROUP BY old_person_id
                    HAVING old_person_id IN (SELECT toUUID(v) FROM {table})
                        OR argMax(override_person_id, version) IN (SELECT toUUID(v) FROM {table})""",
                settings=_LOAD_SETTINGS,
            ).to_pydict()
        added = _add_persons(state, persons)
        self.persons_read += len(added)
        for distinct_id, pid, deleted in zip(pdi["distinct_id"], pdi["person_id"], pdi["deleted"], strict=True):
            if not deleted and pid in added and distinct_id not in state.pdi:
                state.pdi[distinct_id] = pid
                state.persons[pid].distinct_ids.add(distinct_id)
        for old, new in zip(overrides["old"], overrides["new"], strict=True):
            state.overrides.setdefault(old, new)

    def _pdi(self, team: int, distinct_ids: list[str]) -> dict[str, tuple[str, int]]:
        if not distinct_ids:
            return {}
        with self._id_table(distinct_ids) as table:
            rows = self.engine.execute(
                f"""SELECT distinct_id, toString(argMax(person_id, version)) AS person_id,
                           argMax(is_deleted, version) AS deleted
                    FROM {DATABASE}.person_distinct_ids
                    WHERE team_id = {team} AND distinct_id IN (SELECT v FROM {table}) GROUP BY distinct_id""",
                settings=_LOAD_SETTINGS,
            ).to_pydict()
        return {d: (p, x) for d, p, x in zip(rows["distinct_id"], rows["person_id"], rows["deleted"], strict=True)}

    def _distinct_id_count(self, team: int) -> int:
        rows = self.engine.execute(
            f"SELECT count() AS n FROM {DATABASE}.person_distinct_ids WHERE team_id = {team}", settings=_LOAD_SETTINGS
        ).to_pylist()
        return int(rows[0]["n"])

    def _max_version(self, team: int) -> int:
        row = self.engine.execute(
            f"""SELECT greatest(
                    (SELECT max(version) FROM {DATABASE}.persons WHERE team_id = {team}),
                    (SELECT max(version) FROM {DATABASE}.person_distinct_ids WHERE team_id = {team}),
                    (SELECT max(version) FROM {DATABASE}.person_overrides WHERE team_id = {team})) AS v""",
            settings=_LOAD_SETTINGS,
        ).to_pylist()
        return int(row[0]["v"] or 0)

    @contextlib.contextmanager
    def _id_table(self, values: list[str]) -> Iterator[str]:
        """A short-lived table of strings to filter by (an IN list of a million literals would be a huge query)."""
        name = f"_load_{uuid.uuid4().hex}_ids"  # a staging name: insert_arrow accepts it
        self.engine.command(f"CREATE TABLE {DATABASE}.{name} (v String) ENGINE = Memory")
        try:
            self.engine.insert_arrow(name, pa.table({"v": pa.array(values, pa.string())}))
            yield f"{DATABASE}.{name}"
        finally:
            with contextlib.suppress(EngineError):
                self.engine.command(f"DROP TABLE IF EXISTS {DATABASE}.{name}")

    def invalidate(self, team_id: int | None = None) -> None:
        """Forget cached state (after a failed write): the next use reloads what the tables hold."""
        with self.lock:
            if team_id is None:
                self._states.clear()
                self._partials.clear()
                self._used.clear()
            else:
                self._forget(team_id)

    def write(self, rows: PersonRows) -> None:
        """Append person rows; call before inserting the events they belong to."""
        for table, data in person_tables(rows).items():
            self.engine.insert_arrow(table, data)

    def _load(self, team_id: int) -> PersonState:
        team = int(team_id)
        persons = self.engine.execute(
            f"""SELECT toString(id) AS id, argMax(created_at, version) AS created_at,
                       argMax(properties, version) AS properties, argMax(is_identified, version) AS identified,
                       argMax(is_deleted, version) AS deleted, max(version) AS v
                FROM persons WHERE team_id = {team} GROUP BY id""",
            settings=_LOAD_SETTINGS,
        ).to_pydict()
        pdi = self.engine.execute(
            f"""SELECT distinct_id, toString(argMax(person_id, version)) AS person_id,
                       argMax(is_deleted, version) AS deleted, max(version) AS v
                FROM person_distinct_ids WHERE team_id = {team} GROUP BY distinct_id""",
            settings=_LOAD_SETTINGS,
        ).to_pydict()
        overrides = self.engine.execute(
            f"""SELECT toString(old_person_id) AS old, toString(argMax(override_person_id, version)) AS new,
                       max(version) AS v
                FROM person_overrides WHERE team_id = {team} GROUP BY old_person_id""",
            settings=_LOAD_SETTINGS,
        ).to_pydict()
        versions = [*persons["v"], *pdi["v"], *overrides["v"], 0]
        state = PersonState(team, max_version=max(versions))
        _add_persons(state, persons)
        for distinct_id, pid, deleted in zip(pdi["distinct_id"], pdi["person_id"], pdi["deleted"], strict=True):
            if not deleted:
                state.pdi[distinct_id] = pid
                if pid in state.persons:
                    state.persons[pid].distinct_ids.add(distinct_id)
        state.overrides.update(zip(overrides["old"], overrides["new"], strict=True))
        self.persons_read += len(state.persons)
        return state


def _add_persons(state: PersonState, persons: dict[str, list[Any]]) -> set[str]:
    """The live persons of a ``persons`` read (id, created_at, properties, identified, deleted) into ``state``."""
    added = set()
    columns = (persons[c] for c in ("id", "created_at", "properties", "identified", "deleted"))
    for pid, created, props, identified, deleted in zip(*columns, strict=True):
        if not deleted:
            state.persons[pid] = CachedPerson(pid, created, props, bool(identified))
            added.add(pid)
    return added
