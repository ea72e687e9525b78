"""The picker and the report on metric experiments (PostHog's current kind), driven through their attributes.

Experiments, flags and listings are the session's REAL hoglab service's. The ``ExperimentQuery`` and
``ExperimentExposureQuery`` answers come from a scripted PostHog Cloud (tests/experiment_metrics_cloud.py: a
mock of REMOTE PostHog whose bodies validate against PostHog's OpenAPI document), so the views are checked on
what PostHog itself answers; every other request goes to the real service. The same views over hoglab's own
answers, fed by the posthog SDK, are in tests/server/experiments/test_metric_sdk_end_to_end.py.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from notebooktesting import PartlyRemote, project_client

import hoglab
from experiment_metrics_cloud import FUNNEL, MEAN, RATIO, STATS, Cloud
from hoglab.client import Client, MetricExperimentResult
from hoglab.notebook import ExperimentPicker, experiment_report
from hoglab.stats import srm


class CloudQueries(PartlyRemote):
    """Experiment queries to the scripted PostHog Cloud; everything else to the real service."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.cloud = Cloud(method)

    def remote_answer(self, request: httpx.Request) -> httpx.Response | None:
        if request.method == "POST" and re.search(r"/query/?$", request.url.path):
            kind = json.loads(request.content)["query"]["kind"]
            if kind in ("ExperimentQuery", "ExperimentExposureQuery"):
                response = self.cloud(request)
                return httpx.Response(response.status_code, content=response.content, request=request,
                                      headers={"content-type": "application/json"})  # fmt: skip
        return None


@pytest.fixture(params=["frequentist", "bayesian"])
def cloud(request: pytest.FixtureRequest) -> Iterator[CloudQueries]:
    transport = CloudQueries(request.param)
    yield transport
    transport.close()


@pytest.fixture
def client(make_project: Callable[..., Any], cloud: CloudQueries) -> Iterator[Client]:
    c = project_client(make_project, cloud)
    yield c
    c.close()


def _launched(client: Client, method: str) -> int:
    return client.experiments.create(
        "Checkout copy", f"checkout-{uuid.uuid4().hex[:8]}", start=True, metrics=[FUNNEL, MEAN],
        metrics_secondary=[RATIO], stats_config=method,
    ).id  # fmt: skip


def test_the_picker_shows_every_metric_its_settings_and_the_split(client: Client, cloud: CloudQueries) -> None:
    method = cloud.cloud.method
    experiment_id = _launched(client, method)
    picker = ExperimentPicker(client)
    picker.value = experiment_id
    assert picker.error is None, picker.error
    assert isinstance(picker.result, MetricExperimentResult) and picker.result.method == method
    assert [q["kind"] for q in cloud.cloud.queries].count("ExperimentQuery") == 3
    # The metrics' summary: one row per metric, primary first, with settings and a verdict.
    summary = picker.metrics
    assert summary is not None
    assert summary["metric"].tolist() == ["signup → purchase", "revenue", "revenue per pageview"]
    assert summary["role"].tolist() == ["primary", "primary", "secondary"]
    assert summary["settings"].tolist()[0] == "window 7 days · steps in order · goal: increase"
    assert "outliers capped at the 99th percentile" in summary["settings"].tolist()[1]
    # The SRM check on the exposures the query answered, against the flag's 50/50.
    assert picker.srm is not None
    expected = srm({"control": 2507, "test": 2461}, {"control": 0.5, "test": 0.5})
    assert picker.srm.p_value == pytest.approx(expected.p_value) and not picker.srm.mismatch
    # What is shown: the method, each metric with its settings and verdict, the variants' numbers.
    shown = picker.results.value
    for text in ("Method:", method, "revenue per pageview", "window 7 days", "SRM check p", "2,507"):
        assert text in shown, text
    again = picker.result.recommendation  # the same verdict (its days so far move with the clock)
    assert picker.recommendation is not None and again is not None
    shown_now = picker.recommendation
    assert (shown_now.recommendation, shown_now.p_value) == (again.recommendation, again.p_value)
    assert "Recommendation: <span" in shown and picker.recommendation.metric == "signup → purchase"
    decided = "p-value" if method == "frequentist" else "chance to win"
    assert decided in shown and "[–, –]" not in shown  # the baseline has no interval of its own
    assert "signup → purchase; secondary: revenue per pageview" not in picker.summary.value  # order by uuid list
    assert f"signup → purchase, revenue; secondary: revenue per pageview ({method})" in picker.summary.value
    # The figure: effects, exposures over time, SRM.
    assert picker.figure is not None and len(picker.figure.axes) == 3
    effects = picker.figure.axes[0]
    assert [t.get_text() for t in effects.get_yticklabels()] == [
        "signup → purchase · test", "revenue · test", "revenue per pageview · test (secondary)"]  # fmt: skip
    assert picker.plot.layout.display is None and picker.plot.value[:4] == b"\x89PNG"
    # "Refresh" asks the server to recompute every metric (PostHog's force_blocking), and shows the same.
    asked = len(cloud.cloud.queries)
    picker.refresh()
    assert picker.value == experiment_id and picker.error is None and len(cloud.cloud.queries) == asked + 4
    assert set(cloud.cloud.refreshes[:asked]) == {"blocking"} and set(cloud.cloud.refreshes[asked:]) == {
        "force_blocking"
    }
    assert picker.results.value == shown


