"""Calibration by simulation: histories with known true effects, read by meta_analysis.

One scenario like a product team's history: 40 experiments, true lifts ~ N(+0.5%, 1.5%²), standard errors from
0.5% to 3%; the shipped ones are the significant wins. The grid of scenarios (few or many experiments, τ small or
large against the noise, both shrinkage methods) is ``bench/bench_meta.py``, its figures in docs/statistics.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import meta_analysis

K, MU, TAU, HISTORIES = 40, 0.005, 0.015, 600


@pytest.fixture(scope="module")
def simulated() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2037)
    covered_one, covered_all, shipped_true, shipped_expected, shipped_se, shipped_read = [], [], [], [], [], []
    win_rate, naive = [], []
    for h in range(HISTORIES):
        truth = rng.normal(MU, TAU, K)
        se = rng.uniform(0.005, 0.03, K)
        y = truth + rng.normal(0, se)
        shipped = y / se > stats.norm.ppf(0.975)
        fit = meta_analysis(y, standard_error=se, shipped=shipped)
        frame = fit.to_frame()
        inside = (frame["shrunken_ci_low"].to_numpy() <= truth) & (truth <= frame["shrunken_ci_high"].to_numpy())
        covered_one.append(inside[h % K])  # one experiment per history: independent trials
        covered_all.append(inside.mean())
        win_rate.append(fit.win_rate)
        naive.append(fit.naive_win_rate)
        if fit.winners_curse is not None:
            shipped_true.append(truth[shipped].sum())
            shipped_expected.append(fit.winners_curse.expected_total)
            shipped_se.append(fit.winners_curse.expected_total_se)
            shipped_read.append(fit.winners_curse.observed_total)
    return {name: np.asarray(value, dtype=float) for name, value in locals().items() if isinstance(value, list)}


def test_shrunken_intervals_cover_the_true_effects_95_percent_of_the_time(simulated: dict[str, np.ndarray]) -> None:
    # One experiment per history (independent Bernoulli trials): within the 95% binomial band around 0.95.
    band = 1.96 * math.sqrt(0.95 * 0.05 / HISTORIES)
    assert abs(simulated["covered_one"].mean() - 0.95) <= band
    # Every experiment, with the between-history spread as the standard error (experiments of one history share
    # its fit, so their coverage is correlated).
    all_ = simulated["covered_all"]
    assert abs(all_.mean() - 0.95) <= 3 * all_.std(ddof=1) / math.sqrt(all_.size)


def test_the_winners_curse_correction_recovers_what_shipped_experiments_are_worth(
    simulated: dict[str, np.ndarray],
) -> None:
    true, expected, se, read = (simulated[n] for n in ("shipped_true", "shipped_expected", "shipped_se",
                                                       "shipped_read"))  # fmt: skip
    error = expected - true
    overstatement = read - true
    # What the shipped experiments read overstates their true total by many standard errors; the expected total
    # removes most of that (a posterior mean under a flat prior on τ² shrinks a little less than the truth here:
    # ~8% of the overstatement is left, see docs/statistics.md), and its interval covers the true total.
    assert overstatement.mean() > 10 * overstatement.std(ddof=1) / math.sqrt(overstatement.size)
    assert abs(error.mean()) < 0.15 * overstatement.mean()
    covered = np.abs(error) <= stats.norm.ppf(0.975) * se
    assert abs(covered.mean() - 0.95) <= 1.96 * math.sqrt(0.95 * 0.05 / covered.size)


def test_the_win_rate_corrected_for_noise_finds_the_true_share(simulated: dict[str, np.ndarray]) -> None:
    truth = stats.norm.sf(0, MU, TAU)  # 63% of true effects are positive
    assert abs(simulated["win_rate"].mean() - truth) < 0.02
    assert simulated["naive"].mean() < truth - 0.3  # the significant wins: ~20%
