"""Experiments randomised by group: PostHog's own golden numbers, and the legacy results counting groups.

PostHog's ``create_standard_group_test_events`` (its experiment query runner tests): group type 0
"organization", 22 users per variant, control user ``i`` in ``org:{i % 2}``, test user ``i`` in
``org:{2 + i % 3}``; each user exposed once (``$feature_flag_called`` with the organisation), users ``i < 6``
(control) and ``i < 8`` (test) buy once an hour after their exposure, ``amount = 10 * i`` for even ``i`` (else
``""``). With the flag's ``aggregation_group_type_index = 0`` PostHog's tests expect: purchases counted per
organisation, control 2 samples summing 6, test 3 summing 8; the amount summed, 60 and 120; a one-step funnel
on ``purchase``, every exposed organisation converting (2 of 2, 3 of 3).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.server.ingest import Ingestor

pytestmark = pytest.mark.xdist_group("metric-experiments")

NOW = (datetime.now(UTC) - timedelta(days=3)).replace(microsecond=0)
FLAG = "org-test"


def _events() -> list[dict[str, Any]]:
    events = []
    for variant, count_buyers, org in (("control", 6, lambda i: i % 2), ("test", 8, lambda i: 2 + i % 3)):
        for i in range(22):
            user, group = f"{variant}_{i}", f"org:{org(i)}"
            groups = {"$groups": {"organization": group}}
            events.append({"event": "$feature_flag_called", "distinct_id": user,
                           "timestamp": (NOW + timedelta(hours=i)).isoformat(),
                           "properties": {"$feature_flag": FLAG, "$feature_flag_response": variant, **groups}})
            if i < count_buyers:
                amount: Any = 10 * i if i % 2 == 0 else ""
                events.append({"event": "purchase", "distinct_id": user,
                               "timestamp": (NOW + timedelta(hours=i + 1)).isoformat(),
                               "properties": {"amount": amount, f"$feature/{FLAG}": variant, **groups}})  # fmt: skip
    for i in range(7):
        events.append({"event": "$groupidentify", "distinct_id": "admin", "timestamp": NOW.isoformat(),
                       "properties": {"$group_type": "organization", "$group_key": f"org:{i}",
                                      "$group_set": {"name": f"org {i}"}}})  # fmt: skip
    return events


@pytest.fixture(scope="module")
def project(results_project):
    project = results_project()
    Ingestor.for_engine(project.service.state.engine).capture_batch(project.id, _events())
    body = {"name": "By organisation", "feature_flag_key": FLAG, "start_date": (NOW - timedelta(hours=1)).isoformat(),
            "parameters": {"aggregation_group_type_index": 0},
            "filters": {"insight": "TRENDS", "events": [{"id": "purchase", "order": 0}]}}  # fmt: skip
    project.experiment = project.create(**body)
    return project


def _stats(project, metric: dict[str, Any]) -> dict[str, tuple[int, float]]:
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": project.experiment["id"], "metric": metric}}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert answer.status_code == 200, answer.text
    arms = [answer.json()["baseline"], *answer.json()["variant_results"]]
    return {arm["key"]: (arm["number_of_samples"], arm["sum"]) for arm in arms}


def test_the_flag_of_an_experiment_by_group_aggregates_by_it(project) -> None:
    flag = project.http.get(f"/api/projects/{project.id}/feature_flags/{project.experiment['feature_flag']['id']}/")
    assert flag.json()["filters"]["aggregation_group_type_index"] == 0


def test_posthog_golden_numbers_count_and_sum(project) -> None:
    count = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode", "event": "purchase"}}
    assert _stats(project, count) == {"control": (2, 6), "test": (3, 8)}
    total = {**count, "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"}}
    assert _stats(project, total) == {"control": (2, 60), "test": (3, 120)}


def test_posthog_golden_numbers_funnel(project) -> None:
    funnel = {"kind": "ExperimentMetric", "metric_type": "funnel", "series": [{"kind": "EventsNode",
              "event": "purchase"}]}  # fmt: skip
    assert _stats(project, funnel) == {"control": (2, 2), "test": (3, 3)}


def test_exposures_are_organisations(project) -> None:
    body = {"query": {"kind": "ExperimentExposureQuery", "experiment_id": project.experiment["id"]}}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["total_exposures"] == {"control": 2, "test": 3}


def test_legacy_results_count_organisations(project) -> None:
    # The legacy engine: the exposure is the unique organisations of $feature_flag_called by the response they got;
    # the metric the purchases, split by the $feature/<flag> they carry.
    answer = project.results(project.experiment["id"])
    assert answer.status_code == 200, answer.text
    variants = {v["key"]: (v["count"], v["absolute_exposure"]) for v in answer.json()["result"]["variants"]}
    assert variants == {"control": (6, 2), "test": (8, 3)}
