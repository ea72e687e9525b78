"""Cohorts: definitions only. Who is in a cohort is computed from events by the engine, not stored here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .db import Database, to_db_time, utcnow
from .records import CohortRecord, dump_json

__all__ = ["CohortRepository"]


class CohortRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        team_id: int,
        name: str,
        filters: Mapping[str, Any],
        *,
        description: str = "",
        is_static: bool = False,
        is_calculating: bool = False,
        created_by_id: int | None = None,
    ) -> CohortRecord:
        """A new cohort definition.

        >>> store.cohorts.create(project.id, "Power users", {"properties": {"type": "OR", "values": []}})
        ... # doctest: +SKIP
        """
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO cohorts (team_id, name, description, filters, is_static, is_calculating,"
                " created_by_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    team_id,
                    name,
                    description,
                    dump_json(dict(filters)),
                    int(is_static),
                    int(is_calculating),
                    created_by_id,
                    to_db_time(utcnow()),
                ),
            )
            row = conn.execute("SELECT * FROM cohorts WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return CohortRecord.from_row(row)

    def get(self, cohort_id: int, team_id: int | None = None) -> CohortRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM cohorts WHERE id = ?", (cohort_id,)).fetchone()
        if row is None or (team_id is not None and row["team_id"] != team_id):
            return None
        return CohortRecord.from_row(row)

    def list(self, team_id: int, *, include_deleted: bool = False) -> list[CohortRecord]:
        sql = "SELECT * FROM cohorts WHERE team_id = ?" + ("" if include_deleted else " AND deleted = 0")
        with self._db.read() as conn:
            rows = conn.execute(sql + " ORDER BY id", (team_id,)).fetchall()
        return [CohortRecord.from_row(row) for row in rows]

    def update(self, cohort_id: int, *, name: str, description: str, filters: Mapping[str, Any]) -> CohortRecord:
        """Replace a cohort's definition (its membership is recomputed on next use)."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE cohorts SET name = ?, description = ?, filters = ?, last_calculation = NULL WHERE id = ?",
                (name, description, dump_json(dict(filters)), cohort_id),
            )
            row = conn.execute("SELECT * FROM cohorts WHERE id = ?", (cohort_id,)).fetchone()
        return CohortRecord.from_row(row)

    def mark_calculated(self, cohort_id: int, count: int) -> None:
        """Record that membership was computed (by the engine) and how many persons it holds."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE cohorts SET is_calculating = 0, count = ?, last_calculation = ? WHERE id = ?",
                (count, to_db_time(utcnow()), cohort_id),
            )
