"""The engine as one query sees it: the app's statement limits on every statement, and a cancel flag."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Mapping
from typing import Any

from .base import EngineError, QueryCancelled
from .settings import spill_settings

__all__ = ["LimitedEngine", "release_memory", "statement_limits"]


def statement_limits(config: Any) -> dict[str, Any]:
    """The app's own limits on every statement of a request (``ServerConfig``): apps of one process share one
    engine, opened with the first app's configuration, so they can't rely on the engine's defaults.

    ``max_result_bytes`` (with ``result_overflow_mode='throw'``) lets the engine stop a result once it holds that
    many bytes. The engine's check is partial (measured on chDB: a constant column, ``repeat('x', 100000)``, counts
    as one value and runs to the end), so the service also checks the answer's own size, which it enforces.
    """
    limits: dict[str, Any] = {
        "max_execution_time": config.max_execution_time,
        "max_memory_usage": config.max_memory_usage,
        **spill_settings(config.max_memory_usage),
    }
    max_result_bytes = getattr(config, "max_result_bytes", 0)
    if max_result_bytes:
        limits["max_result_bytes"] = max_result_bytes
        limits["result_overflow_mode"] = "throw"
    return limits


def release_memory(engine: Any = None) -> None:
    """Hand freed memory back to the system after a query failed on a limit: its partial result was large, and
    without this the process keeps the peak. The in-process engine's allocator (jemalloc) is purged
    (``ChdbEngine.purge_memory``; a ClickHouse server manages its own), Python's heap with glibc's
    ``malloc_trim``."""
    # Never through engine.command: that counts as a write and would invalidate every cached answer.
    purge = getattr(engine, "purge_memory", None)
    if callable(purge):
        with contextlib.suppress(Exception):  # best effort
            purge()
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
    statement starts (a statement already running is killed by its tag). Runners only read."""

    def __init__(self, engine: Any, limits: Mapping[str, Any], cancelled: threading.Event | None = None) -> None:
        self._engine = engine
        self._limits = dict(limits)
        self._cancelled = cancelled
        self.name: str = engine.name

    @property
    def write_count(self) -> int | None:
        """The wrapped engine's write counter, when it keeps one (query/cache.py ``data_version``)."""
        count = getattr(self._engine, "write_count", None)
        return count if isinstance(count, int) else None

    def _settings(self, settings: Mapping[str, Any] | None) -> dict[str, Any]:
        if self._cancelled is not None and self._cancelled.is_set():
            raise QueryCancelled("Query was cancelled.", code=394, name="QUERY_WAS_CANCELLED")
        return {**(settings or {}), **self._limits}

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        return self._engine.execute(sql, settings=self._settings(settings), tag=tag)

    def execute_json(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        return self._engine.execute_json(sql, settings=self._settings(settings), tag=tag)

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None, bookkeeping: bool = False) -> None:
        raise EngineError("query runners only read")

    def insert_arrow(self, table: str, data: Any) -> None:
        raise EngineError("query runners only read")

    def cancel(self, tag: str) -> bool:
        return bool(self._engine.cancel(tag))

    def close(self) -> None:
        """The wrapped engine belongs to the service; closing the view of it does nothing."""
