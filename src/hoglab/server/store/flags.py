"""Feature flags. Experiments create theirs; the flags API and ``/decide`` read them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from hoglab.errors import HoglabError

from .db import Database, to_db_time, utcnow
from .records import FlagRecord, dump_json

__all__ = ["DuplicateFlagKey", "FlagRepository"]

_UPDATABLE = frozenset({"name", "filters", "active", "deleted", "ensure_experience_continuity"})


class DuplicateFlagKey(HoglabError):
    """A live flag with this key already exists in the project."""


class FlagRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        team_id: int,
        key: str,
        *,
        name: str = "",
        filters: Mapping[str, Any],
        active: bool = True,
        ensure_experience_continuity: bool = False,
        created_by_id: int | None = None,
    ) -> FlagRecord:
        """A new flag; ``DuplicateFlagKey`` if the project has a live flag with this key.

        >>> store.flags.create(project.id, "new-checkout", filters={"groups": []})  # doctest: +SKIP
        """
        now = to_db_time(utcnow())
        try:
            with self._db.write() as conn:
                cursor = conn.execute(
                    "INSERT INTO feature_flags (team_id, key, name, filters, active, deleted,"
                    " ensure_experience_continuity, created_by_id, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
                    (
                        team_id,
                        key,
                        name,
                        dump_json(dict(filters)),
                        int(active),
                        int(ensure_experience_continuity),
                        created_by_id,
                        now,
                        now,
                    ),
                )
                row = conn.execute("SELECT * FROM feature_flags WHERE id = ?", (cursor.lastrowid,)).fetchone()
        except sqlite3.IntegrityError as exc:
            if "feature_flags" in str(exc) and "key" in str(exc):
                raise DuplicateFlagKey(key) from exc
            raise
        return FlagRecord.from_row(row)

    def get(self, flag_id: int) -> FlagRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM feature_flags WHERE id = ?", (flag_id,)).fetchone()
        return None if row is None else FlagRecord.from_row(row)

    def get_many(self, flag_ids: Iterable[int]) -> dict[int, FlagRecord]:
        wanted = sorted(set(flag_ids))
        if not wanted:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT * FROM feature_flags WHERE id IN ({','.join('?' * len(wanted))})", wanted
            ).fetchall()
        return {row["id"]: FlagRecord.from_row(row) for row in rows}

    def get_by_key(self, team_id: int, key: str) -> FlagRecord | None:
        """The project's live (not deleted) flag with this key."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT * FROM feature_flags WHERE team_id = ? AND key = ? AND deleted = 0", (team_id, key)
            ).fetchone()
        return None if row is None else FlagRecord.from_row(row)

    def list(self, team_id: int, *, include_deleted: bool = False) -> list[FlagRecord]:
        sql = "SELECT * FROM feature_flags WHERE team_id = ?" + ("" if include_deleted else " AND deleted = 0")
        with self._db.read() as conn:
            rows = conn.execute(sql + " ORDER BY id", (team_id,)).fetchall()
        return [FlagRecord.from_row(row) for row in rows]

    def update(self, flag_id: int, **fields: Any) -> FlagRecord:
        """Change some of ``name, filters, active, deleted, ensure_experience_continuity``."""
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update flag fields {sorted(unknown)}")
        values: dict[str, Any] = {}
        for column, value in fields.items():
            if column == "filters":
                values[column] = dump_json(dict(value))
            elif isinstance(value, bool):
                values[column] = int(value)
            else:
                values[column] = value
        values["updated_at"] = to_db_time(utcnow())
        assignments = ", ".join(f"{column} = ?" for column in values)
        with self._db.write() as conn:
            conn.execute(f"UPDATE feature_flags SET {assignments} WHERE id = ?", (*values.values(), flag_id))
            row = conn.execute("SELECT * FROM feature_flags WHERE id = ?", (flag_id,)).fetchone()
        if row is None:
            raise KeyError(flag_id)
        return FlagRecord.from_row(row)
