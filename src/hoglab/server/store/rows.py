"""The SQL every table of a project's objects shares: read one row, a page of rows, change a row's columns, delete one.

Each takes the caller's connection (``Database.read()``/``write()``), so that it joins the caller's checks in one
transaction. A row is the project's only when its ``team_id`` matches: another project's id reads as missing.
Table and column names come from the repositories' code, never from a request.

>>> with db.write() as conn:  # doctest: +SKIP
...     row = update_team_row(conn, "experiment_holdouts", project.id, 7, {"name": "Q4"})
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from .db import to_db_time, utcnow

__all__ = ["delete_team_row", "team_page", "team_row", "update_team_row"]


def team_row(conn: sqlite3.Connection, table: str, team_id: int, row_id: int) -> sqlite3.Row | None:
    """The project's row ``row_id`` of ``table``, or ``None`` (also for another project's)."""
    row: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM {table} WHERE id = ? AND team_id = ?", (row_id, team_id)
    ).fetchone()
    return row


def team_page(
    conn: sqlite3.Connection,
    table: str,
    team_id: int,
    *,
    order_by: str,
    limit: int,
    offset: int,
    where: str = "",
    params: Sequence[Any] = (),
) -> tuple[int, list[sqlite3.Row]]:
    """How many rows the project has in ``table`` and one page of them in ``order_by`` order; ``where`` adds
    conditions (`` AND ...``, placeholders filled from ``params``)."""
    condition = f"team_id = ?{where}"
    total = conn.execute(f"SELECT count(*) FROM {table} WHERE {condition}", (team_id, *params)).fetchone()
    rows = conn.execute(
        f"SELECT * FROM {table} WHERE {condition} ORDER BY {order_by} LIMIT ? OFFSET ?",
        (team_id, *params, limit, offset),
    ).fetchall()
    return int(total[0]), rows


def update_team_row(
    conn: sqlite3.Connection, table: str, team_id: int, row_id: int, values: Mapping[str, Any]
) -> sqlite3.Row | None:
    """Set ``values`` (column: value as stored) and ``updated_at`` to now; the row as it is after, or ``None``
    when the project has no such row."""
    assigned = {**values, "updated_at": to_db_time(utcnow())}
    assignments = ", ".join(f"{column} = ?" for column in assigned)
    conn.execute(
        f"UPDATE {table} SET {assignments} WHERE id = ? AND team_id = ?", (*assigned.values(), row_id, team_id)
    )
    return team_row(conn, table, team_id, row_id)


def delete_team_row(conn: sqlite3.Connection, table: str, team_id: int, row_id: int) -> sqlite3.Row | None:
    """Delete the project's row ``row_id``; the row as it was, or ``None`` when there was none."""
    row = team_row(conn, table, team_id, row_id)
    if row is not None:
        conn.execute(f"DELETE FROM {table} WHERE id = ?", (row_id,))
    return row
