"""The group-commit writer: concurrent capture requests become one INSERT, each answered once it is stored.

Requests hand validated events to :meth:`Ingestor.submit` and wait on a future. One writer thread takes every
request that arrived during the previous INSERT (plus a short window, a few ms, so a burst is not split),
resolves persons for all of them in arrival order, writes the person rows and then the events, and only then
completes the futures. Events already stored (same project and uuid: an SDK's retry) are dropped first
(``dedup.py``). A 200 therefore always means "on disk": a SIGKILL after it loses nothing. If a write
fails every request of the group fails (a 500 for a server fault, never a partial success), and the cached
persons of the projects involved are dropped so the next request reloads what the tables really hold.

For example (a sketch of a call and its answer, not run)::

    ingestor = Ingestor.for_engine(engine)
    ingestor.capture_batch(project_id=1, events=[{"event": "signup", "distinct_id": "u1"}])
    1
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..engine.base import Engine
from .dedup import drop_duplicates
from .events import CapturedEvent, normalize_batch
from .person_store import PersonStore
from .persons import PersonRows, PersonState, next_version, valid_other_id
from .rows import events_table

__all__ = ["Ingestor"]

_ingestors: weakref.WeakKeyDictionary[Any, Ingestor] = weakref.WeakKeyDictionary()
_ingestors_lock = threading.Lock()


@dataclass
class _Job:
    team_id: int
    events: list[CapturedEvent]
    received: datetime
    future: Future[int]


class Ingestor:
    """Stores captured events and their persons through ``engine``. One per engine: use :meth:`for_engine`."""

    def __init__(self, engine: Engine, *, window: float = 0.003, max_group_events: int = 100_000) -> None:
        self.engine = engine
        self.persons = PersonStore.for_engine(engine)
        self.window = window
        self.max_group_events = max_group_events
        self._jobs: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self.commits = 0  # INSERT groups written (tests check that concurrent requests share them)

    @classmethod
    def for_engine(cls, engine: Engine) -> Ingestor:
        with _ingestors_lock:
            ingestor = _ingestors.get(engine)
            if ingestor is None or ingestor._closing:
                ingestor = _ingestors[engine] = cls(engine)
            return ingestor

    # -- API --------------------------------------------------------------------------------------------------

    def submit(self, team_id: int, events: list[CapturedEvent]) -> Future[int]:
        """Queue validated events; the future gives how many were stored (duplicates are not), once they are."""
        future: Future[int] = Future()
        if not events:
            future.set_result(0)
            return future
        with self._wake:
            if self._closing:
                raise RuntimeError("the ingestor is closed")
            self._jobs.append(_Job(int(team_id), events, datetime.now(UTC), future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hoglab-ingest", daemon=True)
                self._thread.start()
            self._wake.notify()
        return future

    def capture_batch(
        self, project_id: int, events: list[Any], *, sent_at: Any = None, now: datetime | None = None
    ) -> int:
        """Validate raw SDK events (all or nothing, :class:`IngestError`), store them, return the count."""
        captured = normalize_batch(events, sent_at=sent_at, now=now)
        return self.submit(project_id, captured).result()

    def close(self) -> None:
        """Finish what is queued, then stop the writer thread."""
        with self._wake:
            self._closing = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    # -- the writer thread ------------------------------------------------------------------------------------

    def _take_group(self) -> list[_Job] | None:
        with self._wake:
            while not self._jobs:
                if self._closing:
                    return None
                self._wake.wait()
            # Group commit: give concurrent requests a moment to join this INSERT.
            if self.window > 0 and not self._closing:
                self._wake.wait(self.window)
            group: list[_Job] = []
            size = 0
            while self._jobs and (not group or size + len(self._jobs[0].events) <= self.max_group_events):
                job = self._jobs.popleft()
                group.append(job)
                size += len(job.events)
            return group

    def _run(self) -> None:
        while (group := self._take_group()) is not None:
            try:
                stored = self._commit(group)
            except BaseException as exc:
                self.persons.invalidate()
                for job in group:
                    job.future.set_exception(exc)
            else:
                for job, count in zip(group, stored, strict=True):
                    job.future.set_result(count)

    def _commit(self, group: list[_Job]) -> list[int]:
        rows: list[tuple[Any, ...]] = []
        changes = PersonRows()
        # Before persons: a resent event must not re-apply its $set either.
        fresh = drop_duplicates(self.engine, [(job.team_id, job.events) for job in group])
        with self.persons.lock:
            # Each project's persons for the ids these events name (the events' own, and the other id of a merge).
            named: dict[int, set[str]] = {}
            for job, events in zip(group, fresh, strict=True):
                ids = named.setdefault(job.team_id, set())
                for e in events:
                    ids.add(e.distinct_id)
                    for key in ("$anon_distinct_id", "alias"):
                        if (other := valid_other_id(e.properties.get(key))) is not None:
                            ids.add(other)
            states: dict[int, PersonState] = {t: self.persons.state_for(t, ids) for t, ids in named.items()}
            for job, events in zip(group, fresh, strict=True):
                state = states[job.team_id]
                for e in events:
                    person_id = state.process(
                        e.event, e.distinct_id, e.properties, e.timestamp, personless=e.personless
                    )
                    rows.append(
                        (job.team_id, e.uuid, e.event, e.distinct_id, person_id, e.timestamp, e.properties_json,
                         e.elements_chain, job.received)
                    )  # fmt: skip
            version = next_version(max(s.max_version for s in states.values()))
            for state in states.values():
                changes.extend(state.take_rows(version))
            # Persons first: an acknowledged event always has its person rows.
            self.persons.write(changes)
        if rows:
            self.engine.insert_arrow("events", events_table(rows))
        self.commits += 1
        return [len(events) for events in fresh]
