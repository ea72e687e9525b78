"""Projects (PostHog's teams): every event, flag and experiment belongs to one."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable

from .db import Database, to_db_time, utcnow
from .records import ProjectRecord, usable_timezone

__all__ = ["ProjectRepository", "new_project_token"]


def new_project_token() -> str:
    """A project API key for capture: ``phc_`` and 43 url-safe characters (public, unlike personal keys)."""
    return "phc_" + secrets.token_urlsafe(32)


class ProjectRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, name: str, timezone: str = "UTC") -> ProjectRecord:
        """A new project with a fresh ``phc_`` token.

        >>> project = store.projects.create("Shop", timezone="Europe/Berlin")  # doctest: +SKIP
        >>> project.api_token.startswith("phc_")  # doctest: +SKIP
        True

        ``timezone`` must be an IANA time zone name (``ValueError`` otherwise): every date of the project's queries
        is computed in it.
        """
        if not usable_timezone(timezone):
            raise ValueError(f"unknown time zone {timezone!r}: expected an IANA name such as 'Europe/Berlin'")
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO projects (uuid, name, api_token, timezone, created_at) VALUES (?, ?, ?, ?, ?)",
                (str(uuid.uuid4()), name, new_project_token(), timezone, to_db_time(utcnow())),
            )
            row = conn.execute("SELECT * FROM projects WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return ProjectRecord.from_row(row)

    def get(self, project_id: int) -> ProjectRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
        return None if row is None else ProjectRecord.from_row(row)

    def get_by_token(self, api_token: str) -> ProjectRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM projects WHERE api_token = ?", (api_token,)).fetchone()
        return None if row is None else ProjectRecord.from_row(row)

    def get_by_name(self, name: str) -> ProjectRecord | None:
        """The oldest project with this name (names aren't unique)."""
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM projects WHERE name = ? ORDER BY id LIMIT 1", (name,)).fetchone()
        return None if row is None else ProjectRecord.from_row(row)

    def list(self, ids: Iterable[int] | None = None) -> list[ProjectRecord]:
        """All projects, or those among ``ids``, by id."""
        with self._db.read() as conn:
            if ids is None:
                rows = conn.execute("SELECT * FROM projects ORDER BY id").fetchall()
            else:
                wanted = sorted(set(ids))
                if not wanted:
                    return []
                marks = ",".join("?" * len(wanted))
                rows = conn.execute(f"SELECT * FROM projects WHERE id IN ({marks}) ORDER BY id", wanted).fetchall()
        return [ProjectRecord.from_row(row) for row in rows]
