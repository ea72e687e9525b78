"""Personal API keys, scopes and project access, over HTTP against the running service."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from hoglab.server.http.auth import has_scope


def _error(response, status: int, code: str, *, type_: str = "authentication_error") -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"type", "code", "detail", "attr"}
    assert (body["type"], body["code"], body["attr"]) == (type_, code, None)
    return str(body["detail"])


def test_no_key_is_401_not_authenticated(make_project):
    project = make_project()
    anonymous = project.client(None)
    for path in (f"/api/projects/{project.id}/experiments/", "/api/projects/", f"/api/projects/{project.id}"):
        detail = _error(anonymous.get(path), 401, "not_authenticated")
        assert detail == "Authentication credentials were not provided."
    response = anonymous.get("/api/projects/", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    _error(response, 401, "not_authenticated")


def test_unknown_key_is_401_authentication_failed_naming_where_it_was_found(make_project):
    project = make_project()
    path = f"/api/projects/{project.id}/experiments/"
    stranger = project.client("phx_" + "x" * 43)
    detail = _error(stranger.get(path), 401, "authentication_failed")
    assert detail == "Personal API key found in request Authorization header is invalid."
    anonymous = project.client(None)
    detail = _error(anonymous.get(path, params={"personal_api_key": "phx_nope"}), 401, "authentication_failed")
    assert detail == "Personal API key found in request query string is invalid."
    detail = _error(
        anonymous.post(path, json={"personal_api_key": "phx_nope", "name": "A", "feature_flag_key": "a"}),
        401,
        "authentication_failed",
    )
    assert detail == "Personal API key found in request body is invalid."
    assert stranger.get(path).headers["WWW-Authenticate"].startswith("Bearer")


def test_key_in_query_string_or_body_is_accepted_below_the_header(make_project):
    project = make_project()
    path = f"/api/projects/{project.id}/experiments/"
    anonymous = project.client(None)
    assert anonymous.get(path, params={"personal_api_key": project.key}).status_code == 200
    created = anonymous.post(path, json={"personal_api_key": project.key, "name": "Body key", "feature_flag_key": "bk"})
    assert created.status_code == 201, created.text
    # The header wins: a bad header key fails even with a good key in the query string.
    bad_header = project.client("phx_bad")
    assert bad_header.get(path, params={"personal_api_key": project.key}).status_code == 401


def test_missing_scope_is_403_naming_the_scope(make_project):
    project = make_project(scopes=["experiment:read"])
    path = f"/api/projects/{project.id}/experiments/"
    assert project.http.get(path).status_code == 200
    detail = _error(project.http.post(path, json={"name": "A", "feature_flag_key": "a"}), 403, "permission_denied")
    assert detail == "API key missing required scope 'experiment:write'"
    query_only = project.client(project.new_key(["query:read"]))
    detail = _error(query_only.get(path), 403, "permission_denied")
    assert detail == "API key missing required scope 'experiment:read'"


def test_write_scope_implies_read_and_star_grants_everything(make_project):
    project = make_project(scopes=["experiment:write"])
    path = f"/api/projects/{project.id}/experiments/"
    created = project.http.post(path, json={"name": "W", "feature_flag_key": "w"})
    assert created.status_code == 201
    assert project.http.get(f"{path}{created.json()['id']}/").status_code == 200
    star = project.client(project.new_key(["*"]))
    assert star.get(path).json()["count"] == 1


@pytest.mark.parametrize(
    ("scopes", "required", "granted"),
    [
        (("*",), "cohort:write", True),
        (("experiment:write",), "experiment:read", True),
        (("experiment:read",), "experiment:write", False),
        (("query:write",), "experiment:read", False),
        ((), "experiment:read", False),
    ],
)
def test_scope_rules(scopes, required, granted):
    assert has_scope(scopes, required) is granted


def test_key_limited_to_projects_gets_403_elsewhere_and_404_for_unknown_projects(make_project):
    mine = make_project()
    other = make_project()
    detail = _error(mine.http.get(f"/api/projects/{other.id}/experiments/"), 403, "permission_denied")
    assert detail == f"API key does not have access to the requested project: ID {other.id}."
    # A limited key learns nothing about projects outside its list, existing or not.
    _error(mine.http.get("/api/projects/999999999/experiments/"), 403, "permission_denied")
    everywhere = mine.client(mine.new_key(["*"], "all"))
    assert everywhere.get(f"/api/projects/{other.id}/experiments/").status_code == 200
    missing = everywhere.get("/api/projects/999999999/experiments/")
    _error(missing, 404, "not_found", type_="invalid_request")
    _error(everywhere.get(f"/api/projects/{2**70}/"), 404, "not_found", type_="invalid_request")


def test_project_id_that_is_not_a_number_is_400_naming_the_field(make_project):
    project = make_project()
    response = project.http.get("/api/projects/abc/experiments/")
    assert response.status_code == 400
    assert response.json()["type"] == "validation_error"
    assert response.json()["attr"] == "project_id"


def test_current_project_is_the_keys_project(make_project):
    project = make_project(name="current one")
    response = project.http.get("/api/projects/@current/")
    assert response.status_code == 200
    assert response.json()["id"] == project.id
    created = project.http.post("/api/projects/@current/experiments/", json={"name": "C", "feature_flag_key": "c"})
    assert created.json()["feature_flag"]["team_id"] == project.id


def test_projects_list_is_the_paged_envelope_of_reachable_projects(make_project):
    first = make_project(name="first")
    second = make_project()
    third = make_project(name="third")
    both = first.client(first.new_key(["experiment:read"], [first.id, third.id]))
    body = both.get("/api/projects/").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2
    assert [p["id"] for p in body["results"]] == [first.id, third.id]
    assert second.id not in {p["id"] for p in body["results"]}
    page = both.get("/api/projects", params={"limit": 1}).json()
    assert len(page["results"]) == 1 and "offset=1" in page["next"] and "limit=1" in page["next"]
    assert page["previous"] is None
    detail = both.get(f"/api/projects/{first.id}/").json()
    assert detail["name"] == "first" and detail["api_token"].startswith("phc_")
    assert set(detail) >= {"id", "uuid", "name", "api_token", "timezone", "created_at"}


def test_only_the_sha256_of_a_key_is_stored(make_project, hoglab_service):
    project = make_project()
    database = hoglab_service.data_dir / "hoglab.sqlite3"
    with sqlite3.connect(database) as conn:
        dump = "\n".join(conn.iterdump())
    assert project.key not in dump
    assert project.key[4:] not in dump
    assert hashlib.sha256(project.key.encode()).hexdigest() in dump
    assert project.key.startswith("phx_") and len(project.key) == 47
