"""The engine as one query sees it: the app's statement limits on every statement, a cancel flag, and the
project's share of the memory budget (its workload, and a meter of the answer bytes it holds; ``memory.py``)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Mapping
from typing import Any

from .base import EngineError, QueryCancelled
from .memory import AnswerMeter, MemoryBudget, metered
from .settings import spill_settings

__all__ = ["LimitedEngine", "release_memory", "statement_limits"]


def statement_limits(config: Any, budget: MemoryBudget | None = None) -> dict[str, Any]:
    """The app's own limits on every statement of a request (``ServerConfig``): apps of one process share one
    engine, opened with the first app's configuration, so they can't rely on the engine's defaults.

    ``max_memory_usage`` is never more than a project's part of the memory ``budget`` (the engine's, else the
    config's), so a query spills to disk before its project's workload would stop it.

    ``max_result_bytes`` (with ``result_overflow_mode='throw'``) lets the engine stop a result once it holds that
    many bytes. The engine's check is partial (measured on chDB: a constant column, ``repeat('x', 100000)``, counts
    as one value and runs to the end), so the service also checks the answer's own size, which it enforces.
    """
    memory = (budget or MemoryBudget.from_config(config)).query_memory(int(config.max_memory_usage))
    limits: dict[str, Any] = {
        "max_execution_time": config.max_execution_time,
        "max_memory_usage": memory,
        **spill_settings(memory),
    }
    max_result_bytes = getattr(config, "max_result_bytes", 0)
    if max_result_bytes:
        limits["max_result_bytes"] = max_result_bytes
        limits["result_overflow_mode"] = "throw"
    return limits


def release_memory(engine: Any = None) -> None:
    """Hand freed memory back to the system after a query failed on a limit: its partial result was large, and
    without this the process keeps the peak. The in-process engine's allocator (jemalloc) is purged
    (``ChdbEngine.purge_memory``; a ClickHouse server manages its own), Arrow's pool gives back what it keeps
    for reuse (an Arrow answer's buffers live there), and Python's heap is trimmed with glibc's
    ``malloc_trim``."""
    # Never through engine.command: that counts as a write and would invalidate every cached answer.
    purge = getattr(engine, "purge_memory", None)
    if callable(purge):
        with contextlib.suppress(Exception):  # best effort
            purge()
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


class LimitedEngine:
    """The engine as a query sees it: the app's limits on every statement, and once ``cancelled`` is set no new
    statement starts (a statement already running is killed by its tag). Runners only read.

    With ``project_id``, every statement runs in the project's share of the engine's memory (its workload, when
    the engine has them) and the answer bytes it produces are counted on the project's share of the answer
    memory until :meth:`close` (the request holds them until then).
    """

    def __init__(
        self,
        engine: Any,
        limits: Mapping[str, Any],
        cancelled: threading.Event | None = None,
        *,
        project_id: int | None = None,
    ) -> None:
        self._engine = engine
        self._limits = dict(limits)
        self._cancelled = cancelled
        self.name: str = engine.name
        self._meter: AnswerMeter | None = None
        if project_id is not None:
            project_settings = getattr(engine, "project_settings", None)
            if callable(project_settings):
                self._limits.update(project_settings(project_id))
            answers = getattr(engine, "answers", None)
            if answers is not None:
                self._meter = AnswerMeter(answers, int(project_id))

    @property
    def write_count(self) -> int | None:
        """The wrapped engine's write counter, when it keeps one (query/cache.py ``data_version``)."""
        count = getattr(self._engine, "write_count", None)
        return count if isinstance(count, int) else None

    def _settings(self, settings: Mapping[str, Any] | None) -> dict[str, Any]:
        if self._cancelled is not None and self._cancelled.is_set():
            raise QueryCancelled("Query was cancelled.", code=394, name="QUERY_WAS_CANCELLED")
        return {**(settings or {}), **self._limits}

    @property
    def answer_bytes(self) -> int:
        """Answer bytes this request holds on its project's share (0 without a meter)."""
        return self._meter.held if self._meter is not None else 0

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        with metered(self._meter):
            return self._engine.execute(sql, settings=self._settings(settings), tag=tag)

    def execute_json(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        with metered(self._meter):
            return self._engine.execute_json(sql, settings=self._settings(settings), tag=tag)

    def hold(self, nbytes: int) -> None:
        """Count ``nbytes`` more that the request holds (an answer it builds from what the engine produced)."""
        if self._meter is not None:
            self._meter.add(nbytes)

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None, bookkeeping: bool = False) -> None:
        raise EngineError("query runners only read")

    def insert_arrow(self, table: str, data: Any) -> None:
        raise EngineError("query runners only read")

    def cancel(self, tag: str) -> bool:
        return bool(self._engine.cancel(tag))

    def close(self) -> None:
        """Give back the answer bytes the request counted; the wrapped engine belongs to the service."""
        if self._meter is not None:
            self._meter.close()

    def __enter__(self) -> LimitedEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
