"""The process's memory budget: one number that bounds what tenants can make this process hold, and each
project's share of it.

Every project is served by one process, so one project's answers must not take the memory of the others. The
budget (``HOGLAB_MEMORY_BUDGET``, ``hoglab serve --memory-budget``; two thirds of the machine's memory by default,
16 GiB on a 24 GiB box) is split in two parts, each enforced where the bytes are:

* **answers** (a quarter): the bytes of answers the engine has handed over and the service still holds, counted
  as the engine produces them (:class:`AnswerMemory`). A project's answers at once get at most
  ``project_memory_share`` of it (``HOGLAB_PROJECT_MEMORY_SHARE``, half by default).
* **ingestion's caches**, beside them: the groups (a 64th) and the persons (a 16th) capture holds between
  batches, each a least-recently-used cache that forgets what was used longest ago past its bound.
* **the engine** (the other three quarters), in ClickHouse's own accounting: ``max_server_memory_usage`` for
  the whole embedded engine; the queries of every project together (the ``hoglab_queries`` workload, ClickHouse's
  memory reservations) at most three quarters of that, so writes, merges and caches keep the rest; the queries
  of one project (its ``hoglab_project_<id>`` workload) at most ``project_memory_share`` of the queries' part,
  and one query (``max_memory_usage``) no more than its project's part.

>>> budget = MemoryBudget(total=16 * 1024**3)
>>> [round(n / 1024**3, 2) for n in (budget.answer_bytes, budget.engine_bytes, budget.query_bytes)]
[4.0, 12.0, 9.0]
>>> round(budget.project_query_bytes / 1024**3, 2), round(budget.project_answer_bytes / 1024**3, 2)
(4.5, 2.0)
>>> answers = AnswerMemory(limit=100, project_limit=60)
>>> with answers.meter(project_id=1) as meter:
...     meter.add(50)
...     answers.held(), answers.held(1)
(50, 50)
>>> answers.held()
0
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .base import MemoryLimitExceeded, TooManyRows

__all__ = [
    "DEFAULT_PROJECT_SHARE",
    "AnswerMemory",
    "AnswerMemoryExceeded",
    "AnswerMeter",
    "MemoryBudget",
    "ResultBytes",
    "WorkloadNames",
    "count_answer_bytes",
    "default_memory_budget",
    "metered",
    "project_workload",
]

DEFAULT_PROJECT_SHARE = 0.5
"""A project's share of each part of the budget: the other half always serves everyone else."""

QUERIES_WORKLOAD = "hoglab_queries"
"""The workload every project's workload belongs to (ClickHouse's scheduling hierarchy)."""
MEMORY_RESOURCE = "hoglab_memory"


@dataclass(frozen=True)
class WorkloadNames:
    """The names of the memory resource and the workloads of one start of the embedded engine.

    chDB keeps the workload entities of a closed engine in the process: when the engine is opened again in the same
    process (a notebook's second local service, a test module after another), ``CREATE OR REPLACE`` of the old
    names succeeds but the new scheduler never enforces them (measured on chDB 4.4: a 64 MiB project workload let a
    240 MB query through). Each later start therefore names its own (``_r<n>``); the first keeps the plain names.

    >>> WorkloadNames().project(7), WorkloadNames(2).project(7), WorkloadNames(2).queries
    ('hoglab_project_7', 'hoglab_project_7_r2', 'hoglab_queries_r2')
    """

    restart: int = 0

    @property
    def _suffix(self) -> str:
        return f"_r{self.restart}" if self.restart else ""

    @property
    def resource(self) -> str:
        return MEMORY_RESOURCE + self._suffix

    @property
    def queries(self) -> str:
        """Every project's queries together."""
        return QUERIES_WORKLOAD + self._suffix

    def project(self, project_id: int) -> str:
        """One project's queries together."""
        return project_workload(project_id) + self._suffix


