"""client.experiments.results for metric experiments against a scripted REMOTE PostHog (httpx.MockTransport).

This is a mock of PostHog Cloud's answers, the only kind of mock the project allows: every answer the mock sends
validates against PostHog's published OpenAPI document (``ExperimentQueryResponse``,
``ExperimentExposureQueryResponse``), and so does every query the client sends (``ExperimentQuery``,
``ExperimentExposureQuery``). The same calls run end to end against a real hoglab service in
tests/server/experiments/test_metric_sdk_end_to_end.py.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pandas as pd
import pytest
from clienttesting import Remote

import hoglab
from experiment_metrics_cloud import EXPOSURES, FUNNEL, MEAN, STATS, Cloud, experiment_body, metric_answer
from hoglab.client import Client, ExperimentResult
from hoglab.client._metric_results import METRIC_COLUMNS, MetricExperimentResult
from hoglab.stats.posthog import experiment_results, metric_recommendation
from posthog_openapi import assert_valid, assert_valid_experiment

BASE = "/api/projects/2/experiments/"
QUERY = "/api/projects/2/query/"


def _results(client: Client, remote: Remote, method: str = "frequentist", **kw: Any) -> tuple[Any, Cloud]:
    cloud = Cloud(method, **kw)
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=experiment_body(method)))
    remote.add("POST", QUERY, cloud)
    return client.experiments.results(9, refresh=True), cloud


def test_every_metric_is_one_experiment_query_in_the_chosen_order(client: Client, remote: Remote) -> None:
    result, cloud = _results(client, remote)
    assert isinstance(result, MetricExperimentResult) and not isinstance(result, ExperimentResult)
    kinds = [(q["kind"], q.get("metric", {}).get("uuid")) for q in cloud.queries]
    assert kinds == [("ExperimentQuery", "m-funnel"), ("ExperimentQuery", "m-mean"), ("ExperimentQuery", "m-ratio"),
                     ("ExperimentExposureQuery", None)]  # fmt: skip
    assert all(q.get("experiment_id") == 9 for q in cloud.queries)
    assert cloud.queries[-1]["exposure_criteria"] == {"filterTestAccounts": True}
    assert cloud.queries[-1]["feature_flag"]["key"] == "checkout-copy"
    bodies = remote.json_bodies("POST", QUERY)
    assert {b["refresh"] for b in bodies} == {"force_blocking"}  # refresh=True recomputes on the server
    assert cloud.queries[1]["metric"] == MEAN  # sent back exactly as the experiment holds it


def test_the_frame_is_one_row_per_metric_and_variant_with_real_dtypes(client: Client, remote: Remote) -> None:
    df = _results(client, remote)[0].to_frame()
    assert list(df.columns) == METRIC_COLUMNS
    assert df[["metric", "role", "variant"]].values.tolist() == [
        ["signup → purchase", "primary", "control"], ["signup → purchase", "primary", "test"],
        ["revenue", "primary", "control"], ["revenue", "primary", "test"],
        ["revenue per pageview", "secondary", "control"], ["revenue per pageview", "secondary", "test"],
    ]  # fmt: skip
    assert str(df["number_of_samples"].dtype) == "Int64" and str(df["significant"].dtype) == "boolean"
    assert str(df["metric"].dtype) == "string" and df["lift"].dtype == "float64"
    rows = df.set_index(["metric_uuid", "variant"])
    for uuid, (control, test) in STATS.items():
        denominators = (control.denominator_sum, test.denominator_sum) if uuid == "m-ratio" else None
        means = [s.sum / (d if denominators else s.number_of_samples)
                 for s, d in zip((control, test), denominators or (1, 1), strict=True)]  # fmt: skip
        assert rows.loc[(uuid, "test"), "mean"] == pytest.approx(means[1])
        assert rows.loc[(uuid, "test"), "lift"] == pytest.approx(means[1] / means[0] - 1)
        assert rows.loc[(uuid, "test"), "sum"] == test.sum
        assert int(rows.loc[(uuid, "control"), "number_of_samples"]) == control.number_of_samples
        assert math.isnan(rows.loc[(uuid, "control"), "lift"]) and rows.loc[(uuid, "control"), "significant"] is pd.NA
    funnel = rows.loc[("m-funnel", "test")]
    _, [expected] = experiment_results("funnel", *STATS["m-funnel"][:1], [STATS["m-funnel"][1]],
                                       stats_config={"method": "frequentist"})  # fmt: skip
    assert funnel["p_value"] == pytest.approx(expected.p_value)
    assert [funnel["interval_low"], funnel["interval_high"]] == pytest.approx(list(expected.confidence_interval))
    assert funnel["method"] == "frequentist" and bool(funnel["significant"]) == expected.significant
    assert df["chance_to_win"].isna().all()


def test_bayesian_answers_fill_chance_to_win(client: Client, remote: Remote) -> None:
    result, _ = _results(client, remote, "bayesian")
    df = result.to_frame()
    tests = df[df["variant"] == "test"]
    assert tests["chance_to_win"].between(0, 1).all() and tests["p_value"].isna().all()
    assert set(tests["method"]) == {"bayesian"} and result.method == "bayesian"
    assert "chance to win" in result.verdict


def test_exposures_and_raw_answers(client: Client, remote: Remote) -> None:
    result, _ = _results(client, remote)
    exposures = result.exposures_frame()
    assert exposures["cumulative"].tolist() == [1200.0, 2507.0, 1180.0, 2461.0]  # PostHog's counts are cumulative
    assert exposures["new"].tolist() == [1200.0, 1307.0, 1180.0, 1281.0]
    assert str(exposures["date"].dtype) == "datetime64[us]" and str(exposures["variant"].dtype) == "string"
    assert result.total_exposures == {"control": 2507.0, "test": 2461.0}
    assert result.raw["exposures"] == EXPOSURES
    assert [m["answer"]["baseline"]["key"] for m in result.raw["metrics"]] == ["control"] * 3
    html = result._repr_html_()
    assert "frequentist" in html and "<table" in html and "revenue per pageview" in html


def test_a_metric_the_server_cannot_answer_keeps_the_others(client: Client, remote: Remote) -> None:
    result, _ = _results(client, remote, failing=frozenset({"m-mean"}))
    assert result.errors == {"revenue": "No experiment exposures found for this metric."}
    assert set(result.to_frame()["metric_uuid"]) == {"m-funnel", "m-ratio"}
    assert "revenue: no results (No experiment exposures found" in result.verdict


def test_an_answer_that_went_async_is_polled(client: Client, remote: Remote) -> None:
    experiment = experiment_body(metrics=[FUNNEL], metrics_secondary=[])
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=experiment))
    ids: list[str] = []

    def accepted(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        ids.append(body["client_query_id"])
        if body["query"]["kind"] == "ExperimentExposureQuery":
            return httpx.Response(200, json=EXPOSURES)
        return httpx.Response(202, json={"query_status": {"id": body["client_query_id"], "complete": False}})

    remote.add("POST", QUERY, accepted)
    answer = metric_answer(FUNNEL, "frequentist")
    remote.add("GET", f"{QUERY}*", httpx.Response(200, json={"query_status": {
        "id": "x", "team_id": 2, "complete": True, "results": answer}}))  # fmt: skip
    result = client.experiments.results(9)
    polls = [r.url.path for r in remote.requests if r.method == "GET" and r.url.path.startswith(QUERY)]
    assert polls == [f"{QUERY}{ids[0]}/"]
    assert result.to_frame()["sum"].tolist() == [100.0, 140.0]
    assert {b["refresh"] for b in remote.json_bodies("POST", QUERY)} == {"blocking"}


def test_shared_metrics_join_their_list_in_order(client: Client, remote: Remote) -> None:
    """PostHog's shared metrics (``saved_metrics``, ``ExperimentToSavedMetric``) are analysed with the rest."""
    shared = [
        {"id": 1, "experiment": 9, "saved_metric": 4, "name": "shared revenue", "created_at": "2025-05-30T00:00:00Z",
         "metadata": {"type": "secondary"}, "query": {**MEAN, "uuid": "s-mean", "name": None}},
        {"id": 2, "experiment": 9, "saved_metric": 5, "name": "shared funnel", "created_at": "2025-05-30T00:00:00Z",
         "metadata": {"type": "primary"}, "query": {**FUNNEL, "uuid": "s-funnel"}},
    ]  # fmt: skip
    for item in shared:
        assert_valid(item, "ExperimentToSavedMetric", drop=())
    experiment = experiment_body(metrics=[MEAN], metrics_secondary=[], saved_metrics=shared,
                                 primary_metrics_ordered_uuids=["s-funnel", "m-mean"])  # fmt: skip
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=experiment))
    answered: list[str] = []

    def cloud(request: httpx.Request) -> httpx.Response:
        query = json.loads(request.content)["query"]
        if query["kind"] == "ExperimentExposureQuery":
            return httpx.Response(200, json=EXPOSURES)
        answered.append(query["metric"]["uuid"])
        stats_key = {"s-mean": "m-mean", "s-funnel": "m-funnel"}.get(query["metric"]["uuid"], query["metric"]["uuid"])
        return httpx.Response(200, json=metric_answer({**query["metric"], "uuid": stats_key}, "frequentist"))

    remote.add("POST", QUERY, cloud)
    result = client.experiments.results(9)
    assert answered == ["s-funnel", "m-mean", "s-mean"]
    frame = result.to_frame()
    assert frame.drop_duplicates("metric")[["metric", "role"]].values.tolist() == [
        ["shared funnel", "primary"], ["revenue", "primary"], ["shared revenue", "secondary"]]  # fmt: skip


