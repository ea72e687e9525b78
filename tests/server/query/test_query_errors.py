"""A user's mistake is a 400 (never a 500) that says what and where; time and memory limits are clear errors;
engine messages show no internals; one project never sees another's rows."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from querytesting import MARKER, SLOW_HOGQL, Seeded, new_project


def test_compiler_refusals_say_where(seeded: Seeded) -> None:
    hogql = "select event from file('/etc/passwd')"
    response = seeded.a.query(hogql)
    assert response.status_code == 400
    body = response.json()
    assert (body["type"], body["code"], body["attr"]) == ("validation_error", "invalid_input", None)
    assert body["detail"].startswith("Table function 'file' is not allowed")
    assert hogql[body["start"] : body["end"]].startswith("file(")
    assert (body["line"], body["column"]) == (1, hogql.index("file") + 1)


def test_unknown_field_position_on_a_later_line(seeded: Seeded) -> None:
    hogql = "select event,\n  nope\nfrom events"
    body = seeded.a.query(hogql).json()
    assert "nope" in body["detail"] and (body["line"], body["column"]) == (2, 3)
    assert hogql[body["start"] : body["end"]] == "nope"


@pytest.mark.parametrize(
    "hogql",
    [
        "select from where",
        "select 1; select 2",
        "insert into events values (1)",
        "select * from system.tables",
        "select team_id from events",
        "select 1 settings readonly=0",
        "select sleep(3)",
        "select toDate('nope')",
        "select event + 1 from events",
        "select arrayJoin(range(1000000000))",
        "select 1 limit -5",
        "select 'a' + 1",
        "select count() from numbers(100000000)",
        "select * from events as e join persons as p on e.nope = p.id",
        "select properties.$browser.x.y from events where timestamp > 'garbage'",
    ],
)
def test_user_mistakes_are_400_never_500(seeded: Seeded, hogql: str) -> None:
    response = seeded.a.query(hogql)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "validation_error" and body["detail"]


def test_engine_messages_do_not_show_the_compiled_statement(seeded: Seeded) -> None:
    body = seeded.a.query("select event + 1 from events").json()
    assert body["code"] == "illegal_type_of_argument"
    assert body["detail"].startswith("Illegal types") and body["detail"].endswith("of arguments of function plus.")
    for internal in ("__hq", "hoglab.", "team_id", "In scope", str(seeded.a.id) + ")"):
        assert internal not in body["detail"]


def test_timeout_is_a_504_with_a_clear_message(tight) -> None:
    project = new_project(tight, "timeouts")
    try:
        started = time.monotonic()
        response = project.query(SLOW_HOGQL)
        assert time.monotonic() - started < 10
        assert response.status_code == 504
        body = response.json()
        assert (body["type"], body["code"]) == ("server_error", "query_timeout")
        assert "max execution time" in body["detail"]
    finally:
        project.close()


def test_async_timeout_is_a_failed_status_with_its_message(tight) -> None:
    project = new_project(tight, "async timeouts")
    try:
        status = project.query(SLOW_HOGQL, refresh="force_async").json()["query_status"]
        done = project.wait(status["id"])
        assert done.status_code == 400
        failed = done.json()["query_status"]
        assert failed["complete"] is True and failed["error"] is True
        assert "max execution time" in failed["error_message"] and failed["results"] is None
    finally:
        project.close()


def test_memory_limit_is_a_400_naming_the_limit(tight) -> None:
    project = new_project(tight, "memory")
    try:
        response = project.query("select groupArray(number) from numbers(10000000)")
        assert response.status_code == 400
        body = response.json()
        assert body["code"] == "memory_limit_exceeded" and "max memory limit" in body["detail"]
    finally:
        project.close()


ISOLATION_QUERIES = [
    "select * from events",
    "select properties from events order by timestamp desc limit 10000",
    "select distinct_id, person.properties from events limit 10000",
    "select * from persons limit 10000",
    "select * from person_distinct_ids limit 10000",
    "select e.properties from events e full outer join events f on e.uuid = f.uuid limit 10000",
    "select count() from events where properties like '%" + MARKER + "%'",
]


@pytest.mark.parametrize("hogql", ISOLATION_QUERIES)
def test_another_projects_rows_never_appear(seeded: Seeded, hogql: str) -> None:
    response = seeded.a.query(hogql, refresh="force_blocking")
    assert response.status_code == 200, response.text
    assert MARKER not in json.dumps(response.json()["results"])
    theirs = seeded.b.query(hogql, refresh="force_blocking")
    assert theirs.status_code == 200
    if "count()" in hogql:
        assert response.json()["results"] == [[0]] and theirs.json()["results"] == [[len(seeded.b_frame)]]


def test_a_key_for_one_project_cannot_query_another(seeded: Seeded) -> None:
    body = {"query": {"kind": "HogQLQuery", "query": "select count() from events"}}
    denied = seeded.a.http.post(seeded.b.path(), json=body)
    assert denied.status_code == 403
    assert denied.json()["detail"] == f"API key does not have access to the requested project: ID {seeded.b.id}."
    anonymous = httpx.post(f"{seeded.a.service.url}{seeded.a.path()}", json=body)
    assert anonymous.status_code == 401
