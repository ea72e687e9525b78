"""The project's own recent queries, for HogQL's ``query_log`` table (PostHog's table of a team's queries).

chDB keeps no ``system.query_log``, and a ClickHouse server's would mix every project's statements, so the
query service records each query it runs here: per project, the newest ``KEEP`` runs, in memory (a restart
starts a new log). Every way a query runs is recorded: ``POST /query/`` (``service.py``), the Arrow answer
(``bulk.py``), and the insight runs behind an experiment's results (:func:`logged`). The HogQL runner hands a
project's records to the compiler only when a statement names ``query_log``; a project never receives another
project's records.

>>> book = QueryLogBook(keep=2)
>>> for n in range(3):
...     book.record(7, query_id=f"q{n}", kind="HogQLQuery", query="select 1", name=None, started=0.0,
...                 duration_ms=1, status="QueryFinish", exception=None, result_bytes=10)
>>> [r["query_id"] for r in book.rows(7)], book.rows(8)
(['q1', 'q2'], [])
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from hoglab.translate.errors import TranslationFailed

__all__ = ["KEEP", "MAX_TEXT", "QUERY_LOG", "QueryLogBook", "Reads", "is_refusal", "log_run", "logged", "measured",
           "note_reads"]

KEEP = 100
"""Records kept per project."""
MAX_TEXT = 1000
"""Characters kept of a query's text and of an error message (the records are compiled into the statement)."""


@dataclass
class Reads:
    """What the statements of one run answered: their rows (chDB reports no rows or bytes read per query)."""

    result_rows: int = 0


_READS: ContextVar[Reads | None] = ContextVar("hoglab_query_reads", default=None)


@contextmanager
def measured() -> Iterator[Reads]:
    """Count what the statements run inside (in this thread) answer: :func:`note_reads` adds to it."""
    reads = Reads()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def note_reads(result_rows: int) -> None:
    """Add one statement's rows to the run being measured, if any."""
    reads = _READS.get()
    if reads is not None:
        reads.result_rows += result_rows


class QueryLogBook:
    """Recent query runs per project; thread-safe."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._runs: dict[int, deque[dict[str, Any]]] = {}

    def record(
        self,
        team_id: int,
        *,
        query_id: str,
        kind: str,
        query: str,
        name: str | None,
        started: float,
        duration_ms: int,
        status: str,
        exception: str | None,
        result_bytes: int,
        reads: Reads | None = None,
    ) -> None:
        """Keep one finished run (``status`` is ClickHouse's word: ``QueryFinish`` or ``ExceptionWhileProcessing``)."""
        reads = reads or Reads()
        row = {
            "query_id": query_id,
            "kind": kind,
            "query": query[:MAX_TEXT],
            "name": name or "",
            "query_start_time": started,
            "query_duration_ms": int(duration_ms),
            "status": status,
            "exception_message": (exception or "")[:MAX_TEXT],
            "result_bytes": int(result_bytes),
            "result_rows": reads.result_rows,
        }
        with self._lock:
            self._runs.setdefault(team_id, deque(maxlen=self.keep)).append(row)

    def rows(self, team_id: int) -> list[dict[str, Any]]:
        """The project's records, oldest first (copies)."""
        with self._lock:
            return [dict(r) for r in self._runs.get(team_id, ())]


QUERY_LOG = QueryLogBook()
"""The process's log: the query service writes it, the HogQL runner reads it."""


def is_refusal(exc: BaseException) -> bool:
    """Whether a failure happened before the engine ran anything (a HogQL refusal, a bad request)."""
    from ..errors import ValidationFailed
    from ..hogql import HogQLError

    return isinstance(exc, (HogQLError, ValidationFailed, TranslationFailed))


def _text(query: BaseModel) -> str:
    text = getattr(query, "query", None)
    if isinstance(text, str):
        return text  # a HogQL statement, as PostHog's query_log shows it
    return json.dumps(query.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))


def log_run(
    team_id: int,
    prepared: Any,
    started: float,
    clock: float,
    *,
    error: str | None = None,
    before_start: bool = False,
    result_bytes: int = 0,
    reads: Reads | None = None,
    book: QueryLogBook = QUERY_LOG,
) -> None:
    """Record one run of a prepared query (``query/request.py``), started at ``started`` (epoch seconds) and
    ``clock`` (``perf_counter``), that failed with ``error`` (``before_start``: refused before the engine ran
    anything, ClickHouse's ``ExceptionBeforeStart``) or answered ``result_bytes``, its statements' rows in ``reads``."""
    status = "QueryFinish"
    if error is not None:
        status = "ExceptionBeforeStart" if before_start else "ExceptionWhileProcessing"
    book.record(
        team_id,
        query_id=prepared.query_id,
        kind=prepared.kind,
        query=_text(prepared.query),
        name=getattr(prepared.query, "name", None),
        started=started,
        duration_ms=round((time.perf_counter() - clock) * 1000),
        status=status,
        exception=error,
        result_bytes=result_bytes,
        reads=reads,
    )


T = TypeVar("T")


@dataclass(frozen=True)
class _Run:
    query_id: str
    kind: str
    query: BaseModel


def logged(team_id: int, query: BaseModel, run: Callable[[], T], *, query_id: str, book: QueryLogBook = QUERY_LOG) -> T:
    """``run()`` (a runner answering ``query``, e.g. an experiment's trend), recorded as a run of ``query``: its
    answer's size, or the error the caller gets for its failure (which goes on).

    >>> from hoglab.schema import EventsQuery
    >>> book = QueryLogBook()
    >>> logged(3, EventsQuery(select=["event"]), lambda: {"results": []}, query_id="q", book=book)
    {'results': []}
    >>> [(r["kind"], r["status"], r["result_bytes"]) for r in book.rows(3)]
    [('EventsQuery', 'QueryFinish', 14)]
    """
    started, clock = time.time(), time.perf_counter()
    record = _Run(query_id, str(getattr(query, "kind", type(query).__name__)), query)
    with measured() as reads:
        try:
            answer = run()
        except Exception as exc:
            from .failures import api_error  # the error the caller gets; failures imports this module's neighbours

            log_run(team_id, record, started, clock, error=api_error(exc).detail, before_start=is_refusal(exc),
                    reads=reads, book=book)  # fmt: skip
            raise
    size = len(orjson.dumps(answer, default=str, option=orjson.OPT_NON_STR_KEYS))
    log_run(team_id, record, started, clock, result_bytes=size, reads=reads, book=book)
    return answer
