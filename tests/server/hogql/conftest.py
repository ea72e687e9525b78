"""A real chDB holding two projects (see world.py), and helpers to compile HogQL and run it there."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chdb
import pytest

from hoglab.server.engine.ddl import create_statements
from hoglab.server.filters.hogql_filters import filters_expansion
from hoglab.server.hogql import PERSON_OVERRIDES_DDL, REQUIRED_SETTINGS, CompiledQuery, compile_hogql

from .world import TEAM, World, build_world

DATABASE = "hoglab_hogql_tests"
# What the service runs queries with (issue 4), plus the compiler's own requirement.
RUN_SETTINGS = {"readonly": 2, "max_execution_time": 30, **REQUIRED_SETTINGS}

pytestmark = pytest.mark.xdist_group("hogql_chdb")


class Runner:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def raw(self, sql: str) -> dict[str, Any]:
        settings = ", ".join(f"{k} = {v}" for k, v in RUN_SETTINGS.items())
        result: dict[str, Any] = json.loads(self.conn.query(f"{sql} SETTINGS {settings}", "JSONCompact").data())
        return result

    def rows(self, sql: str) -> list[list[Any]]:
        data: list[list[Any]] = self.raw(sql)["data"]
        return data

    def compile(self, hogql: str, **kwargs: Any) -> CompiledQuery:
        kwargs.setdefault("team_id", TEAM)
        kwargs.setdefault("database", DATABASE)
        # filters as the query service hands them over: the one translator's condition, asked for when used
        kwargs["filters"] = filters_expansion(kwargs.get("filters"), timezone=kwargs.get("timezone", "UTC"))
        return compile_hogql(hogql, **kwargs)

    def query(self, hogql: str, **kwargs: Any) -> list[list[Any]]:
        return self.rows(self.compile(hogql, **kwargs).sql)


def _insert(conn: Any, table: str, rows: list[dict[str, Any]]) -> None:
    lines = "\n".join(json.dumps(r) for r in rows)
    conn.query(f"INSERT INTO {DATABASE}.{table} FORMAT JSONEachRow\n{lines}")


@pytest.fixture(scope="session")
def world() -> World:
    return build_world()


@pytest.fixture(scope="session")
def ch(chdb_dir: Path, world: World) -> Iterator[Runner]:
    # The process's one chDB path (tests/conftest.py); this suite keeps to its own database in it.
    chdb_dir.mkdir(parents=True, exist_ok=True)
    conn = chdb.connect(str(chdb_dir))
    for statement in create_statements(DATABASE):
        conn.query(statement)
    conn.query(" ".join(PERSON_OVERRIDES_DDL.split()).format(db=DATABASE))
    _insert(conn, "events", world.events)
    _insert(conn, "persons", world.persons)
    _insert(conn, "person_distinct_ids", world.pdi)
    _insert(conn, "cohort_people", world.cohorts)
    _insert(conn, "person_overrides", world.overrides)
    _insert(conn, "ingestion_warnings", world.warnings)
    yield Runner(conn)
    conn.close()


@pytest.fixture
def q(ch: Runner) -> Callable[..., list[list[Any]]]:
    return ch.query
