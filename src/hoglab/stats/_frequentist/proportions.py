"""Conversion metrics: two-proportion z-test, chi-square test, Wilson and Newcombe intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._distributions import Interval, TestResult, chi2_sf, normal_p_value, z_quantile
from .._errors import StatsInputError
from .._options import Alternative, check_alpha, check_alternative
from .._statistics import Proportion

__all__ = [
    "ChiSquareResult",
    "chi_square_test",
    "newcombe_interval",
    "risk_ratio_interval",
    "two_proportion_ztest",
    "wilson_interval",
]


def two_proportion_ztest(
    control: Proportion, treatment: Proportion, *, alternative: Alternative = "two-sided"
) -> TestResult:
    """Two-proportion z-test with the pooled variance under H0: p_T = p_C.

    z = (p̂_T − p̂_C) / sqrt(p̄(1 − p̄)(1/n_T + 1/n_C)), p̄ = (s_T + s_C)/(n_T + n_C)
    (Fleiss, Levin & Paik, *Statistical Methods for Rates and Proportions*, 3rd ed., §8.3;
    same as ``statsmodels.stats.proportion.proportions_ztest``). The statistic is the
    square root of Pearson's chi-square on the 2×2 table without Yates' correction.

    When both arms convert at exactly 0% or 100% the rates are identical and the variance
    is zero: the statistic is reported as 0 with p = 1 (the exact tests agree).

    Examples
    --------
    >>> r = two_proportion_ztest(Proportion(1000, 100), Proportion(1000, 120))
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (1.4293, 0.1529)
    """
    check_alternative(alternative)
    _require_units(control, "control")
    _require_units(treatment, "treatment")
    pooled = (control.successes + treatment.successes) / (control.n + treatment.n)
    variance = pooled * (1.0 - pooled) * (1.0 / control.n + 1.0 / treatment.n)
    if variance <= 0.0:
        return TestResult(0.0, 1.0)
    z = (treatment.rate - control.rate) / math.sqrt(variance)
    return TestResult(z, normal_p_value(z, alternative))


@dataclass(frozen=True)
class ChiSquareResult:
    """Pearson chi-square test of independence on a k×2 (arm × converted) table."""

    statistic: float
    dof: int
    p_value: float
    expected: tuple[tuple[float, float], ...]


def chi_square_test(arms: Sequence[Proportion], *, correction: bool = False) -> ChiSquareResult:
    """Chi-square test that all arms share one conversion rate.

    χ² = Σ (O − E)²/E over the k×2 table of successes/failures, E from the pooled rate,
    dof = k − 1 (Pearson 1900; Agresti, *Categorical Data Analysis*, 3rd ed., §3.2).
    ``correction=True`` applies Yates' continuity correction when dof = 1, moving each
    observed cell toward its expectation by at most 0.5 (as ``scipy.stats.chi2_contingency``).
    With two arms and no correction, χ² equals the square of the pooled z statistic.

    Examples
    --------
    >>> r = chi_square_test([Proportion(1000, 100), Proportion(1000, 120)], correction=True)
    >>> round(r.statistic, 3), round(r.p_value, 4)
    (1.844, 0.1745)
    """
    if len(arms) < 2:
        raise StatsInputError("chi_square_test needs at least two arms")
    for i, arm in enumerate(arms):
        _require_units(arm, f"arm {i}")
    observed = np.array([[a.successes, a.failures] for a in arms], dtype=float)
    total = observed.sum()
    expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True) / total
    dof = len(arms) - 1
    expected_rows = tuple((float(r[0]), float(r[1])) for r in expected)
    if np.any(expected == 0.0):
        # A column of zeros: everyone (or no one) converted in every arm; no evidence of a difference.
        return ChiSquareResult(0.0, dof, 1.0, expected_rows)
    if correction and dof == 1:
        gap = expected - observed
        observed = observed + np.sign(gap) * np.minimum(0.5, np.abs(gap))
    statistic = float(((observed - expected) ** 2 / expected).sum())
    return ChiSquareResult(statistic, dof, chi2_sf(statistic, dof), expected_rows)


def wilson_interval(proportion: Proportion, alpha: float = 0.05) -> Interval:
    """Wilson score interval for one conversion rate.

    (p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n) (Wilson 1927, JASA 22:209).
    Never leaves [0, 1] and stays sensible at 0 or n successes, unlike the Wald interval.

    Examples
    --------
    >>> [round(x, 4) for x in wilson_interval(Proportion(100, 0))]
    [0.0, 0.037]
    """
    check_alpha(alpha)
    _require_units(proportion, "proportion")
    z = z_quantile(alpha)
    n, p = proportion.n, proportion.rate
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_interval(control: Proportion, treatment: Proportion, alpha: float = 0.05) -> Interval:
    """Newcombe's hybrid score interval for the difference p_T − p_C.

    With Wilson limits (l_T, u_T) and (l_C, u_C):
    d − sqrt((p̂_T − l_T)² + (u_C − p̂_C)²) ≤ p_T − p_C ≤ d + sqrt((u_T − p̂_T)² + (p̂_C − l_C)²)
    (Newcombe 1998, Statistics in Medicine 17:873, method 10).

    Examples
    --------
    >>> [round(x, 4) for x in newcombe_interval(Proportion(1000, 100), Proportion(1000, 120))]
    [-0.0075, 0.0476]
    """
    lo_t, hi_t = wilson_interval(treatment, alpha)
    lo_c, hi_c = wilson_interval(control, alpha)
    p_t, p_c = treatment.rate, control.rate
    d = p_t - p_c
    return (
        d - math.sqrt((p_t - lo_t) ** 2 + (hi_c - p_c) ** 2),
        d + math.sqrt((hi_t - p_t) ** 2 + (p_c - lo_c) ** 2),
    )


def risk_ratio_interval(control: Proportion, treatment: Proportion, alpha: float = 0.05) -> Interval:
    """Katz log interval for the risk ratio p_T/p_C (subtract 1 for the relative lift).

    log(p̂_T/p̂_C) ± z·sqrt(1/s_T − 1/n_T + 1/s_C − 1/n_C) (Katz, Baptista, Azen & Pike 1978,
    Biometrics 34:469). It is asymmetric on the ratio scale like the ratio itself, and agrees
    with the z-test far better than a symmetric delta-method interval at small counts. With
    a zero count, 0.5 is added to each count and n (statsmodels' ``"log-adjusted"``).

    Examples
    --------
    >>> [round(x, 4) for x in risk_ratio_interval(Proportion(1000, 100), Proportion(1000, 130))]
    [1.017, 1.6618]
    """
    check_alpha(alpha)
    _require_units(control, "control")
    _require_units(treatment, "treatment")
    half = 0.5 if min(control.successes, treatment.successes) == 0 else 0.0
    s_t, n_t = treatment.successes + half, treatment.n + half
    s_c, n_c = control.successes + half, control.n + half
    if s_c <= 0 or s_t <= 0:
        return (math.nan, math.nan)
    log_ratio = math.log((s_t / n_t) / (s_c / n_c))
    width = z_quantile(alpha) * math.sqrt(max(0.0, 1.0 / s_t - 1.0 / n_t + 1.0 / s_c - 1.0 / n_c))
    return (math.exp(log_ratio - width), math.exp(log_ratio + width))


def _require_units(proportion: Proportion, label: str) -> None:
    if not isinstance(proportion, Proportion):
        raise StatsInputError(f"{label} must be a Proportion, got {type(proportion).__name__}")
    if proportion.n <= 0:
        raise StatsInputError(f"{label} has no exposed units (n = 0)")
