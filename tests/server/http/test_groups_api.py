"""``/groups_types/``, ``/groups/`` and ``GroupsQuery`` over HTTP: PostHog's shapes (checked against its OpenAPI
components), its errors, the scopes, and no project reading another's groups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.server.ingest import Ingestor
from posthog_openapi import CACHE_FIELDS, assert_valid

NOW = datetime.now(UTC).replace(microsecond=0)


def _identify(key: str, props: dict[str, Any], minutes: int, group_type: str = "company") -> dict[str, Any]:
    return {"event": "$groupidentify", "distinct_id": "admin",
            "timestamp": (NOW - timedelta(minutes=minutes)).isoformat(),
            "properties": {"$group_type": group_type, "$group_key": key, "$group_set": props}}  # fmt: skip


@pytest.fixture
def project(make_project):
    project = make_project()
    events = [_identify(f"c{i:03d}", {"name": f"Company {i}", "plan": "pro" if i % 2 else "free", "n": i}, 500 - i)
              for i in range(130)]  # fmt: skip
    events.append(_identify("p1", {"name": "Project one"}, 1, group_type="project"))
    Ingestor.for_engine(project.service.state.engine).capture_batch(project.id, events)
    return project


def test_group_types_list_and_metadata(project) -> None:
    base = f"/api/projects/{project.id}/groups_types/"
    types = project.http.get(base).json()
    assert [(t["group_type"], t["group_type_index"]) for t in types] == [("company", 0), ("project", 1)]
    for item in types:
        assert_valid(item, "GroupType")
    answer = project.http.patch(base + "update_metadata/", json=[
        {"group_type_index": 0, "name_singular": "Company", "name_plural": "Companies"}])
    assert answer.status_code == 200, answer.text
    assert [(t["name_singular"], t["name_plural"]) for t in answer.json()] == [("Company", "Companies"), (None, None)]
    assert project.http.get(base).json()[0]["name_plural"] == "Companies"
    missing = project.http.patch(base + "update_metadata/", json=[{"group_type_index": 3, "name_plural": "x"}])
    assert missing.status_code == 404 and missing.json()["attr"] == "0__group_type_index"
    assert project.http.patch(base + "update_metadata/", json={"group_type_index": 0}).status_code == 400
    columns = project.http.put(base + "set_default_columns/", json={"group_type_index": 1, "default_columns": ["a"]})
    assert columns.json()["default_columns"] == ["a"]
    assert project.http.delete(base + "1/").status_code == 204
    assert [t["group_type"] for t in project.http.get(base).json()] == ["company"]
    assert project.http.delete(base + "1/").status_code == 404


def test_groups_list_pages_newest_first_with_a_cursor(project) -> None:
    url = f"/api/projects/{project.id}/groups/"
    first = project.http.get(url, params={"group_type_index": 0})
    assert first.status_code == 200
    body = first.json()
    assert_valid(body, "PaginatedGroupList")
    assert "count" not in body and body["previous"] is None and len(body["results"]) == 100
    assert body["results"][0]["group_key"] == "c129"  # created last
    second = project.http.get(body["next"]).json()
    assert [g["group_key"] for g in second["results"]] == [f"c{i:03d}" for i in range(29, -1, -1)]
    assert second["next"] is None and second["previous"] is not None
    # search: the properties' text or the exact key; group_key: a part of the key.
    found = project.http.get(url, params={"group_type_index": 0, "search": "Company 12"}).json()["results"]
    assert sorted(g["group_key"] for g in found) == ["c012", *(f"c{i}" for i in range(120, 130))]
    assert [g["group_key"] for g in project.http.get(url, params={"group_type_index": 0, "search": "C007"}).json()[
        "results"]] == ["c007"]
    assert len(project.http.get(url, params={"group_type_index": 0, "group_key": "c12"}).json()["results"]) == 10
    missing = project.http.get(url)
    assert missing.status_code == 400 and missing.json()["attr"] == "group_type_index"
    assert "groups_types" in missing.json()["detail"]
    assert project.http.get(url, params={"group_type_index": 9}).status_code == 400
    assert project.http.get(url, params={"group_type_index": 0, "cursor": "nonsense"}).status_code == 404


def test_find_create_and_edit_a_group(project) -> None:
    url = f"/api/projects/{project.id}/groups/"
    found = project.http.get(url + "find/", params={"group_type_index": 0, "group_key": "c005"})
    assert found.status_code == 200
    assert_valid({k: v for k, v in found.json().items() if k != "notebook"}, "Group")
    assert found.json()["group_properties"] == {"name": "Company 5", "plan": "pro", "n": 5}
    assert project.http.get(url + "find/", params={"group_type_index": 0, "group_key": "nope"}).status_code == 404
    assert project.http.get(url + "find/", params={"group_key": "c005"}).json()["attr"] == "group_type_index"
    created = project.http.post(url, json={"group_type_index": 1, "group_key": "p2", "group_properties": {"a": 1}})
    assert created.status_code == 201, created.text
    assert_valid(created.json(), "Group")
    again = project.http.post(url, json={"group_type_index": 1, "group_key": "p2"})
    assert again.status_code == 400 and "already exists" in again.json()["detail"]
    assert project.http.post(url, json={"group_type_index": 4, "group_key": "x"}).status_code == 404
    assert project.http.post(url, json={"group_type_index": 0}).json()["attr"] == "group_key"
    where = {"group_type_index": 1, "group_key": "p2"}
    updated = project.http.post(url + "update_property/", params=where, json={"key": "b", "value": [1, 2]})
    assert updated.json()["group_properties"] == {"a": 1, "b": [1, 2]}
    assert project.http.post(url + "update_property/", params=where, json={"key": "b"}).json()["attr"] == "value"
    removed = project.http.post(url + "delete_property/", params=where, json={"$unset": "a"})
    assert removed.json()["group_properties"] == {"b": [1, 2]}
    definitions = project.http.get(url + "property_definitions/").json()
    assert {d["name"]: d["count"] for d in definitions["0"]} == {"name": 130, "n": 130, "plan": 130}
    values = project.http.get(url + "property_values/", params={"group_type_index": 0, "key": "plan"}).json()
    assert values == [{"name": "free", "count": 65}, {"name": "pro", "count": 65}]


def test_groups_query(project) -> None:
    query = {"kind": "GroupsQuery", "group_type_index": 0, "select": ["properties.plan", "created_at"],
             "properties": [{"type": "group", "key": "n", "operator": "lt", "value": 20, "group_type_index": 0}],
             "orderBy": ["group_name DESC"], "limit": 5}  # fmt: skip
    assert_valid(query, "GroupsQuery", drop=())
    answer = project.http.post(f"/api/projects/{project.id}/query/", json={"query": query})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert_valid(body, "GroupsQueryResponse", drop=(*CACHE_FIELDS, "timings", "query_status"))
    assert body["columns"] == ["group_name", "key", "properties.plan", "created_at"]
    # Names sort as text: "Company 9" > "Company 8" > ... > "Company 19" > "Company 18"...
    assert [row[1] for row in body["results"]] == ["c009", "c008", "c007", "c006", "c005"]
    assert body["hasMore"] is True and body["results"][0][2] == "pro"
    searched = project.http.post(f"/api/projects/{project.id}/query/", json={"query": {
        "kind": "GroupsQuery", "group_type_index": 0, "search": "company 12"}}).json()
    assert sorted(row[1] for row in searched["results"]) == ["c012", *(f"c{i}" for i in range(120, 130))]
    person_filter = {**query, "properties": [{"type": "person", "key": "n", "value": 1}]}
    refused = project.http.post(f"/api/projects/{project.id}/query/", json={"query": person_filter})
    assert refused.status_code == 400


def test_scopes_and_projects(project, make_project) -> None:
    key = project.new_key(["query:read"])
    blocked = project.client(key).get(f"/api/projects/{project.id}/groups_types/")
    assert blocked.status_code == 403 and "group:read" in blocked.json()["detail"]
    reader = project.client(project.new_key(["group:read"]))
    assert reader.get(f"/api/projects/{project.id}/groups_types/").status_code == 200
    assert reader.patch(f"/api/projects/{project.id}/groups_types/update_metadata/", json=[]).status_code == 403
    other = make_project()
    # Another project: no access to this one's groups, and its own lists are empty.
    assert other.http.get(f"/api/projects/{project.id}/groups_types/").status_code == 403
    assert other.http.get(f"/api/projects/{other.id}/groups_types/").json() == []
    assert other.http.get(f"/api/projects/{other.id}/groups/", params={"group_type_index": 0}).json()["results"] == []
    assert other.http.get(f"/api/projects/{other.id}/groups/find/",
                          params={"group_type_index": 0, "group_key": "c001"}).status_code == 404  # fmt: skip
    hogql = other.http.post(f"/api/projects/{other.id}/query/", json={"query": {"kind": "HogQLQuery",
                            "query": "SELECT count() FROM groups"}})  # fmt: skip
    assert hogql.json()["results"] == [[0]]
