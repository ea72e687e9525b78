"""The SQLite file under the data dir: one connection per thread, short transactions, versioned migrations.

Only ``server/store/`` talks to SQLite. Writes take the database lock up front (``BEGIN IMMEDIATE``) so two
writers never deadlock upgrading a read lock; WAL mode lets readers go on while one writer works. Transactions
nest: an inner ``write()`` is a SAVEPOINT of the outer one, so a repository method called inside a caller's
transaction commits or rolls back with it (an experiment and its feature flag are written together or not at all).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from hoglab.errors import HoglabError

from ..private_files import private_dir, private_file

__all__ = ["Database", "StoreError", "from_db_time", "to_db_time", "utcnow"]

DATABASE_FILENAME = "hoglab.sqlite3"


class StoreError(HoglabError):
    """The metadata store can't be opened or used (unwritable data dir, newer schema, corrupt file)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_db_time(value: datetime) -> str:
    """A fixed-width UTC text form, so ``ORDER BY`` on the column is chronological.

    >>> to_db_time(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    '2024-01-02T03:04:05.000000+00:00'
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def from_db_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class _ThreadConnection:
    """A thread's connection and how deep its transactions are nested."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.depth = 0


class Database:
    """``hoglab.sqlite3`` in ``data_dir``. Safe to share between threads: each thread gets its own connection.

    >>> import tempfile
    >>> db = Database(Path(tempfile.mkdtemp()))
    >>> db.open()
    >>> with db.write() as conn:
    ...     _ = conn.execute("CREATE TABLE t (x INTEGER)")
    >>> db.close()
    """

    def __init__(self, data_dir: Path, *, busy_timeout_seconds: float = 30.0) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DATABASE_FILENAME
        self._busy_timeout = busy_timeout_seconds
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._open = False

    def open(self) -> None:
        """Create the data dir and the file if needed and switch the file to WAL mode."""
        if self.data_dir.exists() and not self.data_dir.is_dir():
            raise StoreError(f"the data dir {self.data_dir} is a file, not a directory")
        try:
            private_dir(self.data_dir)  # owner-only; an open one is tightened with a warning
            private_file(self.path)  # 0600 before SQLite opens it: its -wal and -shm files take its mode
        except OSError as exc:
            raise StoreError(f"cannot create the data dir {self.data_dir}: {exc.strerror or exc}") from exc
        self._open = True
        try:
            conn = self._connection().connection
            # WAL is a property of the file: set once, every later connection sees it.
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"cannot open {self.path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
            self._local = threading.local()
            self._open = False
        for conn in connections:
            conn.close()

    @property
    def is_open(self) -> bool:
        return self._open

    def _connection(self) -> _ThreadConnection:
        current: _ThreadConnection | None = getattr(self._local, "current", None)
        if current is not None:
            return current
        if not self._open:
            raise StoreError("the metadata store is not open")
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
        current = _ThreadConnection(conn)
        with self._lock:
            self._connections.append(conn)
        self._local.current = current
        return current

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), or a SAVEPOINT inside the thread's open one."""
        with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several SELECTs (``BEGIN DEFERRED``), or the thread's open transaction."""
        with self._transaction("BEGIN DEFERRED") as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        state = self._connection()
        conn = state.connection
        savepoint = f"sp{state.depth}"
        conn.execute(begin if state.depth == 0 else f"SAVEPOINT {savepoint}")
        state.depth += 1
        try:
            yield conn
        except BaseException:
            state.depth -= 1
            if state.depth == 0:
                conn.execute("ROLLBACK")
            else:
                conn.execute(f"ROLLBACK TO {savepoint}")
                conn.execute(f"RELEASE {savepoint}")
            raise
        state.depth -= 1
        if state.depth > 0:
            conn.execute(f"RELEASE {savepoint}")
            return
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