def test_update_sends_builder_metrics(client: Client, remote: Remote) -> None:
    sent: list[Any] = []

    def patch(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=experiment_body(**sent[-1]))

    remote.add("PATCH", f"{BASE}9/", patch)
    metric = hoglab.mean_metric("purchase", math="sum", math_property="price", name="revenue")
    updated = client.experiments.update(9, metrics=[metric], stats_config={"method": "frequentist"})
    assert sent[0]["metrics"][0]["source"]["math_property"] == "price" and sent[0]["metrics"][0]["uuid"] == metric.uuid
    assert_valid(sent[0]["metrics"][0], "ExperimentMeanMetric", drop=())
    assert set(sent[0]) == {"metrics", "stats_config"} and updated.model_dump()["metrics"][0]["name"] == "revenue"


def test_an_older_posthog_answer_with_variants_is_read_too(client: Client, remote: Remote) -> None:
    """PostHog's stats-version-2 answer: counts in ``variants``, P(best) in ``probability``, one verdict."""
    older = {
        "kind": "ExperimentQuery", "stats_version": 2, "significant": True, "significance_code": "significant",
        "p_value": 0.01, "probability": {"control": 0.02, "test": 0.98},
        "credible_intervals": {"control": [0.08, 0.12], "test": [0.11, 0.16]},
        "variants": [{"key": "test", "success_count": 135, "failure_count": 865},
                     {"key": "control", "success_count": 100, "failure_count": 900}],
    }  # fmt: skip
    assert_valid(older, "ExperimentQueryResponse")
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=experiment_body(metrics=[FUNNEL], metrics_secondary=[])))

    def cloud(request: httpx.Request) -> httpx.Response:
        kind = json.loads(request.content)["query"]["kind"]
        return httpx.Response(200, json=older if kind == "ExperimentQuery" else EXPOSURES)

    remote.add("POST", QUERY, cloud)
    frame = client.experiments.results(9).to_frame()
    assert frame[["variant", "number_of_samples", "sum"]].values.tolist() == [["control", 1000, 100.0],
                                                                              ["test", 1000, 135.0]]  # fmt: skip
    test = frame.iloc[1]
    assert test["lift"] == pytest.approx(0.35) and test["chance_to_win"] == 0.98 and bool(test["significant"])
    assert math.isnan(test["interval_low"])  # its intervals are of each rate, not of the lift


