"""Materialized person properties: a plan that reads ``pmat_<key>`` through the persons view answers exactly what
the plan that extracts the key from the newest version's JSON answers (values, NULLs, JSON nulls, missing keys,
numbers, empty strings, nested values as text), through ``/query`` over HTTP, for HogQL and for a TrendsQuery with
a person property filter and breakdown."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.engine import materialized

from .property_plans import MISSING, answers, comparisons, trend, values

KEY = "hyp_person_prop"
OTHER = "hyp person other"  # not a plain name: the column gets a hashed name
START = datetime(2025, 3, 1, tzinfo=UTC)
# A person: its versions, oldest first (the newest is what every query reads), each (KEY value, OTHER value).
persons = st.lists(st.tuples(values, values), min_size=1, max_size=3)

HOGQL = [
    *comparisons("person.properties", KEY),
    f"select person.properties['{OTHER}'] as o, count() as c from events group by o order by o nulls first",
    f"select id, properties.{KEY} as v, toFloat(properties.{KEY}) as f, length(properties.{KEY}) as n "
    f"from persons order by id",
    f"select properties.{KEY} as v, properties['{OTHER}'] as o, count() as c from persons group by v, o "
    f"order by v nulls first, o nulls first",
    f"select distinct_id, person.properties.{KEY} as v from person_distinct_ids order by distinct_id",
]


def _trend(value: str) -> dict[str, Any]:
    return trend(value, KEY, "person")


@pytest.fixture(scope="module")
def columns(hoglab_service: Any) -> dict[str, str]:
    return materialized.materialize(hoglab_service.state.engine, [KEY, OTHER], "persons")


def _write(
    engine: Any, team: int, people: list[list[tuple[Any, Any]]], orphans: int = 1, keys: tuple[str, str] = (KEY, OTHER)
) -> list[str]:
    """Persons (one row per version, the values of ``keys``) and two events each, plus events of a person id no
    persons row has."""
    ids = [str(uuid.UUID(int=team * 1000 + i)) for i in range(len(people))]
    rows: dict[str, list[Any]] = {k: [] for k in ("id", "properties", "version")}
    for person_id, versions in zip(ids, people, strict=True):
        for version, (value, other) in enumerate(versions, start=1):
            props = {name: v for name, v in zip(keys, (value, other), strict=True) if v is not MISSING}
            rows["id"].append(person_id)
            rows["properties"].append(json.dumps(props))
            rows["version"].append(version)
    n = len(rows["id"])
    created = pa.array([START] * n, pa.timestamp("us", tz="UTC"))
    engine.insert_arrow("persons", pa.table({
        "team_id": pa.array([team] * n, pa.int64()), "id": rows["id"], "created_at": created,
        "properties": rows["properties"], "is_identified": pa.array([1] * n, pa.uint8()),
        "is_deleted": pa.array([0] * n, pa.uint8()), "version": pa.array(rows["version"], pa.uint64()),
    }))  # fmt: skip
    event_people = [p for p in ids for _ in range(2)] + [str(uuid.uuid4()) for _ in range(orphans)]
    m = len(event_people)
    engine.insert_arrow("person_distinct_ids", pa.table({
        "team_id": pa.array([team] * m, pa.int64()), "distinct_id": [f"d{i}" for i in range(m)],
        "person_id": event_people, "is_deleted": pa.array([0] * m, pa.uint8()),
        "version": pa.array([1] * m, pa.uint64()),
    }))  # fmt: skip
    ts = pa.array([START + timedelta(hours=i) for i in range(m)], pa.timestamp("us", tz="UTC"))
    engine.insert_arrow("events", pa.table({
        "team_id": pa.array([team] * m, pa.int64()), "uuid": [str(uuid.uuid4()) for _ in range(m)],
        "event": ["e"] * m, "distinct_id": [f"d{i}" for i in range(m)], "person_id": event_people,
        "timestamp": ts, "properties": ["{}"] * m, "elements_chain": [""] * m, "created_at": ts,
    }))  # fmt: skip
    return ids


def _both_plans(project: Any, bodies: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    post = lambda body: project.http.post(f"/api/projects/{project.id}/query/", json=body)  # noqa: E731
    fast = answers(post, bodies)
    with materialized.suspended():
        slow = answers(post, bodies)
    return fast, slow


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(persons, min_size=1, max_size=6), st.sampled_from(["Chrome", "", "1"]))
def test_materialized_and_extracted_person_plans_answer_the_same(
    make_project: Callable[..., Any], columns: dict[str, str], hoglab_service: Any, people: list[Any], not_value: str
) -> None:
    project = make_project(scopes=["query:read"])
    _write(hoglab_service.state.engine, project.id, people)
    bodies = [{"kind": "HogQLQuery", "query": q} for q in HOGQL] + [_trend(not_value)]
    fast, slow = _both_plans(project, bodies)
    for hogql, a, b in zip([*HOGQL, "trend"], fast, slow, strict=True):
        assert (a["results"], a["columns"], a["types"]) == (b["results"], b["columns"], b["types"]), hogql
    # the plans did differ: one read the columns, the other the JSON
    for i in (0, 9, 11):
        assert f"`{columns[KEY]}`" in fast[i]["clickhouse"] and columns[KEY] not in slow[i]["clickhouse"], i
    assert f"`{columns[OTHER]}`" in fast[8]["clickhouse"]
    # and what they answered is the newest version's value: strings as they are, NULL for a missing key, a JSON
    # null, and for the events of a person id with no persons row
    newest = [versions[-1][0] for versions in people]
    seen = {r[0] for r in fast[0]["results"]}
    assert {v for v in newest if isinstance(v, str)} <= seen
    assert None in seen  # the orphan events
    persons_seen = [r[1] for r in fast[9]["results"]]
    assert len(persons_seen) == len(people)
    assert (None in persons_seen) == any(v is MISSING or v is None for v in newest)
    assert sum(r[1] for r in fast[0]["results"]) == 2 * len(people) + 1


def test_a_newest_version_without_the_key_reads_null_not_an_older_value(
    make_project: Callable[..., Any], columns: dict[str, str], hoglab_service: Any
) -> None:
    """argMax(column, version) skips NULLs and would answer 'old'; the view carries the column as a tuple."""
    project = make_project(scopes=["query:read"])
    people = [[("old", MISSING), (MISSING, "x")], [("old", None), (None, None)], [(MISSING, 1), ("new", 2)]]
    _write(hoglab_service.state.engine, project.id, people, orphans=0)
    queries = [
        f"select properties.{KEY} as v from persons order by id",
        f"select person.properties.{KEY} as v, count() as c from events group by v order by v nulls first",
    ]
    fast, slow = _both_plans(project, [{"kind": "HogQLQuery", "query": q} for q in queries])
    assert fast[0]["results"] == slow[0]["results"] == [[None], [None], ["new"]]
    assert fast[1]["results"] == slow[1]["results"] == [[None, 4], ["new", 2]]
    assert columns[KEY] in fast[0]["clickhouse"] and columns[KEY] in fast[1]["clickhouse"]
    # the trend's filter and breakdown go through the same lookup (its answer carries HogQL, not the SQL)
    materialized.take_usage("persons")
    trend_fast, trend_slow = _both_plans(project, [_trend("new")])
    assert materialized.take_usage("persons")[(project.id, KEY)] >= 2
    assert trend_fast[0]["results"] == trend_slow[0]["results"]
    assert [r["breakdown_value"] for r in trend_fast[0]["results"]] == ["$$_posthog_breakdown_null_$$"]
    assert [r["count"] for r in trend_fast[0]["results"]] == [4]


def test_person_columns_are_found_again_and_their_fill_is_reported(
    hoglab_service: Any, columns: dict[str, str]
) -> None:
    engine = hoglab_service.state.engine
    assert columns[KEY] == f"pmat_{KEY}" and columns[OTHER].startswith("pmat_hyp_person_other_")
    assert materialized.refresh(engine, "persons").items() >= columns.items()
    assert KEY not in materialized.refresh(engine)  # an event key of that name is not materialized
    assert materialized.materialize(engine, [KEY], "persons") == {KEY: columns[KEY]}  # asked again: nothing new
    statuses = {(s.table, s.key): s for s in materialized.fill_status(engine)}
    assert statuses["persons", KEY].column == columns[KEY]
    described = engine.execute("DESCRIBE TABLE hoglab.persons").to_pylist()
    mine = next(c for c in described if c["name"] == columns[KEY])
    assert mine["type"] == materialized.COLUMN_TYPE and mine["default_type"] == "MATERIALIZED"
    assert mine["comment"] == f"hoglab:person_properties:{KEY}"
    with pytest.raises(ValueError, match="events and persons"):
        materialized.materialize(engine, [KEY], "sessions")


def test_hot_person_properties_are_materialized_automatically(make_project: Any, hoglab_service: Any) -> None:
    """Person keys queries read at least ``min_uses`` times become ``pmat_`` columns at the job's next round,
    counted apart from event keys of the same name; the answers stay the same."""
    from hoglab.server.engine.autoprops import AutoMaterializer

    engine = hoglab_service.state.engine
    project = make_project(scopes=["query:read"])
    people = [[({"a": 1}, MISSING)], [("x", 2)], [(MISSING, MISSING)]]
    _write(engine, project.id, people, orphans=0, keys=("auto_person_hot", "auto_person_cold"))

    def ask(hogql: str) -> Any:
        body = {"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_blocking"}
        return project.http.post(f"/api/projects/{project.id}/query/", json=body).json()

    job = AutoMaterializer(engine, interval=3600, min_uses=3, max_columns=1000)
    job.record("events"), job.record("persons")  # what earlier tests counted is not this test's business
    for n in range(3):  # three different statements: each is compiled, so each counts
        ask(f"select count() from events where person.properties.auto_person_hot = 'x' and {n} = {n}")
    before = ask("select person.properties.auto_person_hot as h, count() as c from events group by h order by h")
    ask("select properties.auto_person_cold from persons")
    ask("select properties.auto_person_hot from events")  # an event key of the same name: counted apart
    version = engine.write_count
    assert job.record("persons")[project.id]["auto_person_hot"] >= 4
    assert engine.write_count == version  # counting uses is bookkeeping: every cached answer stays valid
    made = job.run_once()
    assert "auto_person_hot" in made["persons"] and "auto_person_hot" not in made["events"]
    columns = materialized.materialized_columns(table="persons")
    assert "auto_person_hot" in columns and "auto_person_cold" not in columns
    assert "auto_person_hot" not in materialized.materialized_columns()
    uses = {r["key"]: r["uses"] for r in engine.execute(
        "SELECT key, sum(uses) AS uses FROM hoglab.person_property_usage_by_project "
        f"WHERE team_id = {project.id} GROUP BY key").to_pylist()}  # fmt: skip
    assert uses["auto_person_hot"] >= 4 and uses["auto_person_cold"] >= 1
    after = ask("select person.properties.auto_person_hot as h, count() as c from events group by h order by h")
    assert f"`{columns['auto_person_hot']}`" in after["clickhouse"]
    assert after["results"] == before["results"] == [["x", 2], ['{"a":1}', 2], [None, 2]]
