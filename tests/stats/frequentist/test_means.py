"""Welch's t-test from sufficient statistics and delta-method lifts, against scipy/statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import (
    Ratio,
    SampleMean,
    StatsInputError,
    compare,
    delta_method_lift,
    mean_difference_interval,
    welch_ttest,
)
from hoglab.stats._frequentist.means import ArmEstimate, effect_from_arms, mean_arm, ratio_arm, t_interval

RNG = np.random.default_rng(7)
SAMPLES = [
    (RNG.normal(10, 2, 50), RNG.normal(10.5, 3, 70)),
    (RNG.exponential(5, 1000), RNG.exponential(5.2, 900)),
    (RNG.lognormal(0, 1, 20_000), RNG.lognormal(0.01, 1, 20_500)),
    (np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 35.0, 41.0])),
]


@pytest.mark.parametrize(("a", "b"), SAMPLES)
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_welch_matches_scipy_from_stats(a: np.ndarray, b: np.ndarray, alternative: str) -> None:
    ours = welch_ttest(SampleMean.from_values(a), SampleMean.from_values(b), alternative=alternative)  # type: ignore[arg-type]
    ref = stats.ttest_ind_from_stats(
        b.mean(),
        b.std(ddof=1),
        b.size,
        a.mean(),
        a.std(ddof=1),
        a.size,
        equal_var=False,
        alternative=alternative,
    )
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize(("a", "b"), SAMPLES)
def test_welch_dof_and_interval_match_scipy_raw(a: np.ndarray, b: np.ndarray) -> None:
    ref = stats.ttest_ind(b, a, equal_var=False)
    ours = welch_ttest(SampleMean.from_values(a), SampleMean.from_values(b))
    assert ours.dof == pytest.approx(ref.df, rel=1e-9)
    lo, hi = mean_difference_interval(SampleMean.from_values(a), SampleMean.from_values(b), alpha=0.1)
    ci = ref.confidence_interval(0.9)
    assert lo == pytest.approx(ci.low, rel=1e-9)
    assert hi == pytest.approx(ci.high, rel=1e-9)


def test_delta_lift_matches_statsmodels_numerical_delta() -> None:
    from statsmodels.stats._delta_method import NonlinearDeltaCov

    c, t = ArmEstimate(10.0, 4.0, 500), ArmEstimate(10.6, 5.0, 450)
    lift, se = delta_method_lift(c, t)
    cov = np.diag([c.variance_of_mean, t.variance_of_mean])
    ref = NonlinearDeltaCov(lambda p: np.array([p[1] / p[0] - 1.0]), np.array([10.0, 10.6]), cov)
    assert lift == pytest.approx(0.06, rel=1e-12)
    assert se == pytest.approx(math.sqrt(float(ref.cov()[0, 0])), rel=1e-6)
    assert math.isnan(delta_method_lift(ArmEstimate(0.0, 1.0, 10), t)[0])


def test_zero_variance_is_flagged_not_crashing() -> None:
    same = welch_ttest(SampleMean(10, 20.0, 40.0), SampleMean(10, 20.0, 40.0))
    assert (same.statistic, same.p_value) == (0.0, 1.0)
    apart = welch_ttest(SampleMean(10, 20.0, 40.0), SampleMean(10, 30.0, 90.0))
    assert math.isnan(apart.p_value)
    with pytest.raises(StatsInputError):
        welch_ttest(SampleMean(1, 1.0, 1.0), SampleMean(10, 20.0, 40.0))


def _draws(rng: np.random.Generator, sims: int, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    # Skewed per-user values (revenue-like): the CLT has to do real work.
    return rng.lognormal(0.0, 1.0, size=(sims, n)), rng.lognormal(0.0, 1.0, size=(sims, n)) * shift


def test_aa_false_positive_rate_and_coverage() -> None:
    rng = np.random.default_rng(23)
    sims, n, alpha = 3000, 400, 0.05
    a, b = _draws(rng, sims, n, 1.0)
    sa = [SampleMean(n, x.sum(), (x * x).sum()) for x in a]
    sb = [SampleMean(n, x.sum(), (x * x).sum()) for x in b]
    p = np.array([welch_ttest(x, y).p_value for x, y in zip(sa, sb, strict=True)])
    se = np.sqrt(alpha * (1 - alpha) / sims)
    assert abs((p < alpha).mean() - alpha) < 4 * se


def test_lift_and_ratio_interval_coverage() -> None:
    rng = np.random.default_rng(24)
    sims, n, shift = 2000, 1000, 1.05
    a, b = _draws(rng, sims, n, shift)
    d_c, d_t = rng.poisson(3, size=(sims, n)) + 1.0, rng.poisson(3, size=(sims, n)) + 1.0
    m_c, m_t = d_c * a, d_t * b
    mean_covered = ratio_covered = 0
    for i in range(sims):
        c, t = _moments(a[i]), _moments(b[i])
        e = effect_from_arms(mean_arm(c), mean_arm(t))
        lo, hi = t_interval(e.lift, e.lift_se, e.dof, 0.05)
        mean_covered += lo <= shift - 1 <= hi
        rc = Ratio(_moments(m_c[i]), _moments(d_c[i]), float(m_c[i] @ d_c[i]))
        rt = Ratio(_moments(m_t[i]), _moments(d_t[i]), float(m_t[i] @ d_t[i]))
        e = effect_from_arms(ratio_arm(rc), ratio_arm(rt))
        lo, hi = t_interval(e.lift, e.lift_se, e.dof, 0.05)
        ratio_covered += lo <= shift - 1 <= hi  # E[m]/E[d] scales by the same shift
    se = np.sqrt(0.95 * 0.05 / sims)
    assert abs(mean_covered / sims - 0.95) < 4 * se
    assert abs(ratio_covered / sims - 0.95) < 4 * se


def test_compare_uses_the_same_lift_interval() -> None:
    a, b = SAMPLES[1]
    c, t = SampleMean.from_values(a), SampleMean.from_values(b)
    row = compare({"control": c, "test": t}, check_srm=False).rows[0]
    e = effect_from_arms(mean_arm(c), mean_arm(t))
    assert row.lift_ci == pytest.approx(t_interval(e.lift, e.lift_se, e.dof, 0.05), rel=1e-12)
    assert row.p_value == pytest.approx(welch_ttest(c, t).p_value, rel=1e-12)


def _moments(x: np.ndarray) -> SampleMean:
    return SampleMean(x.size, float(x.sum()), float(x @ x))


def test_ratio_arm_refuses_a_zero_denominator() -> None:
    with pytest.raises(StatsInputError):
        ratio_arm(Ratio(SampleMean(3, 1.0, 1.0), SampleMean(3, 0.0, 0.0), 0.0))
