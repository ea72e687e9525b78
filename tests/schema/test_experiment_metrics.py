"""The metric-experiment models: what they accept is PostHog's shape, what they refuse names the field."""

from __future__ import annotations

import pydantic
import pytest

from hoglab.schema import (
    ExperimentCreate,
    ExperimentExposureQuery,
    ExperimentQuery,
    QueryRequest,
    parse_metric,
)
from posthog_openapi import assert_valid

MEAN = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m1", "name": "revenue",
        "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
        "lower_bound_percentile": 0.05, "upper_bound_percentile": 0.95, "ignore_zeros": True,
        "conversion_window": 7, "conversion_window_unit": "day", "goal": "increase"}  # fmt: skip
FUNNEL = {"kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "f1", "funnel_order_type": "unordered",
          "series": [{"kind": "EventsNode", "event": "cart"}, {"kind": "EventsNode", "event": "purchase"}]}
RATIO = {"kind": "ExperimentMetric", "metric_type": "ratio", "uuid": "r1", "goal": "decrease",
         "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
         "denominator": {"kind": "EventsNode", "event": "$pageview"}}  # fmt: skip
COMPONENTS = {"mean": "ExperimentMeanMetric", "funnel": "ExperimentFunnelMetric", "ratio": "ExperimentRatioMetric"}


@pytest.mark.parametrize("body", [MEAN, FUNNEL, RATIO], ids=lambda b: b["metric_type"])
def test_each_metric_round_trips_as_posthogs_component(body: dict) -> None:
    metric = parse_metric(body)
    dumped = metric.to_json_dict()
    assert dumped == body
    assert_valid(dumped, COMPONENTS[body["metric_type"]], drop=())
    query = ExperimentQuery(experiment_id=3, metric=metric).to_json_dict()
    assert_valid(query, "ExperimentQuery", drop=())
    assert QueryRequest.model_validate({"query": query}).query == ExperimentQuery(experiment_id=3, metric=metric)


def test_exposure_query_validates_as_posthogs_with_the_fields_posthog_requires() -> None:
    query = ExperimentExposureQuery(experiment_id=3, experiment_name="x", feature_flag={"key": "f"},
                                    start_date="2026-01-01T00:00:00Z",
                                    exposure_criteria={"exposure_config": {"event": "seen", "properties": []},
                                                       "multiple_variant_handling": "first_seen"})  # fmt: skip
    assert_valid(query.to_json_dict(), "ExperimentExposureQuery", drop=())


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        ({"source": {"kind": "ActionsNode", "id": "one"}}, ("source", "ActionsNode", "id"), "integer"),
        ({"source": {"kind": "ExperimentDataWarehouseNode", "table_name": "t"}}, ("source",), "Data warehouse"),
        ({"source": {"kind": "EventsNode", "event": "x", "math": "p90", "math_property": "v"}}, ("source",), "p90"),
        ({"lower_bound_percentile": 0.9, "upper_bound_percentile": 0.1}, (), "below"),
        ({"upper_bound_percentile": 95}, ("upper_bound_percentile",), "less than or equal to 1"),
        ({"goal": "up"}, ("goal",), "increase"),
        ({"conversion_window": 0}, ("conversion_window",), "greater than or equal to 1"),
        ({"funnel_order_type": "ordered"}, ("funnel_order_type",), "Extra inputs"),
    ],
)
def test_bad_mean_metrics_are_refused_naming_the_field(change: dict, where: tuple, says: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        parse_metric({**MEAN, **change})
    error = info.value.errors()[0]
    assert error["loc"][1 : 1 + len(where)] == where, error["loc"]
    assert says in error["msg"]


def test_experiment_metrics_get_uuids_and_must_not_repeat_them() -> None:
    without = {key: value for key, value in MEAN.items() if key != "uuid"}
    created = ExperimentCreate(name="e", feature_flag_key="f", metrics=[without, FUNNEL])
    assert created.metrics is not None and created.metrics[0].uuid and created.metrics[1].uuid == "f1"
    with pytest.raises(pydantic.ValidationError, match="unique"):
        ExperimentCreate(name="e", feature_flag_key="f", metrics=[MEAN, MEAN])
    with pytest.raises(pydantic.ValidationError) as info:
        ExperimentCreate(name="e", feature_flag_key="f", exposure_criteria={"multiple_variant_handling": "last"})
    assert info.value.errors()[0]["loc"][:2] == ("exposure_criteria", "multiple_variant_handling")
