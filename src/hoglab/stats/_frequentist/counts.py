"""Count metrics: the exact conditional Poisson test and its rate-ratio interval."""

from __future__ import annotations

import math

from scipy import special

from .._distributions import Interval, TestResult
from .._errors import StatsInputError
from .._options import Alternative, check_alpha, check_alternative
from .._statistics import Count
from .means import ArmEstimate

__all__ = ["poisson_rate_ratio_interval", "poisson_rate_test", "poisson_tails"]


def poisson_tails(control: Count, treatment: Count) -> tuple[float, float]:
    """Lower and upper tails P(X ≤ k_T), P(X ≥ k_T) of the conditional binomial.

    Given the total k = k_C + k_T, under H0 (equal rates) k_T ~ Binomial(k, r) with
    r = e_T/(e_T + e_C) (Przyborowski & Wileński 1940; Evan Miller, "Formulas for
    programmers", count test). Tails come from the regularised incomplete beta function,
    P(X ≤ j) = I_{1−r}(k − j, j + 1) and P(X ≥ j) = I_r(j, k − j + 1), which is exact for
    integer counts and needs no loop over millions of terms.
    """
    _check(control, "control")
    _check(treatment, "treatment")
    k_t = float(treatment.count)
    k = float(control.count) + k_t
    r = treatment.exposure / (treatment.exposure + control.exposure)
    low = 1.0 if k_t >= k else float(special.betainc(k - k_t, k_t + 1.0, 1.0 - r))
    high = 1.0 if k_t <= 0.0 else float(special.betainc(k_t, k - k_t + 1.0, r))
    return low, high


def poisson_rate_test(
    control: Count, treatment: Count, *, alternative: Alternative = "two-sided"
) -> TestResult:
    """Exact conditional test of equal Poisson rates.

    The two-sided p-value doubles the smaller tail, ``min(1, 2·min(P(X ≤ k_T), P(X ≥ k_T)))``:
    PostHog's definition (``poisson_p_value`` in its trends statistics) and the test that
    inverts the Clopper–Pearson interval of :func:`poisson_rate_ratio_interval`. The reported
    statistic is the observed rate ratio.

    Examples
    --------
    >>> r = poisson_rate_test(Count(120, 1000), Count(150, 1020))
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (1.2255, 0.1089)
    """
    check_alternative(alternative)
    low, high = poisson_tails(control, treatment)
    ratio = (treatment.rate / control.rate) if control.count > 0 else math.inf
    if treatment.count == 0 and control.count == 0:
        ratio = math.nan
    if alternative == "greater":
        return TestResult(ratio, high)
    if alternative == "less":
        return TestResult(ratio, low)
    return TestResult(ratio, min(1.0, 2.0 * min(low, high)))


def poisson_rate_ratio_interval(control: Count, treatment: Count, alpha: float = 0.05) -> Interval:
    """Exact conditional (Clopper–Pearson) interval for the rate ratio λ_T/λ_C.

    The binomial proportion π = λ_T e_T/(λ_T e_T + λ_C e_C) gets the Clopper–Pearson limits
    Beta⁻¹(α/2; k_T, k − k_T + 1) and Beta⁻¹(1 − α/2; k_T + 1, k − k_T) (Clopper & Pearson
    1934), mapped to λ_T/λ_C = π/(1 − π)·e_C/e_T. The limit is 0 (or ∞) when k_T = 0 (or k_C = 0).

    Examples
    --------
    >>> [round(x, 4) for x in poisson_rate_ratio_interval(Count(120, 1000), Count(150, 1020))]
    [0.9575, 1.5712]
    """
    check_alpha(alpha)
    _check(control, "control")
    _check(treatment, "treatment")
    k_t, k_c = float(treatment.count), float(control.count)
    scale = control.exposure / treatment.exposure
    lo_pi = 0.0 if k_t <= 0.0 else float(special.betaincinv(k_t, k_c + 1.0, alpha / 2.0))
    hi_pi = 1.0 if k_c <= 0.0 else float(special.betainccinv(k_t + 1.0, k_c, alpha / 2.0))
    lo = lo_pi / (1.0 - lo_pi) * scale
    hi = math.inf if hi_pi >= 1.0 else hi_pi / (1.0 - hi_pi) * scale
    return (lo, hi)


def count_arm(count: Count) -> ArmEstimate:
    """Poisson model: Var(count/exposure) = rate/exposure, i.e. per-unit variance = rate."""
    return ArmEstimate(count.rate, count.rate, count.exposure)


def _check(count: Count, label: str) -> None:
    if not isinstance(count, Count):
        raise StatsInputError(f"{label} must be a Count, got {type(count).__name__}")
    if count.exposure <= 0:
        raise StatsInputError(f"{label} has no exposure (exposure = 0)")
