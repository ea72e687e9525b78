"""``client.query`` with the experiment query kinds, against a real hoglab service (the bug of issue 24).

Before the fix, ``client.query(ExperimentQuery(...))`` got its 200 answer and then, seeing no ``results`` member,
polled ``GET /query/<id>`` for a job that never existed: ``NotFound: Query <id> not found``. Whether an answer is
complete is now read from the status code and ``query_status`` (``complete_answer``), so every kind works, blocking,
asynchronous and submitted; each answer has its frame.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from clienttesting import loaded_project

import hoglab
from hoglab.client import Client
from hoglab.schema import ExperimentQuery, ExperimentQueryResponse

START = datetime(2025, 3, 3, 9, tzinfo=UTC)
FLAG = "client-query-flag"


@pytest.fixture(scope="module")
def experiment(hoglab_service: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A project with 200 exposed persons (browser on the exposure, purchases before and after) and an
    experiment over them; the client and the events."""
    rng = np.random.default_rng(5)
    lines, truth = [], []
    for k in range(200):
        variant, browser = ("control", "test")[k % 2], ("Chrome", "Safari")[int(rng.integers(2))]
        seen = START + timedelta(hours=int(rng.integers(1, 72)))
        pre, post = int(rng.poisson(2)), 0
        lines.append({"event": "$feature_flag_called", "distinct_id": f"u{k}", "timestamp": seen.isoformat(),
                      "properties": {"$feature_flag": FLAG, "$feature_flag_response": variant,
                                     "$browser": browser}})  # fmt: skip
        for _ in range(pre):
            at = (seen - timedelta(days=2)).isoformat()
            lines.append({"event": "purchase", "distinct_id": f"u{k}", "timestamp": at, "properties": {"amount": 10}})
        post = int(rng.poisson(1 + pre))
        for _ in range(post):
            at = (seen + timedelta(hours=1)).isoformat()
            lines.append({"event": "purchase", "distinct_id": f"u{k}", "timestamp": at, "properties": {"amount": 10}})
        truth.append({"variant": variant, "browser": browser, "pre": 10.0 * pre, "post": 10.0 * post})
    folder = tmp_path_factory.mktemp("client-queries")
    project, key = loaded_project(hoglab_service, "client experiment queries", lines, folder)
    client = Client(hoglab_service.url, key, project, progress=False)
    made = client.experiments.create("client queries", FLAG, start=START, end=START + timedelta(days=5),
                                     stats_config=hoglab.stats_config("frequentist", cuped=7))  # fmt: skip
    yield {"client": client, "id": made.id, "truth": pd.DataFrame(truth)}
    client.close()


METRIC = hoglab.mean_metric("purchase", math="sum", math_property="amount", breakdowns=["$browser"])


def test_client_query_answers_an_experiment_query_with_its_frame(experiment: dict[str, Any]) -> None:
    client, truth = experiment["client"], experiment["truth"]
    frame = client.query(hoglab.experiment_query(experiment["id"], METRIC))  # NotFound before the fix
    overall = frame[frame["breakdown"].isna()].set_index("variant")
    for variant, rows in truth.groupby("variant"):
        assert overall.loc[variant, "number_of_samples"] == len(rows)
        assert overall.loc[variant, "sum"] == pytest.approx(rows["post"].sum())
        assert overall.loc[variant, "covariate_mean"] == pytest.approx(rows["pre"].mean())
    by_browser = frame[frame["breakdown"].notna()]
    assert sorted(by_browser["breakdown"].unique()) == ["Chrome", "Safari"]
    per_variant = by_browser.groupby("variant")["number_of_samples"].sum().to_dict()
    assert per_variant == truth["variant"].value_counts().to_dict()
    # The CUPED estimate recomputed from the answer's sums is the centre of the interval the server sent.
    test = overall.loc["test"]
    assert bool(test["cuped"])
    assert (test["interval_low"] + test["interval_high"]) / 2 == pytest.approx(test["lift_cuped"])


def test_every_way_of_asking_works(experiment: dict[str, Any]) -> None:
    client = experiment["client"]
    query = hoglab.experiment_query(experiment["id"], METRIC)
    raw = client.query_raw(query)
    assert isinstance(raw, ExperimentQueryResponse) and raw.breakdown_results and raw.baseline is not None
    as_dict = client.query(query.to_json_dict())
    async_answer = client.submit(query).result(timeout=120)
    forced = client.query_raw(ExperimentQuery.model_validate(query.to_json_dict()), refresh="force_async")
    assert as_dict["sum"].tolist() == async_answer["sum"].tolist()
    assert forced.baseline is not None and forced.baseline.sum == raw.baseline.sum


def test_the_exposure_query_has_its_frame_too(experiment: dict[str, Any]) -> None:
    client, truth = experiment["client"], experiment["truth"]
    exposures = client.query(hoglab.exposure_query(experiment["id"]))
    assert list(exposures.columns) == ["date", "variant", "cumulative", "new"]
    last = exposures.groupby("variant")["cumulative"].last().to_dict()
    assert last == {k: float(v) for k, v in truth["variant"].value_counts().items()}
    assert exposures.groupby("variant")["new"].sum().to_dict() == last


def test_a_metric_experiment_reads_its_results_through_the_same_path(experiment: dict[str, Any]) -> None:
    client = experiment["client"]
    client.experiments.update(experiment["id"], metrics=[METRIC.to_json_dict()])
    result = client.experiments.results(experiment["id"])
    assert isinstance(result, hoglab.MetricExperimentResult)
    assert result.errors == {} and result.exposures_error is None
    assert result.settings_line == "frequentist, CUPED (7-day lookback)"
    frame = result.to_frame()
    direct = client.query(hoglab.experiment_query(experiment["id"], METRIC))
    columns = ["breakdown", "variant", "number_of_samples", "sum", "p_value", "lift_cuped"]
    pd.testing.assert_frame_equal(frame[columns].reset_index(drop=True), direct[columns].reset_index(drop=True))
    assert "CUPED" in result.verdict
