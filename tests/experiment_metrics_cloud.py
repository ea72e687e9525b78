"""A scripted PostHog Cloud for metric experiments: three metrics, their ExperimentQuery answers, the exposures.

A mock of REMOTE PostHog only (never of hoglab): every answer validates against PostHog's published OpenAPI
document, and so does every query it is sent. The sufficient statistics go through ``hoglab.stats.posthog``'s
reproduction of PostHog's engine, so the answers carry PostHog's own test fields.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import assert_valid

MEAN = {
    "kind": "ExperimentMetric", "metric_type": "mean", "uuid": "m-mean", "name": "revenue",
    "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
    "lower_bound_percentile": 0.0, "upper_bound_percentile": 0.99,
}  # fmt: skip
FUNNEL = {
    "kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "m-funnel",
    "series": [{"kind": "EventsNode", "event": "signup"}, {"kind": "EventsNode", "event": "purchase"}],
    "conversion_window": 7, "conversion_window_unit": "day",
}  # fmt: skip
RATIO = {
    "kind": "ExperimentMetric", "metric_type": "ratio", "uuid": "m-ratio", "name": "revenue per pageview",
    "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"},
    "denominator": {"kind": "EventsNode", "event": "$pageview"},
}  # fmt: skip
SCHEMAS = {"mean": "ExperimentMeanMetric", "funnel": "ExperimentFunnelMetric", "ratio": "ExperimentRatioMetric"}

# Sufficient statistics per metric and arm (control, test): n, sum, sum of squares (+ ratio denominators).
STATS: dict[str, list[ExperimentStats]] = {
    "m-mean": [ExperimentStats("control", 2507, 1196.87, 37377.98), ExperimentStats("test", 2461, 1922.7, 94698.29)],
    "m-funnel": [ExperimentStats("control", 1000, 100, 100, step_counts=(1000, 100)),
                 ExperimentStats("test", 1000, 140, 140, step_counts=(1000, 140))],
    "m-ratio": [ExperimentStats("control", 500, 900.0, 5000.0, 2000.0, 9000.0, 4000.0),
                ExperimentStats("test", 510, 1100.0, 6400.0, 2050.0, 9300.0, 4900.0)],
}  # fmt: skip
EXPOSURES = {
    "kind": "ExperimentExposureQuery",
    "date_range": {"date_from": "2025-06-01T00:00:00Z", "date_to": "2025-06-03T00:00:00Z"},
    "timeseries": [
        {"variant": "control", "days": ["2025-06-01", "2025-06-02"], "exposure_counts": [1200, 2507]},
        {"variant": "test", "days": ["2025-06-01", "2025-06-02"], "exposure_counts": [1180, 2461]},
    ],
    "total_exposures": {"control": 2507, "test": 2461},
}


def experiment_body(method: str = "frequentist", **extra: Any) -> dict[str, Any]:
    return {
        "id": 9, "name": "checkout copy", "feature_flag_key": "checkout-copy",
        "feature_flag": {"id": 109, "team_id": 2, "name": "f", "key": "checkout-copy", "active": True,
                         "filters": {"multivariate": {"variants": [{"key": "control", "rollout_percentage": 50},
                                                                    {"key": "test", "rollout_percentage": 50}]}}},
        "start_date": "2025-06-01T00:00:00Z", "end_date": None, "archived": False, "filters": {},
        "created_at": "2025-05-30T00:00:00Z", "updated_at": "2025-05-30T00:00:00Z",
        "metrics": [MEAN, FUNNEL], "metrics_secondary": [RATIO],
        "primary_metrics_ordered_uuids": ["m-funnel", "m-mean"],
        "stats_config": {"method": method}, "exposure_criteria": {"filterTestAccounts": True},
        **extra,
    }  # fmt: skip


def metric_answer(metric: dict[str, Any], method: str) -> dict[str, Any]:
    control, test = STATS[metric["uuid"]]
    base, [variant] = experiment_results(metric["metric_type"], control, [test], stats_config={"method": method})
    answer = {"kind": "ExperimentQuery", "metric": metric, "baseline": base.to_posthog(baseline=True),
              "variant_results": [variant.to_posthog()]}  # fmt: skip
    assert_valid(answer, "ExperimentQueryResponse")
    return answer


class Cloud:
    """Answers POST /query like PostHog Cloud, checking each query against PostHog's OpenAPI document."""

    def __init__(self, method: str, failing: frozenset[str] = frozenset()) -> None:
        self.method, self.failing = method, failing
        self.queries: list[dict[str, Any]] = []
        self.refreshes: list[Any] = []  # the request's refresh member, per query

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        query = body["query"]
        self.queries.append(query)
        self.refreshes.append(body.get("refresh"))
        assert_valid(query, query["kind"], drop=())
        if query["kind"] == "ExperimentExposureQuery":
            assert_valid(EXPOSURES, "ExperimentExposureQueryResponse")
            return httpx.Response(200, json=EXPOSURES)
        metric = query["metric"]
        assert_valid(metric, SCHEMAS[metric["metric_type"]], drop=())
        if metric["uuid"] in self.failing:
            detail = "No experiment exposures found for this metric."
            return httpx.Response(400, json={"type": "validation_error", "code": "no_exposures", "detail": detail})
        return httpx.Response(200, json=metric_answer(metric, self.method))
