"""The metric-experiment fields over HTTP: create, PATCH, list and retrieve keep them; bad ones are 400s naming
the field, with nothing written."""

from __future__ import annotations

import pytest

from posthog_openapi import assert_valid

MEAN = {"kind": "ExperimentMetric", "metric_type": "mean", "name": "spend",
        "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
        "upper_bound_percentile": 0.99, "ignore_zeros": True}  # fmt: skip
FUNNEL = {"kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "funnel-1", "funnel_order_type": "strict",
          "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "purchase"}]}
RATIO = {"kind": "ExperimentMetric", "metric_type": "ratio", "uuid": "ratio-1",
         "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
         "denominator": {"kind": "EventsNode", "event": "purchase"}}  # fmt: skip
CRITERIA = {"filterTestAccounts": False, "multiple_variant_handling": "first_seen",
            "exposure_config": {"kind": "ExperimentEventExposureConfig", "event": "checkout_seen",
                                "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]}}


COMPONENTS = {"mean": "ExperimentMeanMetric", "funnel": "ExperimentFunnelMetric", "ratio": "ExperimentRatioMetric"}


def _base(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _assert_posthogs_experiment(body: dict) -> None:
    # PostHog's document requires members hoglab leaves out (holdout, saved metrics, access levels, the flag's
    # evaluation tags; "holdout" is even non-nullable though PostHog answers null): every member hoglab writes is
    # checked against PatchedExperiment (same properties, none required), the nested flag aside (the seed's shape).
    assert_valid(body, "PatchedExperiment", drop=("feature_flag",))
    for metric in [*body["metrics"], *body["metrics_secondary"]]:
        assert_valid(metric, COMPONENTS[metric["metric_type"]], drop=())
    if body["exposure_criteria"] is not None:
        assert_valid(body["exposure_criteria"], "ExperimentExposureCriteria", drop=())


def test_create_keeps_every_metric_field_and_answers_posthogs_experiment(make_project):
    project = make_project()
    body = {"name": "Metrics", "feature_flag_key": "metrics-flag", "type": "web", "metrics": [MEAN, FUNNEL],
            "metrics_secondary": [RATIO], "exposure_criteria": CRITERIA, "stats_config": {"method": "frequentist"},
            "conclusion": "won", "conclusion_comment": "clear", "primary_metrics_ordered_uuids": ["funnel-1"],
            "secondary_metrics_ordered_uuids": ["ratio-1"]}  # fmt: skip
    created = project.http.post(_base(project), json=body)
    assert created.status_code == 201, created.text
    experiment = created.json()
    _assert_posthogs_experiment(experiment)
    mean, funnel = experiment["metrics"]
    assert mean["uuid"] and mean == {**MEAN, "uuid": mean["uuid"]}  # a uuid was given to the metric without one
    assert funnel == FUNNEL and experiment["metrics_secondary"] == [RATIO]
    assert experiment["exposure_criteria"] == CRITERIA and experiment["stats_config"] == {"method": "frequentist"}
    assert (experiment["type"], experiment["conclusion"], experiment["conclusion_comment"]) == ("web", "won", "clear")
    assert experiment["primary_metrics_ordered_uuids"] == ["funnel-1"]
    retrieved = project.http.get(f"{_base(project)}{experiment['id']}/").json()
    listed = project.http.get(_base(project)).json()["results"]
    assert retrieved == experiment and listed == [experiment]


def test_patch_changes_metric_fields_and_an_experiment_without_them_answers_empty_lists(make_project):
    project = make_project()
    experiment = project.http.post(_base(project), json={"name": "Plain", "feature_flag_key": "plain"}).json()
    assert experiment["metrics"] == [] and experiment["metrics_secondary"] == []
    assert experiment["stats_config"] is None and experiment["type"] == "product"
    url = f"{_base(project)}{experiment['id']}/"
    patched = project.http.patch(url, json={"metrics": [RATIO], "stats_config": {"method": "bayesian"},
                                            "conclusion": "inconclusive", "exposure_criteria": CRITERIA})
    assert patched.status_code == 200, patched.text
    _assert_posthogs_experiment(patched.json())
    again = project.http.get(url).json()
    assert again["metrics"] == [RATIO] and again["stats_config"] == {"method": "bayesian"}
    assert again["conclusion"] == "inconclusive" and again["exposure_criteria"] == CRITERIA
    cleared = project.http.patch(url, json={"metrics": None, "conclusion": ""}).json()
    assert cleared["metrics"] == [] and cleared["conclusion"] is None
    assert cleared["stats_config"] == {"method": "bayesian"}


BAD = [
    ({"metrics": [{**MEAN, "source": {"kind": "ActionsNode", "id": 3, "math": "p90"}}]}, "metrics__0__source",
     "p90"),
    ({"metrics": [{**MEAN, "metric_type": "median"}]}, "metrics__0", "metric_type"),
    ({"metrics": [{**FUNNEL, "series": []}]}, "metrics__0__series", "at least 1"),
    ({"metrics_secondary": [{**RATIO, "denominator": {"kind": "ExperimentDataWarehouseNode"}}]},
     "metrics_secondary__0__denominator", "warehouse"),
    ({"metrics": [FUNNEL, FUNNEL]}, "metrics", "unique"),
    ({"exposure_criteria": {"multiple_variant_handling": "newest"}}, "exposure_criteria__multiple_variant_handling",
     "first_seen"),
    ({"exposure_criteria": {"exposure_config": {"event": ""}}}, "exposure_criteria__exposure_config__event", ""),
    ({"stats_config": {"method": "bootstrap"}}, "stats_config__method", "frequentist"),
    ({"type": "mobile"}, "type", "web"),
    ({"conclusion": "great"}, "conclusion", "won"),
]


@pytest.mark.parametrize(("change", "attr", "says"), BAD, ids=[b[1] for b in BAD])
def test_bad_metric_fields_are_400s_naming_the_field_and_write_nothing(make_project, change, attr, says):
    project = make_project()
    refused = project.http.post(_base(project), json={"name": "Bad", "feature_flag_key": "bad", **change})
    assert refused.status_code == 400, refused.text
    assert refused.json()["attr"] == attr and says in refused.json()["detail"]
    assert project.http.get(_base(project)).json()["count"] == 0
    assert project.service.state.store.flags.get_by_key(project.id, "bad") is None
    experiment = project.http.post(_base(project), json={"name": "Ok", "feature_flag_key": "ok",
                                                         "metrics": [FUNNEL]}).json()
    url = f"{_base(project)}{experiment['id']}/"
    refused = project.http.patch(url, json=change)
    assert refused.status_code == 400 and refused.json()["attr"] == attr
    assert project.http.get(url).json() == experiment


@pytest.mark.parametrize(("body", "attr"), [
    ({"metrics": [{**MEAN, "source": {**MEAN["source"], "properties": [{"type": "hogql", "key": "nope("}]}}]},
     "metrics__0__source__properties__0__key"),
    ({"metrics_secondary": [{**FUNNEL, "series": [FUNNEL["series"][0],
                                                  {"kind": "EventsNode", "event": "purchase",
                                                   "properties": [{"type": "hogql", "key": "1) OR (1"}]}]}]},
     "metrics_secondary__0__series__1__properties__0__key"),
    ({"exposure_criteria": {"exposure_config": {"kind": "ExperimentEventExposureConfig", "event": "seen",
                                                "properties": [{"type": "hogql", "key": "nope("}]}}},
     "exposure_criteria__exposure_config__properties__0__key"),
])  # fmt: skip
def test_a_hogql_filter_that_cannot_parse_is_refused_when_stored_not_at_every_query(make_project, body, attr):
    project = make_project()
    experiment = project.http.post(_base(project), json={"name": "HogQL", "feature_flag_key": "hogql-f"}).json()
    url = f"{_base(project)}{experiment['id']}/"
    for response in (project.http.patch(url, json=body),
                     project.http.post(_base(project), json={"name": "x", "feature_flag_key": "hogql-g", **body})):
        assert response.status_code == 400, response.text
        assert response.json()["attr"] == attr and "HogQL" in response.json()["detail"]
    assert project.http.get(url).json() == experiment  # nothing written
    assert len(project.http.get(_base(project)).json()["results"]) == 1
