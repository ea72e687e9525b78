"""Abuse: a metric's timeseries is bounded (issue 35, F7): at most ``timeseries_max_days`` daily queries, and at
most ``timeseries_max_active`` recalculations of one experiment at once, whatever fingerprint strings are sent;
each refusal says the bound. Against the session's real service."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import TestProject

METRIC = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m-bound",
          "source": {"kind": "EventsNode", "event": "purchase"}}  # fmt: skip


def _experiment(project: TestProject, key: str, start: str) -> dict[str, Any]:
    body = {"name": key, "feature_flag_key": key, "start_date": start, "metrics": [METRIC]}
    answer = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def _recalculate(project: TestProject, experiment: dict[str, Any], fingerprint: str) -> Any:
    path = f"/api/projects/{project.id}/experiments/{experiment['id']}/recalculate_timeseries/"
    return project.http.post(path, json={"metric": METRIC, "fingerprint": fingerprint})


def test_an_experiment_started_in_1900_is_refused_naming_the_bound(live_project: TestProject) -> None:
    experiment = _experiment(live_project, "from-1900", "1900-01-01T00:00:00Z")
    answer = _recalculate(live_project, experiment, "f")
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert set(error) == {"type", "code", "detail", "attr"} and error["code"] == "timeseries_too_long"
    assert "366 days" in error["detail"] and "HOGLAB_TIMESERIES_MAX_DAYS" in error["detail"]
    listed = live_project.http.get(
        f"/api/projects/{live_project.id}/experiments/{experiment['id']}/timeseries_results/",
        params={"metric_uuid": "m-bound", "fingerprint": "f"},
    )
    assert listed.status_code == 200 and listed.json()["status"] == "pending"  # nothing was started


def test_new_fingerprints_cannot_start_more_recalculations_than_the_bound(live_project: TestProject) -> None:
    start = (datetime.now(UTC) - timedelta(days=300)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    experiment = _experiment(live_project, "many-prints", start)
    first, second = _recalculate(live_project, experiment, "f1"), _recalculate(live_project, experiment, "f2")
    assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
    third = _recalculate(live_project, experiment, "f3")
    assert third.status_code == 429, third.text
    assert third.headers["Retry-After"] and third.json()["code"] == "throttled"
    assert "2 timeseries recalculations" in third.json()["detail"]
    assert "HOGLAB_TIMESERIES_MAX_ACTIVE" in third.json()["detail"]
    # The same fingerprint again is PostHog's idempotent answer: the request already running.
    again = _recalculate(live_project, experiment, "f1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
