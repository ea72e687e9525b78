"""An experiment metric's results day by day and the recalculations that fill them (PostHog's
``ExperimentMetricResult`` and ``ExperimentTimeseriesRecalculation``).

A result row is one day's cumulative ``ExperimentQuery`` answer (JSON) for (experiment, metric uuid, fingerprint),
``completed`` or ``failed`` with its error; a request row is one recalculation: ``pending`` → ``in_progress`` →
``completed`` or ``failed``.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .db import Database, from_db_time, to_db_time, utcnow

__all__ = ["DayResult", "ExperimentTimeseriesRepository", "RecalculationRecord"]

ACTIVE = ("pending", "in_progress")


@dataclass(frozen=True, slots=True)
class RecalculationRecord:
    id: str
    team_id: int
    experiment_id: int
    metric_uuid: str
    fingerprint: str
    metric: dict[str, Any]
    status: str
    error: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class DayResult:
    day: str
    query_to: datetime
    status: str
    result: dict[str, Any] | None
    error: str | None
    created_at: datetime
    updated_at: datetime


def _request(row: sqlite3.Row) -> RecalculationRecord:
    return RecalculationRecord(
        row["id"], row["team_id"], row["experiment_id"], row["metric_uuid"], row["fingerprint"],
        json.loads(row["metric"]), row["status"], row["error"], from_db_time(row["created_at"]),  # type: ignore[arg-type]
        from_db_time(row["updated_at"]),  # type: ignore[arg-type]
    )  # fmt: skip


class ExperimentTimeseriesRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    # -- recalculation requests --------------------------------------------------------------------------------

    def active_request(self, team_id: int, experiment_id: int, fingerprint: str) -> RecalculationRecord | None:
        """The pending or running recalculation of this experiment and fingerprint, if any."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT * FROM experiment_timeseries_requests WHERE team_id = ? AND experiment_id = ? "
                "AND fingerprint = ? AND status IN (?, ?) ORDER BY created_at DESC LIMIT 1",
                (int(team_id), int(experiment_id), fingerprint, *ACTIVE),
            ).fetchone()
        return _request(row) if row is not None else None

    def latest_request(self, team_id: int, experiment_id: int, metric_uuid: str,
                       fingerprint: str) -> RecalculationRecord | None:  # fmt: skip
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT * FROM experiment_timeseries_requests WHERE team_id = ? AND experiment_id = ? "
                "AND metric_uuid = ? AND fingerprint = ? ORDER BY created_at DESC LIMIT 1",
                (int(team_id), int(experiment_id), metric_uuid, fingerprint),
            ).fetchone()
        return _request(row) if row is not None else None

    def start_request(self, team_id: int, experiment_id: int, metric_uuid: str, fingerprint: str,
                      metric: Mapping[str, Any], *,
                      max_active: int | None = None) -> tuple[RecalculationRecord | None, bool]:  # fmt: skip
        """PostHog's idempotent recalculation: the active request of this fingerprint (``False``), else a new
        pending one after the stored results of (metric uuid, fingerprint) are deleted (``True``); one
        transaction. ``(None, False)`` when the experiment already has ``max_active`` other requests active."""
        now = to_db_time(utcnow())
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT * FROM experiment_timeseries_requests WHERE team_id = ? AND experiment_id = ? "
                "AND fingerprint = ? AND status IN (?, ?) ORDER BY created_at DESC LIMIT 1",
                (int(team_id), int(experiment_id), fingerprint, *ACTIVE),
            ).fetchone()
            if row is not None:
                return _request(row), False
            if max_active is not None:
                (active,) = conn.execute(
                    "SELECT count(*) FROM experiment_timeseries_requests WHERE team_id = ? AND experiment_id = ? "
                    "AND status IN (?, ?)",
                    (int(team_id), int(experiment_id), *ACTIVE),
                ).fetchone()
                if active >= max_active:
                    return None, False
            conn.execute(
                "DELETE FROM experiment_metric_results WHERE experiment_id = ? AND metric_uuid = ? AND fingerprint = ?",
                (int(experiment_id), metric_uuid, fingerprint),
            )
            request_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO experiment_timeseries_requests (id, team_id, experiment_id, metric_uuid, fingerprint, "
                "metric, status, error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', NULL, ?, ?)",
                (request_id, int(team_id), int(experiment_id), metric_uuid, fingerprint, json.dumps(dict(metric)),
                 now, now),
            )  # fmt: skip
            created = conn.execute("SELECT * FROM experiment_timeseries_requests WHERE id = ?",
                                   (request_id,)).fetchone()  # fmt: skip
        return _request(created), True

    def set_request_status(self, request_id: str, status: str, error: str | None = None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE experiment_timeseries_requests SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                (status, error, to_db_time(utcnow()), request_id),
            )

    def fail_unfinished(self, message: str) -> int:
        """Mark every pending or running request failed (the process that ran them is gone); how many."""
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE experiment_timeseries_requests SET status = 'failed', error = ?, updated_at = ? "
                "WHERE status IN (?, ?)",
                (message, to_db_time(utcnow()), *ACTIVE),
            )
        return int(cursor.rowcount)

    # -- daily results ------------------------------------------------------------------------------------------

    def save_day(self, team_id: int, experiment_id: int, metric_uuid: str, fingerprint: str, day: str,
                 query_to: datetime, *, result: Mapping[str, Any] | None = None,
                 error: str | None = None) -> None:  # fmt: skip
        """Store one day's answer (``completed``) or its failure (``failed``), replacing an earlier one."""
        now = to_db_time(utcnow())
        status = "failed" if error is not None else "completed"
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO experiment_metric_results (team_id, experiment_id, metric_uuid, fingerprint, day, "
                "query_to, status, result, error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (experiment_id, metric_uuid, fingerprint, day) DO UPDATE SET query_to = "
                "excluded.query_to, status = excluded.status, result = excluded.result, error = excluded.error, "
                "updated_at = excluded.updated_at",
                (int(team_id), int(experiment_id), metric_uuid, fingerprint, day, to_db_time(query_to), status,
                 None if result is None else json.dumps(dict(result)), error, now, now),
            )  # fmt: skip

    def days(self, team_id: int, experiment_id: int, metric_uuid: str, fingerprint: str) -> list[DayResult]:
        """The stored days of a metric and fingerprint, in order."""
        with self._db.read() as conn:
            found = conn.execute(
                "SELECT * FROM experiment_metric_results WHERE team_id = ? AND experiment_id = ? AND metric_uuid = ? "
                "AND fingerprint = ? ORDER BY day",
                (int(team_id), int(experiment_id), metric_uuid, fingerprint),
            ).fetchall()
        return [
            DayResult(r["day"], from_db_time(r["query_to"]), r["status"],  # type: ignore[arg-type]
                      None if r["result"] is None else json.loads(r["result"]), r["error"],
                      from_db_time(r["created_at"]), from_db_time(r["updated_at"]))  # type: ignore[arg-type]
            for r in found
        ]  # fmt: skip
