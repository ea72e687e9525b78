"""Mean and ratio metrics: Welch's t-test from sufficient statistics and the delta method."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._distributions import Interval, TestResult, normal_p_value, t_isf, t_p_value, z_quantile
from .._errors import StatsInputError
from .._options import Alternative, check_alpha, check_alternative
from .._statistics import Ratio, SampleMean

__all__ = ["ArmEstimate", "Effect", "delta_method_lift", "mean_difference_interval", "welch_ttest"]


@dataclass(frozen=True)
class ArmEstimate:
    """One arm reduced to what the normal-theory tests need.

    ``estimate`` is the arm's mean (rate, ratio), ``variance`` the per-unit variance and
    ``n`` the number of units, so Var(estimate) ≈ variance / n.
    """

    estimate: float
    variance: float
    n: float

    @property
    def variance_of_mean(self) -> float:
        return self.variance / self.n


@dataclass(frozen=True)
class Effect:
    """Treatment-minus-control difference and relative lift with their standard errors."""

    difference: float
    difference_se: float
    lift: float
    lift_se: float
    dof: float = math.inf


def welch_dof(control: ArmEstimate, treatment: ArmEstimate) -> float:
    """Welch–Satterthwaite degrees of freedom (Welch 1947, Biometrika 34:28, eq. 9).

    ν = (v_T + v_C)² / (v_T²/(n_T − 1) + v_C²/(n_C − 1)) with v = s²/n.
    """
    v_t, v_c = treatment.variance_of_mean, control.variance_of_mean
    denominator = v_t * v_t / (treatment.n - 1.0) + v_c * v_c / (control.n - 1.0)
    if denominator <= 0.0:
        return math.nan
    return (v_t + v_c) ** 2 / denominator


def delta_method_lift(control: ArmEstimate, treatment: ArmEstimate) -> tuple[float, float]:
    """Relative lift μ_T/μ_C − 1 and its standard error by the delta method.

    Var ≈ Var(μ̂_T)/μ_C² + Var(μ̂_C)·μ_T²/μ_C⁴ for independent arms (first-order Taylor
    expansion of μ_T/μ_C; Deng, Knoblich & Lu 2018, §3.2). NaN when μ_C is not positive.
    """
    m_c, m_t = control.estimate, treatment.estimate
    if not m_c > 0.0:
        return math.nan, math.nan
    variance = treatment.variance_of_mean / m_c**2 + control.variance_of_mean * m_t**2 / m_c**4
    return m_t / m_c - 1.0, math.sqrt(variance)


def effect_from_arms(control: ArmEstimate, treatment: ArmEstimate, *, welch: bool = True) -> Effect:
    """Unpooled difference, delta-method lift, and Welch dof (``inf`` when ``welch=False``)."""
    difference = treatment.estimate - control.estimate
    se = math.sqrt(treatment.variance_of_mean + control.variance_of_mean)
    lift, lift_se = delta_method_lift(control, treatment)
    dof = welch_dof(control, treatment) if welch else math.inf
    return Effect(difference, se, lift, lift_se, dof)


def mean_arm(mean: SampleMean, label: str = "arm") -> ArmEstimate:
    if mean.n < 2:
        raise StatsInputError(f"{label} needs at least 2 units for a variance, got n = {mean.n:g}")
    return ArmEstimate(mean.mean, mean.variance, mean.n)


def ratio_arm(ratio: Ratio, label: str = "arm") -> ArmEstimate:
    if ratio.n < 2:
        raise StatsInputError(f"{label} needs at least 2 units for a variance, got n = {ratio.n:g}")
    if ratio.denominator.sum == 0:
        raise StatsInputError(f"{label} has a zero denominator sum; the ratio is undefined")
    return ArmEstimate(ratio.value, ratio.variance, ratio.n)


def welch_ttest(
    control: SampleMean, treatment: SampleMean, *, alternative: Alternative = "two-sided"
) -> TestResult:
    """Welch's unequal-variance t-test from (n, sum, sum_squares) of each arm.

    t = (x̄_T − x̄_C) / sqrt(s²_T/n_T + s²_C/n_C), ν from :func:`welch_dof`; the p-value is
    from the t tail (``t.sf``). Matches ``scipy.stats.ttest_ind_from_stats(equal_var=False)``.
    If both arms have zero variance the statistic is undefined: p = 1 when the means are
    equal, NaN otherwise.

    Examples
    --------
    >>> a = SampleMean.from_values([1.0, 2.0, 3.0, 4.0])
    >>> b = SampleMean.from_values([2.0, 3.0, 5.0, 6.0, 7.0])
    >>> r = welch_ttest(a, b)
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (1.8586, 0.1072)
    """
    check_alternative(alternative)
    c, t = mean_arm(control, "control"), mean_arm(treatment, "treatment")
    effect = effect_from_arms(c, t)
    return _t_result(effect.difference, effect.difference_se, effect.dof, alternative)


def mean_difference_interval(control: SampleMean, treatment: SampleMean, alpha: float = 0.05) -> Interval:
    """Welch confidence interval for x̄_T − x̄_C: Δ ± t_{1−α/2, ν}·SE."""
    check_alpha(alpha)
    effect = effect_from_arms(mean_arm(control, "control"), mean_arm(treatment, "treatment"))
    return t_interval(effect.difference, effect.difference_se, effect.dof, alpha)


def t_interval(estimate: float, se: float, dof: float, alpha: float) -> Interval:
    if math.isnan(se) or (se == 0.0 and math.isnan(dof)):
        if se == 0.0:
            return (estimate, estimate)
        return (math.nan, math.nan)
    q = t_isf(alpha / 2.0, dof) if math.isfinite(dof) else z_quantile(alpha)
    return (estimate - q * se, estimate + q * se)


def _t_result(difference: float, se: float, dof: float, alternative: Alternative) -> TestResult:
    if se == 0.0:
        if difference == 0.0:
            return TestResult(0.0, 1.0, dof)
        return TestResult(math.nan, math.nan, dof)
    statistic = difference / se
    if not math.isfinite(dof):
        return TestResult(statistic, normal_p_value(statistic, alternative), dof)
    return TestResult(statistic, t_p_value(statistic, dof, alternative), dof)
