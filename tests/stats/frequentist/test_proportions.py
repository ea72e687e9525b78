"""Conversion tests and intervals against statsmodels and scipy closed forms (1e-9)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import (
    confint_proportions_2indep,
    proportion_confint,
    proportions_ztest,
)

from hoglab.stats import (
    Proportion,
    StatsInputError,
    chi_square_test,
    newcombe_interval,
    risk_ratio_interval,
    two_proportion_ztest,
    wilson_interval,
)

# (control n, control successes, treatment n, treatment successes)
CASES = [
    (1000, 100, 1000, 120),
    (1000, 100, 1000, 130),
    (50, 3, 60, 9),
    (12, 1, 15, 0),
    (100, 0, 100, 2),
    (100, 100, 90, 85),
    (250_000, 25_310, 249_100, 25_002),
    (10_000_000, 1_000_000, 10_000_000, 1_002_000),
    (7, 3, 1_000_000, 400_000),
]


@pytest.mark.parametrize(("n_c", "s_c", "n_t", "s_t"), CASES)
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_ztest_matches_statsmodels(n_c: int, s_c: int, n_t: int, s_t: int, alternative: str) -> None:
    ours = two_proportion_ztest(Proportion(n_c, s_c), Proportion(n_t, s_t), alternative=alternative)  # type: ignore[arg-type]
    sm_alt = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}[alternative]
    z, p = proportions_ztest([s_t, s_c], [n_t, n_c], alternative=sm_alt)
    assert ours.statistic == pytest.approx(z, rel=1e-9, abs=1e-12)
    assert ours.p_value == pytest.approx(p, rel=1e-9, abs=1e-300)


def test_tiny_p_values_keep_their_precision() -> None:
    # 1 - cdf would round to 0 here; the survival function does not.
    r = two_proportion_ztest(Proportion(1_000_000, 100_000), Proportion(1_000_000, 104_000))
    assert 0.0 < r.p_value < 1e-20
    assert r.p_value == pytest.approx(2 * stats.norm.sf(abs(r.statistic)), rel=1e-12)


@pytest.mark.parametrize(("n_c", "s_c", "n_t", "s_t"), CASES)
@pytest.mark.parametrize("correction", [False, True])
def test_chi_square_matches_scipy(n_c: int, s_c: int, n_t: int, s_t: int, correction: bool) -> None:
    table = np.array([[s_c, n_c - s_c], [s_t, n_t - s_t]])
    ours = chi_square_test([Proportion(n_c, s_c), Proportion(n_t, s_t)], correction=correction)
    ref = stats.chi2_contingency(table, correction=correction)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours.dof == ref.dof
    np.testing.assert_allclose(np.array(ours.expected), ref.expected_freq, rtol=1e-12)
    if not correction:  # chi-square without Yates is the square of the pooled z
        z = two_proportion_ztest(Proportion(n_c, s_c), Proportion(n_t, s_t)).statistic
        assert ours.statistic == pytest.approx(z * z, rel=1e-9, abs=1e-12)


def test_chi_square_with_several_arms_matches_scipy() -> None:
    arms = [Proportion(1000, 100), Proportion(990, 130), Proportion(1010, 90), Proportion(1005, 111)]
    table = np.array([[a.successes, a.failures] for a in arms])
    ref = stats.chi2_contingency(table)  # Yates is only applied at dof 1
    ours = chi_square_test(arms, correction=True)
    assert ours.dof == 3
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize(("n", "s"), [(1000, 100), (20, 0), (20, 20), (7, 3), (10_000_000, 123_456), (1, 0)])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_wilson_matches_statsmodels(n: int, s: int, alpha: float) -> None:
    lo, hi = wilson_interval(Proportion(n, s), alpha)
    ref_lo, ref_hi = proportion_confint(s, n, alpha=alpha, method="wilson")
    assert lo == pytest.approx(ref_lo, rel=1e-9, abs=1e-15)
    assert hi == pytest.approx(ref_hi, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("n_c", "s_c", "n_t", "s_t"), CASES)
def test_newcombe_matches_statsmodels(n_c: int, s_c: int, n_t: int, s_t: int) -> None:
    lo, hi = newcombe_interval(Proportion(n_c, s_c), Proportion(n_t, s_t))
    ref = confint_proportions_2indep(s_t, n_t, s_c, n_c, method="newcomb", compare="diff")
    assert lo == pytest.approx(ref[0], rel=1e-9, abs=1e-15)
    assert hi == pytest.approx(ref[1], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("n_c", "s_c", "n_t", "s_t"), CASES)
def test_katz_risk_ratio_matches_statsmodels(n_c: int, s_c: int, n_t: int, s_t: int) -> None:
    method = "log-adjusted" if min(s_c, s_t) == 0 else "log"
    lo, hi = risk_ratio_interval(Proportion(n_c, s_c), Proportion(n_t, s_t))
    ref = confint_proportions_2indep(s_t, n_t, s_c, n_c, method=method, compare="ratio")
    assert lo == pytest.approx(ref[0], rel=1e-9)
    assert hi == pytest.approx(ref[1], rel=1e-9)


def test_degenerate_tables() -> None:
    zero = two_proportion_ztest(Proportion(100, 0), Proportion(100, 0))
    assert (zero.statistic, zero.p_value) == (0.0, 1.0)
    full = chi_square_test([Proportion(50, 50), Proportion(60, 60)])
    assert (full.statistic, full.p_value) == (0.0, 1.0)
    with pytest.raises(StatsInputError):
        two_proportion_ztest(Proportion(0, 0), Proportion(10, 1))
    with pytest.raises(StatsInputError):
        chi_square_test([Proportion(10, 1)])
    with pytest.raises(StatsInputError):
        wilson_interval(Proportion(10, 1), alpha=1.5)


def _simulate(
    rng: np.random.Generator, p_c: float, p_t: float, n: int, sims: int
) -> tuple[np.ndarray, np.ndarray]:
    return rng.binomial(n, p_c, size=sims), rng.binomial(n, p_t, size=sims)


def test_aa_false_positive_rate_is_alpha() -> None:
    rng = np.random.default_rng(20)
    sims, n, alpha = 4000, 2000, 0.05
    s_c, s_t = _simulate(rng, 0.1, 0.1, n, sims)
    z_p = np.array(
        [
            two_proportion_ztest(Proportion(n, a), Proportion(n, b)).p_value
            for a, b in zip(s_c, s_t, strict=True)
        ]
    )
    chi_p = np.array(
        [chi_square_test([Proportion(n, a), Proportion(n, b)]).p_value for a, b in zip(s_c, s_t, strict=True)]
    )
    se = np.sqrt(alpha * (1 - alpha) / sims)
    assert abs((z_p < alpha).mean() - alpha) < 4 * se
    assert abs((chi_p < alpha).mean() - alpha) < 4 * se


def test_interval_coverage_is_nominal() -> None:
    rng = np.random.default_rng(21)
    sims, n, p_c, p_t = 4000, 800, 0.08, 0.11
    s_c, s_t = _simulate(rng, p_c, p_t, n, sims)
    newcombe = np.array(
        [newcombe_interval(Proportion(n, a), Proportion(n, b)) for a, b in zip(s_c, s_t, strict=True)]
    )
    wilson = np.array([wilson_interval(Proportion(n, b)) for b in s_t])
    katz = np.array(
        [risk_ratio_interval(Proportion(n, a), Proportion(n, b)) for a, b in zip(s_c, s_t, strict=True)]
    )
    se = np.sqrt(0.95 * 0.05 / sims)
    for interval, truth in ((newcombe, p_t - p_c), (wilson, p_t), (katz, p_t / p_c)):
        coverage = ((interval[:, 0] <= truth) & (truth <= interval[:, 1])).mean()
        assert abs(coverage - 0.95) < 4 * se, coverage
