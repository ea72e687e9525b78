"""The embedded engine: chDB (in-process ClickHouse) over a data directory.

chDB's constraints shape this module (measured in engine-notes §5):

* One data directory per process, and no second process on it. The process-wide :class:`_Core` owns the
  directory: every :class:`ChdbEngine` on the same path shares it, another path in this process is refused with
  a clear error, and a lock file (``lock.py``) names the process holding it to any other process.
* ``import chdb`` boots the engine, and a process that forks afterwards hangs in the child. chDB is imported
  here, lazily, when the first engine opens; a forked child that touches the engine gets an error instead.
* A connection runs one statement at a time and settings are per connection. Statements borrow a
  :class:`_Session` from one of two pools: *read* sessions are ``readonly=2`` for good (it cannot be lowered
  again, so a read session can never write) and *write* sessions serve DDL and inserts. A session applies the
  settings a statement asks for with ``SET`` (only what differs from last time), which leaves the SQL text
  untouched: an error message quotes the user's statement, not our settings.
* There is no in-process interrupt: ``cancel(tag)`` runs ``KILL QUERY ... SYNC`` on a separate control
  connection, matching the ``log_comment`` every tagged query carries.
* Reads are streamed, one block's output at a time, and their bytes are counted as they arrive: an answer over
  ``max_result_bytes`` (or over the request's share of the answer memory, ``memory.py``) stops there, with the
  statement cancelled, instead of being written whole first. A whole-answer ``query()`` would also keep the
  answer in a buffer no memory limit counts (measured: 1.5 GB of JSON under a 500 MB ``max_memory_usage``
  peaked the process at 5.1 GB; streamed, a refusal at 100 MB peaked 0.2 GB above the start).
* The process's memory budget (``memory.py``) is ClickHouse's own: ``max_server_memory_usage`` is set when the
  engine starts (a connection-string setting of the first connection; chDB ignores it on later ones), and each
  project's queries run in their own workload, whose ``max_memory`` ClickHouse enforces across all of them.

In a fresh process (not run as a doctest: a process that already opened another data path, as the test
session has, cannot open a second one)::

    engine = ChdbEngine(tempfile.mkdtemp())
    engine.execute("SELECT 1 AS one").to_pylist()   # [{'one': 1}]
    engine.close()
"""

from __future__ import annotations

import atexit
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..private_files import DIR_MODE, tighten
from .base import EngineError, JsonResult
from .ddl import DATABASE, create_statements, is_insertable
from .errors import EngineInUse, error_from_message
from .jsonfmt import JsonCompactChunks
from .lock import DirLock
from .memory import AnswerMemory, MemoryBudget, ResultBytes, WorkloadNames, default_memory_budget
from .settings import (
    JSON_OUTPUT_SETTINGS,
    QueryLimits,
    internal_settings,
    quote_string,
    settings_clause,
    user_query_settings,
)

__all__ = ["ChdbEngine"]

_registry_lock = threading.Lock()
_core: _Core | None = None
_starts: dict[int, int] = {}  # process id -> engine starts so far (a forked child counts its own)


def _next_start() -> int:
    """How many times this process started the engine before this start (0 the first time); under the lock."""
    pid = os.getpid()
    count = _starts.get(pid, 0)
    _starts[pid] = count + 1
    return count


def _in_child_after_fork() -> None:
    # chDB's threads do not survive fork(); the child must not touch the parent's engine (it would hang).
    global _core
    _core = None


os.register_at_fork(after_in_child=_in_child_after_fork)


@atexit.register
def _close_at_exit() -> None:
    # Shutting chDB down with connections open makes it print errors at exit; close them first.
    core = _core
    if core is not None and core.pid == os.getpid():
        core.close()


