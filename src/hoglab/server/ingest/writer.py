"""The group-commit writer: concurrent capture requests become few INSERTs, each answered once it is stored, and
one project's big batches cannot hold up another project's small ones.

Requests hand validated events to :meth:`Ingestor.submit` and wait on a future. One writer thread commits groups:
it applies the groups of a group's events (``groups.py``: ``$groups`` becomes ``$group_N``, ``$groupidentify``
sets group properties) and resolves their persons, in arrival order, writes the group and person rows, then the
events, then the ingestion warnings (``warnings.py``), and only then completes the futures of the requests the
group finished.
Events already stored (same project and uuid: an SDK's retry) are dropped first (``dedup.py``). A 200 therefore
always means "on disk": a SIGKILL after it loses nothing. If a write fails, every request with events in the group
fails (a 500 for a server fault) and the cached persons are dropped, so the next request reloads what the tables
really hold.

Fairness. Each project has its own queue of requests, served first in, first out, so a project's events (and its
person merges) are written in the order they arrived. A project with at most ``slice_events`` events waiting is
*light*: all its waiting requests go into the next group, with every other light project's (up to
``slice_events`` in all, plus a group-commit ``window`` of a few ms so a burst is not split). A project with more
waiting is *heavy*: it gets one slice of ``slice_events`` events per group, and heavy slices alternate with groups
of light work, the heavy projects taking turns. A one-event request therefore waits for at most about one slice
(~0.2 s) while another project sends 150,000-event batches, instead of for whole batches
(``bench/bench_capture_fairness.py``). A big request's slices are committed one after the other and it is answered
after its last; should a later slice fail, the earlier ones stay stored and the request gets a 500 (a retry with
the same uuids stores only the rest).

For example (a sketch of a call and its answer, not run)::

    ingestor = Ingestor.for_engine(engine)
    ingestor.capture_batch(project_id=1, events=[{"event": "signup", "distinct_id": "u1"}])
    1
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..engine.base import Engine
from .dedup import LOOKUP_SPAN, stored_uuids
from .events import CapturedEvent, normalize_batch
from .groups import GroupStore, group_key_text
from .person_store import PersonStore
from .persons import PersonRows, PersonState, next_version, valid_other_id
from .rows import events_table, warnings_table
from .warnings import SOURCE, IngestionWarning, WarningTally

__all__ = ["Ingestor"]

_ingestors: weakref.WeakKeyDictionary[Any, Ingestor] = weakref.WeakKeyDictionary()
_ingestors_lock = threading.Lock()


@dataclass(eq=False)
class _WriteJob:
    team_id: int
    events: list[CapturedEvent]
    warnings: Sequence[IngestionWarning]  # of the request's dropped events: written with its first slice
    received: datetime
    future: Future[int]
    taken: int = 0  # events handed to groups so far
    stored: int = 0  # events written (duplicates are not)
    failed: bool = False
    # Dedup (dedup.py): events[:checked] were looked up; known holds the uuids found stored then, and every uuid
    # written for the project since (this request's earlier slices included), so a slice needs no lookup of its own.
    checked: int = 0
    known: set[str] = field(default_factory=set)


@dataclass
class _Piece:
    """Events ``start:end`` of a job, in one group."""

    job: _WriteJob
    start: int
    end: int

    @property
    def events(self) -> list[CapturedEvent]:
        return self.job.events[self.start : self.end]

    @property
    def last(self) -> bool:
        return self.end == len(self.job.events)


class Ingestor:
    """Stores captured events and their persons through ``engine``. One per engine: use :meth:`for_engine`."""

    def __init__(self, engine: Engine, *, window: float = 0.003, slice_events: int = 5_000) -> None:
        self.engine = engine
        self.persons = PersonStore.for_engine(engine)
        self.groups = GroupStore.for_engine(engine)
        self.window = window
        self.slice_events = max(1, int(slice_events))
        self._queues: dict[int, deque[_WriteJob]] = {}  # project -> its waiting requests; dict order = turn order
        self._waiting: dict[int, int] = {}  # project -> events not yet handed to a group
        self._last_heavy = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self.commits = 0  # groups written (tests check that concurrent requests share them)

    @classmethod
    def for_engine(cls, engine: Engine) -> Ingestor:
        with _ingestors_lock:
            ingestor = _ingestors.get(engine)
            if ingestor is None or ingestor._closing:
                ingestor = _ingestors[engine] = cls(engine)
            return ingestor

    # -- API --------------------------------------------------------------------------------------------------

    def submit(
        self, team_id: int, events: list[CapturedEvent], warnings: Sequence[IngestionWarning] = ()
    ) -> Future[int]:
        """Queue validated events, and the warnings of the request's dropped events; the future gives how many
        events were stored (duplicates are not), once they and the warnings are."""
        future: Future[int] = Future()
        if not events and not warnings:
            future.set_result(0)
            return future
        team = int(team_id)
        with self._wake:
            if self._closing:
                raise RuntimeError("the ingestor is closed")
            self._queues.setdefault(team, deque()).append(_WriteJob(team, events, warnings, datetime.now(UTC), future))
            self._waiting[team] = self._waiting.get(team, 0) + len(events)
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

    # -- choosing the next group (under self._wake) -------------------------------------------------------------

    def _take(self, team: int, limit: int) -> list[_Piece]:
        """Up to ``limit`` of ``team``'s waiting events, oldest first (a warnings-only request costs nothing)."""
        queue = self._queues[team]
        pieces: list[_Piece] = []
        while queue and (limit > 0 or queue[0].taken == len(queue[0].events)):
            job = queue[0]
            n = min(limit, len(job.events) - job.taken)
            pieces.append(_Piece(job, job.taken, job.taken + n))
            job.taken += n
            limit -= n
            self._waiting[team] -= n
            if job.taken == len(job.events):
                queue.popleft()
        del self._queues[team]  # its next turn comes after every other project's
        if queue:
            self._queues[team] = queue
        else:
            del self._waiting[team]
        return pieces

    def _take_group(self) -> list[_Piece] | None:
        with self._wake:
            while not self._queues:
                if self._closing:
                    return None
                self._wake.wait()
            # Group commit: give concurrent requests a moment to join this INSERT.
            if self.window > 0 and not self._closing:
                self._wake.wait(self.window)
            light = [t for t in self._queues if self._waiting[t] <= self.slice_events]
            heavy = [t for t in self._queues if self._waiting[t] > self.slice_events]
            group: list[_Piece] = []
            # Heavy slices alternate with groups of light work, so neither can starve the other.
            take_heavy = bool(heavy) and (not light or not self._last_heavy)
            if take_heavy:
                group += self._take(heavy[0], self.slice_events)
            size = 0
            for team in light:
                if size and size + self._waiting[team] > self.slice_events:
                    break
                size += self._waiting[team]
                group += self._take(team, self._waiting[team])
            self._last_heavy = take_heavy
            return group

    def _drop_job(self, job: _WriteJob) -> None:
        """A failed request's events not yet taken are not written either."""
        with self._wake:
            queue = self._queues.get(job.team_id)
            if queue is None or job not in queue:
                return
            queue.remove(job)
            self._waiting[job.team_id] -= len(job.events) - job.taken
            if not queue:
                del self._queues[job.team_id]
                del self._waiting[job.team_id]

    # -- the writer thread ------------------------------------------------------------------------------------

    def _run(self) -> None:
        while (group := self._take_group()) is not None:
            try:
                stored = self._commit(group)
            except BaseException as exc:
                self.persons.invalidate()
                self.groups.invalidate()
                for job in {piece.job: None for piece in group}:
                    if not job.failed:
                        job.failed = True
                        self._drop_job(job)
                        job.future.set_exception(exc)
            else:
                for piece, count in zip(group, stored, strict=True):
                    piece.job.stored += count
                    if piece.last and not piece.job.failed:
                        piece.job.future.set_result(piece.job.stored)

    def _look_up(self, group: list[_Piece]) -> None:
        """Find which of the group's events are already stored: one lookup per project for what its requests have
        not looked up yet (a big request's next LOOKUP_SPAN events at once)."""
        wanted: dict[int, list[CapturedEvent]] = {}
        asking: dict[int, list[_WriteJob]] = {}
        for piece in group:
            job = piece.job
            if job.checked < piece.end:
                end = min(len(job.events), max(piece.end, job.checked + LOOKUP_SPAN))
                wanted.setdefault(job.team_id, []).extend(job.events[job.checked : end])
                asking.setdefault(job.team_id, []).append(job)
                job.checked = end
        for team, events in wanted.items():
            found = stored_uuids(self.engine, team, events)
            for job in asking[team]:
                job.known |= found

    def _fresh(self, group: list[_Piece]) -> tuple[list[list[CapturedEvent]], dict[int, set[str]]]:
        """Each piece's events without those stored before or earlier in the group; and what that writes."""
        self._look_up(group)
        seen: dict[int, set[str]] = {}
        fresh: list[list[CapturedEvent]] = []
        for piece in group:
            known, written = piece.job.known, seen.setdefault(piece.job.team_id, set())
            kept = []
            for e in piece.events:
                if e.uuid not in known and e.uuid not in written:
                    written.add(e.uuid)
                    kept.append(e)
            fresh.append(kept)
        return fresh, seen

    def _remember(self, written: dict[int, set[str]]) -> None:
        """What a commit wrote is a duplicate for every waiting request of the project that looked up before it."""
        with self._wake:
            for team, uuids in written.items():
                for job in self._queues.get(team, ()):
                    if job.checked:
                        job.known |= uuids

    def _apply_groups(self, group: list[_Piece], fresh: list[list[CapturedEvent]]) -> None:
        """Groups of the events, in arrival order: ``$group_N`` written into their properties (and JSON), group
        types and ``$groupidentify`` properties applied and stored before the events that name them."""
        touched: dict[int, list[CapturedEvent]] = {}
        for piece, events in zip(group, fresh, strict=True):
            for e in events:
                if e.event == "$groupidentify" or isinstance(e.properties.get("$groups"), dict):
                    touched.setdefault(piece.job.team_id, []).append(e)
        if not touched:
            return
        with self.groups.lock:
            for team, events in touched.items():
                state = self.groups.state(team)
                keys = []
                for e in events:
                    index = state.type_index(e.properties.get("$group_type"), e.timestamp, create=False)
                    key = group_key_text(e.properties.get("$group_key"))
                    if e.event == "$groupidentify" and index is not None and key is not None:
                        keys.append((index, key))
                state = self.groups.with_groups(team, keys)
                for e in events:
                    if state.enrich(e.properties, e.timestamp):
                        e.properties_json = orjson.dumps(e.properties).decode()
                    if e.event == "$groupidentify":
                        state.identify(e.properties, e.timestamp)
                self.groups.commit(state)

    def _commit(self, group: list[_Piece]) -> list[int]:
        rows: list[tuple[Any, ...]] = []
        warned: list[tuple[int, str, str, str, datetime]] = []
        changes = PersonRows()
        # Before persons: a resent event must not re-apply its $set either.
        fresh, written = self._fresh(group)
        self._apply_groups(group, fresh)
        with self.persons.lock:
            # Each project's persons for the ids these events name (the events' own, and the other id of a merge).
            named: dict[int, set[str]] = {}
            for piece, events in zip(group, fresh, strict=True):
                for e in events:
                    ids = named.setdefault(piece.job.team_id, set())
                    ids.add(e.distinct_id)
                    for key in ("$anon_distinct_id", "alias"):
                        if (other := valid_other_id(e.properties.get(key))) is not None:
                            ids.add(other)
            states: dict[int, PersonState] = {t: self.persons.state_for(t, ids) for t, ids in named.items()}
            for piece, events in zip(group, fresh, strict=True):
                job = piece.job
                if piece.start == 0:
                    warned += [(job.team_id, SOURCE, w.type, w.details_json(), job.received) for w in job.warnings]
                repaired = WarningTally()
                for e in events:
                    person_id = states[job.team_id].process(
                        e.event, e.distinct_id, e.properties, e.timestamp, personless=e.personless
                    )
                    rows.append(
                        (job.team_id, e.uuid, e.event, e.distinct_id, person_id, e.timestamp, e.properties_json,
                         e.elements_chain, job.received)
                    )  # fmt: skip
                    # A repaired event's warnings go with it: a resent copy (dropped above) adds none.
                    for warning in e.warnings:
                        repaired.add(warning)
                # One row per cause of the slice's repaired events (the first one's details and the count).
                warned += [(job.team_id, SOURCE, w.type, w.details_json(), job.received) for w in repaired.rows()]
            if states:
                version = next_version(max(s.max_version for s in states.values()))
                for state in states.values():
                    changes.extend(state.take_rows(version))
            # Persons first: an acknowledged event always has its person rows.
            self.persons.write(changes)
        if rows:
            self.engine.insert_arrow("events", events_table(rows))
        if warned:
            self.engine.insert_arrow("ingestion_warnings", warnings_table(warned))
        self._remember(written)
        self.commits += 1
        return [len(events) for events in fresh]