def test_a_posthog_experiment_with_blank_type_and_conclusion_is_read(client: Client, remote: Remote) -> None:
    """PostHog's ``type`` and ``conclusion`` may be blank (its ``BlankEnum``) and the ordered uuids any JSON."""
    body = experiment_body(type="", conclusion="", primary_metrics_ordered_uuids=None,
                           secondary_metrics_ordered_uuids=None)  # fmt: skip
    assert_valid_experiment(body)
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=body))
    experiment = client.experiments.get(9)
    assert experiment.type in ("", None) and experiment.conclusion in ("", None)
    assert [m["uuid"] for m in experiment.metrics or []] == ["m-mean", "m-funnel"]


def test_the_recommendation_reads_the_first_primary_metric(client: Client, remote: Remote) -> None:
    cloud = Cloud("frequentist")
    body = experiment_body("frequentist", end_date="2025-06-08T00:00:00Z")
    remote.add("GET", f"{BASE}9/", httpx.Response(200, json=body))
    remote.add("POST", QUERY, cloud)
    result = client.experiments.results(9)
    assert isinstance(result, MetricExperimentResult)
    control, test = STATS["m-funnel"]  # the first primary metric in the experiment's order
    direct = metric_recommendation("funnel", control, [test], stats_config=body["stats_config"], mde=None,
                                   days_running=7, expected_split={"control": 0.5, "test": 0.5},
                                   name="signup → purchase")  # fmt: skip
    # One test per metric: the recommendation quotes the table's interval and p-value, and names the test.
    row = result.to_frame().query("metric == 'signup → purchase' and variant == 'test'").iloc[0]
    assert direct.confidence_interval == pytest.approx((row["interval_low"], row["interval_high"]), abs=1e-12)
    assert direct.p_value == pytest.approx(row["p_value"], abs=1e-12) and direct.test == row["test"]
    assert f"({row['test']}, p = {row['p_value']:.3g})" in direct.reason
    assert result.recommendation == direct
    assert f"Recommendation: {direct.summary()}\n" in result.summary() and "Health: ok" in result.summary()
    assert direct.headline in result._repr_html_()


