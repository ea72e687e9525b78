"""Exact conditional Poisson test against scipy/statsmodels and PostHog's definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats import rates as sm_rates

from hoglab.stats import Count, StatsInputError, poisson_rate_ratio_interval, poisson_rate_test

# (control count, control exposure, treatment count, treatment exposure)
CASES = [
    (120, 1000, 150, 1020),
    (0, 50, 3, 60),
    (5, 10, 0, 10),
    (37, 2.5, 52, 3.1),
    (1_000_000, 1e7, 1_004_000, 1e7),
    (10, 1.0, 10, 1.0),
]


@pytest.mark.parametrize(("k_c", "e_c", "k_t", "e_t"), CASES)
def test_one_sided_tails_match_scipy_binomtest(k_c: int, e_c: float, k_t: int, e_t: float) -> None:
    c, t = Count(k_c, e_c), Count(k_t, e_t)
    r = e_t / (e_c + e_t)
    n = k_c + k_t
    greater = stats.binomtest(k_t, n, r, alternative="greater").pvalue
    less = stats.binomtest(k_t, n, r, alternative="less").pvalue
    assert poisson_rate_test(c, t, alternative="greater").p_value == pytest.approx(greater, rel=1e-9)
    assert poisson_rate_test(c, t, alternative="less").p_value == pytest.approx(less, rel=1e-9)
    # Two-sided = doubled smaller tail (PostHog's definition, the "central" exact test).
    assert poisson_rate_test(c, t).p_value == pytest.approx(min(1.0, 2 * min(greater, less)), rel=1e-9)


@pytest.mark.parametrize(("k_c", "e_c", "k_t", "e_t"), [c for c in CASES if c[0] > 0 and c[2] > 0])
def test_one_sided_tails_match_statsmodels_exact_cond(k_c: int, e_c: float, k_t: int, e_t: float) -> None:
    for ours, theirs in (("greater", "larger"), ("less", "smaller")):
        ref = sm_rates.test_poisson_2indep(k_t, e_t, k_c, e_c, method="exact-cond", alternative=theirs).pvalue
        got = poisson_rate_test(Count(k_c, e_c), Count(k_t, e_t), alternative=ours).p_value  # type: ignore[arg-type]
        assert got == pytest.approx(ref, rel=1e-9)


def test_two_sided_differs_from_minlike_and_from_the_etest_on_purpose() -> None:
    """statsmodels' two-sided exact-cond sums outcomes no likelier than the observed one, and
    scipy's ``poisson_means_test`` is the E-test (Krishnamoorthy & Thomson 2004), an
    unconditional test. Both are valid but different tests; PostHog doubles the tail."""
    c, t = Count(120, 1000), Count(150, 1020)
    ours = poisson_rate_test(c, t).p_value
    minlike = sm_rates.test_poisson_2indep(150, 1020, 120, 1000, method="exact-cond").pvalue
    etest = stats.poisson_means_test(150, 1020, 120, 1000).pvalue
    assert ours != pytest.approx(minlike, rel=1e-6)
    assert ours != pytest.approx(etest, rel=1e-6)
    # ... yet all three agree to two decimals on a well-populated comparison.
    assert ours == pytest.approx(minlike, abs=0.01)
    assert ours == pytest.approx(etest, abs=0.02)


@pytest.mark.parametrize(("k_c", "e_c", "k_t", "e_t"), CASES)
def test_ratio_interval_is_clopper_pearson_mapped(k_c: int, e_c: float, k_t: int, e_t: float) -> None:
    lo, hi = poisson_rate_ratio_interval(Count(k_c, e_c), Count(k_t, e_t))
    n = k_c + k_t
    ci = stats.binomtest(k_t, n, 0.5).proportion_ci(confidence_level=0.95, method="exact")
    scale = e_c / e_t
    assert lo == pytest.approx(ci.low / (1 - ci.low) * scale, rel=1e-9)
    if ci.high >= 1.0:
        assert math.isinf(hi)
    else:
        assert hi == pytest.approx(ci.high / (1 - ci.high) * scale, rel=1e-9)


def test_test_and_interval_agree() -> None:
    # The doubled exact test inverts the Clopper–Pearson interval: p < α iff 1 is outside.
    rng = np.random.default_rng(3)
    for _ in range(200):
        c = Count(int(rng.integers(0, 80)), float(rng.uniform(1, 3)))
        t = Count(int(rng.integers(0, 80)), float(rng.uniform(1, 3)))
        if c.count + t.count == 0:
            continue
        p = poisson_rate_test(c, t).p_value
        lo, hi = poisson_rate_ratio_interval(c, t)
        assert (p < 0.05) == (not lo <= 1.0 <= hi)


def test_aa_false_positive_rate_is_at_most_alpha() -> None:
    rng = np.random.default_rng(22)
    sims, alpha = 4000, 0.05
    k_c, k_t = rng.poisson(200.0, size=sims), rng.poisson(200.0 * 1.1, size=sims)
    p = np.array(
        [poisson_rate_test(Count(a, 1000), Count(b, 1100)).p_value for a, b in zip(k_c, k_t, strict=True)]
    )
    rate = (p < alpha).mean()
    se = np.sqrt(alpha * (1 - alpha) / sims)
    # Exact tests are conservative: at most alpha, and not wastefully below it at this size.
    assert rate < alpha + 3 * se
    assert rate > alpha - 8 * se


def test_huge_counts_do_not_overflow() -> None:
    r = poisson_rate_test(Count(50_000_000, 1e8), Count(50_020_000, 1e8))
    assert 0.0 < r.p_value < 1.0 and math.isfinite(r.statistic)
    lo, hi = poisson_rate_ratio_interval(Count(50_000_000, 1e8), Count(50_020_000, 1e8))
    assert lo < 1.0004 < hi


def test_invalid_counts() -> None:
    with pytest.raises(StatsInputError):
        poisson_rate_test(Count(1, 0), Count(1, 1))
    with pytest.raises(StatsInputError):
        poisson_rate_test((1, 1), Count(1, 1))  # type: ignore[arg-type]
