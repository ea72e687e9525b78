"""Materialized properties: a plan that reads ``mat_<key>`` answers exactly what the plan that extracts the key
from the JSON answers (values, NULLs, missing keys, types), through ``/query`` over HTTP, for HogQL and for the
insight runners; the column is added and filled without stopping queries or inserts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.engine import materialized
from hoglab.server.ingest import Ingestor

from .property_plans import MISSING, answers, comparisons, trend, values

KEY = "hyp_prop"
OTHER = "hyp other key"  # not a plain name: the column gets a hashed name
START = datetime(2025, 3, 1, tzinfo=UTC)

HOGQL = [
    *comparisons("properties", KEY),
    f"select properties.{KEY} as v, toFloat(properties.{KEY}) as f, length(properties.{KEY}) as n "
    f"from events order by timestamp",
    f"select properties['{OTHER}'] as o, count() as c from events group by o order by o nulls first",
]


def _trend(value: str) -> dict[str, Any]:
    return trend(value, KEY, "event")


@pytest.fixture(scope="module")
def columns(hoglab_service: Any) -> dict[str, str]:
    engine = hoglab_service.state.engine
    return materialized.materialize(engine, [KEY, OTHER])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(values, values), min_size=1, max_size=12), st.sampled_from(["Chrome", "", "1"]))
def test_materialized_and_extracted_plans_answer_the_same(
    make_project: Callable[..., Any], columns: dict[str, str], hoglab_service: Any, props: list[Any], not_value: str
) -> None:
    project = make_project(scopes=["query:read"])
    events = []
    for i, (value, other) in enumerate(props):
        properties = {name: v for name, v in ((KEY, value), (OTHER, other)) if v is not MISSING}
        events.append({"event": "e", "distinct_id": f"d{i % 3}", "properties": properties,
                       "timestamp": (START + timedelta(hours=i)).isoformat()})  # fmt: skip
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(project.id, events)
    bodies = [{"kind": "HogQLQuery", "query": q} for q in HOGQL] + [_trend(not_value)]
    post = lambda body: project.http.post(f"/api/projects/{project.id}/query/", json=body)  # noqa: E731
    fast = answers(post, bodies)
    with materialized.suspended():
        slow = answers(post, bodies)
    for hogql, a, b in zip([*HOGQL, "trend"], fast, slow, strict=True):
        assert (a["results"], a["columns"], a["types"]) == (b["results"], b["columns"], b["types"]), hogql
    # the plans did differ: one read the columns, the other the JSON
    read = f"events.`{columns[KEY]}`"
    assert read in fast[0]["clickhouse"] and read not in slow[0]["clickhouse"]
    assert f"events.`{columns[OTHER]}`" in fast[-2]["clickhouse"]
    # and what they answered is what was captured: strings as they are, NULL for a missing key or a JSON null
    seen = {r[0] for r in fast[0]["results"]}
    assert {v for v, _ in props if isinstance(v, str)} <= seen
    assert (None in seen) == any(v is MISSING or v is None for v, _ in props)
    assert sum(r[1] for r in fast[0]["results"]) == len(props)


def test_columns_are_found_again_and_filled_in_the_background(hoglab_service: Any, columns: dict[str, str]) -> None:
    engine = hoglab_service.state.engine
    assert columns[KEY] == "mat_hyp_prop" and columns[OTHER].startswith("mat_hyp_other_key_")
    assert materialized.refresh(engine).items() >= {KEY: columns[KEY], OTHER: columns[OTHER]}.items()
    assert materialized.materialize(engine, [KEY]) == {KEY: columns[KEY]}  # asked again: nothing new
    statuses = {s.key: s for s in materialized.fill_status(engine)}
    assert statuses[KEY].column == columns[KEY]
    described = engine.execute("DESCRIBE TABLE hoglab.events").to_pylist()
    mine = next(c for c in described if c["name"] == columns[KEY])
    assert mine["type"] == materialized.COLUMN_TYPE and mine["default_type"] == "MATERIALIZED"


def test_count_by_event_reads_the_projection_and_answers_as_the_table(make_project: Any, hoglab_service: Any) -> None:
    """The service's engine has the ``p_event_day`` projection; a count by event reads it (far fewer rows than
    the events) and answers what pandas counts over the captured events."""
    project = make_project(scopes=["query:read"])
    names = ["a", "b", "b", "c", "c", "c"] * 50
    batch = [{"event": n, "distinct_id": f"d{i % 7}", "timestamp": (START + timedelta(minutes=i)).isoformat()}
             for i, n in enumerate(names)]  # fmt: skip
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(project.id, batch)
    engine = hoglab_service.state.engine
    assert engine.execute("SELECT name FROM system.projections WHERE table = 'events'").column("name").to_pylist() == [
        "p_event_day"
    ]
    body = {"query": {"kind": "HogQLQuery", "query": "select event, count() from events group by event order by event"},
            "refresh": "force_blocking"}  # fmt: skip
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert answer["results"] == [["a", 50], ["b", 100], ["c", 150]]
    plan = engine.execute(f"EXPLAIN {answer['clickhouse']}").column(0).to_pylist()
    assert any("ReadFromMergeTree (p_event_day)" in line for line in plan), plan


def test_hot_properties_are_materialized_automatically(make_project: Any, hoglab_service: Any) -> None:
    """The keys queries read at least ``min_uses`` times become columns at the job's next round; the counts are
    kept in the engine per project (``property_usage_by_project``), and the answers stay the same."""
    from hoglab.server.engine.autoprops import AutoMaterializer

    engine = hoglab_service.state.engine
    project = make_project(scopes=["query:read"])
    batch = [{"event": "e", "distinct_id": "d", "properties": {"auto_hot": "x" if i % 2 else None, "auto_cold": i},
              "timestamp": (START + timedelta(minutes=i)).isoformat()} for i in range(6)]  # fmt: skip
    Ingestor.for_engine(engine).capture_batch(project.id, batch)

    def ask(hogql: str) -> Any:
        body = {"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_blocking"}
        return project.http.post(f"/api/projects/{project.id}/query/", json=body).json()

    job = AutoMaterializer(engine, interval=3600, min_uses=3, max_columns=1000)
    job.record()  # what earlier tests counted is not this test's business
    for n in range(3):  # three different statements: each is compiled, so each counts
        ask(f"select count() from events where properties.auto_hot = 'x' and {n} = {n}")
    before = ask("select properties.auto_hot as h, count() as c from events group by h order by h")
    ask("select properties.auto_cold from events")
    version = engine.write_count
    assert job.record()[project.id]["auto_hot"] >= 4
    assert engine.write_count == version  # counting uses is bookkeeping: every cached answer stays valid
    assert "auto_hot" in job.run_once()["events"]
    columns = materialized.materialized_columns()
    assert "auto_hot" in columns and "auto_cold" not in columns
    uses = {r["key"]: r["uses"] for r in engine.execute(
        "SELECT key, sum(uses) AS uses FROM hoglab.property_usage_by_project "
        f"WHERE team_id = {project.id} GROUP BY key").to_pylist()}  # fmt: skip
    assert uses["auto_hot"] >= 4 and uses["auto_cold"] >= 1
    after = ask("select properties.auto_hot as h, count() as c from events group by h order by h")
    assert f"events.`{columns['auto_hot']}`" in after["clickhouse"]
    assert after["results"] == before["results"] == [["x", 3], [None, 3]]


def test_projections_are_added_once(hoglab_service: Any) -> None:
    from hoglab.server.engine.projections import ensure_projections

    assert ensure_projections(hoglab_service.state.engine) == []  # the service's engine has it already
