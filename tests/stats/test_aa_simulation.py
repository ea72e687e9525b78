"""A/A simulation: with no effect, each method declares a winner at its nominal rate, within the binomial band.

2,000 seeded experiments per method, both arms drawn from the same distribution. The nominal rates:

* frequentist tests (hoglab's own z-test, PostHog's current Welch t on the relative effect): α = 0.05;
* PostHog's current Bayesian rule, "decisive" when the chance to win is above 0.95 or below 0.05: under no effect
  the chance to win is uniform, so 2·(1 − 0.95) = 0.10;
* PostHog's v2 funnel rule (significant when one of two arms is best with probability ≥ 0.9, no loss step):
  the probability of being best is uniform too, so 0.20; v2 counts add the loss step, which at these volumes
  never refuses, so 0.20 as well.

The band is ±3.5 binomial standard deviations around the nominal rate (false alarms of the test ≈ 1 in 2,000).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hoglab.stats import Proportion, two_proportion_ztest
from hoglab.stats.posthog import ExperimentStats, count_verdict_v2, experiment_results, funnel_verdict_v2

TRIALS = 2000


def _proportion_pairs(conversions: tuple[int, np.ndarray, np.ndarray]) -> list[tuple[ExperimentStats, ExperimentStats]]:
    n, control, test = conversions
    return [(ExperimentStats("control", n, int(c), int(c)), ExperimentStats("test", n, int(t), int(t)))
            for c, t in zip(control, test, strict=True)]  # fmt: skip


def _within_band(hits: int, rate: float) -> None:
    band = 3.5 * math.sqrt(rate * (1 - rate) / TRIALS)
    assert abs(hits / TRIALS - rate) < band, (hits / TRIALS, rate, band)


@pytest.fixture(scope="module")
def conversions() -> tuple[int, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2026)
    n = 3000
    return n, rng.binomial(n, 0.12, TRIALS), rng.binomial(n, 0.12, TRIALS)


@pytest.fixture(scope="module")
def revenue() -> list[tuple[ExperimentStats, ExperimentStats]]:
    rng = np.random.default_rng(11)
    pairs = []
    for _ in range(TRIALS):
        arms = []
        for key in ("control", "test"):
            values = rng.lognormal(1.0, 1.0, 600) * (rng.random(600) < 0.3)  # 30% spend, skewed
            arms.append(ExperimentStats(key, 600, float(values.sum()), float((values**2).sum())))
        pairs.append((arms[0], arms[1]))
    return pairs


def test_hoglab_z_test(conversions) -> None:
    n, control, test = conversions
    hits = sum(two_proportion_ztest(Proportion(n, int(c)), Proportion(n, int(t))).p_value < 0.05
               for c, t in zip(control, test, strict=True))  # fmt: skip
    _within_band(hits, 0.05)


@pytest.mark.parametrize("metric", ["funnel", "mean"])
def test_posthog_frequentist(conversions, revenue, metric) -> None:
    pairs = revenue if metric == "mean" else _proportion_pairs(conversions)
    hits = sum(bool(experiment_results(metric, c, [t], stats_config={"method": "frequentist"})[1][0].significant)
               for c, t in pairs)  # fmt: skip
    _within_band(hits, 0.05)


@pytest.mark.parametrize("metric", ["funnel", "mean"])
def test_posthog_bayesian_decision_rule(conversions, revenue, metric) -> None:
    pairs = revenue if metric == "mean" else _proportion_pairs(conversions)
    hits = sum(bool(experiment_results(metric, c, [t])[1][0].significant) for c, t in pairs)
    _within_band(hits, 0.10)


def test_posthog_v2_funnels(conversions) -> None:
    n, control, test = conversions
    hits = sum(funnel_verdict_v2({"control": (int(c), n - int(c)), "test": (int(t), n - int(t))}).significant
               for c, t in zip(control, test, strict=True))  # fmt: skip
    _within_band(hits, 0.20)


def test_posthog_v2_counts() -> None:
    rng = np.random.default_rng(5)
    persons = 2000
    control, test = rng.poisson(1.5 * persons, TRIALS), rng.poisson(1.5 * persons, TRIALS)
    hits = sum(count_verdict_v2({"control": (int(c), persons), "test": (int(t), persons)}).significant
               for c, t in zip(control, test, strict=True))  # fmt: skip
    _within_band(hits, 0.20)