def default_memory_budget() -> int:
    """Two thirds of the machine's physical memory, in whole MiB (16 GiB on a 24 GiB machine); 8 GiB when the
    platform does not say."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - every Linux and macOS has both
        return 8 * 1024**3
    return (ram * 2 // 3) // 1024**2 * 1024**2


def project_workload(project_id: int) -> str:
    """The name of a project's workload: ``project_workload(7) == 'hoglab_project_7'``."""
    return f"hoglab_project_{int(project_id)}"


@dataclass(frozen=True)
class MemoryBudget:
    """The parts of a ``total`` budget (bytes); see the module's docstring."""

    total: int
    project_share: float = DEFAULT_PROJECT_SHARE

    def __post_init__(self) -> None:
        if self.total < 64 * 1024**2:
            raise ValueError(f"a memory budget must be at least 64 MiB, got {self.total} bytes")
        if not 0 < self.project_share <= 1:
            raise ValueError(f"a project's memory share must be in (0, 1], got {self.project_share}")

    @classmethod
    def from_config(cls, config: Any) -> MemoryBudget:
        """The budget of a ``ServerConfig`` (its ``memory_budget``, 0 for the default)."""
        total = int(getattr(config, "memory_budget", 0) or 0) or default_memory_budget()
        return cls(total, float(getattr(config, "project_memory_share", DEFAULT_PROJECT_SHARE)))

    @property
    def answer_bytes(self) -> int:
        """Answers held by the service, all projects together."""
        return self.total // 4

    @property
    def engine_bytes(self) -> int:
        """The embedded engine's ``max_server_memory_usage``."""
        return self.total - self.answer_bytes

    @property
    def query_bytes(self) -> int:
        """Every project's queries together (the ``hoglab_queries`` workload)."""
        return self.engine_bytes * 3 // 4

    @property
    def project_query_bytes(self) -> int:
        """One project's queries together (its workload)."""
        return int(self.query_bytes * self.project_share)

    @property
    def project_answer_bytes(self) -> int:
        """One project's answers held at once."""
        return int(self.answer_bytes * self.project_share)

    @property
    def group_cache_bytes(self) -> int:
        """Groups that ingestion holds for every project (``ingest/groups.py``): a 64th of the budget."""
        return self.total // 64

    @property
    def person_cache_bytes(self) -> int:
        """Persons that ingestion holds for every project (``ingest/person_store.py``): a 16th of the budget."""
        return self.total // 16

    def query_memory(self, max_memory_usage: int) -> int:
        """One query's ``max_memory_usage``: the configured one (0: none), never more than its project's part.

        >>> MemoryBudget(total=1024**3).query_memory(4 * 1024**3) == MemoryBudget(total=1024**3).project_query_bytes
        True
        """
        if max_memory_usage <= 0:
            return self.project_query_bytes
        return min(int(max_memory_usage), self.project_query_bytes)

    def workload_statements(self, names: WorkloadNames = WorkloadNames()) -> list[str]:
        """The DDL of the queries' workload (idempotent; ``CREATE OR REPLACE`` applies a changed budget)."""
        return [
            f"CREATE RESOURCE IF NOT EXISTS {names.resource} (MEMORY RESERVATION)",
            f"CREATE OR REPLACE WORKLOAD {names.queries} SETTINGS max_memory = {self.query_bytes}",
        ]

    def project_workload_statement(self, project_id: int, names: WorkloadNames = WorkloadNames()) -> str:
        """The DDL of one project's workload."""
        return (
            f"CREATE OR REPLACE WORKLOAD {names.project(project_id)} IN {names.queries} "
            f"SETTINGS max_memory = {self.project_query_bytes}"
        )


class AnswerMemoryExceeded(MemoryLimitExceeded):
    """The answers held at once passed the project's share of the answer memory, or the process's."""

    def __init__(self, message: str, *, limit: int, scope: str) -> None:
        super().__init__(message, code=241, name="MEMORY_LIMIT_EXCEEDED")
        self.limit = limit
        self.scope = scope  # "project" or "process"