class _Session:
    """One chDB connection and the settings currently ``SET`` on it."""

    def __init__(self, conn: Any, *, readonly: bool) -> None:
        self.conn = conn
        self.applied: dict[str, Any] = {}
        self.broken = False
        conn.query(f"USE {DATABASE}", "CSV")
        if readonly:
            conn.query("SET readonly=2", "CSV")

    def run(self, sql: str, fmt: str, settings: Mapping[str, Any]) -> bytes:
        self._apply(settings)
        try:
            return bytes(self.conn.query(sql, fmt).bytes())
        except BaseException:
            # chDB keeps the output a statement wrote before failing (a JSON head, even rows) in the connection
            # and prepends it to the NEXT answer on it, which may be another project's: never reuse it.
            self.broken = True
            raise

    def stream(
        self, sql: str, fmt: str, settings: Mapping[str, Any], counter: ResultBytes, consume: Callable[[bytes], None]
    ) -> None:
        """Run ``sql`` and hand each block's output to ``consume`` as the engine writes it, each counted on
        ``counter`` before it is copied out of the engine; if either raises, the statement is cancelled (and the
        session dropped) before the error goes on."""
        self._apply(settings)
        # chDB's own connection object: the Python wrapper's StreamingResult ends a stream at the first output
        # without rows, so an empty answer would lose its head (column names and types).
        conn = self.conn._conn
        try:
            handle = conn.send_query(sql, fmt, params={})
        except RuntimeError as exc:
            if _NOT_STREAMABLE not in str(exc):
                raise
            # DESCRIBE, EXPLAIN, SHOW and writes cannot stream (nothing ran yet): their answer in one piece.
            whole = self.run(sql, fmt, settings)
            counter.add(len(whole))
            consume(whole)
            return
        result = chunk = None
        try:
            while True:
                result = conn.streaming_fetch_result(handle)
                size = result.size() if result is not None else 0
                if not size:
                    break
                counter.add(size)  # before the copy: a refused block is never copied into Python
                chunk = result.bytes()
                result = None
                consume(chunk)
                chunk = None  # one block's output held at a time
        except BaseException as exc:
            self.broken = True  # as in run: whatever the statement left in the connection stays with it
            with suppress(Exception):
                conn.streaming_cancel_query(handle)
            # The traceback keeps the frames it passed (``consume``'s chunk among them), and a caught error often
            # lives on in a reference cycle until the garbage collector runs: drop the refused answer's buffers
            # now, not then.
            handle = result = chunk = None
            traceback.clear_frames(exc.__traceback__)
            raise

    def _apply(self, settings: Mapping[str, Any]) -> None:
        wanted = {k: v for k, v in settings.items() if k != "readonly"}
        changes = {k: v for k, v in wanted.items() if self.applied.get(k, _UNSET) != v}
        resets = [k for k in self.applied if k not in wanted]
        if changes or resets:
            assignments = settings_clause(changes)[len("SETTINGS ") :]
            assignments = ", ".join(filter(None, [assignments, *(f"{k}=DEFAULT" for k in resets)]))
            # If the SET fails (an unknown setting in the overrides), the session's state is unknown: drop it.
            self.broken = True
            self.conn.query(f"SET {assignments}", "CSV")
            self.applied = dict(wanted)
            self.broken = False


_UNSET = object()
_NOT_STREAMABLE = "Streaming query is not supported"


class _Pool:
    def __init__(self, connect: Any, size: int, *, readonly: bool) -> None:
        self._connect = connect
        self._size = size
        self._readonly = readonly
        self._idle: list[_Session] = []
        self._created = 0
        self._available = threading.Condition()
        self.closed = False

    @contextmanager
    def session(self) -> Iterator[_Session]:
        with self._available:
            if self.closed:
                raise EngineError("the engine is closed")
            while not self._idle and self._created >= self._size:
                self._available.wait()
            session = self._idle.pop() if self._idle else None
            if session is None:
                self._created += 1
        try:
            if session is None:
                session = _Session(self._connect(), readonly=self._readonly)
            yield session
        finally:
            with self._available:
                if session is not None and not session.broken and not self.closed:
                    self._idle.append(session)
                else:
                    self._created -= 1
                    if session is not None:
                        session.conn.close()
                self._available.notify()

    def close(self) -> None:
        with self._available:
            self.closed = True
            idle, self._idle = self._idle, []
        for session in idle:
            session.conn.close()


