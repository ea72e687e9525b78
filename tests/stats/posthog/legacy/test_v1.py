"""PostHog-compatible verdicts: deterministic values against PostHog's Monte Carlo definition."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import PostHogStatsError, StatsInputError
from hoglab.stats.posthog import (
    FunnelVariant,
    SignificanceCode,
    TrendVariant,
    funnel_verdict,
    posthog_funnel_sample_size,
    posthog_monte_carlo_funnel,
    posthog_monte_carlo_trend,
    posthog_poisson_p_value,
    trend_verdict,
)

SIMULATIONS = 100_000


def _check_probabilities(ours: dict[str, float], mc: dict[str, float], k: float = 4.0) -> None:
    """Each test arm's MC probability is a proportion of 100,000 draws; the control's is
    1 − Σ of them, drawn independently, so its variance is the sum of theirs."""
    tests = [key for key in ours if key != "control"]
    variance = {key: ours[key] * (1 - ours[key]) / SIMULATIONS for key in tests}
    variance["control"] = sum(variance.values())
    for key, p in ours.items():
        se = max(math.sqrt(variance[key]), 1.0 / SIMULATIONS)  # floored so p near 0 gets a band
        assert abs(p - mc[key]) <= k * se, (key, p, mc[key])


FUNNELS = {
    "two_arms_significant": {"control": (60, 440), "test": (85, 415)},
    "three_arms_close": {"control": (500, 4500), "a": (520, 4480), "b": (505, 4495)},
    "four_arms_small": {"control": (12, 150), "a": (18, 140), "b": (9, 160), "c": (15, 150)},
    "ten_arms": {("control" if i == 0 else f"t{i}"): (1000 + 15 * i, 9000 - 15 * i) for i in range(10)},
}


@pytest.mark.parametrize("name", list(FUNNELS))
def test_funnel_probabilities_and_loss_match_monte_carlo(name: str) -> None:
    data = FUNNELS[name]
    ours = funnel_verdict(data)
    mc = posthog_monte_carlo_funnel(data, seed=11)
    _check_probabilities(ours.probability, mc.probability)
    assert sum(ours.probability.values()) == pytest.approx(1.0, abs=1e-9)
    if ours.significance_code in (SignificanceCode.SIGNIFICANT, SignificanceCode.HIGH_LOSS):
        # The loss is a mean of max(0, ·): its MC error is the sample sd over sqrt(draws).
        assert mc.expected_loss == pytest.approx(ours.expected_loss, rel=0.05, abs=4e-4)
    for key, (lo, hi) in ours.credible_intervals.items():
        s, f = data[key]
        assert (lo, hi) == pytest.approx(tuple(stats.beta.ppf([0.025, 0.975], s + 1, f + 1)), rel=1e-12)


def test_funnel_expected_loss_matches_monte_carlo_precisely() -> None:
    data = {"control": (400, 3600), "test": (445, 3555)}
    ours = funnel_verdict(data)
    rng = np.random.default_rng(5)
    c = rng.beta(401, 3601, 2_000_000)
    t = rng.beta(446, 3556, 2_000_000)
    loss = np.maximum(0.0, c - t)
    assert ours.expected_loss == pytest.approx(loss.mean(), abs=4 * loss.std() / math.sqrt(loss.size))


TRENDS = {
    "two_arms": [TrendVariant("control", 120, 1.0, 1000), TrendVariant("test", 150, 1.02, 1020)],
    "three_arms": [
        TrendVariant("control", 3000, 1.0, 5000),
        TrendVariant("a", 3150, 1.01, 5050),
        TrendVariant("b", 2990, 0.99, 4950),
    ],
    "zero_counts": [TrendVariant("control", 0, 1.0, 400), TrendVariant("test", 4, 1.0, 400)],
}


@pytest.mark.parametrize("name", list(TRENDS))
def test_trend_probabilities_match_monte_carlo(name: str) -> None:
    data = TRENDS[name]
    ours = trend_verdict(data)
    mc = posthog_monte_carlo_trend(data, seed=12)
    _check_probabilities(ours.probability, mc.probability)
    assert ours.p_value == mc.p_value  # the p-value is exact in both
    for v in data:
        ref = stats.gamma.ppf([0.025, 0.975], v.count + 1, scale=1 / v.absolute_exposure)
        assert ours.credible_intervals[v.key] == pytest.approx(tuple(ref), rel=1e-12)


def test_verdicts_are_deterministic_and_the_monte_carlo_is_seeded() -> None:
    data = FUNNELS["three_arms_close"]
    assert funnel_verdict(data) == funnel_verdict(data)
    assert trend_verdict(TRENDS["three_arms"]) == trend_verdict(TRENDS["three_arms"])
    a = posthog_monte_carlo_funnel(data, seed=3, simulations=2000)
    b = posthog_monte_carlo_funnel(data, seed=3, simulations=2000)
    assert a == b


def _posthog_poisson_reference(c_count: float, c_exp: float, t_count: float, t_exp: float) -> float:
    """PostHog's definition written out term by term (ee trends statistics), as the oracle."""
    r = t_exp / (c_exp + t_exp)
    n = c_count + t_count

    def term(i: int) -> float:
        log_choose = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
        return math.exp(log_choose + i * math.log(r) + (n - i) * math.log(1 - r))

    low = sum(term(i) for i in range(math.ceil(t_count) + 1))
    high = sum(term(i) for i in range(math.ceil(t_count), math.ceil(n) + 1))
    return min(1.0, 2 * min(low, high))


