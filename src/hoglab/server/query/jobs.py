"""Asynchronous queries: a bounded thread pool in the service process, statuses in SQLite, cancel by tag.

``POST /query`` with ``refresh: "force_async"`` (or ``async``) hands a piece of work to :meth:`QueryJobs.submit`
and answers 202 with the status; ``GET /query/:id`` reads :meth:`QueryJobs.status`; ``DELETE /query/:id`` calls
:meth:`QueryJobs.cancel`. Every engine statement of a job carries the tag ``hoglab-query-<team>-<id>`` as its
``log_comment``, so cancelling kills it in the engine (``KILL QUERY``, engine-notes §5); a job still waiting
for a worker is simply dequeued. The work also receives a ``threading.Event`` that is set on cancel, so a job
that is between two statements starts no new one.

Statuses are PostHog's ``QueryStatus`` and live in SQLite (``store.async_queries``), the complete answer
compressed next to them, for ``query_status_ttl_seconds`` (20 minutes) after the last change; then 404.

For example (a sketch of a call and its answer, not run)::

    jobs = QueryJobs(store.async_queries, engine, workers=4, ttl_seconds=1200); jobs.start()
    status = jobs.submit(team_id, "q-1", lambda tag, cancelled: b'{"results": []}')
    jobs.status(team_id, "q-1")  ->  (status dict, answer bytes or None)
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hoglab.errors import HoglabError

from ..engine.settings import quote_string
from ..store.db import utcnow

if TYPE_CHECKING:
    from ..engine.base import Engine
    from ..store.queries import AsyncQueryRepository

__all__ = [
    "CANCELLED_MESSAGE",
    "Describe",
    "QueryJobs",
    "TooManyQueries",
    "Work",
    "iso",
    "tag_for",
]

log = logging.getLogger("hoglab.server.query.jobs")

CANCELLED_MESSAGE = "Query cancelled."
STOPPED_MESSAGE = "The service stopped before the query finished; run it again."
ORPHAN_MESSAGE = "The service restarted before the query finished; run it again."
KILL_PATIENCE_SECONDS = 2.0

Work = Callable[[str, threading.Event], bytes]
"""``work(tag, cancelled) -> the complete response body``; it raises on failure."""
Describe = Callable[[BaseException], "str | None"]
"""What a failed job's ``error_message`` says (``None``: an internal failure, reported without detail)."""


class TooManyQueries(HoglabError):
    """More asynchronous queries are waiting than the service accepts."""


