"""The experiment metric builders (hoglab.mean_metric, funnel_metric, ratio_metric): PostHog's shapes, and the
mistakes they refuse before any request. Every body is checked against PostHog's published OpenAPI document."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

import hoglab
from hoglab.client import Client
from posthog_openapi import assert_valid

SCHEMAS = {"mean": "ExperimentMeanMetric", "funnel": "ExperimentFunnelMetric", "ratio": "ExperimentRatioMetric"}


def _valid(metric: Any) -> dict[str, Any]:
    body: dict[str, Any] = metric.to_json_dict()
    assert_valid(body, SCHEMAS[body["metric_type"]], drop=())
    assert_valid({"kind": "ExperimentQuery", "experiment_id": 1, "metric": body}, "ExperimentQuery", drop=())
    return body


def test_mean_metric_shapes() -> None:
    count = _valid(hoglab.mean_metric("$pageview"))
    assert count["source"] == {"kind": "EventsNode", "event": "$pageview", "name": "$pageview"}
    revenue = _valid(
        hoglab.mean_metric(
            "purchase", math="sum", math_property="price", where={"plan": "pro"}, window="7d", goal="increase",
            lower_bound_percentile=0.01, upper_bound_percentile=0.99, ignore_zeros=True, name="revenue",
        )
    )  # fmt: skip
    assert (revenue["source"]["math"], revenue["source"]["math_property"]) == ("sum", "price")
    assert revenue["source"]["properties"] == [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]
    assert (revenue["conversion_window"], revenue["conversion_window_unit"]) == (7, "day")
    assert (revenue["lower_bound_percentile"], revenue["upper_bound_percentile"], revenue["ignore_zeros"]) == (
        0.01, 0.99, True,
    )  # fmt: skip
    sessions = _valid(hoglab.mean_metric("$pageview", math="unique_session", where="properties.$browser = 'Chrome'"))
    assert sessions["source"]["properties"][0]["type"] == "hogql"
    # every builder call gets its own uuid, so an experiment can order its metrics by them
    assert len({count["uuid"], revenue["uuid"], sessions["uuid"]}) == 3


def test_funnel_and_ratio_metric_shapes() -> None:
    steps = _valid(hoglab.funnel_metric(["signup", hoglab.series("purchase", where={"plan": "pro"})], order="strict"))
    assert [s["event"] for s in steps["series"]] == ["signup", "purchase"] and steps["funnel_order_type"] == "strict"
    ratio = _valid(hoglab.ratio_metric(hoglab.series("purchase", math="sum", math_property="price"), "$pageview",
                                       window=timedelta(hours=12), uuid="fixed"))  # fmt: skip
    assert ratio["numerator"]["math_property"] == "price" and ratio["denominator"]["event"] == "$pageview"
    assert (ratio["conversion_window"], ratio["conversion_window_unit"], ratio["uuid"]) == (12, "hour", "fixed")


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: hoglab.mean_metric("purchase", math="sum"), "math_property"),
        (lambda: hoglab.mean_metric("purchase", math="median", math_property="price"), "math"),
        (lambda: hoglab.mean_metric("purchase", upper_bound_percentile=99), "upper_bound_percentile"),
        (lambda: hoglab.mean_metric("purchase", lower_bound_percentile=0.9, upper_bound_percentile=0.1), "mean_metric"),
        (lambda: hoglab.mean_metric(3), "event"),  # type: ignore[arg-type]
        (lambda: hoglab.mean_metric("purchase", window="soon"), "window"),
        (lambda: hoglab.mean_metric("purchase", goal="up"), "goal"),  # type: ignore[arg-type]
        (lambda: hoglab.mean_metric(hoglab.series("purchase"), math="total"), "event"),
        (lambda: hoglab.funnel_metric("signup"), "steps"),
        (lambda: hoglab.funnel_metric([]), "steps"),
        (lambda: hoglab.funnel_metric(["a", "b"], order="any"), "order"),  # type: ignore[arg-type]
        (lambda: hoglab.ratio_metric(hoglab.series("a", math="p90", math_property="x"), "b"), "math"),
    ],
)
def test_mistakes_name_the_argument(call: Any, argument: str) -> None:
    with pytest.raises(hoglab.InvalidArgument) as caught:
        call()
    assert caught.value.argument == argument, caught.value


def test_create_sends_metrics_in_order_with_the_method() -> None:
    """The create body against a mock of PostHog Cloud (it only records the request): the metrics are
    PostHog's, in the order given, with the method and exposure criteria."""
    sent: list[dict[str, Any]] = []

    def cloud(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        flag = {"id": 1, "team_id": 2, "name": "f", "key": body["feature_flag_key"], "active": False, "filters": {}}
        return httpx.Response(201, json={"id": 5, **body, "feature_flag": flag, "created_at": "2025-06-01T00:00:00Z",
                                         "updated_at": "2025-06-01T00:00:00Z"})  # fmt: skip

    primary = [hoglab.funnel_metric(["signup"]), hoglab.mean_metric("purchase", math="sum", math_property="price")]
    secondary = [hoglab.ratio_metric("click", "$pageview")]
    with Client("https://eu.posthog.example", "phx_k", 2, transport=httpx.MockTransport(cloud), progress=False) as c:
        created = c.experiments.create(
            "Checkout", "checkout", metrics=primary, metrics_secondary=secondary, stats_config="frequentist",
            exposure_criteria={"filterTestAccounts": True, "multiple_variant_handling": "first_seen"},
        )  # fmt: skip
        with pytest.raises(hoglab.InvalidArgument) as caught:
            c.experiments.create("X", "x", metrics=primary, stats_config="bootstrap")
    assert caught.value.argument == "stats_config" and len(sent) == 1
    body = sent[0]
    assert [m["metric_type"] for m in body["metrics"]] == ["funnel", "mean"]
    assert body["primary_metrics_ordered_uuids"] == [m.uuid for m in primary]
    assert body["secondary_metrics_ordered_uuids"] == [secondary[0].uuid]
    assert body["stats_config"] == {"method": "frequentist"}
    assert body["exposure_criteria"]["multiple_variant_handling"] == "first_seen"
    for metric in body["metrics"] + body["metrics_secondary"]:
        assert_valid(metric, SCHEMAS[metric["metric_type"]], drop=())
    assert created.model_dump()["metrics"][1]["source"]["math_property"] == "price"
