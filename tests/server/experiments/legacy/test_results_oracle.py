"""``/results`` and ``/secondary_results`` over HTTP against an independent pandas restatement of PostHog's
definitions (counts, exposures, funnel steps), and the statistics against PostHog's Monte Carlo definitions
(``hoglab.stats.posthog_monte_carlo_*``, seeded) within Monte Carlo error, and against the deterministic verdicts
to the last digit."""

from __future__ import annotations

import math
from typing import Any

import pytest

from hoglab.stats.posthog import (
    funnel_verdict,
    posthog_monte_carlo_funnel,
    posthog_monte_carlo_trend,
    posthog_poisson_p_value,
    trend_verdict,
)

from . import oracle
from .oracle import END, START, VARIANTS

pytestmark = pytest.mark.xdist_group("experiment_results")

FLAG = "checkout-flow"
TZ = "America/New_York"
ROLLOUT = [{"key": "control", "rollout_percentage": 34}, {"key": "test", "rollout_percentage": 33},
           {"key": "test-2", "rollout_percentage": 33}]  # fmt: skip
CHECKOUT = {"key": "$current_url", "value": "/checkout", "operator": "icontains", "type": "event"}
FUNNEL = {"insight": "FUNNELS", "funnel_window_interval": 2, "funnel_window_interval_unit": "day",
          "events": [{"id": "purchase", "order": 1}, {"id": "$pageview", "order": 0, "properties": [CHECKOUT]}]}
PURCHASES = {"insight": "TRENDS", "events": [{"id": "purchase", "order": 0}]}
SECONDARY = [
    {"name": "purchases", "filters": PURCHASES},
    {"name": "purchases per buyer",
     "filters": {"insight": "TRENDS", "events": [{"id": "purchase", "math": "avg_count_per_actor"}]}},
    {"name": "revenue",
     "filters": {"insight": "TRENDS", "events": [{"id": "purchase", "math": "sum", "math_property": "price"}]}},
    {"name": "checkout conversion", "filters": FUNNEL},
]  # fmt: skip
# Monte Carlo error of a probability from 100,000 draws is at most 0.0016; five of those.
PROBABILITY_TOLERANCE = 0.008


@pytest.fixture(scope="module")
def world(results_project) -> dict[str, Any]:
    data = oracle.generate(11, FLAG)
    project = results_project(data, timezone=TZ)
    # Another project with the same flag key and other events: nothing of it may leak into the first.
    other = results_project(oracle.generate(12, FLAG), timezone="UTC")
    body = {"feature_flag_key": FLAG, "start_date": START.isoformat(), "end_date": END.isoformat(),
            "parameters": {"feature_flag_variants": ROLLOUT}}  # fmt: skip
    experiment = project.create(name="Checkout", filters=FUNNEL, secondary_metrics=SECONDARY, **body)
    other_data = oracle.generate(12, FLAG)
    trend_experiment = other.create(name="Purchases", filters=PURCHASES, **body)
    return {"project": project, "data": data, "experiment": experiment["id"], "other": other,
            "other_data": other_data, "trend_experiment": trend_experiment["id"]}  # fmt: skip


def _ok(response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"result", "last_refresh", "is_cached"}
    return dict(body["result"])


def _funnel_oracle(data) -> list[tuple[str, int, int]]:
    steps = oracle.funnel(data, FLAG)
    return [(v, steps[v][1], steps[v][0] - steps[v][1]) for v in VARIANTS]


def _trend_oracle(counts: dict[str, float], exposed: dict[str, int]) -> list[tuple[str, int, float, int]]:
    return [(v, int(counts[v]), exposed[v] / exposed["control"], exposed[v]) for v in VARIANTS]


def _same_statistics(result: dict[str, Any], deterministic: Any, monte_carlo: Any) -> None:
    """To the last digit with the deterministic verdict (the client's numbers), within MC error of PostHog's."""
    expected = deterministic.to_dict()
    for key in ("probability", "significant", "significance_code", "credible_intervals"):
        assert result[key] == expected[key], key
    assert result["significance_code"] == monte_carlo.significance_code.value
    for variant, probability in monte_carlo.probability.items():
        assert result["probability"][variant] == pytest.approx(probability, abs=PROBABILITY_TOLERANCE)
    for variant, (low, high) in monte_carlo.credible_intervals.items():
        assert result["credible_intervals"][variant] == pytest.approx([low, high], rel=1e-9)


def test_funnel_metric_agrees_with_pandas_and_posthogs_definitions(world) -> None:
    result = _ok(world["project"].results(world["experiment"]))
    expected = _funnel_oracle(world["data"])
    by_key = {v["key"]: (v["success_count"], v["failure_count"]) for v in result["variants"]}
    assert by_key == {v: (s, f) for v, s, f in expected}
    assert result["variants"][0]["key"] == "control"
    # The insight keeps the variants' breakdowns only (persons without the flag property are left out).
    assert sorted(steps[0]["breakdown_value"][0] for steps in result["insight"]) == sorted(VARIANTS)
    assert result["filters"]["date_from"] == START.astimezone(oracle.ZoneInfo(TZ)).isoformat()
    assert result["filters"]["breakdown"] == f"$feature/{FLAG}" and result["filters"]["explicit_date"] is True

    monte_carlo = posthog_monte_carlo_funnel(expected, seed=2025)
    _same_statistics(result, funnel_verdict(expected), monte_carlo)
    assert result["expected_loss"] == funnel_verdict(expected).expected_loss
    assert result["significance_code"] == "significant"  # the test arm converts 0.45 against 0.31
    # PostHog's estimate of the loss has a Monte Carlo error of about its own size / sqrt(100,000) x a few.
    assert result["expected_loss"] == pytest.approx(monte_carlo.expected_loss, rel=0.05, abs=2e-5)


