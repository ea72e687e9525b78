"""An experiment with a holdout and a saved metric, fed by the official ``posthog`` SDK and analysed over HTTP on
the real service.

``hoglab.notebook.holdout_tour.feed_holdout_experiment`` makes the holdout (20%), the saved metric and the
experiment, then plays a week of seeded visits: each user's flag value comes from ``/flags`` (remote evaluation)
and from the SDK's own evaluation of the polled definitions (local evaluation); the visit's events go to
``/batch``. Checked here: both evaluations agree and hold out exactly the persons PostHog's hash holds out (SHA-1
of ``holdout-<distinct id>``, restated with hashlib); PostHog's default answers leave the holdout out; hoglab's
``compare_to_holdout`` answers equal a pandas restatement of the stored events (read back over HogQL) with the
holdout as the baseline; every answer validates against PostHog's OpenAPI document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.client import Client
from hoglab.notebook.holdout_tour import HOLDOUT_FLAG_KEY, feed_holdout_experiment
from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import CACHE_FIELDS, assert_valid

from .conftest import Fed

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS = 600
ANSWER_EXTRAS = (*CACHE_FIELDS, "query_status", "timings")


@pytest.fixture(scope="module")
def fed(feed_sdk_project: Callable[..., Fed]) -> Fed:
    return feed_sdk_project("holdout experiment", lambda client, key: feed_holdout_experiment(client, key, users=USERS))


def _held_out(distinct_id: str, share: float) -> bool:
    """PostHog's holdout hash restated: SHA-1 of "holdout-<id>", 15 hex digits over 0xFFFFFFFFFFFFFFF."""
    value = int(hashlib.sha1(f"holdout-{distinct_id}".encode()).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF
    return value <= share / 100


def _per_person(events: pd.DataFrame) -> pd.DataFrame:
    """Per exposed person (holdout included): the arm of their first exposure, the revenue and whether they bought
    after checking out, from the raw events alone (PostHog's rules: metric events from the exposure on)."""
    calls = events[(events["event"] == "$feature_flag_called") & (events["flag"] == HOLDOUT_FLAG_KEY)]
    first = calls.sort_values("timestamp").groupby("person_id").agg(
        arm=("response", "first"), exposed_at=("timestamp", "first"), arms=("response", "nunique"))
    first = first[first["arms"] == 1].drop(columns="arms")
    after = events.merge(first, left_on="person_id", right_index=True)
    after = after[after["timestamp"] >= after["exposed_at"]]
    purchases = after[after["event"] == "purchase"]
    checkouts = after[after["event"] == "checkout"].groupby("person_id")["timestamp"].min()
    bought = purchases[purchases["timestamp"] > purchases["person_id"].map(checkouts)]
    out = first.assign(revenue=purchases.groupby("person_id")["price"].sum()).fillna({"revenue": 0.0})
    out["converted"] = out.index.isin(set(bought["person_id"])).astype(float)
    return out


def test_remote_and_local_evaluation_agree_and_hold_out_posthogs_persons(fed: Any) -> None:
    _, demo, _, events = fed
    value = f"holdout-{demo.holdout.id}"
    assert demo.holdout.variant_key == value and demo.holdout.exclusion_percentage == 20
    assert len(demo.local) == USERS and demo.disagreements == {}
    for user, got in demo.assigned.items():
        assert (got == value) == _held_out(user, 20), user
        if got != value:
            assert got in ("control", "test")
    held = sum(v == value for v in demo.assigned.values())
    assert 0.13 < held / USERS < 0.27
    calls = events[events["event"] == "$feature_flag_called"]
    assert (calls["response"] == value).sum() == held  # the SDK's events carry the holdout value


def test_posthogs_default_answers_leave_the_holdout_out(fed: Any) -> None:
    _, demo, result, events = fed
    assert result.errors == {} and result.holdout_errors == {}
    per_person = _per_person(events)
    labels = [a.label for a in result.metrics]
    assert labels == ["checkout → purchase", f"revenue per person ({HOLDOUT_FLAG_KEY})"]  # inline, then saved
    for answer in result.metrics:
        assert answer.answer is not None
        assert_valid(dict(answer.answer), "ExperimentQueryResponse", drop=ANSWER_EXTRAS)
        arms = [answer.answer["baseline"], *answer.answer["variant_results"]]
        assert [a["key"] for a in arms] == ["control", "test"]
        value = "converted" if answer.metric_type == "funnel" else "revenue"
        for arm in arms:
            rows = per_person[per_person["arm"] == arm["key"]]
            assert arm["number_of_samples"] == len(rows) and arm["sum"] == pytest.approx(rows[value].sum(), rel=1e-9)
    shared = result.metrics[1].metric
    assert shared["isSharedMetric"] is True and shared["sharedMetricId"] == demo.saved_metric.id
    assert shared["uuid"] == demo.saved_metric.query["uuid"]


@pytest.mark.parametrize(("label", "value"), [("checkout → purchase", "converted"),
                                              (f"revenue per person ({HOLDOUT_FLAG_KEY})", "revenue")])  # fmt: skip
def test_the_holdout_comparison_equals_a_pandas_restatement(fed: Any, label: str, value: str) -> None:
    _, demo, result, events = fed
    key = f"holdout-{demo.holdout.id}"
    per_person = _per_person(events)
    answer = next(a for a in result.holdout_metrics if a.label == label)
    assert answer.answer is not None
    # PostHog's answer shape, the holdout arm being the baseline.
    assert_valid(dict(answer.answer), "ExperimentQueryResponse", drop=ANSWER_EXTRAS)
    baseline, variants = answer.answer["baseline"], answer.answer["variant_results"]
    assert baseline["key"] == key and [v["key"] for v in variants] == ["control", "test"]
    restated: dict[str, ExperimentStats] = {}
    for arm in (key, "control", "test"):
        x = per_person.loc[per_person["arm"] == arm, value].to_numpy(dtype=float)
        restated[arm] = ExperimentStats(arm, len(x), float(x.sum()), float(np.sum(x * x)))
    for served in [baseline, *variants]:
        mine = restated[served["key"]]
        assert served["number_of_samples"] == mine.number_of_samples
        assert served["sum"] == pytest.approx(mine.sum, rel=1e-9)
        if value == "revenue":
            assert served["sum_squares"] == pytest.approx(mine.sum_squares, rel=1e-9)
    # PostHog's frequentist engine on the restated sums, the holdout as baseline, gives the served tests.
    metric_type = "funnel" if value == "converted" else "mean"
    _, tests = experiment_results(metric_type, restated[key], [restated["control"], restated["test"]],
                                  stats_config={"method": "frequentist"})  # fmt: skip
    for served, expected in zip(variants, tests, strict=True):
        assert served["p_value"] == pytest.approx(expected.p_value, rel=1e-9)
        assert served["confidence_interval"] == pytest.approx(list(expected.confidence_interval), rel=1e-9)
    # The frame reads the same lift over the holdout as pandas does.
    frame = result.holdout_frame().set_index(["metric", "variant"])
    assert result.holdout_frame().attrs["baseline"] == key
    for arm in ("control", "test"):
        means = per_person.groupby("arm")[value].mean()
        assert frame.loc[(label, arm), "lift"] == pytest.approx(means[arm] / means[key] - 1, rel=1e-9)


def test_the_exposures_show_the_holdout_row(fed: Any) -> None:
    _, demo, result, _ = fed
    assert result.exposures is not None
    assert_valid(dict(result.exposures), "ExperimentExposureQueryResponse", drop=ANSWER_EXTRAS)
    key = f"holdout-{demo.holdout.id}"
    counts = pd.Series(demo.assigned).value_counts().to_dict()
    assert result.total_exposures == {k: float(v) for k, v in counts.items()}
    assert [s["variant"] for s in result.exposures["timeseries"]] == ["control", "test", key]


def test_the_picker_and_the_report_show_the_holdout_comparison(fed: Any, tmp_path: Any) -> None:
    from hoglab.notebook import ExperimentPicker, experiment_report

    client, demo, _, _ = fed
    key = f"holdout-{demo.holdout.id}"
    picker = ExperimentPicker(client)
    picker.value = demo.experiment.id
    assert picker.error is None, picker.error
    # SRM over every arm (issue 34): the holdout at its planned 20% of all exposed, the variants sharing the rest.
    assert picker.srm is not None and set(picker.srm.variants) == {"control", "test", key}
    assert dict(zip(picker.srm.variants, picker.srm.expected_shares, strict=True)) == pytest.approx(
        {"control": 0.4, "test": 0.4, key: 0.2})  # fmt: skip
    assert picker.metrics is not None and picker.metrics["vs holdout"].str.contains(key).all()
    assert key in picker.results.value
    report = experiment_report(demo.experiment.id, client)
    text = report.summary()
    assert f"Against {key}" in text
    page = report.write(tmp_path).read_text()
    assert f"Against the holdout {key}" in page


def _query(client: Client, query: dict[str, Any]) -> Any:
    return client._http.post(client.path("query/"), json={"query": query})  # the raw HTTP answer, errors included


def test_compare_to_holdout_needs_a_holdout_and_the_exposure_query_follows_its_holdout(fed: Any) -> None:
    client, demo, result, _ = fed
    metric = result.metrics[0].metric
    plain = client.experiments.create("No holdout", "no-holdout-here", start=True, metrics=[metric])
    refused = _query(client, {"kind": "ExperimentQuery", "experiment_id": plain.id, "metric": metric,
                              "compare_to_holdout": True})  # fmt: skip
    assert refused.status_code == 400 and refused.json()["attr"] == "query__compare_to_holdout"
    base = {"kind": "ExperimentExposureQuery", "experiment_id": demo.experiment.id, "experiment_name": "x",
            "feature_flag": {"key": HOLDOUT_FLAG_KEY}}  # fmt: skip
    key = f"holdout-{demo.holdout.id}"
    # PostHog's runner adds the holdout's row when the query names it; hoglab, without one, takes the experiment's.
    named = _query(client, {**base, "holdout": {"id": demo.holdout.id, "name": "H", "filters": []}}).json()
    unnamed = _query(client, base).json()
    none = _query(client, {**base, "holdout": None}).json()
    assert key in named["total_exposures"] and key in unnamed["total_exposures"]
    assert key not in none["total_exposures"] and set(none["total_exposures"]) == {"control", "test"}
    # The option is part of the query: the two answers are cached apart.
    default = _query(client, {"kind": "ExperimentQuery", "experiment_id": demo.experiment.id, "metric": metric})
    compared = _query(client, {"kind": "ExperimentQuery", "experiment_id": demo.experiment.id, "metric": metric,
                               "compare_to_holdout": True})  # fmt: skip
    assert default.json()["baseline"]["key"] == "control" and compared.json()["baseline"]["key"] == key


def test_the_queries_the_toolkit_sends_are_posthogs(fed: Any) -> None:
    from hoglab.client._metric_queries import exposure_query

    client, demo, result, _ = fed
    # The saved metric as linked (isSharedMetric, sharedMetricId) and the exposure query naming the holdout are
    # PostHog's own query shapes; compare_to_holdout is the one hoglab member, outside them.
    assert_valid(dict(result.metrics[1].metric), "ExperimentMeanMetric", drop=())
    sent = exposure_query(client.experiments._json(demo.experiment.id))
    assert sent["holdout"]["id"] == demo.holdout.id
    assert_valid(sent, "ExperimentExposureQuery", drop=())