@pytest.mark.parametrize(
    "args",
    [
        (120, 1.0, 150, 1.02),
        (0, 1.0, 3, 1.0),
        (5, 1.0, 0, 1.2),
        (2000, 1.0, 2101, 0.98),
        (40.5, 1.0, 52.25, 1.1),
    ],
)
def test_poisson_p_value_is_posthogs_definition(args: tuple[float, float, float, float]) -> None:
    assert posthog_poisson_p_value(*args) == pytest.approx(_posthog_poisson_reference(*args), rel=1e-9)


def test_significance_codes_follow_posthogs_order() -> None:
    few = funnel_verdict({"control": (5, 90), "test": (50, 40)})
    assert (few.significance_code, few.expected_loss, few.significant) == (
        SignificanceCode.NOT_ENOUGH_EXPOSURE,
        1.0,
        False,
    )
    close = funnel_verdict({"control": (100, 900), "test": (101, 899)})
    assert close.significance_code is SignificanceCode.LOW_WIN_PROBABILITY and close.expected_loss == 1.0
    # Tests win together (Σ P > 0.9), but the best observed rate belongs to a small, uncertain
    # arm whose loss against the control stays above 1%.
    risky = funnel_verdict({"control": (48_500, 51_500), "a": (49_000, 51_000), "b": (50, 50)})
    assert risky.probability["control"] < 0.1 and risky.significance_code is SignificanceCode.HIGH_LOSS
    assert risky.expected_loss >= 0.01
    clear = funnel_verdict({"control": (1000, 9000), "test": (1200, 8800)})
    assert clear.significance_code is SignificanceCode.SIGNIFICANT and clear.significant
    # Control winning clearly is also "significant" (the loss is then the control's).
    control_wins = funnel_verdict({"control": (1200, 8800), "test": (1000, 9000)})
    assert control_wins.probability["control"] > 0.99 and control_wins.significant

    low = trend_verdict([TrendVariant("control", 10, 1.0, 50), TrendVariant("test", 30, 1.0, 500)])
    assert (low.significance_code, low.p_value) == (SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0)
    hi_p = trend_verdict(TRENDS["two_arms"])
    assert hi_p.probability["test"] > 0.9 and hi_p.significance_code is SignificanceCode.HIGH_P_VALUE
    sig = trend_verdict([TrendVariant("control", 1000, 1.0, 1000), TrendVariant("test", 1200, 1.0, 1000)])
    assert sig.significance_code is SignificanceCode.SIGNIFICANT and sig.p_value < 0.05


