"""The engine's catalog: what the compiler is told of the materialized properties. A property materialized while
the service runs is read from its column by the next compile of the very same statement (the compile cache is
keyed on the catalog's version), over HTTP and through a RunContext, with the same answer."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.server.engine import materialized
from hoglab.server.engine.ddl import DATABASE
from hoglab.server.ingest import Ingestor
from hoglab.server.query.catalog import ENGINE_CATALOG
from hoglab.server.query.runners import RunContext

START = datetime(2025, 3, 1, tzinfo=UTC)


def test_the_catalog_answers_from_the_registry(hoglab_service: Any) -> None:
    key = f"cat_{uuid.uuid4().hex[:8]}"
    before = ENGINE_CATALOG.version()
    assert ENGINE_CATALOG.column(key, DATABASE, "persons") is None
    made = materialized.materialize(hoglab_service.state.engine, [key], "persons")
    assert ENGINE_CATALOG.version() != before
    assert ENGINE_CATALOG.column(key, DATABASE, "persons") == made[key]
    assert ENGINE_CATALOG.columns(DATABASE, "persons")[key] == made[key]
    assert key not in ENGINE_CATALOG.columns(DATABASE, "events")
    with materialized.suspended():  # the plan a materialized one is checked against: nothing materialized
        assert ENGINE_CATALOG.column(key, DATABASE, "persons") is None
        assert ENGINE_CATALOG.columns(DATABASE, "persons") == {}


@pytest.mark.parametrize("path", ["http", "context"])
def test_a_property_materialized_mid_run_is_read_by_the_next_compile(
    make_project: Any, hoglab_service: Any, path: str
) -> None:
    engine = hoglab_service.state.engine
    project = make_project(scopes=["query:read"])
    key = f"mid_run_{path}"
    batch = [{"event": "e", "distinct_id": f"d{i}", "properties": {key: ["a", "b", None][i % 3]},
              "timestamp": (START + timedelta(minutes=i)).isoformat()} for i in range(9)]  # fmt: skip
    Ingestor.for_engine(engine).capture_batch(project.id, batch)
    hogql = f"select properties.{key} as v, count() as c from events group by v order by v nulls first"

    def ask() -> tuple[str, list[Any]]:
        if path == "http":
            body = {"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_blocking"}
            answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
            return answer["clickhouse"], answer["results"]
        ctx = RunContext(project=project.record, engine=engine, now=datetime.now(UTC), tag=f"catalog-{uuid.uuid4()}")
        compiled = ctx.compile(hogql)
        return compiled.sql, [list(row.values()) for row in ctx.execute(compiled).to_pylist()]

    column = f"`{materialized.column_name(key)}`"
    sql, before = ask()
    assert column not in sql and ask()[0] == sql  # compiled once, then from the cache
    assert materialized.materialize(engine, [key])[key] in column
    sql, after = ask()
    assert column in sql
    assert after == before == [[None, 3], ["a", 3], ["b", 3]]  # what was captured, three of each
