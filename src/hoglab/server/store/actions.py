"""Actions: definitions only (which events an action selects is decided when a query runs, by the engine).

An action is written with its steps already checked (``server/filters/actions.py``); removing one marks it
``deleted``, which hides it from the listing only: queries naming it by id still run, as PostHog's do. Every
write gives the action the project's next ``revision``, so :meth:`ActionRepository.revision` (one index read) says
whether the project's actions changed since they were last read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .db import Database, StoreError, to_db_time, utcnow
from .records import ActionRecord, dump_json
from .rows import team_row

__all__ = ["ActionRepository", "DuplicateActionName"]

_COLUMNS = ("name", "description", "tags", "post_to_slack", "slack_message_format", "steps", "deleted",
            "bytecode_error", "pinned_at")  # fmt: skip
_JSON = frozenset({"tags", "steps"})


class DuplicateActionName(StoreError):
    """Another live action of the project has this name (``other_id``)."""

    def __init__(self, name: str, other_id: int) -> None:
        super().__init__(f"an action named {name!r} exists: {other_id}")
        self.name = name
        self.other_id = other_id


def _value(column: str, value: Any) -> Any:
    if column in _JSON:
        return dump_json(list(value or []))
    if column in ("post_to_slack", "deleted"):
        return int(bool(value))
    if column == "pinned_at":
        return None if value is None else to_db_time(value)
    return value


class ActionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, team_id: int, fields: Mapping[str, Any], *, created_by_id: int | None = None) -> ActionRecord:
        """A new action from the given columns (``name``, ``steps``, ...); ``DuplicateActionName`` when a live
        action of the project has the name.

        >>> store.actions.create(project.id, {"name": "Signed up", "steps": [{"event": "signed_up"}]})
        ... # doctest: +SKIP
        """
        unknown = set(fields) - set(_COLUMNS)
        if unknown:
            raise ValueError(f"unknown action columns: {sorted(unknown)}")
        now = to_db_time(utcnow())
        columns = [c for c in _COLUMNS if c in fields]
        with self._db.write() as conn:
            self._check_name(conn, team_id, fields.get("name"), None, bool(fields.get("deleted")))
            # Every column named once, so an action given no fields at all (PostHog allows it) is a valid INSERT.
            names = ["team_id", *columns, "created_by_id", "created_at", "updated_at", "last_calculated_at", "revision"]
            values = (team_id, *(_value(c, fields[c]) for c in columns), created_by_id, now, now, now,
                      self._next_revision(conn, team_id))  # fmt: skip
            cursor = conn.execute(
                f"INSERT INTO actions ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})", values
            )
            row = conn.execute("SELECT * FROM actions WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return ActionRecord.from_row(row)

    def get(self, team_id: int, action_id: int) -> ActionRecord | None:
        """The project's action (deleted ones too); ``None`` for an unknown id or another project's action."""
        with self._db.read() as conn:
            row = team_row(conn, "actions", team_id, action_id)
        return None if row is None else ActionRecord.from_row(row)

    def list(self, team_id: int, *, include_deleted: bool = False) -> list[ActionRecord]:
        """The project's actions in PostHog's order: last calculated (created) first, then by name."""
        sql = "SELECT * FROM actions WHERE team_id = ?" + ("" if include_deleted else " AND deleted = 0")
        with self._db.read() as conn:
            rows = conn.execute(sql + " ORDER BY last_calculated_at DESC, name, id", (team_id,)).fetchall()
        return [ActionRecord.from_row(row) for row in rows]

    def update(self, team_id: int, action_id: int, changes: Mapping[str, Any]) -> ActionRecord | None:
        """Change the given columns; ``None`` when the project has no such action."""
        unknown = set(changes) - set(_COLUMNS)
        if unknown:
            raise ValueError(f"unknown action columns: {sorted(unknown)}")
        with self._db.write() as conn:
            row = team_row(conn, "actions", team_id, action_id)
            if row is None:
                return None
            current = ActionRecord.from_row(row)
            name = changes.get("name", current.name)
            deleted = bool(changes.get("deleted", current.deleted))
            if not deleted and (name != current.name or current.deleted):
                self._check_name(conn, team_id, name, action_id, deleted)
            columns = [c for c in _COLUMNS if c in changes]
            if columns:
                assignments = ", ".join(f"{c} = ?" for c in columns)
                conn.execute(
                    f"UPDATE actions SET {assignments}, updated_at = ?, revision = ? WHERE id = ?",
                    (*(_value(c, changes[c]) for c in columns), to_db_time(utcnow()),
                     self._next_revision(conn, team_id), action_id),
                )  # fmt: skip
            row = conn.execute("SELECT * FROM actions WHERE id = ?", (action_id,)).fetchone()
        return ActionRecord.from_row(row)

    def revision(self, team_id: int) -> int:
        """The project's actions version: it grows with every write to any of them (0 without actions)."""
        with self._db.read() as conn:
            row = conn.execute("SELECT max(revision) FROM actions WHERE team_id = ?", (team_id,)).fetchone()
        return int(row[0] or 0)

    @staticmethod
    def _next_revision(conn: Any, team_id: int) -> int:
        row = conn.execute("SELECT max(revision) FROM actions WHERE team_id = ?", (team_id,)).fetchone()
        return int(row[0] or 0) + 1

    def named(self, team_id: int, name: str) -> Sequence[ActionRecord]:
        """The project's live actions called ``name``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT * FROM actions WHERE team_id = ? AND name = ? AND deleted = 0 ORDER BY id", (team_id, name)
            ).fetchall()
        return [ActionRecord.from_row(row) for row in rows]

    @staticmethod
    def _check_name(conn: Any, team_id: int, name: Any, own_id: int | None, deleted: bool) -> None:
        if deleted or name is None:
            return
        row = conn.execute(
            "SELECT id FROM actions WHERE team_id = ? AND name = ? AND deleted = 0 AND id IS NOT ? LIMIT 1",
            (team_id, name, own_id),
        ).fetchone()
        if row is not None:
            raise DuplicateActionName(str(name), int(row[0]))
