"""Bad input to the Experiments API: a 400 naming the field, and nothing written."""

from __future__ import annotations

import pytest


def _base(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


VALID = {"name": "A", "feature_flag_key": "a"}


@pytest.mark.parametrize(
    ("body", "attr"),
    [
        ({"feature_flag_key": "a"}, "name"),
        ({"name": "A"}, "feature_flag_key"),
        ({**VALID, "name": 123}, "name"),
        ({**VALID, "name": ""}, "name"),
        ({**VALID, "name": "x" * 401}, "name"),
        ({**VALID, "description": "x" * 401}, "description"),
        ({**VALID, "feature_flag_key": "has space"}, "feature_flag_key"),
        ({**VALID, "feature_flag_key": "x" * 401}, "feature_flag_key"),
        ({**VALID, "start_date": "not a date"}, "start_date"),
        ({**VALID, "archived": "maybe"}, "archived"),
        ({**VALID, "filters": []}, "filters"),
        ({**VALID, "filters": {"properties": [{"key": "x"}]}}, "filters__properties"),
        ({**VALID, "secondary_metrics": {"name": "x"}}, "secondary_metrics"),
        ({**VALID, "unknown_field": 1}, "unknown_field"),
        ({**VALID, "id": 7}, "id"),
        ({**VALID, "created_at": "2024-01-01T00:00:00Z"}, "created_at"),
        ({**VALID, "feature_flag": {"id": 1}}, "feature_flag"),
        ({**VALID, "parameters": {"feature_flag_variants": [{"key": "test", "rollout_percentage": 100}]}},
         "parameters__feature_flag_variants"),
        ({**VALID, "parameters": {"feature_flag_variants": [
            {"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 40}]}},
         "parameters__feature_flag_variants"),
        ({**VALID, "parameters": {"feature_flag_variants": [{"key": "control", "rollout_percentage": 10}] +
            [{"key": f"v{i}", "rollout_percentage": 9} for i in range(10)]}},
         "parameters__feature_flag_variants"),
        ({**VALID, "parameters": {"feature_flag_variants": [
            {"key": "control", "rollout_percentage": 50}, {"key": "bad key", "rollout_percentage": 50}]}},
         "parameters__feature_flag_variants__1__key"),
        ({**VALID, "parameters": {"minimum_detectable_effect": "big"}}, "parameters__minimum_detectable_effect"),
    ],
)  # fmt: skip
def test_invalid_create_is_400_with_attr_and_writes_nothing(make_project, body, attr):
    project = make_project()
    response = project.http.post(_base(project), json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "validation_error"
    assert error["attr"] == attr, error
    assert error["detail"]
    store = project.service.state.store
    assert store.flags.list(project.id, include_deleted=True) == []
    assert store.experiments.list(project.id, archived=None).total == 0


def test_control_variant_is_required_with_posthog_wording(make_project):
    project = make_project()
    body = {**VALID, "parameters": {"feature_flag_variants": [{"key": "a", "rollout_percentage": 50},
                                                               {"key": "b", "rollout_percentage": 50}]}}  # fmt: skip
    detail = project.http.post(_base(project), json=body).json()["detail"]
    assert detail == "Feature flag variants must contain a control variant"


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b'{"name": "A", "feature_flag_key": ', "application/json", 400, "parse_error"),
        (b'{"name": NaN, "feature_flag_key": "a"}', "application/json", 400, "parse_error"),
        (b'{"name": "\\ud800", "feature_flag_key": "a"}', "application/json", 400, "parse_error"),
        (b'{"name": "A", "feature_flag_key": "a", "filters": {"x": [1e400]}}', "application/json", 400, "parse_error"),
        (b"[1, 2]", "application/json", 400, "invalid_input"),
        (b'"text"', "application/json", 400, "invalid_input"),
        (b"\xff\xfe", "application/json", 400, "parse_error"),
        (b"[" * 100_000, "application/json", 400, "parse_error"),
        (
            b'{"name": "A", "feature_flag_key": "a", "filters": ' + b'{"a": ' * 300 + b"1" + b"}" * 301,
            "application/json",
            400,
            "parse_error",
        ),
        (b"<xml/>", "application/xml", 415, "unsupported_media_type"),
    ],
)
def test_malformed_bodies_get_a_clear_error(make_project, content, content_type, status, code):
    project = make_project()
    response = project.http.post(_base(project), content=content, headers={"Content-Type": content_type})
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert project.service.state.store.flags.list(project.id) == []


def test_form_encoded_json_from_curl_is_read_as_json(make_project):
    project = make_project()
    response = project.http.post(
        _base(project),
        content=b'{"name": "curl", "feature_flag_key": "curl"}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 201


def test_failed_write_after_the_flag_leaves_no_orphan_flag(make_project, monkeypatch):
    project = make_project()
    store = project.service.state.store

    def fail(*args, **kwargs):
        raise RuntimeError("disk full, say")

    # Fault injection on the live service: the experiment insert fails after the flag insert succeeded.
    monkeypatch.setattr(store.experiments, "create", fail)
    response = project.http.post(_base(project), json={"name": "Doomed", "feature_flag_key": "doomed"})
    assert response.status_code == 500
    assert response.json() == {
        "type": "server_error", "code": "error", "detail": "A server error occurred.", "attr": None
    }  # fmt: skip
    assert store.flags.list(project.id, include_deleted=True) == []
    monkeypatch.undo()
    assert project.http.post(_base(project), json={"name": "Fine", "feature_flag_key": "doomed"}).status_code == 201


@pytest.mark.parametrize(
    ("body", "attr"),
    [
        ({"name": None}, "name"),
        ({"name": ["x"]}, "name"),
        ({"start_date": 12.5e99}, "start_date"),
        ({"start_date": "0001-01-01T00:00:00+05:00"}, "start_date"),
        ({"archived": {"a": 1}}, "archived"),
        ({"parameters": {"feature_flag_variants": []}}, "parameters__feature_flag_variants"),
    ],
)
def test_invalid_patch_is_400_and_changes_nothing(make_project, body, attr):
    project = make_project()
    created = project.http.post(_base(project), json=VALID).json()
    url = f"{_base(project)}{created['id']}/"
    response = project.http.patch(url, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["attr"] == attr
    assert project.http.get(url).json() == created