def test_trend_secondary_metric_counts_events_over_flag_exposures(world) -> None:
    result = _ok(world["project"].results(world["experiment"], secondary=0))
    data = world["data"]
    counts, exposed = oracle.event_counts(data, FLAG, "purchase"), oracle.exposures(data, FLAG)
    assert result["result"] == {v: float(counts[v]) for v in VARIANTS}
    expected = _trend_oracle(counts, exposed)
    got = {v["key"]: (v["count"], v["exposure"], v["absolute_exposure"]) for v in result["variants"]}
    assert got == {v: (c, pytest.approx(e, rel=1e-12), a) for v, c, e, a in expected}
    _same_statistics(result, trend_verdict(expected), posthog_monte_carlo_trend(expected, seed=7))
    best = max(expected[1:], key=lambda arm: arm[1])
    assert result["p_value"] == posthog_poisson_p_value(expected[0][1], 1.0, best[1], best[2])
    assert result["exposure_filters"]["breakdown"] == "$feature_flag_response"
    assert [e["id"] for e in result["exposure_filters"]["events"]] == ["$feature_flag_called"]


def test_per_user_math_uses_the_metric_events_own_users_as_exposure(world) -> None:
    result = _ok(world["project"].results(world["experiment"], secondary=1))
    data = world["data"]
    values = oracle.mean_daily_count_per_person(data, FLAG, "purchase", TZ)
    assert result["result"] == {v: pytest.approx(values[v], rel=1e-12) for v in VARIANTS}
    counts, users = oracle.event_counts(data, FLAG, "purchase"), oracle.unique_persons(data, FLAG, "purchase")
    expected = _trend_oracle(counts, users)
    got = {v["key"]: (v["count"], v["absolute_exposure"]) for v in result["variants"]}
    assert got == {v: (c, a) for v, c, _, a in expected}
    _same_statistics(result, trend_verdict(expected), posthog_monte_carlo_trend(expected, seed=8))
    assert result["filters"]["display"] == "ActionsLineGraph"  # a per-interval line, not cumulative


def test_sum_math_sums_the_property_and_keeps_flag_exposures(world) -> None:
    result = _ok(world["project"].results(world["experiment"], secondary=2))
    data = world["data"]
    sums, exposed = oracle.property_sums(data, FLAG, "purchase", "price"), oracle.exposures(data, FLAG)
    assert result["result"] == {v: pytest.approx(sums[v], rel=1e-9) for v in VARIANTS}
    got = {v["key"]: (v["count"], v["absolute_exposure"]) for v in result["variants"]}
    assert got == {v: (math.floor(sums[v]), exposed[v]) for v in VARIANTS}


def test_funnel_secondary_metric_is_the_conversion_rate(world) -> None:
    result = _ok(world["project"].results(world["experiment"], secondary=3))
    steps = oracle.funnel(world["data"], FLAG)
    assert result["result"] == {v: round(steps[v][1] / steps[v][0], 3) for v in VARIANTS}
    assert result["significance_code"] == "significant" and "expected_loss" in result


def test_trend_primary_metric_in_another_project(world) -> None:
    other, data = world["other"], world["other_data"]
    result = _ok(other.results(world["trend_experiment"]))
    expected = _trend_oracle(oracle.event_counts(data, FLAG, "purchase"), oracle.exposures(data, FLAG))
    got = {v["key"]: (v["count"], v["exposure"], v["absolute_exposure"]) for v in result["variants"]}
    assert got == {v: (c, pytest.approx(e, rel=1e-12), a) for v, c, e, a in expected}
    assert result["variants"][0]["key"] == "control"
    _same_statistics(result, trend_verdict(expected), posthog_monte_carlo_trend(expected, seed=9))
    # The insight: one cumulative line per variant, its last point the variant's count.
    lines = {item["breakdown_value"]: item for item in result["insight"]}
    assert set(lines) == set(VARIANTS)
    assert all(line["data"][-1] == line["count"] == got[v][0] for v, line in lines.items())


def test_custom_exposure_filter_counts_its_own_event(world) -> None:
    other, data = world["other"], world["other_data"]
    experiment = world["trend_experiment"]
    custom = {"events": [{"id": "$pageview", "math": "dau", "properties": [CHECKOUT]}]}
    patched = other.http.patch(f"{other.base}{experiment}/", json={"parameters": {"custom_exposure_filter": custom}})
    assert patched.status_code == 200, patched.text
    answer = other.results(experiment)
    assert answer.json()["is_cached"] is False  # an edited experiment is computed again
    result = _ok(answer)
    views = oracle.metric_events(data, FLAG, "$pageview")
    views = views[oracle.prop(views, "$current_url").str.lower().str.contains("/checkout")]
    exposed = views.groupby("variant")["person"].nunique().to_dict()
    assert {v["key"]: v["absolute_exposure"] for v in result["variants"]} == exposed
    assert result["exposure_filters"]["breakdown"] == f"$feature/{FLAG}"
    expected = _trend_oracle(oracle.event_counts(data, FLAG, "purchase"), exposed)
    assert result["probability"] == trend_verdict(expected).to_dict()["probability"]


def test_the_same_data_gives_the_same_numbers_on_every_call(world) -> None:
    project, experiment = world["project"], world["experiment"]
    answers = [project.results(experiment, refresh="1").json() for _ in range(3)]
    answers += [project.results(experiment).json()]
    assert [a["is_cached"] for a in answers] == [False, False, False, True]
    assert all(a["result"] == answers[0]["result"] for a in answers)
    assert answers[3]["last_refresh"] == answers[2]["last_refresh"]
