"""Sequential testing: asymptotic confidence sequences and always-valid p-values.

A confidence sequence covers the true effect at every sample size simultaneously with
probability 1 − α, so results may be checked after every batch of data and the experiment
stopped whenever the sequence excludes zero, without inflating the false-positive rate.

The normal-mixture boundary of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (2024),
"Time-uniform central limit theory and asymptotic confidence sequences", Annals of
Statistics (arXiv:2103.06476), is the one GrowthBook uses. For an estimate Δ̂ with standard
error SE after n units in all (per-unit variance s² = SE²·n), mixing variance ρ²:

    half-width = s · sqrt( 2(nρ² + 1)/(n²ρ²) · log( sqrt(nρ² + 1)/α ) )        (eq. 9)
    ρ² = (−2 log α + log(−2 log α + 1)) / N*                                  (tightest at n = N*)

The always-valid p-value is the smallest α whose sequence excludes the null value:

    p = min(1, sqrt(nρ² + 1) · exp(−nρ²·Δ̂²/(2·SE²·(nρ² + 1))))

N* (``tuning``) is the total sample size at which the analyst expects to decide; the
sequence is narrowest there and only slightly wider elsewhere.
"""

from __future__ import annotations

import math

from .._distributions import Interval
from .._errors import StatsInputError
from .._options import check_alpha

__all__ = ["DEFAULT_TUNING", "confidence_sequence", "sequential_p_value", "sequential_rho_squared"]

DEFAULT_TUNING = 5000.0
"""GrowthBook's default N*; set it near the expected total sample size."""


def sequential_rho_squared(alpha: float = 0.05, tuning: float = DEFAULT_TUNING) -> float:
    """Mixing variance ρ² that makes the sequence tightest at ``tuning`` units."""
    check_alpha(alpha)
    if not tuning > 0:
        raise StatsInputError(f"tuning must be positive, got {tuning!r}")
    log_term = -2.0 * math.log(alpha)
    return (log_term + math.log(log_term + 1.0)) / tuning


def confidence_sequence(
    estimate: float, se: float, n: float, *, alpha: float = 0.05, tuning: float = DEFAULT_TUNING
) -> Interval:
    """Always-valid (1 − α) interval for an effect estimated from ``n`` units in total.

    Examples
    --------
    >>> lo, hi = confidence_sequence(0.01, 0.004, 20_000)
    >>> round(lo, 5), round(hi, 5)
    (-0.00251, 0.02251)
    """
    rho2 = sequential_rho_squared(alpha, tuning)
    if not n > 0:
        raise StatsInputError("n must be positive")
    if math.isnan(se) or math.isnan(estimate):
        return (math.nan, math.nan)
    a = n * rho2 + 1.0
    s = se * math.sqrt(n)
    half = s * math.sqrt(2.0 * a / (n * n * rho2) * math.log(math.sqrt(a) / alpha))
    return (estimate - half, estimate + half)


def sequential_p_value(
    estimate: float,
    se: float,
    n: float,
    *,
    null: float = 0.0,
    alpha: float = 0.05,
    tuning: float = DEFAULT_TUNING,
) -> float:
    """Always-valid two-sided p-value of H0: effect = ``null`` (``alpha`` only sets ρ²).

    ``p < alpha`` exactly when :func:`confidence_sequence` excludes ``null``.

    Examples
    --------
    >>> round(sequential_p_value(0.01, 0.004, 20_000), 4)
    0.2766
    """
    rho2 = sequential_rho_squared(alpha, tuning)
    if not n > 0:
        raise StatsInputError("n must be positive")
    if math.isnan(se) or math.isnan(estimate):
        return math.nan
    if se == 0.0:
        return 1.0 if estimate == null else math.nan
    a = n * rho2 + 1.0
    # Logs keep the exponent finite when the z-statistic is in the thousands (n = 1e7).
    log_p = 0.5 * math.log(a) - n * rho2 * (estimate - null) ** 2 / (2.0 * se * se * a)
    return math.exp(min(0.0, log_p))
