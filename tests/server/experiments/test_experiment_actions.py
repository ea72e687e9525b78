"""Exposure cohort, requires_flag_implementation, results and secondary results; every path with and without
the trailing slash."""

from __future__ import annotations

import pytest


def _base(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _create(project, **body):
    body = {"name": "Checkout", "feature_flag_key": "checkout", **body}
    response = project.http.post(_base(project), json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_exposure_cohort_needs_a_start_date(make_project):
    project = make_project()
    draft = _create(project)
    response = project.http.post(f"{_base(project)}{draft['id']}/create_exposure_cohort_for_experiment/")
    assert response.status_code == 400
    assert response.json()["detail"] == "Experiment does not have a start date."
    assert project.service.state.store.cohorts.list(project.id) == []


def test_exposure_cohort_records_posthogs_definition_once(make_project):
    project = make_project()
    experiment = _create(project, name="Pricing", feature_flag_key="pricing", start_date="2024-04-01T00:00:00Z")
    url = f"{_base(project)}{experiment['id']}/create_exposure_cohort_for_experiment/"
    response = project.http.post(url, json={})
    assert response.status_code == 200, response.text
    cohort = response.json()["cohort"]
    assert cohort["name"] == 'Users exposed to experiment "Pricing"'
    assert cohort["is_static"] is False
    [group] = cohort["filters"]["properties"]["values"]
    [behavioral] = group["values"]
    assert behavioral["type"] == "behavioral" and behavioral["value"] == "performed_event"
    assert behavioral["key"] == "$feature_flag_called"
    assert behavioral["event_filters"] == [
        {"key": "$feature_flag", "value": ["pricing"], "operator": "exact", "type": "event"}
    ]
    assert behavioral["explicit_datetime"].startswith("2024-04-01T00:00:00")
    assert project.http.get(f"{_base(project)}{experiment['id']}/").json()["exposure_cohort"] == cohort["id"]
    again = project.http.post(url)
    assert again.status_code == 400
    assert again.json()["detail"] == "Experiment already has an exposure cohort."
    assert len(project.service.state.store.cohorts.list(project.id)) == 1


def test_exposure_cohort_uses_a_custom_exposure_event(make_project):
    project = make_project()
    custom = {"events": [{"id": "$pageview", "properties": [{"key": "$current_url", "value": "x", "type": "event"}]}]}
    experiment = _create(project, start_date="2024-04-01T00:00:00Z", parameters={"custom_exposure_filter": custom})
    response = project.http.post(f"{_base(project)}{experiment['id']}/create_exposure_cohort_for_experiment")
    behavioral = response.json()["cohort"]["filters"]["properties"]["values"][0]["values"][0]
    assert behavioral["key"] == "$pageview"
    assert behavioral["event_filters"] == custom["events"][0]["properties"]


def test_requires_flag_implementation_is_true_without_events(make_project):
    project = make_project(scopes=["experiment:read"])
    response = project.http.get(f"{_base(project)}requires_flag_implementation/")
    assert response.status_code == 200
    assert response.json() == {"result": True}
    with_events = project.http.get(
        f"{_base(project)}requires_flag_implementation/", params={"events": '[{"id": "$pageview"}]'}
    )
    assert with_events.json() == {"result": True}
    bad = project.http.get(f"{_base(project)}requires_flag_implementation/", params={"events": "{"})
    assert (bad.status_code, bad.json()["attr"]) == (400, "events")


def test_requires_flag_implementation_reads_the_engine_hook(make_project, monkeypatch):
    project = make_project()
    state = project.service.state
    asked = []

    def sampler(state_, project_record, events):
        asked.append((project_record.id, list(events)))
        return [{"$browser": "Chrome", "$feature/checkout": "test"}]

    monkeypatch.setattr(state, "sample_event_properties", sampler)
    response = project.http.get(f"{_base(project)}requires_flag_implementation", params={"events": '["signup"]'})
    assert response.json() == {"result": False}
    assert asked == [(project.id, ["signup"])]


def test_results_without_a_metric_or_without_results_are_clear_400s(make_project):
    project = make_project()
    no_metric = _create(project, feature_flag_key="m0")
    response = project.http.get(f"{_base(project)}{no_metric['id']}/results/")
    assert (response.status_code, response.json()["detail"]) == (400, "Experiment has no target metric")
    with_metric = _create(project, feature_flag_key="m1", filters={"insight": "TRENDS", "events": [{"id": "buy"}]})
    response = project.http.get(f"{_base(project)}{with_metric['id']}/results/")
    assert response.status_code == 400
    body = response.json()
    assert (body["type"], body["code"]) == ("validation_error", "no-results")
    assert "events" in body["detail"]


def test_secondary_results_check_the_metric_index(make_project):
    project = make_project()
    none = _create(project, feature_flag_key="s0")
    url = f"{_base(project)}{none['id']}/secondary_results/"
    assert project.http.get(url).json()["detail"] == "Experiment has no secondary metrics"
    metrics = [{"name": "signups", "filters": {"insight": "TRENDS", "events": [{"id": "signup"}]}}]
    some = _create(project, feature_flag_key="s1", secondary_metrics=metrics)
    url = f"{_base(project)}{some['id']}/secondary_results/"
    assert project.http.get(url).json()["detail"] == "Secondary metric id is required"
    assert project.http.get(url, params={"id": "x"}).json()["detail"] == "Secondary metric id must be an integer"
    assert project.http.get(url, params={"id": "3"}).json()["detail"] == "Invalid metric ID"
    response = project.http.get(url, params={"id": "0"})
    assert (response.status_code, response.json()["code"]) == (400, "no-results")


def test_results_hook_answers_when_set(make_project, monkeypatch):
    project = make_project()
    experiment = _create(project, filters={"insight": "FUNNELS", "events": [{"id": "a"}, {"id": "b"}]})
    monkeypatch.setattr(
        project.service.state,
        "experiment_results",
        lambda state, proj, record, index, refresh: {"result": {"id": record.id, "index": index}, "is_cached": False},
    )
    response = project.http.get(f"{_base(project)}{experiment['id']}/results")
    assert response.json() == {"result": {"id": experiment["id"], "index": None}, "is_cached": False}


ENDPOINTS = [
    ("GET", "experiments/", 200),
    ("POST", "experiments/", 201),
    ("GET", "experiments/requires_flag_implementation/", 200),
    ("GET", "experiments/{id}/", 200),
    ("PATCH", "experiments/{id}/", 200),
    ("POST", "experiments/{id}/create_exposure_cohort_for_experiment/", 200),
    ("GET", "experiments/{id}/results/", 400),
    ("GET", "experiments/{id}/secondary_results/", 400),
    ("DELETE", "experiments/{id}/", 204),
    ("GET", "", 200),
]


@pytest.mark.parametrize("slash", [True, False], ids=["slash", "no-slash"])
def test_every_endpoint_answers_with_and_without_trailing_slash(make_project, slash):
    project = make_project()
    experiment = _create(project, feature_flag_key="slashes", start_date="2024-01-01T00:00:00Z")
    for method, template, status in ENDPOINTS:
        path = f"/api/projects/{project.id}/" + template.format(id=experiment["id"])
        path = path if slash else path.rstrip("/")
        body = {"name": "Other", "feature_flag_key": f"other-{slash}"} if method == "POST" else None
        body = {"name": "Renamed"} if method == "PATCH" else body
        response = project.http.request(method, path, json=body)
        assert response.status_code == status, (method, path, response.text)
    projects_path = "/api/projects/" if slash else "/api/projects"
    assert project.http.get(projects_path).status_code == 200
