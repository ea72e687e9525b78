"""Experiment holdouts over HTTP: PostHog's ``/experiment_holdouts/`` CRUD, its errors, and the flags of the
experiments that use a holdout kept in step (create, PATCH, the holdout's own edits and deletion)."""

from __future__ import annotations

from typing import Any

import pytest

from posthog_openapi import assert_valid, assert_valid_experiment

TEN = [{"properties": [], "rollout_percentage": 10, "variant": "holdout"}]


def _holdouts(project) -> str:
    return f"/api/projects/{project.id}/experiment_holdouts/"


def _experiments(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _make(project, name: str = "Q3 holdout", filters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    response = project.http.post(_holdouts(project), json={"name": name, "filters": filters or TEN})
    assert response.status_code == 201, response.text
    return dict(response.json())


def _experiment(project, key: str, **body: Any) -> dict[str, Any]:
    response = project.http.post(_experiments(project), json={"name": key, "feature_flag_key": key, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def _assert_experiment(body: dict[str, Any]) -> None:
    # PostHog's Experiment component requires members hoglab doesn't have (user_access_level; the flag's evaluation
    # tags): what hoglab writes is checked against PatchedExperiment (the same properties, none required).
    assert_valid_experiment(body)


def test_crud_in_posthogs_shapes(make_project) -> None:
    project = make_project()
    created = _make(project, filters=[{"properties": [], "rollout_percentage": 20, "variant": "anything"}])
    assert_valid(created, "ExperimentHoldout", drop=())
    # Every group's variant becomes the holdout's value, holdout-<id> (PostHog rewrites it after the insert).
    assert created["filters"] == [{"properties": [], "rollout_percentage": 20, "variant": f"holdout-{created['id']}"}]
    assert created["description"] is None and created["created_by"]["email"]
    second = _make(project, "second")
    listed = project.http.get(_holdouts(project)).json()
    assert_valid(listed, "PaginatedExperimentHoldoutList", drop=())
    assert [h["id"] for h in listed["results"]] == [second["id"], created["id"]]  # newest first
    page = project.http.get(_holdouts(project), params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 2 and [h["id"] for h in page["results"]] == [created["id"]] and page["next"] is None
    url = f"{_holdouts(project)}{created['id']}/"
    assert project.http.get(url).json() == created
    patched = project.http.patch(url, json={"description": "kept out all quarter", "id": 999, "created_at": "x"})
    assert patched.status_code == 200, patched.text
    assert_valid(patched.json(), "PatchedExperimentHoldout", drop=())
    assert patched.json()["description"] == "kept out all quarter" and patched.json()["id"] == created["id"]
    put = project.http.put(url, json={"name": "Renamed"})
    assert put.status_code == 200 and put.json()["name"] == "Renamed" and put.json()["filters"] == created["filters"]
    assert project.http.delete(url).status_code == 204
    assert project.http.get(url).status_code == 404
    assert project.http.get(_holdouts(project)).json()["count"] == 1


@pytest.mark.parametrize(
    ("body", "detail", "attr", "code"),
    [
        ({"name": None, "filters": TEN}, "This field may not be null.", "name", "null"),
        ({"filters": TEN}, "This field is required.", "name", "required"),
        ({"name": "", "filters": TEN}, "This field may not be blank.", "name", "blank"),
        ({"name": "x" * 401, "filters": TEN}, "Ensure this field has no more than 400 characters.", "name",
         "max_length"),
        ({"name": "H"}, "Filters are required to create an holdout group", None, "invalid"),
        ({"name": "H", "filters": []}, "Filters are required to create an holdout group", None, "invalid"),
        ({"name": "H", "filters": [{"properties": []}]}, "Rollout percentage must be present.", "filters", "invalid"),
        ({"name": "H", "filters": [{"rollout_percentage": None}]}, "Rollout percentage must be present.", "filters",
         "invalid"),
        ({"name": "H", "filters": [{"rollout_percentage": 101}]}, "Rollout percentage must be between 0 and 100.",
         "filters", "invalid"),
        ({"name": "H", "filters": [{"rollout_percentage": -1}]}, "Rollout percentage must be between 0 and 100.",
         "filters", "invalid"),
        ({"name": "H", "filters": [{"rollout_percentage": "10"}]}, "Rollout percentage must be a number.", "filters",
         "invalid"),
        ({"name": "H", "filters": {"rollout_percentage": 10}}, None, "filters", "invalid"),
        ({"name": "H", "filters": TEN, "colour": "red"}, None, "colour", None),
    ],
)  # fmt: skip
def test_bad_bodies_are_posthogs_400s_and_write_nothing(make_project, body, detail, attr, code) -> None:
    project = make_project()
    response = project.http.post(_holdouts(project), json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "validation_error" and error["attr"] == attr
    if detail is not None:
        assert error["detail"] == detail
    if code is not None:
        assert error["code"] == code
    assert project.http.get(_holdouts(project)).json()["count"] == 0


def test_another_projects_holdout_is_not_found_and_scopes_apply(make_project) -> None:
    project, other = make_project(), make_project()
    theirs = _make(other)
    assert project.http.get(f"{_holdouts(project)}{theirs['id']}/").status_code == 404
    assert project.http.patch(f"{_holdouts(project)}{theirs['id']}/", json={"name": "x"}).status_code == 404
    assert project.http.delete(f"{_holdouts(project)}{theirs['id']}/").status_code == 404
    reader = project.client(project.new_key(["experiment:read"]))
    assert reader.get(_holdouts(project)).status_code == 200
    assert reader.post(_holdouts(project), json={"name": "H", "filters": TEN}).status_code == 403


def test_an_experiment_with_a_holdout_writes_it_into_its_flag(make_project) -> None:
    project = make_project()
    holdout = _make(project)
    experiment = _experiment(project, "with-holdout", holdout_id=holdout["id"])
    _assert_experiment(experiment)
    assert experiment["holdout_id"] == holdout["id"] and experiment["holdout"] == holdout
    filters = experiment["feature_flag"]["filters"]
    assert filters["holdout"] == {"id": holdout["id"], "exclusion_percentage": 10}
    assert "holdout_groups" not in filters  # PostHog's current key only
    plain = _experiment(project, "without-holdout")
    _assert_experiment(plain)
    assert plain["holdout"] is None and plain["holdout_id"] is None
    assert plain["feature_flag"]["filters"]["holdout"] is None
    # The holdout's id arrives as text too (DRF's primary key field reads it).
    again = _experiment(project, "text-id", holdout_id=str(holdout["id"]))
    assert again["holdout_id"] == holdout["id"]
    # Sending the answer's read-only holdout back is ignored, as PostHog ignores it.
    url = f"{_experiments(project)}{experiment['id']}/"
    assert project.http.patch(url, json={"holdout": holdout, "name": "renamed"}).status_code == 200


@pytest.mark.parametrize(
    ("holdout_id", "detail", "code"),
    [(987654, 'Invalid pk "987654" - object does not exist.', "does_not_exist"),
     ("abc", "Incorrect type. Expected pk value, received str.", None),
     (True, "Incorrect type. Expected pk value, received bool.", None)],
)  # fmt: skip
def test_an_unknown_holdout_is_a_400_and_nothing_is_written(make_project, holdout_id, detail, code) -> None:
    project = make_project()
    response = project.http.post(_experiments(project),
                                 json={"name": "X", "feature_flag_key": "x", "holdout_id": holdout_id})  # fmt: skip
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == detail and response.json()["attr"] == "holdout_id"
    if code:
        assert response.json()["code"] == code
    assert project.http.get(_experiments(project)).json()["count"] == 0
    assert project.service.state.store.flags.get_by_key(project.id, "x") is None  # the flag is not left behind


def test_another_projects_holdout_cant_be_used(make_project) -> None:
    project, other = make_project(), make_project()
    theirs = _make(other)
    response = project.http.post(_experiments(project),
                                 json={"name": "X", "feature_flag_key": "x", "holdout_id": theirs["id"]})  # fmt: skip
    assert response.status_code == 400 and response.json()["code"] == "does_not_exist"


def test_patch_changes_the_holdout_of_a_draft_but_not_of_a_launched_experiment(make_project) -> None:
    project = make_project()
    first, second = _make(project, "first"), _make(project, "second", [{"properties": [], "rollout_percentage": 5}])
    experiment = _experiment(project, "draft")
    url = f"{_experiments(project)}{experiment['id']}/"
    patched = project.http.patch(url, json={"holdout_id": first["id"]}).json()
    assert patched["holdout"]["id"] == first["id"]
    assert patched["feature_flag"]["filters"]["holdout"] == {"id": first["id"], "exclusion_percentage": 10}
    cleared = project.http.patch(url, json={"holdout_id": None}).json()
    assert cleared["holdout"] is None and cleared["feature_flag"]["filters"]["holdout"] is None
    project.http.patch(url, json={"holdout_id": second["id"]})
    launched = project.http.patch(url, json={"start_date": "2026-01-01T00:00:00Z"}).json()
    assert launched["feature_flag"]["active"] is True
    refused = project.http.patch(url, json={"holdout_id": first["id"], "name": "not saved"})
    assert refused.status_code == 400 and refused.json()["detail"] == "Can't update holdout on running Experiment"
    unchanged = project.http.get(url).json()
    assert unchanged["name"] == "draft" and unchanged["holdout"]["id"] == second["id"]
    assert unchanged["feature_flag"]["filters"]["holdout"] == {"id": second["id"], "exclusion_percentage": 5}
    # The same holdout again is no change, so it passes.
    assert project.http.patch(url, json={"holdout_id": second["id"], "name": "kept"}).status_code == 200


def test_editing_a_holdout_rewrites_every_flag_using_it_and_deleting_it_clears_them(make_project) -> None:
    project = make_project()
    holdout = _make(project)
    draft = _experiment(project, "draft-h", holdout_id=holdout["id"])
    running = _experiment(project, "running-h", holdout_id=holdout["id"], start_date="2026-01-01T00:00:00Z")
    other = _experiment(project, "other-h")
    url = f"{_holdouts(project)}{holdout['id']}/"
    patched = project.http.patch(url, json={"filters": [{"properties": [], "rollout_percentage": 25}]})
    assert patched.status_code == 200 and patched.json()["filters"][0]["variant"] == f"holdout-{holdout['id']}"
    store = project.service.state.store
    for experiment in (draft, running):
        flag = store.flags.get(experiment["feature_flag"]["id"])
        assert flag.filters["holdout"] == {"id": holdout["id"], "exclusion_percentage": 25}
    assert store.flags.get(other["feature_flag"]["id"]).filters["holdout"] is None
    assert project.http.delete(url).status_code == 204
    for experiment in (draft, running):
        body = project.http.get(f"{_experiments(project)}{experiment['id']}/").json()
        assert body["holdout"] is None and body["holdout_id"] is None
        assert body["feature_flag"]["filters"]["holdout"] is None
