"""A metric experiment fed by the official ``posthog`` SDK (flags + capture) and analysed over HTTP.

Three metrics on the experiment itself (mean: revenue per person; funnel: cart → purchase; ratio: revenue per page
view), the SDK assigning variants through ``/flags`` and capturing ``$feature_flag_called`` and the metric events
through ``/batch``. Every variant's sums equal a restatement of what the test sent, person by person.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import posthog
import pytest

pytestmark = [pytest.mark.xdist_group("flags_service"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

KEY = "sdk-metrics"
USERS = [f"metric-user-{i}" for i in range(240)]
PURCHASE = {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}
METRICS = [
    {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "revenue", "source": PURCHASE},
    {"kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "checkout",
     "series": [{"kind": "EventsNode", "event": "cart"}, {"kind": "EventsNode", "event": "purchase"}]},
    {"kind": "ExperimentMetric", "metric_type": "ratio", "uuid": "per-view", "numerator": PURCHASE,
     "denominator": {"kind": "EventsNode", "event": "$pageview"}},
]  # fmt: skip


@pytest.fixture
def sdk(make_project) -> Iterator[tuple[object, posthog.Posthog]]:
    project = make_project()
    client = posthog.Posthog(project.api_token, host=project.service.url, capture_mode="v0", max_retries=0,
                             feature_flags_request_max_retries=0, feature_flags_request_timeout_seconds=30)  # fmt: skip
    yield project, client
    client.shutdown()


def test_mean_funnel_and_ratio_metrics_of_an_sdk_run_experiment(sdk):
    project, client = sdk
    start = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    body = {"name": "SDK metrics", "feature_flag_key": KEY, "metrics": METRICS[:2], "metrics_secondary": METRICS[2:],
            "start_date": start, "stats_config": {"method": "frequentist"}}
    created = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert created.status_code == 201, created.text
    experiment = created.json()

    rng = np.random.default_rng(13)
    assigned = {user: client.get_feature_flag(KEY, user) for user in USERS}  # captures $feature_flag_called
    # Every exposure is stored before the first metric event is made. The metric events keep the times the SDK gave
    # them ($ignore_sent_at): the clock-skew correction is per batch, so on a busy machine it could otherwise put a
    # purchase sent in one batch before the cart sent in the batch before, and the funnel below would see no order.
    client.flush()
    keep_time = {"$ignore_sent_at": True}
    revenue, views, carted, bought = Counter(), Counter(), set(), set()
    for user in USERS:
        lift = 1.5 if assigned[user] == "test" else 1.0
        for _ in range(int(rng.integers(0, 4))):
            client.capture("$pageview", distinct_id=user, properties=keep_time, send_feature_flags=True)
            views[user] += 1
        if rng.random() < 0.5:
            client.capture("cart", distinct_id=user, properties=keep_time)
            carted.add(user)
        for _ in range(int(rng.poisson(0.8 * lift))):
            price = round(float(rng.gamma(2.0, 15.0)), 2)
            client.capture("purchase", distinct_id=user, properties={"price": price, **keep_time},
                               send_feature_flags=True)
            revenue[user] += price
            if user in carted:
                bought.add(user)  # a purchase after the cart: the funnel's second step
    client.flush()

    def query(metric: dict) -> dict:
        body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
        response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        return {item["key"]: item for item in [answer["baseline"], *answer["variant_results"]]}

    mean, funnel, ratio = (query(m) for m in [*experiment["metrics"], *experiment["metrics_secondary"]])
    for variant in ("control", "test"):
        users = [u for u in USERS if assigned[u] == variant]
        assert mean[variant]["number_of_samples"] == funnel[variant]["number_of_samples"] == len(users)
        assert mean[variant]["sum"] == pytest.approx(sum(revenue[u] for u in users))
        assert mean[variant]["sum_squares"] == pytest.approx(sum(revenue[u] ** 2 for u in users))
        assert funnel[variant]["step_counts"] == [len(carted & set(users)), len(bought & set(users))]
        assert ratio[variant]["denominator_sum"] == sum(views[u] for u in users)
        assert ratio[variant]["numerator_denominator_sum_product"] == pytest.approx(
            sum(revenue[u] * views[u] for u in users))  # fmt: skip
    assert "p_value" in mean["test"] and mean["test"]["method"] == "frequentist"

    exposures = project.http.post(f"/api/projects/{project.id}/query/", json={
        "query": {"kind": "ExperimentExposureQuery", "experiment_id": experiment["id"]}}).json()  # fmt: skip
    assert exposures["total_exposures"] == dict(Counter(assigned.values()))
