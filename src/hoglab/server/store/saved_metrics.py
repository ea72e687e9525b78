"""Saved (shared) experiment metrics (PostHog's ``ExperimentSavedMetric``) and their links to experiments
(``ExperimentToSavedMetric``).

A saved metric's name is unique in its project whatever its case: :meth:`SavedMetricRepository.create` and
:meth:`~SavedMetricRepository.update` raise :class:`DuplicateSavedMetricName` on a clash. Deleting a saved metric
or an experiment deletes their links (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hoglab.errors import HoglabError

from .db import Database, from_db_time, to_db_time, utcnow
from .records import Page, SavedMetricLinkRecord, SavedMetricRecord, dump_json, load_json
from .rows import delete_team_row, team_page, team_row, update_team_row

__all__ = ["DuplicateSavedMetricName", "SavedMetricRepository"]


class DuplicateSavedMetricName(HoglabError):
    """Another saved metric of the project has this name (compared without case)."""


def _link(row: sqlite3.Row, metric: SavedMetricRecord) -> SavedMetricLinkRecord:
    when = from_db_time(row["link_created_at"])
    assert when is not None
    return SavedMetricLinkRecord(row["link_id"], row["experiment_id"], metric, load_json(row["metadata"]), when)


class SavedMetricRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _name_taken(self, conn: sqlite3.Connection, team_id: int, name: str, other_than: int | None) -> bool:
        # SQLite's lower() folds ASCII only; PostHog compares with Postgres' case-insensitive match, so compare
        # case-folded names here (the unique index stays as the ASCII backstop against races).
        rows = conn.execute("SELECT id, name FROM experiment_saved_metrics WHERE team_id = ?", (team_id,)).fetchall()
        wanted = name.casefold()
        return any(row["name"].casefold() == wanted and row["id"] != other_than for row in rows)

    def create(
        self,
        team_id: int,
        *,
        name: str,
        query: Mapping[str, Any],
        description: str | None = None,
        tags: Sequence[Any] = (),
        created_by_id: int | None = None,
    ) -> SavedMetricRecord:
        """A new saved metric (``DuplicateSavedMetricName`` when the project has one of this name)."""
        now = to_db_time(utcnow())
        try:
            with self._db.write() as conn:
                if self._name_taken(conn, team_id, name, None):
                    raise DuplicateSavedMetricName(name)
                cursor = conn.execute(
                    "INSERT INTO experiment_saved_metrics (team_id, name, description, query, tags, created_by_id,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (team_id, name, description, dump_json(dict(query)), dump_json(list(tags)), created_by_id, now,
                     now),
                )  # fmt: skip
                row = conn.execute(
                    "SELECT * FROM experiment_saved_metrics WHERE id = ?", (cursor.lastrowid,)
                ).fetchone()
        except sqlite3.IntegrityError as exc:
            raise DuplicateSavedMetricName(name) from exc
        return SavedMetricRecord.from_row(row)

    def get(self, team_id: int, saved_metric_id: int) -> SavedMetricRecord | None:
        """The project's saved metric, or ``None`` (also for another project's)."""
        with self._db.read() as conn:
            row = team_row(conn, "experiment_saved_metrics", team_id, saved_metric_id)
        return None if row is None else SavedMetricRecord.from_row(row)

    def get_many(self, team_id: int, ids: Iterable[int]) -> dict[int, SavedMetricRecord]:
        """The project's saved metrics among ``ids``, by id (others' and unknown ids are left out)."""
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT * FROM experiment_saved_metrics WHERE team_id = ? AND id IN ({','.join('?' * len(wanted))})",
                (team_id, *wanted),
            ).fetchall()
        return {row["id"]: SavedMetricRecord.from_row(row) for row in rows}

    def update(self, team_id: int, saved_metric_id: int, **fields: Any) -> SavedMetricRecord | None:
        """Change some of ``name, description, query, tags``; ``None`` if there is no such saved metric."""
        unknown = set(fields) - {"name", "description", "query", "tags"}
        if unknown:
            raise ValueError(f"cannot update saved metric fields {sorted(unknown)}")
        values: dict[str, Any] = {}
        for column, value in fields.items():
            values[column] = dump_json(value) if column in ("query", "tags") else value
        try:
            with self._db.write() as conn:
                if "name" in fields and self._name_taken(conn, team_id, str(fields["name"]), saved_metric_id):
                    raise DuplicateSavedMetricName(str(fields["name"]))
                row = update_team_row(conn, "experiment_saved_metrics", team_id, saved_metric_id, values)
        except sqlite3.IntegrityError as exc:
            raise DuplicateSavedMetricName(str(fields.get("name"))) from exc
        return None if row is None else SavedMetricRecord.from_row(row)

    def delete(self, team_id: int, saved_metric_id: int) -> SavedMetricRecord | None:
        """Remove the saved metric and its links to experiments; what was removed, or ``None``."""
        with self._db.write() as conn:
            row = delete_team_row(conn, "experiment_saved_metrics", team_id, saved_metric_id)
        return None if row is None else SavedMetricRecord.from_row(row)

    # -- links to experiments -----------------------------------------------------------------------------------

    def links(self, experiment_ids: Iterable[int]) -> dict[int, list[SavedMetricLinkRecord]]:
        """Each experiment's links, in the order they were made (experiments without any are left out)."""
        wanted = sorted({int(i) for i in experiment_ids})
        if not wanted:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT m.*, l.id AS link_id, l.experiment_id AS experiment_id, l.metadata AS metadata,"
                " l.created_at AS link_created_at FROM experiment_saved_metric_links AS l"
                " JOIN experiment_saved_metrics AS m ON m.id = l.saved_metric_id"
                f" WHERE l.experiment_id IN ({','.join('?' * len(wanted))}) ORDER BY l.id",
                wanted,
            ).fetchall()
        found: dict[int, list[SavedMetricLinkRecord]] = {}
        for row in rows:
            found.setdefault(int(row["experiment_id"]), []).append(_link(row, SavedMetricRecord.from_row(row)))
        return found

    def link(self, experiment_id: int, saved_metric_id: int, metadata: Mapping[str, Any] | None) -> None:
        """Link a saved metric to an experiment."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO experiment_saved_metric_links (experiment_id, saved_metric_id, metadata, created_at)"
                " VALUES (?, ?, ?, ?)",
                (experiment_id, saved_metric_id, dump_json(None if metadata is None else dict(metadata)),
                 to_db_time(utcnow())),
            )  # fmt: skip

    def set_link_metadata(self, link_id: int, metadata: Mapping[str, Any] | None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE experiment_saved_metric_links SET metadata = ? WHERE id = ?",
                (dump_json(None if metadata is None else dict(metadata)), link_id),
            )

    def unlink(self, link_ids: Iterable[int]) -> None:
        ids = sorted({int(i) for i in link_ids})
        if not ids:
            return
        with self._db.write() as conn:
            conn.execute(f"DELETE FROM experiment_saved_metric_links WHERE id IN ({','.join('?' * len(ids))})", ids)

    def list(self, team_id: int, *, limit: int = 100, offset: int = 0) -> Page[SavedMetricRecord]:
        """A page of the project's saved metrics by name, case ignored (PostHog's ``Lower("name")``)."""
        with self._db.read() as conn:
            total, rows = team_page(conn, "experiment_saved_metrics", team_id, order_by="lower(name), id",
                                    limit=limit, offset=offset)  # fmt: skip
        return Page(total, [SavedMetricRecord.from_row(row) for row in rows])
