"""The persons of every project of one engine: loaded lazily, cached, written with their changes.

One :class:`PersonStore` per engine (``PersonStore.for_engine``) is shared by the capture writer and file loads,
so both see the same persons; its ``lock`` serialises person changes and their writes.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..engine.base import Engine
from .persons import Person, PersonRows, PersonState
from .rows import person_tables

__all__ = ["PersonStore"]

# Internal reads of a whole project's persons: no row cap, no time limit (they are not user queries).
_LOAD_SETTINGS = {"max_result_rows": 0, "max_execution_time": 0}

_stores: weakref.WeakKeyDictionary[Any, PersonStore] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


class PersonStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.lock = threading.RLock()
        self._states: dict[int, PersonState] = {}

    @classmethod
    def for_engine(cls, engine: Engine) -> PersonStore:
        with _stores_lock:
            store = _stores.get(engine)
            if store is None:
                store = _stores[engine] = cls(engine)
            return store

    def state(self, team_id: int) -> PersonState:
        """The project's persons (call with ``lock`` held)."""
        state = self._states.get(team_id)
        if state is None:
            state = self._states[team_id] = self._load(team_id)
        return state

    def invalidate(self, team_id: int | None = None) -> None:
        """Forget cached state (after a failed write): the next use reloads what the tables hold."""
        with self.lock:
            if team_id is None:
                self._states.clear()
            else:
                self._states.pop(team_id, None)

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
        for pid, created, props, identified, deleted in zip(
            persons["id"], persons["created_at"], persons["properties"], persons["identified"], persons["deleted"],
            strict=True,
        ):
            if not deleted:
                state.persons[pid] = Person(pid, created, props, bool(identified))
        for distinct_id, pid, deleted in zip(pdi["distinct_id"], pdi["person_id"], pdi["deleted"], strict=True):
            if not deleted:
                state.pdi[distinct_id] = pid
                if pid in state.persons:
                    state.persons[pid].distinct_ids.add(distinct_id)
        state.overrides.update(zip(overrides["old"], overrides["new"], strict=True))
        return state
