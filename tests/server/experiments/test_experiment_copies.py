"""``duplicate/`` and ``eligible_feature_flags/``: PostHog's answers for a copy of an experiment and for the flags
an experiment can run on."""

from __future__ import annotations

from typing import Any

import pytest

from posthog_openapi import assert_valid_experiment

MEAN = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m-1",
        "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}  # fmt: skip
COUNT = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m-2", "source": {"kind": "EventsNode",
                                                                                      "event": "$pageview"}}


def _base(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _create(project, **body: Any) -> dict[str, Any]:
    response = project.http.post(_base(project), json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_duplicate_is_a_draft_copy_with_fresh_metric_uuids(make_project) -> None:
    project = make_project()
    holdout = project.http.post(f"/api/projects/{project.id}/experiment_holdouts/",
                                json={"name": "H", "filters": [{"properties": [], "rollout_percentage": 5}]}).json()
    saved = project.http.post(f"/api/projects/{project.id}/experiment_saved_metrics/",
                              json={"name": "S", "query": {k: v for k, v in COUNT.items() if k != "uuid"}}).json()
    source = _create(project, name="Pricing", feature_flag_key="pricing", description="copy me", type="web",
                     metrics=[MEAN], metrics_secondary=[COUNT], primary_metrics_ordered_uuids=["m-1"],
                     secondary_metrics_ordered_uuids=["m-2"], stats_config={"method": "frequentist"},
                     exposure_criteria={"filterTestAccounts": False}, holdout_id=holdout["id"],
                     start_date="2026-01-01T00:00:00Z", conclusion="won",
                     saved_metrics_ids=[{"id": saved["id"], "metadata": {"type": "secondary"}}])  # fmt: skip
    response = project.http.post(f"{_base(project)}{source['id']}/duplicate/")
    assert response.status_code == 201, response.text
    copy = response.json()
    assert_valid_experiment(copy)
    assert copy["name"] == "Pricing (Copy)" and copy["id"] != source["id"]
    assert copy["start_date"] is None and copy["end_date"] is None and copy["conclusion"] is None
    assert copy["holdout"] is None and copy["holdout_id"] is None  # PostHog's clone leaves the holdout behind
    assert copy["feature_flag"]["id"] == source["feature_flag"]["id"]  # no key: the source's flag, shared
    assert (copy["description"], copy["type"], copy["stats_config"], copy["exposure_criteria"]) == (
        "copy me", "web", {"method": "frequentist"}, {"filterTestAccounts": False})
    uuids = [m["uuid"] for m in copy["metrics"] + copy["metrics_secondary"]]
    assert "m-1" not in uuids and "m-2" not in uuids and len(set(uuids)) == 2
    assert [{**m, "uuid": "x"} for m in copy["metrics"]] == [{**MEAN, "uuid": "x"}]
    assert copy["primary_metrics_ordered_uuids"] == [copy["metrics"][0]["uuid"]]
    assert copy["secondary_metrics_ordered_uuids"] == [copy["metrics_secondary"][0]["uuid"], saved["query"]["uuid"]]
    assert [(k["saved_metric"], k["metadata"]) for k in copy["saved_metrics"]] == [(saved["id"], {"type": "secondary"})]
    again = project.http.post(f"{_base(project)}{source['id']}/duplicate/").json()
    assert again["name"] == "Pricing (Copy) 1"
    # Deleting a copy keeps the flag the source still runs on.
    assert project.http.delete(f"{_base(project)}{copy['id']}/").status_code == 204
    assert project.http.get(f"{_base(project)}{source['id']}/").json()["feature_flag"]["deleted"] is False


def test_duplicate_onto_another_flag(make_project) -> None:
    project = make_project()
    source = _create(project, name="A", feature_flag_key="a", metrics=[MEAN], parameters={"feature_flag_variants": [
        {"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]})  # fmt: skip
    three = [{"key": "control", "rollout_percentage": 34}, {"key": "b", "rollout_percentage": 33},
             {"key": "c", "rollout_percentage": 33}]  # fmt: skip
    existing = _create(project, name="B", feature_flag_key="b", parameters={"feature_flag_variants": three})
    onto_new = project.http.post(f"{_base(project)}{source['id']}/duplicate/",
                                 json={"feature_flag_key": "a-copy", "name": "Renamed"}).json()  # fmt: skip
    assert onto_new["name"] == "Renamed" and onto_new["feature_flag_key"] == "a-copy"
    assert onto_new["feature_flag"]["active"] is False  # a draft's new flag stays off
    assert [v["key"] for v in onto_new["feature_flag"]["filters"]["multivariate"]["variants"]] == ["control", "test"]
    onto_existing = project.http.post(f"{_base(project)}{source['id']}/duplicate/",
                                      json={"feature_flag_key": "b"}).json()  # fmt: skip
    assert onto_existing["feature_flag"]["id"] == existing["feature_flag"]["id"]
    assert onto_existing["parameters"]["feature_flag_variants"] == three
    bad = project.http.post(f"{_base(project)}{source['id']}/duplicate/", json={"feature_flag_key": "has space"})
    assert bad.status_code == 400 and bad.json()["attr"] == "feature_flag_key"


def test_legacy_experiments_are_not_duplicated_and_unknown_ones_are_404(make_project) -> None:
    project = make_project()
    legacy = _create(project, name="L", feature_flag_key="l",
                     filters={"insight": "TRENDS", "events": [{"id": "$pageview"}]})  # fmt: skip
    refused = project.http.post(f"{_base(project)}{legacy['id']}/duplicate/")
    assert refused.status_code == 400
    assert refused.json()["detail"] == "Duplication is not supported for experiments using legacy metrics."
    assert project.http.post(f"{_base(project)}999999/duplicate/").status_code == 404
    assert project.http.get(_base(project)).json()["count"] == 1


def _flag(project, key: str, variants: list[str] | None, **extra: Any) -> None:
    filters: dict[str, Any] = {"groups": [{"properties": [], "rollout_percentage": 100}]}
    if variants is not None:
        share = 100 / len(variants)
        filters["multivariate"] = {"variants": [{"key": v, "rollout_percentage": share} for v in variants]}
    project.service.state.store.flags.create(project.id, key, name=extra.pop("name", key), filters=filters, **extra)


def test_eligible_feature_flags_are_multivariate_with_control_first(make_project) -> None:
    project = make_project()
    _flag(project, "exp-ok", ["control", "test"])
    _flag(project, "exp-three", ["control", "a", "b"], active=False, name="Three arms")
    _flag(project, "test-first", ["test", "control"])
    _flag(project, "one-variant", ["control"])
    _flag(project, "boolean", None)
    url = f"{_base(project)}eligible_feature_flags/"
    answer = project.http.get(url)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"results", "count"} and body["count"] == 2
    assert [f["key"] for f in body["results"]] == ["exp-three", "exp-ok"]  # newest first
    assert body["results"][0]["filters"]["multivariate"]["variants"][0]["key"] == "control"
    assert [f["key"] for f in project.http.get(url, params={"order": "key"}).json()["results"]] == [
        "exp-ok", "exp-three"]
    assert [f["key"] for f in project.http.get(url, params={"search": "THREE"}).json()["results"]] == ["exp-three"]
    assert [f["key"] for f in project.http.get(url, params={"active": "true"}).json()["results"]] == ["exp-ok"]
    page = project.http.get(url, params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 2 and [f["key"] for f in page["results"]] == ["exp-ok"]
    assert project.http.get(url, params={"has_evaluation_contexts": "true"}).json()["count"] == 0


@pytest.mark.parametrize(("params", "detail"), [({"limit": "x"}, "Invalid limit or offset"),
                                                ({"offset": "1.5"}, "Invalid limit or offset"),
                                                ({"order": "id"}, "Invalid order field: 'id'")])  # fmt: skip
def test_eligible_feature_flags_refuse_bad_parameters(make_project, params, detail) -> None:
    project = make_project()
    answer = project.http.get(f"{_base(project)}eligible_feature_flags/", params=params)
    assert answer.status_code == 400 and answer.json()["detail"] == detail
    if "order" not in params:
        assert answer.json()["error"] == detail  # PostHog's own member for this error


def test_eligible_feature_flags_need_the_flag_scope(make_project) -> None:
    project = make_project()
    reader = project.client(project.new_key(["experiment:read"]))
    assert reader.get(f"{_base(project)}eligible_feature_flags/").status_code == 403
    flags = project.client(project.new_key(["feature_flag:read"]))
    assert flags.get(f"{_base(project)}eligible_feature_flags/").status_code == 200


def test_ship_variant_serves_one_variant_to_everyone_and_ends_the_experiment(make_project) -> None:
    project = make_project()
    running = _create(project, name="Ship", feature_flag_key="ship-me", metrics=[MEAN],
                      start_date="2026-01-01T00:00:00Z")  # fmt: skip
    response = project.http.post(f"{_base(project)}{running['id']}/ship_variant/",
                                 json={"variant_key": "test", "conclusion": "won", "conclusion_comment": "clear"})
    assert response.status_code == 200, response.text
    shipped = response.json()
    assert_valid_experiment(shipped)
    assert shipped["end_date"] is not None
    assert (shipped["conclusion"], shipped["conclusion_comment"]) == ("won", "clear")
    variants = shipped["feature_flag"]["filters"]["multivariate"]["variants"]
    assert [(v["key"], v["rollout_percentage"]) for v in variants] == [("control", 0), ("test", 100)]
    assert shipped["feature_flag"]["filters"]["groups"] == running["feature_flag"]["filters"]["groups"]
    # A flag evaluation now answers the shipped variant for anyone.
    token = project.http.get(f"/api/projects/{project.id}/").json()["api_token"]
    flags = project.http.post("/flags/?v=2", json={"token": token, "distinct_id": "anyone"}).json()
    assert flags["flags"]["ship-me"]["variant"] == "test"
    # An ended experiment keeps its end date when shipped later; everyone too puts a catch-all condition first.
    ended = _create(project, name="Ended", feature_flag_key="ended", metrics=[MEAN],
                    start_date="2026-01-01T00:00:00Z", end_date="2026-01-09T00:00:00Z")  # fmt: skip
    later = project.http.post(f"{_base(project)}{ended['id']}/ship_variant/",
                              json={"variant_key": "control", "release_to_everyone": True}).json()
    assert later["end_date"] == ended["end_date"] and later["conclusion"] is None
    assert later["feature_flag"]["filters"]["groups"][0]["rollout_percentage"] == 100


@pytest.mark.parametrize(("body", "attr"), [
    ({"variant_key": "nope"}, "variant_key"), ({}, "variant_key"), ({"variant_key": "test", "conclusion": "yay"},
                                                                   "conclusion"),
])  # fmt: skip
def test_ship_variant_refuses_what_it_cannot_ship(make_project, body: dict[str, Any], attr: str) -> None:
    project = make_project()
    running = _create(project, name="Ship", feature_flag_key="ship-no", metrics=[MEAN],
                      start_date="2026-01-01T00:00:00Z")  # fmt: skip
    response = project.http.post(f"{_base(project)}{running['id']}/ship_variant/", json=body)
    assert response.status_code == 400 and response.json()["attr"] == attr, response.text
    draft = _create(project, name="Draft", feature_flag_key="ship-draft", metrics=[MEAN])
    refused = project.http.post(f"{_base(project)}{draft['id']}/ship_variant/", json={"variant_key": "test"})
    assert refused.status_code == 400 and "draft" in refused.json()["detail"]
    unchanged = project.http.get(f"{_base(project)}{running['id']}/").json()
    assert unchanged["end_date"] is None and unchanged["feature_flag"] == running["feature_flag"]
