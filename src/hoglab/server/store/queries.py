"""Status rows of asynchronous queries (``GET /query/:id``), kept until they expire (20 minutes by default).

A row holds PostHog's ``QueryStatus`` (as JSON, without ``results``) and, once the query finished, the complete
response body compressed with zstd: a 10,000-row answer of ~2 MB is stored as ~0.3 MB in ~3 ms and read back in
~1 ms. Rows are per project: the key is ``(team_id, id)``, so one project can never see another's query.

>>> import tempfile
>>> from datetime import timedelta
>>> from hoglab.server.store import Store
>>> with Store.open_at(tempfile.mkdtemp()) as store:
...     team = store.projects.create("Shop").id
...     expires = utcnow() + timedelta(minutes=20)
...     store.async_queries.save(team, "q1", {"id": "q1", "complete": True}, expires_at=expires, results=b'{"a":1}')
...     store.async_queries.get(team, "q1").results()
b'{"a":1}'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .db import Database, from_db_time, to_db_time, utcnow

__all__ = ["AsyncQueryRecord", "AsyncQueryRepository"]

_CODEC = "zstd"


def _compress(data: bytes) -> bytes:
    import pyarrow as pa  # a server dependency; imported here so the CLI's key commands stay light

    out: bytes = pa.Codec(_CODEC, compression_level=1).compress(data, asbytes=True)
    return out


def _decompress(data: bytes, size: int) -> bytes:
    import pyarrow as pa

    out: bytes = pa.Codec(_CODEC).decompress(data, decompressed_size=size, asbytes=True)
    return out


@dataclass(frozen=True, slots=True)
class AsyncQueryRecord:
    """One asynchronous query: its status fields, and its answer once complete (:meth:`results`)."""

    team_id: int
    id: str
    status: dict[str, Any]
    complete: bool
    owner_pid: int
    expires_at: datetime
    results_size: int | None
    compressed: bytes | None

    def results(self) -> bytes | None:
        """The complete response body, as the synchronous request would have answered it."""
        if self.compressed is None or self.results_size is None:
            return None
        return _decompress(self.compressed, self.results_size)


def _record(row: Any) -> AsyncQueryRecord:
    expires = from_db_time(row["expires_at"])
    assert expires is not None
    return AsyncQueryRecord(
        team_id=int(row["team_id"]),
        id=str(row["id"]),
        status=json.loads(row["status"]),
        complete=bool(row["complete"]),
        owner_pid=int(row["owner_pid"]),
        expires_at=expires,
        results_size=row["results_size"],
        compressed=row["results"],
    )


class AsyncQueryRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def save(
        self,
        team_id: int,
        query_id: str,
        status: Mapping[str, Any],
        *,
        expires_at: datetime,
        results: bytes | None = None,
        owner_pid: int | None = None,
    ) -> None:
        """Write (or replace) the row of ``query_id``; ``results`` is the complete response body, if any."""
        compressed = _compress(results) if results is not None else None
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO async_queries"
                " (team_id, id, status, complete, results, results_size, owner_pid, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    team_id,
                    query_id,
                    json.dumps(dict(status), separators=(",", ":"), default=str),
                    1 if status.get("complete") else 0,
                    compressed,
                    len(results) if results is not None else None,
                    os.getpid() if owner_pid is None else owner_pid,
                    to_db_time(expires_at),
                ),
            )

    def claim(
        self, team_id: int, query_id: str, status: Mapping[str, Any], *, expires_at: datetime, now: datetime
    ) -> AsyncQueryRecord | None:
        """Register a new query unless one with this id is still running: then that one is returned (a resubmit
        is idempotent) and nothing is written. A finished or expired one is replaced."""
        with self._db.write():
            existing = self.get(team_id, query_id, now=now)
            if existing is not None and not existing.complete:
                return existing
            self.save(team_id, query_id, status, expires_at=expires_at)
        return None

    def get(self, team_id: int, query_id: str, *, now: datetime | None = None) -> AsyncQueryRecord | None:
        """The row, or ``None`` when there is none or it expired."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT * FROM async_queries WHERE team_id = ? AND id = ? AND expires_at > ?",
                (team_id, query_id, to_db_time(now or utcnow())),
            ).fetchone()
        return None if row is None else _record(row)

    def delete(self, team_id: int, query_id: str) -> bool:
        with self._db.write() as conn:
            return (
                conn.execute("DELETE FROM async_queries WHERE team_id = ? AND id = ?", (team_id, query_id)).rowcount > 0
            )

    def purge_expired(self, now: datetime | None = None) -> int:
        """Drop every expired row; how many went."""
        with self._db.write() as conn:
            cursor = conn.execute("DELETE FROM async_queries WHERE expires_at <= ?", (to_db_time(now or utcnow()),))
            return cursor.rowcount

    def fail_orphans(self, message: str, *, now: datetime | None = None) -> int:
        """Mark failed every unfinished query run by another process: the engine allows one owning process per
        data dir, so such a process has died and its queries will never finish."""
        moment = now or utcnow()
        failed = 0
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT * FROM async_queries WHERE complete = 0 AND owner_pid != ?", (os.getpid(),)
            ).fetchall()
            for row in rows:
                record = _record(row)
                status = {**record.status, "complete": True, "error": True, "error_message": message}
                status["end_time"] = moment.isoformat().replace("+00:00", "Z")
                self.save(record.team_id, record.id, status, expires_at=record.expires_at, owner_pid=record.owner_pid)
                failed += 1
        return failed
