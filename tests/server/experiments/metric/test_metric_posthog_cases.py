"""Cases of PostHog's own ExperimentQuery test suite (``test_mean_metric.py``), their events and their numbers:
the same sums come out of hoglab.

The experiment's window covers the events (PostHog's tests set it with their helper); everything else, events,
metric and expected numbers, is PostHog's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

pytestmark = pytest.mark.xdist_group("metric-experiments")

FLAG = "test-experiment"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=UTC)


def _exposed(user: str, variant: str, ts: str) -> dict[str, Any]:
    properties = {f"$feature/{FLAG}": variant, "$feature_flag_response": variant, "$feature_flag": FLAG}
    return {"event": "$feature_flag_called", "distinct_id": user, "timestamp": _at(ts), "properties": properties}


def _purchase(user: str, variant: str, ts: str, **properties: Any) -> dict[str, Any]:
    return {"event": "purchase", "distinct_id": user, "timestamp": _at(ts),
            "properties": {f"$feature/{FLAG}": variant, **properties}}  # fmt: skip


def _run(results_project, rows: list[dict[str, Any]], metric: dict[str, Any], start: str, end: str) -> dict:
    frame = pd.DataFrame(rows).assign(person=lambda f: f["distinct_id"])
    project = results_project(frame.sort_values("timestamp", kind="stable").reset_index(drop=True))
    experiment = project.create(name="posthog case", feature_flag_key=FLAG, start_date=start, end_date=end,
                                stats_config={"method": "frequentist"})  # fmt: skip
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"],
                      "metric": {"kind": "ExperimentMetric", "metric_type": "mean", **metric}}}  # fmt: skip
    response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


SUM = {"source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"}}


def test_property_sum_metric(results_project):
    rows = []
    for variant, buyers, amount in (("control", 6, 10), ("test", 8, 15)):
        for i in range(10):
            rows.append(_exposed(f"user_{variant}_{i}", variant, "2020-01-02T12:00:00Z"))
            if i < buyers:
                rows.append(_purchase(f"user_{variant}_{i}", variant, "2020-01-02T12:01:00Z", amount=amount))
    answer = _run(results_project, rows, SUM, "2020-01-01T00:00:00Z", "2020-01-31T00:00:00Z")
    assert (answer["baseline"]["sum"], answer["variant_results"][0]["sum"]) == (60, 120)
    assert answer["baseline"]["number_of_samples"] == answer["variant_results"][0]["number_of_samples"] == 10


def test_conversion_window_extends_to_last_exposure(results_project):
    user = "user_control_window"
    rows = [_exposed(user, "control", ts) for ts in ("2020-01-02T00:00:00Z", "2020-01-05T00:00:00Z")]
    rows.append(_purchase(user, "control", "2020-01-05T12:00:00Z", amount=25))
    metric = {**SUM, "conversion_window": 1, "conversion_window_unit": "day"}
    answer = _run(results_project, rows, metric, "2020-01-01T00:00:00Z", "2020-01-10T00:00:00Z")
    assert (answer["baseline"]["sum"], answer["baseline"]["number_of_samples"]) == (25, 1)


def test_outlier_handling_for_sum_metric(results_project):
    amounts = {"control": [1, 102, 103, 104, 105, 106, 107, 108, 109, 1110], "test": list(range(101, 111))}
    rows = []
    for variant, values in amounts.items():
        for i, amount in enumerate(values, 1):
            rows.append(_exposed(f"{variant}_{i}", variant, "2024-01-02T12:00:00Z"))
            rows.append(_purchase(f"{variant}_{i}", variant, "2024-01-02T12:01:00Z", amount=amount))
    metric = {**SUM, "lower_bound_percentile": 0.1, "upper_bound_percentile": 0.9}
    answer = _run(results_project, rows, metric, "2024-01-01T00:00:00Z", "2024-01-31T00:00:00Z")
    assert answer["baseline"]["sum"] == pytest.approx(1055)
    assert answer["variant_results"][0]["sum"] == pytest.approx(1055)


def test_outlier_handling_for_count_metric(results_project):
    counts = {"control": [1, *[3] * 8, 100], "test": [2, *[4] * 9]}
    rows = []
    for variant, values in counts.items():
        for i, count in enumerate(values, 1):
            rows.append(_exposed(f"{variant}_{i}", variant, "2024-01-02T12:00:00Z"))
            # PostHog writes f"12:01:{j:02d}" (seconds past 59 for the 100-purchase person); a second apart here.
            rows += [{**_purchase(f"{variant}_{i}", variant, "2024-01-02T12:01:00Z"),
                      "timestamp": _at("2024-01-02T12:01:00Z") + timedelta(seconds=j)} for j in range(count)]
    metric = {"source": {"kind": "EventsNode", "event": "purchase", "math": "total"},
              "lower_bound_percentile": 0.1, "upper_bound_percentile": 0.9}  # fmt: skip
    answer = _run(results_project, rows, metric, "2024-01-01T00:00:00Z", "2024-01-31T00:00:00Z")
    assert answer["baseline"]["sum"] == pytest.approx(30.9)
    assert answer["variant_results"][0]["sum"] == pytest.approx(38.9)
    assert answer["baseline"]["number_of_samples"] == answer["variant_results"][0]["number_of_samples"] == 10


def _qualified_purchase_rows(with_flag_called: bool) -> list[dict[str, Any]]:
    # PostHog's action exposure case: 10 users per variant; purchases by users i < 6 (control) / i < 8 (test),
    # with plan "premium" for i < 3 / i < 4.
    rows = []
    for variant, buyers, premium in (("control", 6, 3), ("test", 8, 4)):
        for i in range(10):
            user = f"user_{variant}_{i}"
            if with_flag_called:
                rows.append(_exposed(user, variant, "2024-01-02T12:00:00Z"))
            if i < buyers:
                plan = "premium" if i < premium else "basic"
                rows.append(_purchase(user, variant, "2024-01-02T12:01:00Z", plan=plan))
    return rows


def _qualified_purchase(project: Any) -> int:
    step = {"event": "purchase", "properties": [{"key": "plan", "value": "premium", "type": "event"}]}
    created = project.http.post(f"/api/projects/{project.id}/actions/", json={"name": "Qualified Purchase",
                                                                             "steps": [step]})  # fmt: skip
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def test_exposure_by_an_action_counts_the_actions_events(results_project):
    # PostHog's exposure-criteria case with an ActionsNode (its numbers: control 3 and 3, test 4 and 4): the
    # action's events expose, with the variant of their $feature/<flag>; each exposed person's one purchase (the
    # exposing event itself, at the exposure time) counts for a count of purchases.
    frame = pd.DataFrame(_qualified_purchase_rows(False)).assign(person=lambda f: f["distinct_id"])
    project = results_project(frame)
    action = _qualified_purchase(project)
    experiment = project.create(
        name="action exposure", feature_flag_key=FLAG, start_date="2024-01-01T00:00:00Z",
        end_date="2024-01-31T00:00:00Z", exposure_criteria={"exposure_config": {"kind": "ActionsNode", "id": action}},
    )  # fmt: skip
    metric = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode", "event": "purchase"}}
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert (answer["baseline"]["number_of_samples"], answer["baseline"]["sum"]) == (3, 3)
    test = answer["variant_results"][0]
    assert (test["number_of_samples"], test["sum"]) == (4, 4)
    exposures = project.http.post(f"/api/projects/{project.id}/query/", json={"query": {
        "kind": "ExperimentExposureQuery", "experiment_id": experiment["id"]}}).json()  # fmt: skip
    assert exposures["total_exposures"] == {"control": 3, "test": 4}


def test_a_mean_metric_whose_source_is_an_action(results_project):
    frame = pd.DataFrame(_qualified_purchase_rows(True)).assign(person=lambda f: f["distinct_id"])
    project = results_project(frame)
    action = _qualified_purchase(project)
    experiment = project.create(name="action metric", feature_flag_key=FLAG, start_date="2024-01-01T00:00:00Z",
                                end_date="2024-01-31T00:00:00Z")  # fmt: skip
    metric = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "ActionsNode", "id": action}}
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert (answer["baseline"]["number_of_samples"], answer["baseline"]["sum"]) == (10, 3)
    assert (answer["variant_results"][0]["number_of_samples"], answer["variant_results"][0]["sum"]) == (10, 4)
    # The node's own filters are AND-ed onto the action's: nobody bought premium on "basic".
    narrowed = {**metric, "source": {**metric["source"], "properties": [
        {"key": "plan", "value": "basic", "type": "event"}]}}  # fmt: skip
    body["query"]["metric"] = narrowed
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert answer["baseline"]["sum"] == answer["variant_results"][0]["sum"] == 0
