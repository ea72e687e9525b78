"""The scale-out engine: a ClickHouse server (or cluster) over HTTP through clickhouse-connect.

Same SQL, same DDL, same settings (``settings.py``) as the embedded engine; settings travel as HTTP query
parameters instead of ``SET``. Answers are read as a stream and counted as they arrive (``memory.py``
``ResultBytes``): one over ``max_result_bytes`` or over the project's answer memory stops there and the statement
is killed. The server's memory is its own (its ``max_server_memory_usage`` and the per-query limits apply);
the service's share of the budget for answers applies here as on chDB. The URL is ``http[s]://[user[:password]@]host[:port][/database][?options]``
(``clickhouse://`` is read as ``http://``); the database defaults to ``hoglab`` and is created with the tables on
open. No ClickHouse server can run on the build machine, so the tests drive this class through a
ClickHouse-HTTP shim over chDB (tests/server/engine/chshim.py); see docs/engine.md.

For example (a sketch of a call and its answer, not run)::

    engine = ClickHouseEngine("http://default:@localhost:8123")
    engine.execute("SELECT count() FROM events WHERE team_id = 1")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pyarrow as pa

from .base import EngineError, JsonResult
from .ddl import DATABASE, create_statements, is_insertable
from .errors import error_from_message
from .jsonfmt import split_json_compact
from .memory import AnswerMemory, MemoryBudget, ResultBytes, default_memory_budget
from .settings import JSON_OUTPUT_SETTINGS, QueryLimits, internal_settings, quote_string, user_query_settings

__all__ = ["ClickHouseEngine", "parse_clickhouse_url"]

_BOOL_OPTIONS = {"compress", "verify", "secure"}
_READ_SIZE = 1024**2
_ARROW_OUTPUT = {"output_format_arrow_string_as_string": 1, "output_format_arrow_compression_method": "none"}
_NUMBER_OPTIONS = {"connect_timeout", "send_receive_timeout", "query_retries"}


def parse_clickhouse_url(url: str) -> dict[str, Any]:
    """clickhouse-connect ``get_client`` arguments from a URL.

    >>> args = parse_clickhouse_url("https://bob:s%40cret@ch.example:8443/analytics?compress=false")
    >>> args["host"], args["port"], args["username"], args["password"], args["database"], args["compress"]
    ('ch.example', 8443, 'bob', 's@cret', 'analytics', False)
    """
    parts = urlsplit(url)
    scheme = (parts.scheme or "http").lower()
    if scheme not in {"http", "https", "clickhouse", "clickhouses"}:
        raise ValueError(f"unsupported ClickHouse URL scheme {scheme!r}: use http:// or https://")
    if not parts.netloc:
        # Without "//" the text would be read as a database on localhost: refuse it rather than guess.
        raise ValueError(f"not a ClickHouse URL: {url!r} (e.g. http://localhost:8123/hoglab)")
    secure = scheme in {"https", "clickhouses"}
    args: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "port": parts.port or (8443 if secure else 8123),
        "secure": secure,
        "username": unquote(parts.username) if parts.username else "default",
        "password": unquote(parts.password) if parts.password else "",
        "database": parts.path.strip("/") or DATABASE,
    }
    for key, value in parse_qsl(parts.query):
        if key in _BOOL_OPTIONS:
            args[key] = value.lower() not in {"0", "false", "no", "off"}
        elif key in _NUMBER_OPTIONS:
            args[key] = float(value) if "." in value else int(value)
        else:
            raise ValueError(f"unknown ClickHouse URL option {key!r}")
    return args


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _engine_error(exc: Exception) -> EngineError:
    return error_from_message(str(exc))


class ClickHouseEngine:
    """The :class:`~hoglab.server.engine.base.Engine` on a ClickHouse server. Thread-safe (a client per
    concurrent caller; clients have no HTTP session, so queries never serialise on the server)."""

    name = "clickhouse"

    def __init__(self, url: str, *, limits: QueryLimits | None = None, memory: MemoryBudget | None = None) -> None:
        import clickhouse_connect  # optional dependency: the [clickhouse] extra

        self.url = url
        self.limits = limits or QueryLimits()
        self.memory = memory or MemoryBudget(default_memory_budget())
        self.answers = AnswerMemory.of(self.memory)
        args = parse_clickhouse_url(url)
        self.database = args.pop("database")
        self._args = args
        self._get_client = clickhouse_connect.get_client
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        try:
            # clickhouse-connect logs its own copy of a connection failure; the EngineError below says it once.
            with _quiet(logging.getLogger("clickhouse_connect")):
                bootstrap = self._get_client(**args, autogenerate_session_id=False)
        except Exception as exc:
            raise EngineError(f"cannot reach ClickHouse at {args['host']}:{args['port']}: {exc}") from None
        try:
            for statement in create_statements(self.database):
                bootstrap.command(statement)
        except Exception as exc:
            raise _engine_error(exc) from None
        finally:
            bootstrap.close()

    @contextmanager
    def _client(self) -> Iterator[Any]:
        with self._lock:
            if self._closed:
                raise EngineError("the engine is closed")
            client = self._idle.pop() if self._idle else None
        if client is None:
            try:
                client = self._get_client(**self._args, database=self.database, autogenerate_session_id=False)
            except Exception as exc:
                raise _engine_error(exc) from None
        try:
            yield client
        finally:
            with self._lock:
                keep = not self._closed  # close() may have run while the client was out
                if keep:
                    self._idle.append(client)
            if not keep:
                client.close()

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> pa.Table:
        # Uncompressed and with String as Arrow strings: the bytes counted are the bytes the answer holds.
        wanted = user_query_settings(self.limits, tag=tag, overrides={**_ARROW_OUTPUT, **(settings or {})})
        raw = self._read(sql, wanted, "ArrowStream", tag)
        return pa.ipc.open_stream(raw).read_all()

    def execute_json(
        self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None
    ) -> JsonResult:
        wanted = user_query_settings(self.limits, tag=tag, overrides={**JSON_OUTPUT_SETTINGS, **(settings or {})})
        return split_json_compact(self._read(sql, wanted, "JSONCompact", tag))

    def _read(self, sql: str, settings: dict[str, Any], fmt: str, tag: str | None) -> bytes:
        """The answer's bytes, read as they arrive and counted (``ResultBytes``); past a limit the statement is
        killed by its tag and the error goes on."""
        counter = ResultBytes(settings)
        parts: list[bytes] = []
        with self._client() as client:
            try:
                stream = client.raw_stream(sql, settings=settings, fmt=fmt)
            except Exception as exc:
                raise _engine_error(exc) from None
            try:
                while part := stream.read(_READ_SIZE):
                    counter.add(len(part))
                    parts.append(part)
            except EngineError:
                if tag:
                    with suppress(Exception):  # best effort: the connection closes below either way
                        self.cancel(tag)
                raise
            except Exception as exc:
                raise _engine_error(exc) from None
            finally:
                stream.close()
        return b"".join(parts)

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None, bookkeeping: bool = False) -> None:
        with self._client() as client:
            try:
                client.command(sql, settings=internal_settings(settings))
            except Exception as exc:
                raise _engine_error(exc) from None

    def query_bytes(self, sql: str, fmt: str = "TabSeparated", *, settings: Mapping[str, Any] | None = None) -> bytes:
        """Internal statements in any ClickHouse format, without the user-query limits."""
        with self._client() as client:
            try:
                return bytes(client.raw_query(sql, settings=internal_settings(settings), fmt=fmt))
            except Exception as exc:
                raise _engine_error(exc) from None

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        if not is_insertable(table):
            raise ValueError(f"unknown table {table!r}")
        if data.num_rows == 0:
            return
        with self._client() as client:
            try:
                client.insert_arrow(table, data, database=self.database)
            except Exception as exc:
                raise _engine_error(exc) from None

    def cancel(self, tag: str) -> bool:
        sql = f"KILL QUERY WHERE Settings['log_comment'] = {quote_string(tag)} SYNC"
        return bool(self.query_bytes(sql, "TabSeparated").strip())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    def __enter__(self) -> ClickHouseEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ClickHouseEngine(host={self._args['host']!r}, port={self._args['port']!r})"