def tag_for(team_id: int, query_id: str) -> str:
    """The engine tag (``log_comment``) of a query: the project is part of it, so ids never collide across
    projects and one project can never cancel another's query.

    >>> tag_for(7, "abc")
    'hoglab-query-7-abc'
    """
    return f"hoglab-query-{int(team_id)}-{query_id}"


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``, as PostHog writes times."""
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


@dataclass
class _Job:
    team_id: int
    id: str
    tag: str
    status: dict[str, Any]
    cancelled: threading.Event = field(default_factory=threading.Event)
    work: Work | None = None
    seq: int = 0
    done: Future[None] = field(default_factory=Future)


class QueryJobs:
    """The pool of one app. ``start()`` in the app's lifespan, ``close()`` before the engine closes."""

    def __init__(
        self,
        store: AsyncQueryRepository,
        engine: Engine,
        *,
        workers: int = 4,
        ttl_seconds: int = 20 * 60,
        max_waiting: int = 256,
        describe: Describe = lambda exc: None,
        project_quota: int | None = None,
        fair: bool = True,
    ) -> None:
        self.store = store
        self.engine = engine
        self.workers = max(1, int(workers))
        self.ttl = timedelta(seconds=ttl_seconds)
        self.max_waiting = max_waiting
        self.describe = describe
        # Fair use (fairness.py): a project may have ``project_quota`` jobs queued or running (then a 429 for it
        # alone) and run on at most half the workers; a free worker takes the next job of the project running
        # the fewest. ``fair=False``: one FIFO queue for everyone, no quota (the benchmark's "before").
        self.fair = fair
        self.project_quota = max(1, int(project_quota)) if project_quota and fair else max_waiting
        self.project_workers = max(1, -(-self.workers // 2)) if fair else self.workers
        self._jobs: dict[tuple[int, str], _Job] = {}
        self._sync: dict[tuple[int, str], int] = {}
        self._queued: dict[int, deque[_Job]] = {}
        self._running: Counter[int] = Counter()
        self._active = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="hoglab-query")
        self.store.fail_orphans(ORPHAN_MESSAGE)
        self.store.purge_expired()

    def close(self) -> None:
        """Cancel what is queued or running (statuses say so), then wait for the workers to stop."""
        executor, self._executor = self._executor, None
        with self._lock:
            keys = list(self._jobs)
        for team_id, query_id in keys:
            self.cancel(team_id, query_id, message=STOPPED_MESSAGE)
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    # -- submit, read, cancel -------------------------------------------------------------------------------------

    def submit(self, team_id: int, query_id: str, work: Work) -> dict[str, Any]:
        """Queue ``work`` under ``query_id``; its status. A query still running under that id is not started
        again: its status is returned (a resubmit is idempotent)."""
        executor = self._executor
        if executor is None:
            raise RuntimeError("the query pool is not running")
        now = utcnow()
        expires = now + self.ttl
        status = {
            "id": query_id,
            "team_id": int(team_id),
            "query_async": True,
            "complete": False,
            "error": False,
            "error_message": None,
            "results": None,
            "start_time": iso(now),
            "end_time": None,
            "pickup_time": None,
            "expiration_time": iso(expires),
            "query_progress": None,
            "task_id": uuid.uuid4().hex,
            "dashboard_id": None,
            "insight_id": None,
            "labels": None,
        }
        with self._lock:
            if (team_id, query_id) in self._jobs:
                return dict(self._jobs[(team_id, query_id)].status)
            if len(self._jobs) >= self.max_waiting:
                raise TooManyQueries(f"{len(self._jobs)} queries are already running or waiting; try again shortly.")
            mine = sum(1 for team, _ in self._jobs if team == team_id)
            if mine >= self.project_quota:
                raise TooManyQueries(
                    f"This project already has {mine} async queries running or waiting, its share of the queue; "
                    "try again when some have finished."
                )
            self.store.purge_expired(now)
            existing = self.store.claim(team_id, query_id, status, expires_at=expires, now=now)
            if existing is not None:
                return existing.status
            self._seq += 1
            job = _Job(int(team_id), query_id, tag_for(team_id, query_id), status, work=work, seq=self._seq)
            self._jobs[(team_id, query_id)] = job
            self._queued.setdefault(job.team_id, deque()).append(job)
            self._dispatch(executor)
        return dict(status)

    def status(
        self, team_id: int, query_id: str, *, progress: bool = False
    ) -> tuple[dict[str, Any], bytes | None] | None:
        """``(status, complete answer or None)``, or ``None`` when the project has no such (unexpired) query."""
        record = self.store.get(team_id, query_id)
        if record is None:
            return None
        status = dict(record.status)
        if progress and not record.complete:
            status["query_progress"] = self.progress(tag_for(team_id, query_id))
        return status, record.results() if record.complete else None

    def progress(self, tag: str) -> dict[str, Any] | None:
        """The engine's progress of the statement running under ``tag`` (``system.processes``), if one is."""
        table = self.engine.execute(
            "SELECT read_rows, read_bytes, total_rows_approx, elapsed, ProfileEvents['UserTimeMicroseconds'] AS cpu "
            f"FROM system.processes WHERE Settings['log_comment'] = {quote_string(tag)}"
        )
        if table.num_rows == 0:
            return None
        row = table.to_pylist()[0]
        return {
            "rows_read": int(row["read_rows"]),
            "bytes_read": int(row["read_bytes"]),
            "estimated_rows_total": int(row["total_rows_approx"]),
            "time_elapsed": float(row["elapsed"]),
            "active_cpu_time": int(row["cpu"] or 0),
        }

    def cancel(self, team_id: int, query_id: str, *, message: str = CANCELLED_MESSAGE) -> bool:
        """Stop the query: dequeue it if it waits, else kill it in the engine; its status says ``message``.

        A finished query's status is dropped (as PostHog). ``False`` when the project has no such query.
        """
        key = (int(team_id), query_id)
        dequeued = False
        with self._lock:
            job = self._jobs.pop(key, None)
            if job is not None:
                job.cancelled.set()
                self._write_failure(job, message)
                queue = self._queued.get(job.team_id)
                if queue is not None and job in queue:
                    queue.remove(job)
                    dequeued = True
            running_sync = self._sync.get(key, 0) > 0
        if job is not None:
            if not dequeued:
                self._kill(job.tag, job.done)
            return True
        if running_sync:
            self._kill(tag_for(team_id, query_id))
            return True
        record = self.store.get(team_id, query_id)
        if record is None:
            return False
        if record.complete:
            self.store.delete(team_id, query_id)
            return True
        # Run by another app of this process on the same data (they share the engine): kill it by its tag.
        self._kill(tag_for(team_id, query_id))
        with self._lock:
            latest = self.store.get(team_id, query_id)
            if latest is not None and not latest.complete:
                failed = _Job(int(team_id), query_id, tag_for(team_id, query_id), latest.status)
                self._write_failure(failed, message)
        return True

    @contextmanager
    def track(self, team_id: int, query_id: str) -> Iterator[str]:
        """Mark a synchronous query as running under ``query_id`` (so DELETE can kill it); yields its tag."""
        key = (int(team_id), query_id)
        with self._lock:
            self._sync[key] = self._sync.get(key, 0) + 1
        try:
            yield tag_for(team_id, query_id)
        finally:
            with self._lock:
                left = self._sync[key] - 1
                if left:
                    self._sync[key] = left
                else:
                    del self._sync[key]

    # -- internals -----------------------------------------------------------------------------------------------

    def _dispatch(self, executor: ThreadPoolExecutor) -> None:
        """Start queued jobs while workers are free (called with the lock held)."""
        while self._active < self.workers:
            job = self._next_job()
            if job is None:
                return
            self._queued[job.team_id].popleft()
            self._active += 1
            self._running[job.team_id] += 1
            executor.submit(self._run_and_dispatch, job)

    def _next_job(self) -> _Job | None:
        heads = [q[0] for team, q in self._queued.items() if q and self._running[team] < self.project_workers]
        if not heads:
            return None
        if not self.fair:
            return min(heads, key=lambda j: j.seq)
        return min(heads, key=lambda j: (self._running[j.team_id], j.seq))

    def _run_and_dispatch(self, job: _Job) -> None:
        try:
            assert job.work is not None
            self._run(job, job.work)
        finally:
            with self._lock:
                self._active -= 1
                self._running[job.team_id] -= 1
                if self._running[job.team_id] <= 0:
                    del self._running[job.team_id]
                if not self._queued.get(job.team_id, True):
                    del self._queued[job.team_id]
                executor = self._executor
                if executor is not None:
                    self._dispatch(executor)
            job.done.set_result(None)

    def _run(self, job: _Job, work: Work) -> None:
        with self._lock:
            if job.cancelled.is_set():
                return
            job.status["pickup_time"] = iso(utcnow())
            self.store.save(job.team_id, job.id, job.status, expires_at=utcnow() + self.ttl)
        body: bytes | None = None
        message: str | None = None
        failed = False
        try:
            body = work(job.tag, job.cancelled)
        except BaseException as exc:  # a job's failure is its status, whatever it was
            failed = True
            message = self.describe(exc)
            if message is None:
                log.exception("async query %s of project %s failed", job.id, job.team_id)
        with self._lock:
            if job.cancelled.is_set() or self._jobs.get((job.team_id, job.id)) is not job:
                return  # cancelled meanwhile: the cancel wrote the status
            del self._jobs[(job.team_id, job.id)]
            end = utcnow()
            job.status.update(complete=True, end_time=iso(end), expiration_time=iso(end + self.ttl))
            if failed:
                job.status.update(error=True, error_message=message)
            self.store.save(job.team_id, job.id, job.status, expires_at=end + self.ttl, results=body)

    def _write_failure(self, job: _Job, message: str) -> None:
        end = utcnow()
        job.status.update(
            complete=True, error=True, error_message=message, end_time=iso(end), expiration_time=iso(end + self.ttl)
        )
        self.store.save(job.team_id, job.id, job.status, expires_at=end + self.ttl)

    def _kill(self, tag: str, future: Future[None] | None = None) -> None:
        # KILL finds only a statement that has started. One about to start would be missed, so kill again until
        # the job is over (its engine wrapper refuses new statements once cancelled), for a bounded time.
        deadline = time.monotonic() + (KILL_PATIENCE_SECONDS if future is not None else 0)
        while True:
            try:
                self.engine.cancel(tag)
            except Exception:
                log.exception("could not cancel the engine query %s", tag)
                return
            if future is None or time.monotonic() >= deadline:
                return
            done, _ = wait_futures([future], timeout=0.05)
            if done:
                return