class AnswerMemory:
    """The bytes of answers the service holds, per project and in all; thread-safe."""

    def __init__(self, *, limit: int, project_limit: int) -> None:
        self.limit = int(limit)
        self.project_limit = int(project_limit)
        self._held: Counter[int] = Counter()
        self._total = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, budget: MemoryBudget) -> AnswerMemory:
        return cls(limit=budget.answer_bytes, project_limit=budget.project_answer_bytes)

    def reserve(self, project_id: int, nbytes: int) -> None:
        """Count ``nbytes`` more for the project, or raise :class:`AnswerMemoryExceeded` (nothing counted)."""
        with self._lock:
            if self._held[project_id] + nbytes > self.project_limit:
                raise AnswerMemoryExceeded(
                    "The answers this project is producing at once passed its share of the service's answer "
                    f"memory ({self.project_limit} bytes).",
                    limit=self.project_limit,
                    scope="project",
                )
            if self._total + nbytes > self.limit:
                raise AnswerMemoryExceeded(
                    f"The answers being produced at once passed the service's answer memory ({self.limit} bytes).",
                    limit=self.limit,
                    scope="process",
                )
            self._held[project_id] += nbytes
            self._total += nbytes

    def release(self, project_id: int, nbytes: int) -> None:
        with self._lock:
            left = self._held[project_id] - nbytes
            if left > 0:
                self._held[project_id] = left
            else:
                del self._held[project_id]
            self._total -= nbytes

    def held(self, project_id: int | None = None) -> int:
        """Bytes held now by one project, or by all."""
        with self._lock:
            return self._total if project_id is None else self._held[project_id]

    @contextmanager
    def meter(self, *, project_id: int) -> Iterator[AnswerMeter]:
        """A request's meter: what it counts is held until the block ends."""
        meter = AnswerMeter(self, int(project_id))
        try:
            yield meter
        finally:
            meter.close()


class AnswerMeter:
    """The answer bytes one request holds (see :meth:`AnswerMemory.meter`)."""

    def __init__(self, memory: AnswerMemory, project_id: int) -> None:
        self.memory = memory
        self.project_id = project_id
        self.held = 0

    def add(self, nbytes: int) -> None:
        self.memory.reserve(self.project_id, nbytes)
        self.held += nbytes

    def close(self) -> None:
        held, self.held = self.held, 0
        if held:
            self.memory.release(self.project_id, held)


_METER: ContextVar[AnswerMeter | None] = ContextVar("hoglab_answer_meter", default=None)


@contextmanager
def metered(meter: AnswerMeter | None) -> Iterator[None]:
    """Count the answer bytes the engine produces in this block on ``meter`` (engines call
    :func:`count_answer_bytes` as chunks arrive)."""
    token = _METER.set(meter)
    try:
        yield
    finally:
        _METER.reset(token)


def count_answer_bytes(nbytes: int) -> None:
    """Count ``nbytes`` of answer on the current request's meter (none outside :func:`metered`)."""
    meter = _METER.get()
    if meter is not None:
        meter.add(nbytes)


class ResultBytes:
    """One answer's bytes as an engine produces them, chunk by chunk: past ``max_result_bytes`` (when the
    overflow mode is ``throw``) is ClickHouse's own error for it, and each chunk is counted on the request's
    answer meter (:func:`count_answer_bytes`). Engines raise from here, while streaming, and cancel the rest.

    >>> counter = ResultBytes({"max_result_bytes": 10, "result_overflow_mode": "throw"})
    >>> counter.add(8)
    >>> counter.add(8)
    Traceback (most recent call last):
    ...
    hoglab.server.engine.base.TooManyRows: Limit for result exceeded, max bytes: 10, current bytes: 16
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        limit = int(settings.get("max_result_bytes") or 0)
        self.limit = limit if settings.get("result_overflow_mode", "throw") == "throw" else 0
        self.total = 0

    def add(self, nbytes: int) -> None:
        self.total += nbytes
        if self.limit and self.total > self.limit:
            raise TooManyRows(
                f"Limit for result exceeded, max bytes: {self.limit}, current bytes: {self.total}",
                code=396,
                name="TOO_MANY_ROWS_OR_BYTES",
            )
        count_answer_bytes(nbytes)
