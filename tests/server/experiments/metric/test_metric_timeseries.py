"""A metric's results day by day: ``recalculate_timeseries/`` and ``timeseries_results/`` (PostHog's endpoints).

Each stored day is the cumulative ``ExperimentQuery`` answer up to that day's end, checked against the pandas
restatement (``metric_oracle``) cut at the same moment; the statuses, the idempotent recalculation, the first
reader starting the days (hoglab has no nightly job; a linked saved metric's too) and PostHog's 400s.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.schema import metric_fingerprint, saved_metric_definition

from . import metric_oracle as oracle

pytestmark = pytest.mark.xdist_group("metric-experiments")

METRIC = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m-revenue",
          "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}  # fmt: skip


@pytest.fixture(scope="module")
def setup(results_project) -> dict[str, Any]:
    events = oracle.generate(424, persons=160)
    project = results_project(events)
    experiment = project.create(name="daily", feature_flag_key="mx-exclude", start_date=oracle.START.isoformat(),
                                end_date=oracle.END.isoformat(), metrics=[METRIC],
                                stats_config={"method": "frequentist"})  # fmt: skip
    return {"project": project, "events": events, "experiment": experiment}


def _base(setup: dict[str, Any]) -> str:
    return f"/api/projects/{setup['project'].id}/experiments/{setup['experiment']['id']}/"


def _fingerprint(setup: dict[str, Any], metric: dict[str, Any] = METRIC) -> str:
    experiment = setup["experiment"]
    return metric_fingerprint(experiment["metrics"][0] if metric is METRIC else metric,
                              datetime.fromisoformat(experiment["start_date"].replace("Z", "+00:00")), "frequentist")


def _wait(setup: dict[str, Any], fingerprint: str, uuid: str = "m-revenue") -> dict[str, Any]:
    http = setup["project"].http
    for _ in range(300):
        body = http.get(_base(setup) + "timeseries_results/", params={"metric_uuid": uuid, "fingerprint": fingerprint})
        assert body.status_code == 200, body.text
        if body.json()["recalculation_status"] is None and body.json()["status"] != "pending":
            return dict(body.json())
        time.sleep(0.2)
    raise AssertionError(f"never finished: {body.json()}")


def test_the_first_reader_starts_the_days_and_each_day_is_cumulative(setup):
    fingerprint = _fingerprint(setup)
    answer = _wait(setup, fingerprint)
    assert answer["status"] == "completed" and answer["errors"] is None
    days = list(answer["timeseries"])
    assert days[0] == oracle.START.date().isoformat() and days[-1] == oracle.END.date().isoformat()
    assert len(days) == (oracle.END.date() - oracle.START.date()).days + 1
    events = setup["events"]
    for day, result in answer["timeseries"].items():
        day_end = min(datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(days=1), oracle.END)
        exposed = oracle.exposures(events, "mx-exclude", end=day_end)
        values = oracle.person_values(events, exposed, "purchase", "sum", "price", end=day_end)
        expected = oracle.sums(exposed, values)
        for arm in (result["baseline"], *result["variant_results"]):
            n, total, squares = expected.get(arm["key"], (0, 0.0, 0.0))
            assert (arm["number_of_samples"], arm["sum"]) == (n, pytest.approx(total, rel=1e-9)), (day, arm["key"])
            assert arm["sum_squares"] == pytest.approx(squares, rel=1e-9)
        assert "is_cached" not in result and "timings" not in result
    # The last day is the whole experiment: the same answer /query gives.
    query = {"query": {"kind": "ExperimentQuery", "experiment_id": setup["experiment"]["id"], "metric": METRIC}}
    whole = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/", json=query).json()
    assert answer["timeseries"][days[-1]]["variant_results"] == whole["variant_results"]


def test_a_linked_saved_metric_has_its_days_under_the_saved_querys_uuid(setup):
    project, http = setup["project"], setup["project"].http
    query = {k: v for k, v in METRIC.items() if k != "uuid"}
    saved = http.post(f"/api/projects/{project.id}/experiment_saved_metrics/",
                      json={"name": "revenue, saved", "query": query})  # fmt: skip
    assert saved.status_code == 201, saved.text
    saved_id, uuid = saved.json()["id"], saved.json()["query"]["uuid"]
    linked = http.patch(_base(setup), json={"saved_metrics_ids": [{"id": saved_id, "metadata": {"type": "primary"}}]})
    assert linked.status_code == 200, linked.text
    # The metric as linked (PostHog's resolve_saved_metric_definition), as the toolkit sends it to /query.
    metric = saved_metric_definition(saved.json()["query"], {"type": "primary"}, saved_metric_id=saved_id,
                                     name="revenue, saved")  # fmt: skip
    fingerprint = metric_fingerprint(metric, oracle.START, "frequentist")
    base = _base(setup)
    for _ in range(300):  # the first reader starts the days, as for the experiment's own metrics
        answer = http.get(base + "timeseries_results/", params={"metric_uuid": uuid, "fingerprint": fingerprint})
        assert answer.status_code == 200, answer.text
        if answer.json()["recalculation_status"] is None and answer.json()["status"] != "pending":
            break
        time.sleep(0.2)
    body = answer.json()
    assert body["status"] == "completed" and body["metric_uuid"] == uuid
    last = body["timeseries"][oracle.END.date().isoformat()]
    query = {"query": {"kind": "ExperimentQuery", "experiment_id": setup["experiment"]["id"], "metric": metric}}
    whole = http.post(f"/api/projects/{project.id}/query/", json=query).json()
    assert last["variant_results"] == whole["variant_results"] and last["baseline"] == whole["baseline"]


def test_a_recalculation_is_idempotent_while_it_runs_and_replaces_the_days(setup):
    store = setup["project"].service.state.store
    fingerprint = "manual-fingerprint"
    metric = {**METRIC, "uuid": "m-manual"}
    # An active request already there (as if a recalculation were running): PostHog answers it, 200.
    running, created = store.experiment_timeseries.start_request(setup["project"].id, setup["experiment"]["id"],
                                                                 "m-manual", fingerprint, metric)  # fmt: skip
    assert created
    http = setup["project"].http
    again = http.post(_base(setup) + "recalculate_timeseries/", json={"metric": metric, "fingerprint": fingerprint})
    assert again.status_code == 200 and again.json()["id"] == running.id
    store.experiment_timeseries.set_request_status(running.id, "failed", "test")
    fresh = http.post(_base(setup) + "recalculate_timeseries/", json={"metric": metric, "fingerprint": fingerprint})
    assert fresh.status_code == 201, fresh.text
    body = fresh.json()
    assert set(body) == {"id", "experiment_id", "metric_uuid", "fingerprint", "status", "created_at"}
    assert (body["status"], body["metric_uuid"], body["experiment_id"]) == ("pending", "m-manual",
                                                                             setup["experiment"]["id"])  # fmt: skip
    done = _wait(setup, fingerprint, "m-manual")
    assert done["status"] == "completed"


def test_a_day_that_fails_keeps_its_error(setup):
    source = {"kind": "EventsNode", "event": "purchase", "math": "hogql",
              "math_hogql": "toFloat(properties.price) / nosuchcolumn"}  # fmt: skip
    metric = {**METRIC, "uuid": "m-bad", "source": source}
    http = setup["project"].http
    assert http.post(_base(setup) + "recalculate_timeseries/",
                     json={"metric": metric, "fingerprint": "f-bad"}).status_code == 201  # fmt: skip
    answer = _wait(setup, "f-bad", "m-bad")
    assert answer["status"] == "failed"
    assert set(answer["errors"]) == set(answer["timeseries"]) and all(v is None for v in answer["timeseries"].values())


def test_nothing_stored_for_an_unknown_fingerprint_is_pending(setup):
    answer = setup["project"].http.get(_base(setup) + "timeseries_results/",
                                       params={"metric_uuid": "m-revenue", "fingerprint": "other"}).json()  # fmt: skip
    assert answer["status"] == "pending" and answer["recalculation_status"] is None
    assert set(answer["timeseries"].values()) == {None}


@pytest.mark.parametrize(("params", "detail"), [
    ({"fingerprint": "x"}, "metric_uuid query parameter is required"),
    ({"metric_uuid": "x"}, "fingerprint query parameter is required"),
])  # fmt: skip
def test_timeseries_results_400s(setup, params, detail):
    refused = setup["project"].http.get(_base(setup) + "timeseries_results/", params=params)
    assert refused.status_code == 400 and refused.json()["detail"] == detail


@pytest.mark.parametrize(("body", "detail", "attr"), [
    ({"fingerprint": "x"}, "metric is required", "metric"),
    ({"metric": METRIC}, "fingerprint is required", "fingerprint"),
    ({"metric": {**METRIC, "metric_type": "nope"}, "fingerprint": "x"}, "metric_type", "metric"),
])  # fmt: skip
def test_recalculate_400s(setup, body, detail, attr):
    refused = setup["project"].http.post(_base(setup) + "recalculate_timeseries/", json=body)
    assert refused.status_code == 400 and detail in refused.json()["detail"] and refused.json()["attr"] == attr


def test_a_draft_has_no_days(setup):
    http, project = setup["project"].http, setup["project"]
    draft = project.create(name="draft", feature_flag_key="ts-draft", metrics=[METRIC])["id"]
    base = f"/api/projects/{project.id}/experiments/{draft}/"
    got = http.get(base + "timeseries_results/", params={"metric_uuid": "m-revenue", "fingerprint": "x"})
    assert got.status_code == 400 and got.json()["detail"] == "Experiment has not been started yet"
    posted = http.post(base + "recalculate_timeseries/", json={"metric": METRIC, "fingerprint": "x"})
    assert posted.status_code == 400
    assert posted.json()["detail"] == "Cannot recalculate timeseries for experiment that hasn't started"
    assert http.get(f"/api/projects/{project.id}/experiments/999999/timeseries_results/",
                    params={"metric_uuid": "a", "fingerprint": "b"}).status_code == 404  # fmt: skip
