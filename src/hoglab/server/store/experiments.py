"""Experiments. Each one points at its feature flag; callers write both inside one ``store.transaction()``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from .db import Database, to_db_time, utcnow
from .records import ExperimentRecord, Page, dump_json
from .rows import delete_team_row, team_page, team_row, update_team_row

__all__ = ["METRIC_COLUMNS", "ExperimentRepository", "ExperimentStatus"]

ExperimentStatus = Literal["draft", "running", "complete", "all"]

METRIC_JSON_COLUMNS = frozenset(
    {"metrics", "metrics_secondary", "exposure_criteria", "stats_config", "primary_metrics_ordered_uuids",
     "secondary_metrics_ordered_uuids"}
)  # fmt: skip
"""The JSON columns of PostHog's metric experiments (``ExperimentQuery``)."""
METRIC_COLUMNS = METRIC_JSON_COLUMNS | {"conclusion", "conclusion_comment"}
_JSON_COLUMNS = frozenset({"parameters", "secondary_metrics", "filters"}) | METRIC_JSON_COLUMNS
_TIME_COLUMNS = frozenset({"start_date", "end_date"})
_UPDATABLE = frozenset(
    {"name", "description", "archived", "exposure_cohort_id", "type", "conclusion", "conclusion_comment", "holdout_id"}
    | _JSON_COLUMNS
    | _TIME_COLUMNS
)
_STATUS_SQL: dict[str, str] = {
    "draft": " AND start_date IS NULL",
    "running": " AND start_date IS NOT NULL AND end_date IS NULL",
    "complete": " AND end_date IS NOT NULL",
    "all": "",
}


def _column_value(column: str, value: Any) -> Any:
    if column in _JSON_COLUMNS:
        return dump_json(value)
    if column in _TIME_COLUMNS:
        return None if value is None else to_db_time(value)
    if isinstance(value, bool):
        return int(value)
    return value


class ExperimentRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        team_id: int,
        *,
        name: str,
        feature_flag_id: int,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        secondary_metrics: list[dict[str, Any]] | None = None,
        filters: Mapping[str, Any] | None = None,
        start_date: datetime | None = None,
        end_date: datetime | None = None,
        archived: bool = False,
        created_by_id: int | None = None,
        type: str = "product",
        metric_fields: Mapping[str, Any] | None = None,
        holdout_id: int | None = None,
    ) -> ExperimentRecord:
        """A new experiment on an existing flag.

        >>> with store.transaction():  # doctest: +SKIP
        ...     flag = store.flags.create(project.id, "checkout", filters=...)
        ...     store.experiments.create(project.id, name="Checkout", feature_flag_id=flag.id)

        ``metric_fields`` sets any of :data:`METRIC_COLUMNS` (``metrics``, ``stats_config``, ...).
        """
        unknown = set(metric_fields or {}) - METRIC_COLUMNS
        if unknown:
            raise ValueError(f"not metric fields of an experiment: {sorted(unknown)}")
        now = to_db_time(utcnow())
        values = {
            "team_id": team_id,
            "name": name,
            "description": description,
            "feature_flag_id": feature_flag_id,
            "parameters": _column_value("parameters", None if parameters is None else dict(parameters)),
            "secondary_metrics": _column_value("secondary_metrics", secondary_metrics),
            "filters": _column_value("filters", None if filters is None else dict(filters)),
            "start_date": _column_value("start_date", start_date),
            "end_date": _column_value("end_date", end_date),
            "archived": int(archived),
            "type": type,
            "created_by_id": created_by_id,
            "holdout_id": holdout_id,
            "created_at": now,
            "updated_at": now,
            **{column: _column_value(column, value) for column, value in (metric_fields or {}).items()},
        }
        columns = ", ".join(values)
        marks = ", ".join("?" * len(values))
        with self._db.write() as conn:
            cursor = conn.execute(f"INSERT INTO experiments ({columns}) VALUES ({marks})", tuple(values.values()))
            row = conn.execute("SELECT * FROM experiments WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return ExperimentRecord.from_row(row)

    def get(self, team_id: int, experiment_id: int) -> ExperimentRecord | None:
        """The project's experiment, or ``None`` (also for another project's experiment)."""
        with self._db.read() as conn:
            row = team_row(conn, "experiments", team_id, experiment_id)
        return None if row is None else ExperimentRecord.from_row(row)

    def with_holdout(self, team_id: int, holdout_id: int) -> list[ExperimentRecord]:
        """The project's experiments that use the holdout, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT * FROM experiments WHERE team_id = ? AND holdout_id = ? ORDER BY id", (team_id, holdout_id)
            ).fetchall()
        return [ExperimentRecord.from_row(row) for row in rows]

    def ids(self, team_id: int, limit: int) -> tuple[list[int], int]:
        """The project's first ``limit`` experiment ids (ascending, archived ones too) and how many it has."""
        with self._db.read() as conn:
            total = conn.execute("SELECT count(*) FROM experiments WHERE team_id = ?", (team_id,)).fetchone()[0]
            rows = conn.execute(
                "SELECT id FROM experiments WHERE team_id = ? ORDER BY id LIMIT ?", (team_id, limit)
            ).fetchall()
        return [int(row[0]) for row in rows], int(total)

    def list(
        self,
        team_id: int,
        *,
        archived: bool | None = False,
        status: ExperimentStatus = "all",
        search: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> Page[ExperimentRecord]:
        """A page of the project's experiments, newest first, and how many match in all.

        ``archived=None`` lists archived and live experiments together.
        """
        where = ""
        params: list[Any] = []
        if archived is not None:
            where += " AND archived = ?"
            params.append(int(archived))
        where += _STATUS_SQL[status]
        if search:
            where += " AND instr(lower(name), lower(?)) > 0"
            params.append(search)
        with self._db.read() as conn:
            total, rows = team_page(conn, "experiments", team_id, order_by="created_at DESC, id DESC", limit=limit,
                                    offset=offset, where=where, params=params)  # fmt: skip
        return Page(total, [ExperimentRecord.from_row(row) for row in rows])

    def update(self, team_id: int, experiment_id: int, fields: Mapping[str, Any]) -> ExperimentRecord | None:
        """Set some columns (``updated_at`` follows); ``None`` if there is no such experiment."""
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update experiment fields {sorted(unknown)}")
        values = {column: _column_value(column, value) for column, value in fields.items()}
        with self._db.write() as conn:
            row = update_team_row(conn, "experiments", team_id, experiment_id, values)
        return None if row is None else ExperimentRecord.from_row(row)

    def delete(self, team_id: int, experiment_id: int) -> ExperimentRecord | None:
        """Remove the experiment for good; returns what was removed, or ``None``."""
        with self._db.write() as conn:
            row = delete_team_row(conn, "experiments", team_id, experiment_id)
        return None if row is None else ExperimentRecord.from_row(row)
