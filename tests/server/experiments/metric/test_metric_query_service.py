"""ExperimentQuery through the one query service: the cache follows the stored experiment, async answers equal
blocking ones, another project's experiment is not found, drafts and bad metrics are 400s naming the field."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from . import metric_oracle as oracle

pytestmark = pytest.mark.xdist_group("metric-experiments")

METRIC = {"kind": "ExperimentMetric", "metric_type": "mean",
          "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}  # fmt: skip


@pytest.fixture(scope="module")
def project(results_project) -> Any:
    project = results_project(oracle.generate(7, persons=150))
    project.experiment = project.create(name="service", feature_flag_key="mx-exclude",
                                        start_date=oracle.START.isoformat(), end_date=oracle.END.isoformat())["id"]
    return project


def _post(project: Any, query: dict[str, Any], **request: Any) -> Any:
    return project.http.post(f"/api/projects/{project.id}/query/", json={"query": query, **request})


def _metric_query(project: Any, experiment_id: int | None = None, metric: dict[str, Any] = METRIC) -> dict[str, Any]:
    return {"kind": "ExperimentQuery", "experiment_id": experiment_id or project.experiment, "metric": metric}


def test_the_cache_answers_again_until_the_experiment_is_patched(project):
    first = _post(project, _metric_query(project)).json()
    again = _post(project, _metric_query(project)).json()
    assert first["is_cached"] is False and again["is_cached"] is True
    assert again["variant_results"] == first["variant_results"] and again["cache_key"] == first["cache_key"]
    assert first["variant_results"][0]["method"] == "bayesian"
    url = f"{project.base}{project.experiment}/"
    patched = project.http.patch(url, json={"stats_config": {"method": "frequentist"},
                                            "end_date": (oracle.END - (oracle.END - oracle.START) / 2).isoformat()})
    assert patched.status_code == 200, patched.text
    after = _post(project, _metric_query(project)).json()
    assert after["is_cached"] is False and after["cache_key"] != first["cache_key"]
    assert after["variant_results"][0]["method"] == "frequentist" and "p_value" in after["variant_results"][0]
    # A shorter experiment exposes fewer persons.
    assert after["baseline"]["number_of_samples"] < first["baseline"]["number_of_samples"]
    project.http.patch(url, json={"stats_config": None, "end_date": oracle.END.isoformat()})
    assert _post(project, _metric_query(project)).json()["cache_key"] == first["cache_key"]


def test_an_async_answer_equals_the_blocking_one(project):
    query_id = uuid.uuid4().hex
    submitted = _post(project, _metric_query(project), refresh="force_async", client_query_id=query_id)
    assert submitted.status_code == 202, submitted.text
    deadline = time.monotonic() + 60
    while True:
        status = project.http.get(f"/api/projects/{project.id}/query/{query_id}/")
        if status.status_code != 202:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert status.status_code == 200, status.text
    answer = status.json()["query_status"]["results"]
    blocking = _post(project, _metric_query(project), refresh="force_blocking").json()
    for name in ("kind", "metric", "baseline", "variant_results", "cache_key"):
        assert answer[name] == blocking[name], name


def test_another_projects_experiment_is_not_found(project, results_project):
    other = results_project()
    for query in (_metric_query(other, project.experiment),
                  {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment}):  # fmt: skip
        refused = _post(other, query)
        assert refused.status_code == 404, refused.text
        # the other project's own ids only (it has none): never the id of the project that does have it
        assert refused.json()["detail"] == (
            f"Experiment {project.experiment} not found in project {other.id} (it has no experiments)."
        )
    assert _post(project, _metric_query(project, 10**9)).status_code == 404


def test_a_draft_is_a_400_saying_it_has_not_started(project):
    draft = project.create(name="draft", feature_flag_key="draft-flag")["id"]
    for query in (_metric_query(project, draft), {"kind": "ExperimentExposureQuery", "experiment_id": draft}):
        refused = _post(project, query)
        assert refused.status_code == 400, refused.text
        assert refused.json()["attr"] == "query__experiment_id" and "draft" in refused.json()["detail"]


BAD = [
    ({**METRIC, "source": {"kind": "ActionsNode", "id": "one"}}, "query__metric__source__id", "integer"),
    ({**METRIC, "source": {"kind": "EventsNode", "event": "x", "math": "weekly_active"}},
     "query__metric__source", "weekly_active"),
    ({**METRIC, "upper_bound_percentile": 1.5}, "query__metric__upper_bound_percentile", "1"),
    ({"kind": "ExperimentMetric", "metric_type": "funnel", "series": []}, "query__metric__series", "1"),
    ({"kind": "ExperimentMetric", "metric_type": "ratio", "numerator": METRIC["source"]},
     "query__metric__denominator", "required"),
    ({**METRIC, "metric_type": "retention"}, "query__metric__start_event", "required"),
    ({**METRIC, "metric_type": "trends"}, "query__metric", "metric_type"),
    ({**METRIC, "breakdownFilter": {"breakdowns": [{"property": p} for p in "abcd"]}},
     "query__metric__breakdownFilter", "Maximum of 3 breakdowns are supported for experiment metrics"),
    ({**METRIC, "breakdownFilter": {"breakdowns": [{"property": "x", "type": "group"}]}},
     "query__metric__breakdownFilter", "'group'"),
]


@pytest.mark.parametrize(("metric", "attr", "says"), BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_bad_metrics_are_400s_naming_the_field(project, metric, attr, says):
    refused = _post(project, _metric_query(project, metric=metric))
    assert refused.status_code == 400, refused.text
    assert refused.json()["attr"] == attr and says in refused.json()["detail"]


def test_a_query_without_experiment_id_is_a_400(project):
    refused = _post(project, {"kind": "ExperimentQuery", "metric": METRIC})
    assert refused.status_code == 400 and "experiment_id" in refused.json()["detail"]


def test_exposure_days_are_the_projects_days(results_project):
    zone = "Pacific/Auckland"  # UTC+12 in May: a late-evening UTC exposure is the next day there
    project = results_project(oracle.generate(11, persons=80), timezone=zone)
    experiment = project.create(name="tz", feature_flag_key="mx-first", start_date=oracle.START.isoformat(),
                                end_date=oracle.END.isoformat())["id"]  # fmt: skip
    answer = _post(project, {"kind": "ExperimentExposureQuery", "experiment_id": experiment}).json()
    exposed = oracle.exposures(oracle.generate(11, persons=80), "mx-first")
    local = exposed["first"].dt.tz_convert(zone).dt.strftime("%Y-%m-%d")
    control = next(s for s in answer["timeseries"] if s["variant"] == "control")
    assert control["days"][0] == oracle.START.astimezone(ZoneInfo(zone)).date().isoformat()
    per_day = local[exposed["variant"] == "control"].value_counts()
    assert control["exposure_counts"] == [int(per_day[per_day.index <= d].sum()) for d in control["days"]]
    assert answer["date_range"]["date_from"].endswith("+12:00")


def test_an_exposure_query_reads_its_own_dates_and_criteria_over_the_stored_ones(project):
    end = oracle.START + (oracle.END - oracle.START) / 3
    body = {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment, "end_date": end.isoformat(),
            "exposure_criteria": {"multiple_variant_handling": "first_seen"}}  # fmt: skip
    answer = _post(project, body).json()
    exposed = oracle.exposures(oracle.generate(7, persons=150), "mx-exclude", handling="first_seen", end=end)
    assert answer["total_exposures"] == exposed["variant"].value_counts().to_dict()
    assert answer["timeseries"][0]["days"][-1] == end.date().isoformat()
    assert answer["date_range"]["date_to"] == end.isoformat()
    stored = _post(project, {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment}).json()
    assert sum(stored["total_exposures"].values()) > sum(answer["total_exposures"].values())
    assert "$multiple" in stored["total_exposures"]  # the stored criteria: exclude


def test_an_exposure_query_of_another_flag_is_refused(project):
    """PostHog's runner reads the flag it is sent; hoglab reads the experiment's: another flag is a 400, not ignored."""
    base = {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment}
    assert _post(project, {**base, "feature_flag": {"key": "mx-exclude"}}).status_code == 200
    refused = _post(project, {**base, "feature_flag": {"key": "some-other-flag"}})
    assert refused.status_code == 400, refused.text
    assert refused.json()["attr"] == "query__feature_flag__key" and "mx-exclude" in refused.json()["detail"]


def test_three_variants_answer_in_the_flags_order_and_an_unseen_variant_answers_zeros(results_project):
    variants = [{"key": "control", "rollout_percentage": 40}, {"key": "blue", "rollout_percentage": 30},
                {"key": "green", "rollout_percentage": 20}, {"key": "red", "rollout_percentage": 10}]  # fmt: skip
    rows, expected = [], {}
    for i, (variant, spend) in enumerate([("green", 5.0), ("control", 2.0), ("blue", 3.0)] * 20):
        user, at = f"p-{i}", oracle.START + timedelta(hours=i)
        properties = {"$feature_flag": "colours", "$feature_flag_response": variant}
        rows.append({"event": "$feature_flag_called", "distinct_id": user, "timestamp": at, "properties": properties})
        rows.append({"event": "purchase", "distinct_id": user, "timestamp": at + timedelta(minutes=5),
                     "properties": {"price": spend * (i % 4)}})  # fmt: skip
        n, total = expected.get(variant, (0, 0.0))
        expected[variant] = (n + 1, total + spend * (i % 4))
    project = results_project(pd.DataFrame(rows).assign(person=lambda f: f["distinct_id"]))
    experiment = project.create(name="colours", feature_flag_key="colours", start_date=oracle.START.isoformat(),
                                end_date=oracle.END.isoformat(), parameters={"feature_flag_variants": variants})
    answer = _post(project, _metric_query(project, experiment["id"])).json()
    assert answer["baseline"]["key"] == "control"
    assert [v["key"] for v in answer["variant_results"]] == ["blue", "green", "red"]
    for item in [answer["baseline"], *answer["variant_results"][:2]]:
        assert (item["number_of_samples"], item["sum"]) == (expected[item["key"]][0], expected[item["key"]][1])
    red = answer["variant_results"][2]
    assert (red["number_of_samples"], red["sum"], red["sum_squares"]) == (0, 0, 0)
    assert "not-enough-exposures" in red["validation_failures"] and red["chance_to_win"] is None


@pytest.mark.parametrize("kind", ["ExperimentQuery", "ExperimentExposureQuery"])
def test_an_experiment_id_beyond_any_integer_the_store_holds_is_a_400_naming_it(project, kind):
    query = {"kind": kind, "experiment_id": 10**30, **({"metric": METRIC} if kind == "ExperimentQuery" else {})}
    refused = _post(project, query)
    assert refused.status_code == 400, refused.text
    assert refused.json()["attr"] == "query__experiment_id"


def test_ignore_zeros_on_a_metric_nobody_did_answers_zeros_not_an_error(project):
    metric = {"kind": "ExperimentMetric", "metric_type": "mean", "upper_bound_percentile": 0.9, "ignore_zeros": True,
              "source": {"kind": "EventsNode", "event": "never-sent", "math": "sum", "math_property": "price"}}
    answer = _post(project, _metric_query(project, metric=metric))
    assert answer.status_code == 200, answer.text
    exposed = oracle.exposures(oracle.generate(7, persons=150), "mx-exclude")
    control = answer.json()["baseline"]
    assert control["number_of_samples"] == int((exposed["variant"] == "control").sum()) > 0
    assert (control["sum"], control["sum_squares"]) == (0, 0)


def test_an_exposure_window_longer_than_the_days_shown_still_counts_every_exposure(project):
    def exposures(start: str) -> dict[str, Any]:
        body = {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment, "start_date": start,
                "end_date": oracle.END.isoformat()}  # fmt: skip
        answer = _post(project, body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    within = exposures("2016-01-01")  # fewer days than the series shows at most
    longer = exposures("1990-01-01")
    assert sum(within["total_exposures"].values()) > 0
    assert longer["total_exposures"] == within["total_exposures"]
    control = next(s for s in longer["timeseries"] if s["variant"] == "control")
    assert control["days"][-1] == oracle.END.date().isoformat()
    assert control["exposure_counts"][-1] == within["total_exposures"]["control"]


def test_a_ratio_whose_denominator_nobody_did_answers_without_a_test_not_an_error(project):
    metric = {"kind": "ExperimentMetric", "metric_type": "ratio",
              "numerator": {"kind": "EventsNode", "event": "purchase"},
              "denominator": {"kind": "EventsNode", "event": "never-sent"}}  # fmt: skip
    answer = _post(project, _metric_query(project, metric=metric))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["baseline"]["sum"] > 0 and body["baseline"]["denominator_sum"] == 0
    assert "baseline-mean-is-zero" in body["baseline"]["validation_failures"]
    assert body["variant_results"][0]["chance_to_win"] is None


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00+05:00", "0001-01-01T03:00:00+12:00", "0001-01-01"])
def test_an_exposure_start_at_the_calendars_edge_is_a_400_naming_it(project, start):
    # Year 1 east of UTC is year 0 in UTC; year 1 in UTC is year 0 in any zone west of it.
    refused = _post(project, {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment,
                              "start_date": start})  # fmt: skip
    assert refused.status_code == 400, refused.text
    assert refused.json()["attr"] == "query__start_date"