def test_a_family_correction_adjusts_every_metric_s_variants_beside_the_raw_p() -> None:
    """hoglab's ``stats_config.multiple_comparisons`` (or ``replace(result, correction=...)``): Holm or BH across
    the primary and secondary metrics and their variants, equal to statsmodels' ``multipletests``."""
    from dataclasses import replace

    from statsmodels.stats.multitest import multipletests

    from hoglab.client._metric_results import MetricAnswer

    def answer(p_values: dict[str, float]) -> dict[str, Any]:
        arms = [{"key": k, "number_of_samples": 1000, "sum": 100, "sum_squares": 100, "method": "frequentist",
                 "p_value": p, "confidence_interval": [-0.1, 0.3], "significant": p < 0.05}
                for k, p in p_values.items()]  # fmt: skip
        return {"baseline": {"key": "control", "number_of_samples": 1000, "sum": 100, "sum_squares": 100},
                "variant_results": arms}  # fmt: skip

    metrics = (MetricAnswer({"metric_type": "funnel", "name": "a"}, "primary", answer({"b": 0.01, "c": 0.04})),
               MetricAnswer({"metric_type": "funnel", "name": "z"}, "secondary", answer({"b": 0.03})))  # fmt: skip
    config = hoglab.stats_config("frequentist", correction="holm")
    assert config["multiple_comparisons"] == "holm"
    result = MetricExperimentResult(3, {"stats_config": config}, metrics)
    frame = result.to_frame()
    tested = frame[frame["p_value"].notna()]
    assert tested["adjusted_p_value"].tolist() == pytest.approx(multipletests([0.01, 0.04, 0.03], method="holm")[1])
    assert tested["significant"].tolist() == [True, False, False]  # 0.03, 0.06, 0.06
    assert "p = 0.01 (Holm-adjusted 0.03)" in result.verdict
    bh = replace(MetricExperimentResult(3, {"stats_config": {"method": "frequentist"}}, metrics), correction="bh")
    assert bh.to_frame()["adjusted_p_value"].dropna().tolist() == pytest.approx(
        multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1])  # fmt: skip
    plain = MetricExperimentResult(3, {"stats_config": {"method": "frequentist"}}, metrics).to_frame()
    assert plain["adjusted_p_value"].isna().all() and plain.attrs["correction"] is None
