"""Mirrors of remote projects: each local project's source, its events watermark, and the objects copied.

``server/mirror`` (the server side of ``hoglab pull``) writes through this repository; the rows live here, not
there, because only ``server/store`` talks to SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from .db import Database, from_db_time, to_db_time, utcnow

__all__ = ["PullRepository", "PullSource"]


@dataclass(frozen=True, slots=True)
class PullSource:
    """Where a local project's copy comes from, and the keyset position of the last event copied."""

    id: int
    host: str
    remote_project_id: int
    local_project_id: int
    events_after_timestamp: datetime | None
    events_after_uuid: str | None
    events_copied: int
    files_done: tuple[str, ...]
    last_pull_at: datetime | None


def _source(row: sqlite3.Row) -> PullSource:
    return PullSource(
        row["id"],
        row["host"],
        row["remote_project_id"],
        row["local_project_id"],
        from_db_time(row["events_after_timestamp"]),
        row["events_after_uuid"],
        row["events_copied"],
        tuple(json.loads(row["files_done"])),
        from_db_time(row["last_pull_at"]),
    )


class PullRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def find(self, host: str, remote_project_id: int, local_project_id: int | None = None) -> PullSource | None:
        """The mirror of a remote project (into ``local_project_id`` when given; else the first one made)."""
        sql = "SELECT * FROM pull_sources WHERE host = ? AND remote_project_id = ?"
        args: tuple[object, ...] = (host, remote_project_id)
        if local_project_id is not None:
            sql += " AND local_project_id = ?"
            args += (local_project_id,)
        with self._db.read() as conn:
            row = conn.execute(sql + " ORDER BY id LIMIT 1", args).fetchone()
        return None if row is None else _source(row)

    def create(self, host: str, remote_project_id: int, local_project_id: int) -> PullSource:
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO pull_sources (host, remote_project_id, local_project_id, created_at) VALUES (?, ?, ?, ?)",
                (host, remote_project_id, local_project_id, to_db_time(utcnow())),
            )
            row = conn.execute("SELECT * FROM pull_sources WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _source(row)

    def discard(self, source_id: int, *, with_project: bool) -> None:
        """Forget a mirror a failed first pull made before it stored anything: its source row, its object map and,
        ``with_project``, the local project made for it (which holds nothing yet), in one transaction."""
        with self._db.write() as conn:
            row = conn.execute("SELECT local_project_id FROM pull_sources WHERE id = ?", (source_id,)).fetchone()
            if row is None:
                return
            conn.execute("DELETE FROM pull_objects WHERE source_id = ?", (source_id,))
            conn.execute("DELETE FROM pull_sources WHERE id = ?", (source_id,))
            if with_project:
                conn.execute("DELETE FROM projects WHERE id = ?", (row["local_project_id"],))

    def get(self, source_id: int) -> PullSource:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM pull_sources WHERE id = ?", (source_id,)).fetchone()
        return _source(row)

    def advance(self, source_id: int, timestamp: datetime, uuid: str, copied: int) -> None:
        """Move the events watermark to ``(timestamp, uuid)``, having stored ``copied`` more events."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE pull_sources SET events_after_timestamp = ?, events_after_uuid = ?,"
                " events_copied = events_copied + ?, last_pull_at = ? WHERE id = ?",
                (to_db_time(timestamp), uuid, copied, to_db_time(utcnow()), source_id),
            )

    def file_done(self, source_id: int, name: str, copied: int) -> None:
        """Record an export file as read (its name relative to the export root), having stored ``copied``."""
        with self._db.write() as conn:
            row = conn.execute("SELECT files_done FROM pull_sources WHERE id = ?", (source_id,)).fetchone()
            done = sorted({*json.loads(row["files_done"]), name})
            conn.execute(
                "UPDATE pull_sources SET files_done = ?, events_copied = events_copied + ?, last_pull_at = ?"
                " WHERE id = ?",
                (json.dumps(done), copied, to_db_time(utcnow()), source_id),
            )

    def local_id(self, source_id: int, kind: str, remote_id: int) -> int | None:
        """The local id of a remote flag, cohort or experiment copied before."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT local_id FROM pull_objects WHERE source_id = ? AND kind = ? AND remote_id = ?",
                (source_id, kind, remote_id),
            ).fetchone()
        return None if row is None else int(row["local_id"])

    def remember(self, source_id: int, kind: str, remote_id: int, local_id: int) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO pull_objects (source_id, kind, remote_id, local_id) VALUES (?, ?, ?, ?)",
                (source_id, kind, remote_id, local_id),
            )
