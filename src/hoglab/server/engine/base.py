"""The Engine protocol: the only door to chDB or a ClickHouse server.

Everything above this package hands over ClickHouse SQL (printed by ``hogql/``) and gets Arrow back. The same
SQL and DDL run on both engines; only how bytes move differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hoglab.errors import HoglabError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Engine",
    "EngineError",
    "JsonResult",
    "MemoryLimitExceeded",
    "QueryCancelled",
    "StatementFailed",
    "StatementTimedOut",
    "TooManyRows",
]


class EngineError(HoglabError):
    """A failure reported by the engine. ``code``/``name`` are ClickHouse's (e.g. 62 ``SYNTAX_ERROR``)."""

    def __init__(self, message: str, *, code: int | None = None, name: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = name


class StatementFailed(EngineError):
    """The statement is wrong (syntax, unknown column, type mismatch): the user's mistake, a 400."""


class StatementTimedOut(EngineError):
    """``max_execution_time`` was reached."""


class MemoryLimitExceeded(EngineError):
    """A memory limit was reached. ``scope`` says whose: ``"query"`` (its ``max_memory_usage``), ``"project"``
    (its share of the budget: the project's workload, or its answers at once), ``"process"`` (the whole budget).
    """

    def __init__(self, message: str, *, code: int | None = None, name: str | None = None) -> None:
        super().__init__(message, code=code, name=name)
        # 776/777: a workload's max_memory (RESOURCE_LIMIT_EXCEEDED, MEMORY_RESERVATION_KILLED); "(total)" is
        # max_server_memory_usage's message.
        self.scope = "project" if code in (776, 777) else "process" if "(total)" in message else "query"


class TooManyRows(EngineError):
    """``max_result_rows`` was reached."""


class QueryCancelled(EngineError):
    """Cancelled by ``cancel(tag)`` (``KILL QUERY``)."""


@dataclass(frozen=True)
class JsonResult:
    """A result as ClickHouse's ``JSONCompact`` parts: rows stay JSON bytes so they go to HTTP unparsed.

    ``types`` are ClickHouse's own type names (``DateTime64(6, 'UTC')``, ``Nullable(String)``), which is what the
    Query API's ``types`` field carries. ``data`` is the JSON array of row arrays, e.g. ``b'[["a",1],["b",2]]'``.
    """

    columns: list[str]
    types: list[str]
    data: bytes
    rows: int
    elapsed: float = 0.0
    rows_read: int = 0
    bytes_read: int = 0


@runtime_checkable
class Engine(Protocol):
    """What the service needs from an engine. Implementations are safe to call from several threads."""

    name: str

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> pa.Table:
        """Run one read query and return its result as an Arrow table (column names and ClickHouse types kept).

        ``tag`` is set as the query's ``log_comment`` so ``cancel(tag)`` can find it.
        """
        ...

    def execute_json(
        self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None
    ) -> JsonResult:
        """Run one read query and return its rows as JSON (ISO 8601 datetimes, 64-bit integers unquoted)."""
        ...

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None, bookkeeping: bool = False) -> None:
        """Run DDL or a write (never user input). ``bookkeeping``: the write touches only the service's own tables
        (``BOOKKEEPING_TABLES``), which no query reads, so it is not a data change for the result caches."""
        ...

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        """Append rows to ``table`` (a name from ``ddl.py``) from an Arrow table whose columns match it."""
        ...

    def cancel(self, tag: str) -> bool:
        """Kill the running query tagged ``tag``; ``True`` if one was running."""
        ...

    def close(self) -> None: ...
