"""PostHog's opt-in sequential test (``stats_config.frequentist.sequential_testing_enabled``, PR #60879) inside
``experiment_results``: the always-valid p-value and confidence sequence of Waudby-Smith et al. (eq. 9, 155, 161)
on the effect, checked against the formulas restated here, their duality, and a simulation of continuous peeking
(the false-positive rate stays at α where a peeked fixed-horizon test's does not)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hoglab.stats.posthog import ExperimentStats, TeamDefaults, experiment_results

SEQUENTIAL = {"method": "frequentist", "frequentist": {"sequential_testing_enabled": True}}
CONTROL = ExperimentStats("control", 3000, 1400.0, 52000.0)
TEST = ExperimentStats("test", 3500, 2500.0, 135000.0)


def _restated(estimate: float, variance: float, n: int, alpha: float, tuning: float) -> tuple[float, float]:
    """Half-width (eq. 9) and p-value (eq. 155) written out from the paper, per-unit variance V·n."""
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / tuning
    a = n * rho2 + 1
    half = math.sqrt(variance * n) * math.sqrt(2 * a * math.log(math.sqrt(a) / alpha) / (n * n * rho2))
    log_e = rho2 * (estimate**2 * n / variance) / (2 * a) - 0.5 * math.log(a)
    return half, 1.0 if log_e <= 0 else min(1.0, math.exp(-log_e))


@pytest.mark.parametrize("tuning", [1000.0, 5000.0, 20000.0])
@pytest.mark.parametrize("difference_type", ["RELATIVE", "ABSOLUTE"])
def test_sequential_answer_equals_the_papers_formulas(tuning: float, difference_type: str) -> None:
    config = {"method": "frequentist", "frequentist": {"sequential_testing_enabled": True,
                                                      "sequential_tuning_parameter": tuning,
                                                      "difference_type": difference_type}}  # fmt: skip
    _, [r] = experiment_results("mean", CONTROL, [TEST], stats_config=config)
    assert r.sequential and r.test is not None and r.test.test_type == "sequential_two_sided"
    t_mean, c_mean = 2500 / 3500, 1400 / 3000
    t_var, c_var = (135000 - 2500**2 / 3500) / 3499, (52000 - 1400**2 / 3000) / 2999
    if difference_type == "RELATIVE":
        estimate = (t_mean - c_mean) / c_mean
        variance = t_var / (3500 * c_mean**2) + t_mean**2 * c_var / (3000 * c_mean**4)
    else:
        estimate, variance = t_mean - c_mean, t_var / 3500 + c_var / 3000
    half, p = _restated(estimate, variance, 6500, 0.05, tuning)
    assert r.point_estimate == pytest.approx(estimate, rel=1e-12)
    assert r.confidence_interval == pytest.approx((estimate - half, estimate + half), rel=1e-10)
    assert r.p_value == pytest.approx(p, rel=1e-9, abs=1e-300)
    assert r.significant is (p < 0.05)
    assert (r.p_value < 0.05) is not (r.confidence_interval[0] <= 0 <= r.confidence_interval[1])  # duality
    body = r.to_posthog()
    assert set(body) >= {"p_value", "confidence_interval", "significant"} and body["method"] == "frequentist"


def test_sequential_is_frequentist_only_and_follows_team_defaults() -> None:
    _, [bayes] = experiment_results("mean", CONTROL, [TEST], stats_config={"frequentist": {
        "sequential_testing_enabled": True}})  # fmt: skip
    assert not bayes.sequential and bayes.chance_to_win is not None
    team = TeamDefaults(sequential_testing_enabled=True, sequential_tuning_parameter=2000)
    _, [by_team] = experiment_results("mean", CONTROL, [TEST], stats_config={"method": "frequentist"}, team=team)
    _, [explicit] = experiment_results("mean", CONTROL, [TEST], stats_config={
        "method": "frequentist", "frequentist": {"sequential_testing_enabled": True,
                                                 "sequential_tuning_parameter": 2000}})  # fmt: skip
    assert by_team.sequential and by_team.confidence_interval == explicit.confidence_interval


def _arm(key: str, values: np.ndarray) -> ExperimentStats:
    return ExperimentStats(key, values.size, float(values.sum()), float((values * values).sum()))


@pytest.mark.slow
def test_continuous_peeking_keeps_the_false_positive_rate_at_alpha() -> None:
    """400 A/A experiments of 2,500 units per arm, looked at 25 times each (every 100 units). Rejecting at any
    look: the sequential test stays at or below α; the fixed-horizon test, peeked the same way, is far above."""
    rng = np.random.default_rng(31)
    experiments, looks, step = 400, 25, 100
    sequential_hits = fixed_hits = 0
    for _ in range(experiments):
        c, t = rng.lognormal(1.0, 0.8, looks * step), rng.lognormal(1.0, 0.8, looks * step)
        seq_rejected = fixed_rejected = False
        for k in range(1, looks + 1):
            control, test = _arm("control", c[: k * step]), _arm("test", t[: k * step])
            _, [s] = experiment_results("mean", control, [test], stats_config=SEQUENTIAL)
            _, [f] = experiment_results("mean", control, [test], stats_config={"method": "frequentist"})
            seq_rejected |= bool(s.significant)
            fixed_rejected |= bool(f.significant)
        sequential_hits += seq_rejected
        fixed_hits += fixed_rejected
    band = 3.5 * math.sqrt(0.05 * 0.95 / experiments)
    assert sequential_hits / experiments <= 0.05 + band
    assert fixed_hits / experiments > 2 * 0.05