def test_the_report_of_a_metric_experiment_is_one_page(client: Client, cloud: CloudQueries, tmp_path: Path) -> None:
    method = cloud.cloud.method
    experiment_id = _launched(client, method)
    report = experiment_report(experiment_id, client)
    assert report.metrics is not None and report.exposure_srm is not None
    frame = report.metrics.to_frame()
    significant = bool(frame.loc[frame["role"] == "primary", "significant"].fillna(False).any())
    assert report.verdict == ("significant" if significant else "not_significant")
    text = report.summary()
    assert f"Method: {method}" in text and "Exposures: control 2,507, test 2,461" in text
    assert text.count("[primary]") == 2 and text.count("[secondary]") == 1
    assert "mean: window: the whole experiment · outliers capped at the 99th percentile" in text
    assert set(report.figures) == {"metric_effects", "exposures", "srm"}
    page = report.write(tmp_path).read_text()
    # self-contained: figures embedded, nothing loaded from elsewhere
    assert page.count("data:image/png;base64,") == 3 and "<script" not in page and 'src="http' not in page
    assert "revenue per pageview" in page and "Exposures over time" in page
    variants = (tmp_path / "variants.csv").read_text().splitlines()
    assert len(variants) == 1 + 6 and variants[0].startswith("metric,metric_uuid,metric_type,role,breakdown,variant")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [m["metric"]["uuid"] for m in saved["metrics"]] == ["m-funnel", "m-mean", "m-ratio"]
    test_sum = [m["answer"]["variant_results"][0]["sum"] for m in saved["metrics"]]
    assert test_sum == [STATS[u][1].sum for u in ("m-funnel", "m-mean", "m-ratio")]


def test_a_draft_metric_experiment_asks_for_nothing(client: Client, cloud: CloudQueries) -> None:
    draft = client.experiments.create("Later", f"later-{uuid.uuid4().hex[:6]}", metrics=[MEAN])
    picker = hoglab.pick_experiment(draft.id, client)
    assert picker.error is not None and picker.error.startswith("Draft")
    assert "revenue" in picker.summary.value and cloud.cloud.queries == []
    report = experiment_report(draft.id, client)
    assert report.metrics is None and "draft" in (report.primary.error or "") and cloud.cloud.queries == []


def test_a_launched_metric_experiment_nobody_was_exposed_to_has_no_verdict(make_project: Callable[..., Any]) -> None:
    """Nothing was tested (every variant answers not-enough-exposures): no verdict, rather than "not significant"."""
    project = make_project()
    with Client(str(project.http.base_url).rstrip("/"), project.key, project.id, max_retries=0,
                progress=False) as real:  # fmt: skip
        launched = _launched(real, "frequentist")
        report = experiment_report(launched, real, figures=False)
    assert report.metrics is not None
    frame = report.metrics.to_frame()
    assert (frame["number_of_samples"] == 0).all() and frame["p_value"].isna().all()
    assert report.verdict is None


@pytest.mark.parametrize(("rollout", "totals"), [({"control": 0.5, "test": 0.5}, {"control": 1000, "test": 1000}),
                                                 ({"control": 0.7, "test": 0.3}, {"control": 700, "test": 300})])
def test_the_exposure_srm_leaves_persons_seen_in_several_variants_out(rollout, totals) -> None:
    """PostHog's ``$multiple`` (excluded persons) is no variant of the flag: the split is checked without it."""
    from hoglab.notebook.picker.metric_view import exposure_srm

    answer = {"total_exposures": {**totals, "$multiple": 40}}
    check = exposure_srm(MetricExperimentResult(1, {}, (), answer), rollout)
    assert check is not None
    assert check.p_value == pytest.approx(srm(totals, rollout).p_value) and not check.mismatch


def test_the_summary_keeps_two_metrics_of_the_same_name_apart() -> None:
    """Each metric's samples and significance come from its own answer, not from rows sharing its label."""
    from hoglab.client._metric_results import MetricAnswer
    from hoglab.notebook.picker.metric_view import metric_summary

    def answer(n: int, significant: bool) -> dict[str, Any]:
        arm = {"number_of_samples": n, "sum": n // 10, "sum_squares": n // 10}
        return {"baseline": {"key": "control", **arm}, "variant_results": [
            {"key": "test", **arm, "method": "frequentist", "p_value": 0.5, "significant": significant}]}  # fmt: skip

    metric = {"metric_type": "funnel", "name": "conversion", "series": []}
    answers = (MetricAnswer(metric, "primary", answer(100, True)), MetricAnswer(metric, "primary", answer(300, False)))
    summary = metric_summary(MetricExperimentResult(1, {}, answers))
    assert summary["samples"].tolist() == ["control 100 · test 100", "control 300 · test 300"]
    assert summary["significant"].tolist() == [True, False]


def test_the_results_page_shows_each_metric_of_a_shared_name_once() -> None:
    from hoglab.client._metric_results import MetricAnswer
    from hoglab.notebook.picker.metric_view import metric_results_html

    def answer(n: int) -> dict[str, Any]:
        arm = {"number_of_samples": n, "sum": n // 10, "sum_squares": n // 10}
        return {"baseline": {"key": "control", **arm},
                "variant_results": [{"key": "test", **arm, "method": "frequentist", "p_value": 0.5}]}  # fmt: skip

    metric = {"metric_type": "funnel", "name": "conversion", "series": []}
    answers = (MetricAnswer(metric, "primary", answer(100)), MetricAnswer(metric, "primary", answer(300)))
    page = metric_results_html(MetricExperimentResult(1, {}, answers), None)
    assert page.count("<table>") == 2
    assert page.count(">100<") == 2 and page.count(">300<") == 2  # control and test of each metric, once
