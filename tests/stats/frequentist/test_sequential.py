"""Always-valid inference: duality, and calibration under continuous peeking."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import Proportion, StatsInputError, compare, confidence_sequence, sequential_p_value


def test_p_value_and_sequence_are_dual() -> None:
    rng = np.random.default_rng(60)
    for _ in range(500):
        est, se, n = rng.normal(0, 0.01), rng.uniform(0.001, 0.02), rng.uniform(100, 1e6)
        alpha, tuning = rng.choice([0.01, 0.05, 0.1]), rng.choice([1000.0, 5000.0, 1e5])
        lo, hi = confidence_sequence(est, se, n, alpha=alpha, tuning=tuning)
        p = sequential_p_value(est, se, n, alpha=alpha, tuning=tuning)
        if abs(p - alpha) > 1e-9:
            assert (p < alpha) == (not lo <= 0.0 <= hi)


def test_sequence_is_wider_than_the_fixed_interval_and_tightest_near_tuning() -> None:
    se_per_unit = 0.5
    widths = {}
    for n in (1000.0, 5000.0, 25_000.0):
        se = se_per_unit / math.sqrt(n)
        lo, hi = confidence_sequence(0.0, se, n, tuning=5000)
        widths[n] = (hi - lo) / (2 * stats.norm.isf(0.025) * se)  # relative to the fixed-horizon width
    assert all(w > 1.0 for w in widths.values())
    assert widths[5000.0] < widths[1000.0] and widths[5000.0] < widths[25_000.0]


def test_huge_statistics_do_not_overflow() -> None:
    assert sequential_p_value(0.01, 1e-6, 2e7) == 0.0
    assert sequential_p_value(0.0, 0.0, 10) == 1.0
    with pytest.raises(StatsInputError):
        confidence_sequence(0.0, 1.0, 0.0)


def _peeking_streams(rng: np.random.Generator, sims: int, peeks: int, batch: int, p_c: float, p_t: float):
    s_c = rng.binomial(batch, p_c, size=(sims, peeks)).cumsum(axis=1)
    s_t = rng.binomial(batch, p_t, size=(sims, peeks)).cumsum(axis=1)
    n = batch * np.arange(1, peeks + 1)
    rate_c, rate_t = s_c / n, s_t / n
    diff = rate_t - rate_c
    se = np.sqrt(rate_c * (1 - rate_c) / n + rate_t * (1 - rate_t) / n)
    return diff, se, n


def test_peeking_keeps_the_sequential_false_positive_rate_below_alpha() -> None:
    rng = np.random.default_rng(61)
    sims, peeks, batch, alpha = 2000, 20, 500, 0.05
    diff, se, n = _peeking_streams(rng, sims, peeks, batch, 0.1, 0.1)
    sequential = np.zeros(sims, dtype=bool)
    for j in range(peeks):
        p = np.array(
            [
                sequential_p_value(d, s, 2 * n[j], tuning=2 * n[-1])
                for d, s in zip(diff[:, j], se[:, j], strict=True)
            ]
        )
        sequential |= p < alpha
    naive = (2 * stats.norm.sf(np.abs(diff / se)) < alpha).any(axis=1)
    binomial_se = math.sqrt(alpha * (1 - alpha) / sims)
    assert sequential.mean() < alpha + 3 * binomial_se
    assert naive.mean() > 2.5 * alpha  # the fixed-horizon test, peeked at 20 times, roughly quadruples α


def test_sequence_covers_the_true_effect_at_every_peek_at_once() -> None:
    rng = np.random.default_rng(62)
    sims, peeks, batch, alpha = 2000, 20, 500, 0.05
    diff, se, n = _peeking_streams(rng, sims, peeks, batch, 0.10, 0.12)
    missed = np.zeros(sims, dtype=bool)
    for j in range(peeks):
        bounds = np.array(
            [
                confidence_sequence(d, s, 2 * n[j], tuning=5000)
                for d, s in zip(diff[:, j], se[:, j], strict=True)
            ]
        )
        missed |= (bounds[:, 0] > 0.02) | (bounds[:, 1] < 0.02)
    assert missed.mean() < alpha + 3 * math.sqrt(alpha * (1 - alpha) / sims)
    # ... and it still has power: most experiments detect the effect by the last peek.
    detected = np.array(
        [
            confidence_sequence(d, s, 2 * n[-1], tuning=2 * n[-1])[0] > 0
            for d, s in zip(diff[:, -1], se[:, -1], strict=True)
        ]
    )
    assert detected.mean() > 0.8


def test_compare_sequential_uses_these_functions() -> None:
    c, t = Proportion(10_000, 1000), Proportion(10_000, 1100)
    row = compare({"control": c, "test": t}, method="sequential", relative=False, tuning=20_000).rows[0]
    diff = t.rate - c.rate
    se = math.sqrt(c.variance / c.n + t.variance / t.n)
    assert row.p_value == pytest.approx(sequential_p_value(diff, se, 20_000, tuning=20_000), rel=1e-12)
    assert row.difference_ci == pytest.approx(confidence_sequence(diff, se, 20_000, tuning=20_000), rel=1e-12)
    fixed = compare({"control": c, "test": t}).rows[0]
    assert row.p_value > fixed.p_value  # the price of being allowed to peek