class _Core:
    """The process's one chDB instance: lock, DDL, read and write pools, control connection, memory budget."""

    def __init__(self, path: Path, pool_size: int, budget: MemoryBudget) -> None:
        self.path = path
        self.pid = os.getpid()
        self.refs = 0
        self.budget = budget
        self.answers = AnswerMemory.of(budget)
        self._workloads: set[int] = set()
        self.names = WorkloadNames(_next_start())  # a later start in this process needs names of its own
        self.lock = DirLock.acquire(path)
        try:
            import chdb  # lazy on purpose: importing chDB starts the engine in this process

            def connect() -> Any:
                return chdb.connect(str(path))

            # The first connection starts the engine: its server settings are the process's for good.
            self._control = chdb.connect(f"{path}?max_server_memory_usage={budget.engine_bytes}")
            for statement in [*create_statements(), *budget.workload_statements(self.names)]:
                self._control.query(statement, "CSV")
        except BaseException:
            self.lock.release()
            raise
        self._control_lock = threading.Lock()
        self.write_count = 0  # finished writes: what result caches compare (see ChdbEngine.write_count)
        self.reads = _Pool(connect, pool_size, readonly=True)
        self.writes = _Pool(connect, max(2, pool_size // 2), readonly=False)

    def control(self, sql: str, fmt: str = "CSV") -> bytes:
        with self._control_lock:
            return bytes(self._control.query(sql, fmt).bytes())

    def workload(self, project_id: int) -> str:
        """The project's workload, made the first time this process runs one of its queries."""
        with self._control_lock:
            if project_id not in self._workloads:
                self._control.query(self.budget.project_workload_statement(project_id, self.names), "CSV")
                self._workloads.add(project_id)
        return self.names.project(project_id)

    def close(self) -> None:
        self.reads.close()
        self.writes.close()
        self._control.close()
        self.lock.release()


def _acquire(path: Path, pool_size: int, budget: MemoryBudget | None) -> _Core:
    global _core
    with _registry_lock:
        if _core is None:
            _core = _Core(path, pool_size, budget or MemoryBudget(default_memory_budget()))
        elif _core.path != path:
            raise EngineInUse(
                f"This process already has the embedded engine open on {_core.path}; chDB allows one data "
                f"directory per process, so {path} cannot be opened too. Close the other engine first."
            )
        _core.refs += 1
        return _core


def _release(core: _Core) -> None:
    global _core
    with _registry_lock:
        core.refs -= 1
        if core.refs > 0:
            return
        if _core is core:
            _core = None
    core.close()


class ChdbEngine:
    """The :class:`~hoglab.server.engine.base.Engine` on chDB. Thread-safe; cheap handles over one process core.

    ``data_dir`` is chDB's own directory (``open_engine`` uses ``<service data dir>/events``). Opening it applies
    the DDL (idempotent). Every handle must be closed; the directory is released when the last one is.
    ``memory``: the process's budget, applied by the handle that starts the engine (later ones share it).
    """

    name = "chdb"

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        limits: QueryLimits | None = None,
        pool_size: int = 8,
        memory: MemoryBudget | None = None,
    ):
        self.path = Path(data_dir).expanduser().resolve()
        # Owner-only (private_files.py): its parts are created with the process's umask, under this closed folder.
        self.path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        tighten(self.path)
        self.limits = limits or QueryLimits()
        self.database = DATABASE
        self._core: _Core | None = _acquire(self.path, pool_size, memory)

    @staticmethod
    def current_path() -> Path | None:
        """The data directory this process has open, if any (tests use it to share the one engine)."""
        core = _core
        return core.path if core is not None and core.pid == os.getpid() else None

    def _live(self) -> _Core:
        core = self._core
        if core is None:
            raise EngineError("the engine is closed")
        if core.pid != os.getpid():
            raise EngineError(
                f"the embedded engine was opened by process {core.pid}; a forked child cannot use it "
                "(chDB hangs after fork). Open the engine in the child, or start it with 'spawn'."
            )
        return core

    @property
    def memory(self) -> MemoryBudget:
        """The process's memory budget (the one the engine was started with)."""
        return self._live().budget

    @property
    def answers(self) -> AnswerMemory:
        """The answer bytes the service holds, counted per project against the budget."""
        return self._live().answers

    def project_settings(self, project_id: int) -> dict[str, Any]:
        """The settings that put a project's queries in its own share of the engine's memory (its workload)."""
        return {"workload": self._live().workload(int(project_id))}

    def _stream(
        self, sql: str, fmt: str, settings: Mapping[str, Any], counter: ResultBytes, consume: Callable[[bytes], None]
    ) -> None:
        core = self._live()
        with core.reads.session() as session:
            try:
                session.stream(sql, fmt, settings, counter, consume)
            except RuntimeError as exc:  # chdb.ChdbError is a RuntimeError
                raise error_from_message(str(exc)) from None
            except EngineError:
                # Refused while streaming: the cancelled statement's threads may still be finishing. Wait for them
                # (KILL ... SYNC on its tag), so the memory it held is free before anyone purges the allocator.
                tag = settings.get("log_comment")
                if tag:
                    with suppress(Exception):
                        self.cancel(str(tag))
                raise

    def _run(self, pool: str, sql: str, fmt: str, settings: Mapping[str, Any]) -> bytes:
        core = self._live()
        with (core.reads if pool == "read" else core.writes).session() as session:  # bookkeeping writes too
            try:
                return session.run(sql, fmt, settings)
            except RuntimeError as exc:  # chdb.ChdbError is a RuntimeError
                raise error_from_message(str(exc)) from None
            finally:
                if pool == "write":
                    core.write_count += 1

    # -- the Engine protocol ----------------------------------------------------------------------------------

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> pa.Table:
        """Run one read with the user-query guard rails (``settings.py``); the result as Arrow.

        For example (a sketch of a call and its answer, not run)::

            engine.execute("SELECT event, count() FROM events WHERE team_id = 1 GROUP BY event", tag="req-1")
        """
        wanted = {**JSON_OUTPUT_SETTINGS, **user_query_settings(self.limits, tag=tag, overrides=settings)}
        counter = ResultBytes(wanted)
        tables: list[pa.Table] = []

        def consume(chunk: bytes) -> None:
            table = pa.ipc.open_stream(chunk).read_all()
            if table.nbytes > len(chunk):  # decompressed (the engine compresses Arrow): count what it holds
                counter.add(table.nbytes - len(chunk))
            tables.append(table)

        try:
            self._stream(sql, "ArrowStream", wanted, counter, consume)
        except BaseException:
            tables.clear()  # a refused answer's memory must not live on in the traceback
            raise
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def execute_json(
        self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None
    ) -> JsonResult:
        """Run one read; rows as ``JSONCompact`` bytes plus ClickHouse's column types (see ``jsonfmt.py``)."""
        overrides = {**JSON_OUTPUT_SETTINGS, **(settings or {})}
        wanted = user_query_settings(self.limits, tag=tag, overrides=overrides)
        counter = ResultBytes(wanted)
        chunks = JsonCompactChunks()

        try:
            self._stream(sql, "JSONCompact", wanted, counter, chunks.add)
        except BaseException:
            chunks.clear()  # a refused answer's memory must not live on in the traceback
            raise
        return chunks.result()

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None, bookkeeping: bool = False) -> None:
        """Run DDL or a write (never user input); a ``bookkeeping`` one leaves ``write_count`` as it is."""
        self._run("bookkeeping" if bookkeeping else "write", sql, "CSV", internal_settings(settings))

    def query_bytes(self, sql: str, fmt: str = "TabSeparated", *, settings: Mapping[str, Any] | None = None) -> bytes:
        """Internal statements in any ClickHouse format, without the user-query limits (loaders, tools, tests)."""
        return self._run("write", sql, fmt, internal_settings(settings))

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        """Append ``data`` to ``hoglab.<table>`` in one INSERT (an Arrow IPC stream). Columns match by name; UUID
        columns may be strings, ``binary(16)`` or ``pa.uuid()``."""
        if not is_insertable(table):
            raise ValueError(f"unknown table {table!r}")
        if data.num_rows == 0:
            return
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        payload = memoryview(sink.getvalue())
        columns = ", ".join(f"`{name}`" for name in data.column_names)
        core = self._live()
        with core.writes.session() as session:
            try:
                with session.conn.send_insert(f"INSERT INTO {DATABASE}.{table} ({columns})", "ArrowStream") as ins:
                    ins.append(payload)
                    ins.finish()
            except RuntimeError as exc:
                raise error_from_message(str(exc)) from None
            finally:
                core.write_count += 1

    @property
    def write_count(self) -> int:
        """How many writes (DDL, inserts, loads) finished on this data since it was opened. This process owns the
        data dir and writes only through here, so an unchanged count means unchanged data: result caches compare
        it instead of asking the engine (``server/query/cache.py``)."""
        return self._live().write_count

    def purge_memory(self) -> None:
        """Give the allocator's free memory back to the system (``SYSTEM JEMALLOC PURGE``), on the control
        connection: it is not a write, so result caches keyed on ``write_count`` stay valid."""
        self._live().control("SYSTEM JEMALLOC PURGE")

    def cancel(self, tag: str) -> bool:
        """Kill the query whose ``log_comment`` is ``tag``; ``True`` if one was running."""
        core = self._live()
        try:
            out = core.control(f"KILL QUERY WHERE Settings['log_comment'] = {quote_string(tag)} SYNC", "TSV")
        except RuntimeError as exc:
            raise error_from_message(str(exc)) from None
        return bool(out.strip())

    def close(self) -> None:
        core, self._core = self._core, None
        if core is not None and core.pid == os.getpid():
            _release(core)

    def __enter__(self) -> ChdbEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChdbEngine({str(self.path)!r})"