def test_input_forms_agree() -> None:
    mapping = funnel_verdict({"control": (60, 440), "test": (85, 415)})
    tuples = funnel_verdict([("control", 60, 440), ("test", 85, 415)])
    classes = funnel_verdict([FunnelVariant("test", 85, 415), FunnelVariant("control", 60, 440)])
    assert mapping == tuples == classes
    relative = trend_verdict({"control": (120, 1000), "test": (150, 1020)})
    assert relative.variants[1] == TrendVariant("test", 150, 1.02, 1020)
    assert relative == trend_verdict(TRENDS["two_arms"])


def test_to_dict_has_posthogs_json_shapes() -> None:
    funnel = funnel_verdict({"control": (60, 440), "test": (85, 415)}).to_dict()
    assert set(funnel) == {
        "probability",
        "significant",
        "significance_code",
        "expected_loss",
        "credible_intervals",
        "variants",
    }
    assert funnel["significance_code"] == "significant"
    assert (
        isinstance(funnel["credible_intervals"]["test"], list)
        and len(funnel["credible_intervals"]["test"]) == 2
    )
    assert funnel["variants"][0] == {"key": "control", "success_count": 60, "failure_count": 440}
    trend = trend_verdict(TRENDS["two_arms"]).to_dict()
    assert set(trend) == {
        "probability",
        "significant",
        "significance_code",
        "p_value",
        "credible_intervals",
        "variants",
    }
    assert trend["variants"][1] == {"key": "test", "count": 150, "exposure": 1.02, "absolute_exposure": 1020}
    json.dumps(funnel), json.dumps(trend)


@pytest.mark.parametrize(
    ("data", "message", "code"),
    [
        ({"a": (1, 2), "b": (3, 4)}, "No control variant data found", "no_data"),
        ({"control": (1, 2)}, "Can't calculate experiment results for less than 2 variants", "no_data"),
        (
            {"control": (1, 2), **{f"t{i}": (1, 2) for i in range(10)}},
            "Can't calculate experiment results for more than 10 variants",
            "too_much_data",
        ),
    ],
)
def test_posthog_errors(data: dict, message: str, code: str) -> None:
    with pytest.raises(PostHogStatsError, match=message) as info:
        funnel_verdict(data)
    assert info.value.code == code and isinstance(info.value, ValueError)
    trend_data = {k: (s, f + 1) for k, (s, f) in data.items()}
    with pytest.raises(PostHogStatsError, match=message):
        trend_verdict(trend_data)


def test_ten_variants_are_allowed() -> None:
    assert len(funnel_verdict(FUNNELS["ten_arms"]).probability) == 10


@pytest.mark.parametrize(
    "bad",
    [
        lambda: funnel_verdict({"control": (-1, 2), "test": (1, 2)}),
        lambda: funnel_verdict([("control", 1, 2), ("control", 1, 2)]),
        lambda: trend_verdict([TrendVariant("control", 1, 0.0, 10), TrendVariant("test", 1, 1.0, 10)]),
        lambda: funnel_verdict([("control", 1)]),
    ],
)
def test_bad_input(bad: object) -> None:
    with pytest.raises(StatsInputError):
        bad()  # type: ignore[operator]


def test_sample_size_helper_matches_posthogs_frontend_tests() -> None:
    # Values asserted in PostHog's own frontend tests (experimentLogic.test.ts).
    assert [posthog_funnel_sample_size(rate, 30) for rate in (20, 40, 0)] == [29, 43, 0]
    assert [posthog_funnel_sample_size(rate, 1) for rate in (20, 40)] == [25600, 38400]
    assert posthog_funnel_sample_size(20, 0) == 0


def test_huge_exposures() -> None:
    n = 10_000_000
    v = funnel_verdict({"control": (1_000_000, n - 1_000_000), "test": (1_003_000, n - 1_003_000)})
    assert all(math.isfinite(p) for p in v.probability.values()) and math.isfinite(v.expected_loss)
    t = trend_verdict({"control": (5_000_000, n), "test": (5_004_000, n)})
    assert math.isfinite(t.p_value) and all(math.isfinite(p) for p in t.probability.values())
