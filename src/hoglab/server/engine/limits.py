"""The engine as one query sees it: the app's statement limits on every statement, and a cancel flag."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from .base import EngineError, QueryCancelled
from .settings import spill_settings

__all__ = ["LimitedEngine", "statement_limits"]


def statement_limits(config: Any) -> dict[str, Any]:
    """The app's own limits on every statement of a request (``ServerConfig``): apps of one process share one
    engine, opened with the first app's configuration, so they can't rely on the engine's defaults."""
    return {
        "max_execution_time": config.max_execution_time,
        "max_memory_usage": config.max_memory_usage,
        **spill_settings(config.max_memory_usage),
    }


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

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None) -> None:
        raise EngineError("query runners only read")

    def insert_arrow(self, table: str, data: Any) -> None:
        raise EngineError("query runners only read")

    def cancel(self, tag: str) -> bool:
        return bool(self._engine.cancel(tag))

    def close(self) -> None:
        """The wrapped engine belongs to the service; closing the view of it does nothing."""
