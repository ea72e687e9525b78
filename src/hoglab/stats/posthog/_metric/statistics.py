"""PostHog's per-arm statistics and the effect between two arms (``products/experiments/stats/shared/``).

Three frozen statistics, each with PostHog's ``n``, ``mean`` and per-unit ``variance`` conventions
(``shared/statistics.py``):

* :class:`SampleMeanStatistic`: mean = Σx/n, s² = (Σx² − (Σx)²/n)/(n − 1) (0 for a single unit);
* :class:`ProportionStatistic`: p = successes/n with variance p(1 − p) (no n − 1: the *unpooled* test);
* :class:`RatioStatistic`: R = Σm/Σd with the delta-method variance
  Var(m)/d̄² + m̄²·Var(d)/d̄⁴ − 2·m̄·Cov(m, d)/d̄³ (Deng, Knoblich & Lu 2018, "Applying the Delta Method in Metric
  Analytics", KDD, eq. 3).

:func:`effect_between` is the effect both of PostHog's methods test (``frequentist/utils.py``,
``bayesian/utils.py``): absolute Δ = μ_T − μ_C with V = σ²_T/n_T + σ²_C/n_C, or relative Δ = (μ_T − μ_C)/μ₀ with
the delta-method V = σ²_T/(n_T·μ₀²) + μ_T²·σ²_C/(n_C·μ₀⁴), arms independent, where μ₀ is the control's mean, or
the *unadjusted* control mean when the means were CUPED-adjusted. The Welch–Satterthwaite degrees of freedom
come from the variances as given (Welch 1947, Biometrika 34:28).

>>> t = SampleMeanStatistic(2461, 1922.7, 94698.29)
>>> c = SampleMeanStatistic(2507, 1196.87, 37377.9767)
>>> e = effect_between(t, c)
>>> round(e.estimate, 5), round(e.degrees_of_freedom, 3)
(0.63647, 4105.07)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..._errors import StatsInputError

__all__ = ["EffectEstimate", "ProportionStatistic", "RatioStatistic", "SampleMeanStatistic", "effect_between"]

_SLACK = 1e-9  # sums of squares come out of databases in floating point


@dataclass(frozen=True)
class SampleMeanStatistic:
    """``n`` units with Σx and Σx² (PostHog's ``SampleMeanStatistic``; refused: n ≤ 0, Σx² < (Σx)²/n).

    >>> s = SampleMeanStatistic(5, 15, 55)
    >>> s.mean, s.variance
    (3.0, 2.5)
    """

    n: int
    sum: float
    sum_squares: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(float(v)) for v in (self.n, self.sum, self.sum_squares)):
            raise StatsInputError("a sample mean's statistics must be finite")
        if self.n <= 0:
            raise StatsInputError("Sample size must be positive")
        floor = self.sum * self.sum / self.n
        if self.sum_squares < floor - _SLACK * max(1.0, abs(floor)):
            raise StatsInputError("sum_squares incompatible with sum and n")

    @property
    def mean(self) -> float:
        return self.sum / self.n

    @property
    def variance(self) -> float:
        if self.n == 1:
            return 0.0
        return max(0.0, (self.sum_squares - self.sum * self.sum / self.n) / (self.n - 1))

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.variance / self.n)


@dataclass(frozen=True)
class ProportionStatistic:
    """``n`` units of which ``sum`` converted (PostHog's ``ProportionStatistic``; refused: n ≤ 0, sum < 0, sum > n).

    >>> ProportionStatistic(100, 25).variance
    0.1875
    """

    n: int
    sum: float

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise StatsInputError("Sample size must be positive")
        if self.sum < 0:
            raise StatsInputError("Number of successes cannot be negative")
        if self.sum > self.n:
            raise StatsInputError("Number of successes cannot exceed sample size")

    @property
    def mean(self) -> float:
        return self.sum / self.n

    proportion = mean

    @property
    def variance(self) -> float:
        p = self.mean
        return p * (1.0 - p)

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.variance / self.n)


@dataclass(frozen=True)
class RatioStatistic:
    """A ratio metric Σm/Σd over ``n`` units (PostHog's ``RatioStatistic``; refused: a denominator mean of 0).

    >>> r = RatioStatistic(3, SampleMeanStatistic(3, 60, 1400), SampleMeanStatistic(3, 3, 3), 60)
    >>> r.mean, r.covariance
    (20.0, 0.0)
    """

    n: int
    numerator: SampleMeanStatistic
    denominator: SampleMeanStatistic | ProportionStatistic
    sum_of_products: float

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise StatsInputError("Sample size must be positive")
        if self.numerator.n != self.n or self.denominator.n != self.n:
            raise StatsInputError("All statistics must have same sample size")
        if abs(self.denominator.mean) < 1e-10:
            raise StatsInputError("Denominator mean cannot be zero for ratio calculation")

    @property
    def mean(self) -> float:
        return self.numerator.sum / self.denominator.sum

    ratio = mean

    @property
    def covariance(self) -> float:
        if self.n == 1:
            return 0.0
        return (self.sum_of_products - self.numerator.sum * self.denominator.sum / self.n) / (self.n - 1)

    @property
    def variance(self) -> float:
        m, d = self.numerator.mean, self.denominator.mean
        return (self.numerator.variance / d**2 + m**2 * self.denominator.variance / d**4
                - 2.0 * m * self.covariance / d**3)  # fmt: skip

    @property
    def standard_error(self) -> float:
        return math.sqrt(max(0.0, self.variance) / self.n)


Statistic = SampleMeanStatistic | ProportionStatistic | RatioStatistic


@dataclass(frozen=True)
class EffectEstimate:
    """An effect and what the tests need: its variance, the Welch degrees of freedom and the units in both arms."""

    estimate: float
    variance: float
    degrees_of_freedom: float
    n: int

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.variance)


def welch_degrees_of_freedom(var_t: float, n_t: int, var_c: float, n_c: int) -> float:
    """ν = (v_T + v_C)² / (v_T²/(n_T − 1) + v_C²/(n_C − 1)), v = s²/n (PostHog refuses n < 2)."""
    if min(n_t, n_c) < 2:
        raise StatsInputError("Welch-Satterthwaite requires n ≥ 2 per group.")
    a, b = var_t / n_t, var_c / n_c
    denominator = a * a / (n_t - 1) + b * b / (n_c - 1)
    if not denominator > 0:
        raise StatsInputError("the effect's variance must be positive")
    return (a + b) ** 2 / denominator


def effect_between(treatment: Statistic, control: Statistic, *, relative: bool = True,
                   unadjusted_mean: float | None = None) -> EffectEstimate:  # fmt: skip
    """The treatment's effect against the control, absolute or relative, as PostHog defines it (module docstring).

    ``unadjusted_mean`` replaces the control's mean as the relative effect's denominator (CUPED: the adjusted
    means are compared, the lift is expressed against the control's raw mean). A denominator within 1e-10 of 0
    is refused, as PostHog refuses it.
    """
    if type(treatment) is not type(control):
        raise StatsInputError("Treatment and control statistics must be the same type")
    t_mean, c_mean = treatment.mean, control.mean
    t_var, c_var = treatment.variance, control.variance
    n_t, n_c = treatment.n, control.n
    if relative:
        denominator = c_mean if unadjusted_mean is None else unadjusted_mean
        if abs(denominator) < 1e-10:
            raise StatsInputError("Control mean cannot be zero for relative difference calculation")
        estimate = (t_mean - c_mean) / denominator
        variance = t_var / (n_t * denominator**2) + t_mean**2 * c_var / (n_c * denominator**4)
    else:
        estimate = t_mean - c_mean
        variance = t_var / n_t + c_var / n_c
    if not (math.isfinite(estimate) and math.isfinite(variance)):
        raise StatsInputError("the effect is not finite")
    try:  # only the frequentist test needs it; the Bayesian one goes on without
        df = welch_degrees_of_freedom(t_var, n_t, c_var, n_c)
    except StatsInputError:
        df = math.nan
    return EffectEstimate(estimate, variance, df, n_t + n_c)
