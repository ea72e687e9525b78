"""Experiment holdouts (PostHog's ``ExperimentHoldout``): a project's groups of persons kept out of experiments.

Callers keep the flags of the experiments that use a holdout in step (``server/experiments/holdouts.py``), inside
the same ``store.transaction()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .db import Database, to_db_time, utcnow
from .records import HoldoutRecord, Page, dump_json
from .rows import delete_team_row, team_page, team_row, update_team_row

__all__ = ["HoldoutRepository"]


class HoldoutRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        team_id: int,
        *,
        name: str,
        filters: Sequence[dict[str, Any]],
        description: str | None = None,
        created_by_id: int | None = None,
    ) -> HoldoutRecord:
        """A new holdout.

        >>> with store.transaction():  # doctest: +SKIP
        ...     store.holdouts.create(project.id, name="Q3", filters=[{"properties": [], "rollout_percentage": 10}])
        """
        now = to_db_time(utcnow())
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO experiment_holdouts (team_id, name, description, filters, created_by_id, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (team_id, name, description, dump_json(list(filters)), created_by_id, now, now),
            )
            row = conn.execute("SELECT * FROM experiment_holdouts WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return HoldoutRecord.from_row(row)

    def get(self, team_id: int, holdout_id: int) -> HoldoutRecord | None:
        """The project's holdout, or ``None`` (also for another project's)."""
        with self._db.read() as conn:
            row = team_row(conn, "experiment_holdouts", team_id, holdout_id)
        return None if row is None else HoldoutRecord.from_row(row)

    def list(self, team_id: int, *, limit: int = 100, offset: int = 0) -> Page[HoldoutRecord]:
        """A page of the project's holdouts, newest first (PostHog's ``-created_at``)."""
        with self._db.read() as conn:
            total, rows = team_page(conn, "experiment_holdouts", team_id, order_by="created_at DESC, id DESC",
                                    limit=limit, offset=offset)  # fmt: skip
        return Page(total, [HoldoutRecord.from_row(row) for row in rows])

    def update(self, team_id: int, holdout_id: int, **fields: Any) -> HoldoutRecord | None:
        """Change some of ``name, description, filters`` (``updated_at`` follows); ``None`` if there is none."""
        unknown = set(fields) - {"name", "description", "filters"}
        if unknown:
            raise ValueError(f"cannot update holdout fields {sorted(unknown)}")
        values = {k: dump_json(list(v)) if k == "filters" else v for k, v in fields.items()}
        with self._db.write() as conn:
            row = update_team_row(conn, "experiment_holdouts", team_id, holdout_id, values)
        return None if row is None else HoldoutRecord.from_row(row)

    def delete(self, team_id: int, holdout_id: int) -> HoldoutRecord | None:
        """Remove the holdout (its experiments' ``holdout_id`` becomes NULL); what was removed, or ``None``."""
        with self._db.write() as conn:
            row = delete_team_row(conn, "experiment_holdouts", team_id, holdout_id)
        return None if row is None else HoldoutRecord.from_row(row)
