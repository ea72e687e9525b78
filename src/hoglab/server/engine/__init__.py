"""Engine adapters: chDB in-process (default) and a ClickHouse server over HTTP (clickhouse-connect).

Only this package talks to chDB or ClickHouse. Importing it does not import chDB (that boots an engine and makes
the process unsafe to fork); the adapters import their driver when an engine is opened.

>>> from hoglab.server.config import ServerConfig

For example (a sketch of a call and its answer, not run)::

    engine = open_engine(ServerConfig(data_dir=Path("/tmp/hoglab")))   # chDB in /tmp/hoglab/events
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .base import (
    Engine,
    EngineError,
    JsonResult,
    MemoryLimitExceeded,
    QueryCancelled,
    StatementFailed,
    StatementTimedOut,
    TooManyRows,
)
from .errors import EngineInUse
from .memory import MemoryBudget
from .settings import QueryLimits

if TYPE_CHECKING:
    from hoglab.server.config import ServerConfig

__all__ = [
    "EVENTS_SUBDIR",
    "Engine",
    "EngineError",
    "EngineInUse",
    "JsonResult",
    "MemoryBudget",
    "MemoryLimitExceeded",
    "QueryCancelled",
    "QueryLimits",
    "StatementFailed",
    "StatementTimedOut",
    "TooManyRows",
    "acquire_engine",
    "chdb_path",
    "open_engine",
    "release_engine",
]

# chDB's files live in their own subdirectory of the service's data dir, next to the SQLite metadata.
EVENTS_SUBDIR = "events"


def chdb_path(data_dir: str | Path) -> Path:
    """Where the embedded engine keeps its data inside a service data directory."""
    return Path(data_dir).expanduser() / EVENTS_SUBDIR


def open_engine(config: ServerConfig) -> Engine:
    """The engine the configuration asks for: a ClickHouse server if ``clickhouse_url`` is set, else chDB in
    ``<data_dir>/events``. Limits and the memory budget (``memory.py``) come from the config. Close it when done.

    Raises :class:`EngineInUse` if another process owns the data directory (its PID is in the message), or if
    this process already has a different one open.
    """
    budget = MemoryBudget.from_config(config)
    limits = QueryLimits(
        max_execution_time=config.max_execution_time,
        max_memory_usage=budget.query_memory(config.max_memory_usage),
    )
    engine: Engine
    if config.clickhouse_url:
        from .clickhouse import ClickHouseEngine

        engine = ClickHouseEngine(config.clickhouse_url, limits=limits, memory=budget)
    else:
        from .chdb import ChdbEngine

        engine = ChdbEngine(chdb_path(config.data_dir), limits=limits, memory=budget)
    from .materialized import refresh
    from .projections import ensure_projections

    try:
        ensure_projections(engine)
        refresh(engine)  # the compiler reads materialized properties from their columns
    except EngineError:
        engine.close()
        raise
    return engine


# Every app in a process that serves the same data shares one engine handle, so they share one capture writer
# and one person cache (two caches of the same persons would disagree). Counted, closed with the last user.
_shared: dict[str, tuple[Engine, int]] = {}
_shared_lock = threading.Lock()


def _engine_key(config: ServerConfig) -> str:
    if config.clickhouse_url:
        return "clickhouse:" + config.clickhouse_url
    return "chdb:" + str(chdb_path(config.data_dir).resolve())


def acquire_engine(config: ServerConfig) -> Engine:
    """The process's engine for ``config`` (opened on first use); pair every call with :func:`release_engine`."""
    key = _engine_key(config)
    with _shared_lock:
        engine, users = _shared.get(key, (None, 0))
        if engine is None:
            engine = open_engine(config)
        _shared[key] = (engine, users + 1)
        return engine


def release_engine(engine: Engine, *, before_close: Callable[[Engine], None] | None = None) -> bool:
    """Give back an engine from :func:`acquire_engine`; the last user closes it (after ``before_close``, which
    flushes what still writes through it). ``True`` if it was closed."""
    with _shared_lock:
        for key, (shared, users) in _shared.items():
            if shared is engine:
                if users > 1:
                    _shared[key] = (shared, users - 1)
                    return False
                del _shared[key]
                break
        else:
            raise ValueError("this engine was not acquired with acquire_engine")
    try:
        if before_close is not None:
            before_close(engine)
    finally:
        engine.close()
    return True
