"""Experiments CRUD over HTTP: create with its flag, list, retrieve, update, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


def _base(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _create(project, **body):
    body.setdefault("name", "Checkout")
    body.setdefault("feature_flag_key", "checkout")
    response = project.http.post(_base(project), json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_makes_an_inactive_control_test_flag_for_a_draft(make_project):
    project = make_project()
    experiment = _create(project, name="New checkout", feature_flag_key="new-checkout")
    flag = experiment["feature_flag"]
    assert experiment["feature_flag_key"] == "new-checkout"
    assert experiment["start_date"] is None and experiment["archived"] is False
    assert set(flag) == {"id", "team_id", "name", "key", "filters", "deleted", "active", "ensure_experience_continuity"}
    assert flag["key"] == "new-checkout" and flag["team_id"] == project.id
    assert flag["active"] is False and flag["deleted"] is False
    assert flag["name"] == "Feature Flag for Experiment New checkout"
    assert flag["filters"]["multivariate"]["variants"] == [
        {"key": "control", "name": "Control Group", "rollout_percentage": 50},
        {"key": "test", "name": "Test Variant", "rollout_percentage": 50},
    ]
    assert flag["filters"]["groups"] == [{"properties": [], "rollout_percentage": 100}]
    user = experiment["created_by"]
    assert set(user) == {
        "id", "uuid", "distinct_id", "first_name", "last_name", "email", "is_email_verified", "hedgehog_config"
    }  # fmt: skip
    assert "@" in user["email"]
    created = datetime.fromisoformat(experiment["created_at"])
    assert abs(created - datetime.now(UTC)) < timedelta(minutes=1)
    stored = project.service.state.store.flags.get_by_key(project.id, "new-checkout")
    assert stored is not None and stored.id == flag["id"]


def test_create_respects_variants_and_start_date(make_project):
    project = make_project()
    variants = [
        {"key": "control", "name": "Old", "rollout_percentage": 34},
        {"key": "blue", "rollout_percentage": 33},
        {"key": "green", "rollout_percentage": 33},
    ]
    experiment = _create(
        project,
        feature_flag_key="colours",
        start_date="2024-05-01T10:00:00Z",
        parameters={"feature_flag_variants": variants, "minimum_detectable_effect": 5, "custom_ui_key": [1]},
        description="three colours",
    )
    assert experiment["feature_flag"]["filters"]["multivariate"]["variants"] == variants
    assert experiment["feature_flag"]["active"] is True
    assert datetime.fromisoformat(experiment["start_date"]) == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert experiment["parameters"]["custom_ui_key"] == [1]  # unknown parameter keys are kept as sent
    assert experiment["description"] == "three colours"


def test_duplicate_flag_key_is_400_unique_on_key(make_project):
    project = make_project()
    _create(project, feature_flag_key="taken")
    response = project.http.post(_base(project), json={"name": "Again", "feature_flag_key": "taken"})
    assert response.status_code == 400
    assert response.json() == {
        "type": "validation_error",
        "code": "unique",
        "detail": "There is already a feature flag with this key.",
        "attr": "key",
    }
    assert project.http.get(_base(project)).json()["count"] == 1
    # The same key in another project is fine: projects are isolated.
    other = make_project()
    assert other.http.post(_base(other), json={"name": "Again", "feature_flag_key": "taken"}).status_code == 201


def test_list_is_a_paged_envelope_newest_first_with_offset_and_limit_links(make_project):
    project = make_project()
    ids = [_create(project, name=f"E{i}", feature_flag_key=f"e{i}")["id"] for i in range(5)]
    body = project.http.get(_base(project), params={"limit": 2}).json()
    assert body["count"] == 5
    assert [e["id"] for e in body["results"]] == ids[::-1][:2]
    assert body["previous"] is None
    seen = [e["id"] for e in body["results"]]
    next_url = body["next"]
    while next_url:
        assert "limit=2" in next_url and "offset=" in next_url
        page = project.http.get(next_url).json()
        assert page["previous"] is not None and "offset=" in page["previous"]
        seen += [e["id"] for e in page["results"]]
        next_url = page["next"]
    assert seen == ids[::-1]


def test_list_default_limit_is_100(make_project):
    project = make_project()
    store = project.service.state.store
    for i in range(101):  # straight into the store: this test is about paging, not creating
        flag = store.flags.create(project.id, f"k{i}", filters={})
        store.experiments.create(project.id, name=f"E{i}", feature_flag_id=flag.id)
    body = project.http.get(_base(project)).json()
    assert body["count"] == 101 and len(body["results"]) == 100
    assert "offset=100" in body["next"] and "limit=100" in body["next"]
    assert len(project.http.get(body["next"]).json()["results"]) == 1


def test_archived_experiments_are_hidden_unless_asked_for(make_project):
    project = make_project()
    live = _create(project, name="Live", feature_flag_key="live")
    old = _create(project, name="Old", feature_flag_key="old", archived=True)
    assert [e["id"] for e in project.http.get(_base(project)).json()["results"]] == [live["id"]]
    archived = project.http.get(_base(project), params={"archived": "true"}).json()
    assert [e["id"] for e in archived["results"]] == [old["id"]]
    patched = project.http.patch(f"{_base(project)}{live['id']}/", json={"archived": True})
    assert patched.json()["archived"] is True
    assert project.http.get(_base(project)).json()["count"] == 0


def test_list_filters_by_status_and_search(make_project):
    project = make_project()
    _create(project, name="Draft pricing", feature_flag_key="d")
    running = _create(project, name="Running pricing", feature_flag_key="r", start_date="2024-01-01T00:00:00Z")
    listed = project.http.get(_base(project), params={"status": "running"}).json()
    assert [e["id"] for e in listed["results"]] == [running["id"]]
    assert project.http.get(_base(project), params={"search": "DRAFT"}).json()["count"] == 1


def test_retrieve_and_isolation_between_projects(make_project):
    project = make_project()
    other = make_project()
    experiment = _create(project)
    got = project.http.get(f"{_base(project)}{experiment['id']}/")
    assert got.status_code == 200 and got.json() == experiment
    everywhere = other.client(other.new_key(["*"], "all"))
    assert everywhere.get(f"{_base(other)}{experiment['id']}/").status_code == 404


def test_patch_updates_fields_and_launch_activates_the_flag(make_project):
    project = make_project()
    experiment = _create(project)
    url = f"{_base(project)}{experiment['id']}/"
    response = project.http.patch(url, json={"name": "Renamed", "description": "why", "start_date": "2024-02-01"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["name"], body["description"]) == ("Renamed", "why")
    assert body["feature_flag"]["active"] is True
    assert datetime.fromisoformat(body["updated_at"]) >= datetime.fromisoformat(experiment["updated_at"])
    assert project.http.get(url).json()["feature_flag"]["active"] is True
    assert project.service.state.store.flags.get(body["feature_flag"]["id"]).active is True


def test_patch_refuses_keys_it_cannot_update(make_project):
    project = make_project()
    experiment = _create(project)
    url = f"{_base(project)}{experiment['id']}/"
    response = project.http.patch(url, json={"feature_flag_key": "other", "type": "web", "name": "x"})
    assert response.status_code == 400
    assert response.json()["detail"] == "Can't update keys: feature_flag_key, type on Experiment"
    assert response.json()["attr"] == "feature_flag_key"
    assert project.http.get(url).json()["name"] == "Checkout"  # nothing of the refused PATCH was applied
    # Sending the unchanged key back (a client echoing the object) is not a change.
    assert project.http.patch(url, json={"feature_flag_key": "checkout", "name": "y"}).status_code == 200


def test_variants_change_while_draft_and_are_frozen_once_launched(make_project):
    project = make_project()
    experiment = _create(project)
    url = f"{_base(project)}{experiment['id']}/"
    three = [
        {"key": "control", "rollout_percentage": 50},
        {"key": "a", "rollout_percentage": 25},
        {"key": "b", "rollout_percentage": 25},
    ]
    draft = project.http.patch(url, json={"parameters": {"feature_flag_variants": three}})
    assert draft.status_code == 200
    assert [v["key"] for v in draft.json()["feature_flag"]["filters"]["multivariate"]["variants"]] == [
        "control",
        "a",
        "b",
    ]
    assert project.http.patch(url, json={"start_date": "2024-03-01T00:00:00Z"}).status_code == 200
    moved = [three[0], three[1] | {"rollout_percentage": 50}]
    frozen = project.http.patch(url, json={"parameters": {"feature_flag_variants": moved}})
    assert frozen.status_code == 400
    assert frozen.json()["detail"] == "Can't update feature_flag_variants on Experiment"
    same = project.http.patch(
        url, json={"parameters": {"feature_flag_variants": three, "minimum_detectable_effect": 2}}
    )
    assert same.status_code == 200


def test_end_date_must_follow_start_date_on_create_and_update(make_project):
    project = make_project()
    response = project.http.post(
        _base(project),
        json={"name": "A", "feature_flag_key": "a", "start_date": "2024-02-01T00:00:00Z", "end_date": "2024-01-01"},
    )
    assert response.status_code == 400
    assert (response.json()["detail"], response.json()["attr"]) == ("End date must be after start date", "end_date")
    assert project.service.state.store.flags.get_by_key(project.id, "a") is None
    experiment = _create(project, start_date="2024-02-01T00:00:00Z")
    url = f"{_base(project)}{experiment['id']}/"
    response = project.http.patch(url, json={"end_date": "2024-01-15T00:00:00Z"})
    assert (response.status_code, response.json()["attr"]) == (400, "end_date")
    assert project.http.patch(url, json={"end_date": "2024-03-01T00:00:00Z"}).status_code == 200


def test_delete_is_204_then_404_and_frees_the_flag_key(make_project):
    project = make_project()
    experiment = _create(project, feature_flag_key="short-lived")
    url = f"{_base(project)}{experiment['id']}/"
    response = project.http.delete(url)
    assert response.status_code == 204 and response.content == b""
    for method in ("GET", "PATCH", "DELETE"):
        gone = project.http.request(method, url, json={} if method == "PATCH" else None)
        assert gone.status_code == 404, method
        assert gone.json()["code"] == "not_found"
    flag = project.service.state.store.flags.get(experiment["feature_flag"]["id"])
    assert flag is not None and flag.deleted and not flag.active
    again = _create(project, feature_flag_key="short-lived")
    assert again["id"] != experiment["id"]


@pytest.mark.parametrize("bad_id", ["abc", "1.5", "0x10", str(2**64)])
def test_non_integer_experiment_id_is_400_naming_id(make_project, bad_id):
    project = make_project()
    response = project.http.get(f"{_base(project)}{bad_id}/")
    assert response.status_code == 400, response.text
    assert (response.json()["type"], response.json()["attr"]) == ("validation_error", "id")
