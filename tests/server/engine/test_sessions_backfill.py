"""An old data dir (events, no sessions table) gains its sessions once when the engine opens it again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chdb
import pytest

from hoglab.server.engine.ddl import TABLES, create_statements

DATABASE = "hoglab_sessions_migration"

pytestmark = pytest.mark.xdist_group("hogql_chdb")


@pytest.fixture
def conn(chdb_dir: Path) -> Iterator[Any]:
    chdb_dir.mkdir(parents=True, exist_ok=True)
    connection = chdb.connect(str(chdb_dir))
    connection.query(f"DROP DATABASE IF EXISTS {DATABASE}")
    yield connection
    connection.query(f"DROP DATABASE IF EXISTS {DATABASE}")
    connection.close()


def _insert_events(conn: Any, rows: list[tuple[str, str, str]]) -> None:
    values = ", ".join(
        f"(1, generateUUIDv4(), '{event}', 'd', generateUUIDv4(), '{ts}', '{json.dumps({'$session_id': sid})}', '', "
        f"'{ts}')"
        for event, sid, ts in rows
    )
    conn.query(
        f"INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties, "
        f"elements_chain, created_at) VALUES {values}"
    )


def _sessions(conn: Any) -> list[list[Any]]:
    sql = (
        f"SELECT session_id, toInt64(sum(pageview_count)), toInt64(sum(event_count)) FROM {DATABASE}.sessions "
        "GROUP BY session_id ORDER BY session_id"
    )
    rows: list[list[Any]] = json.loads(conn.query(sql, "JSONCompact").data())["data"]
    return [[sid, int(p), int(n)] for sid, p, n in rows]


def test_old_events_are_backfilled_once(conn: Any) -> None:
    # the data dir as an older hoglab left it: the events table only (and before groups: no $group_N columns)
    conn.query(f"CREATE DATABASE {DATABASE}")
    conn.query(" ".join(re.sub(r",\s*\{group_columns\}", "", TABLES["events"]).split()).format(db=DATABASE))
    _insert_events(conn, [("$pageview", "a", "2025-01-01 10:00:00"), ("$pageview", "a", "2025-01-01 10:01:00"),
                          ("click", "b", "2025-01-01 11:00:00"), ("$pageview", "", "2025-01-01 12:00:00")])  # fmt: skip
    for statement in create_statements(DATABASE):
        conn.query(statement)
    assert _sessions(conn) == [["a", 2, 2], ["b", 0, 1]]
    # opening again does not count the old events twice; new events arrive through the materialized view
    for statement in create_statements(DATABASE):
        conn.query(statement)
    _insert_events(conn, [("$pageview", "b", "2025-01-01 11:05:00")])
    for statement in create_statements(DATABASE):
        conn.query(statement)
    assert _sessions(conn) == [["a", 2, 2], ["b", 1, 2]]
