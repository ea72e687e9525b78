"""CUPED as PostHog's stats library does it (``products/experiments/stats/shared/cuped.py``, PR #52255).

CUPED (Deng, Xu, Kohavi & Walker 2013, "Improving the Sensitivity of Online Controlled Experiments by Utilizing
Pre-Experiment Data", WSDM, §3.3) subtracts from each unit's metric Y a multiple θ of a pre-exposure covariate X.
PostHog does it on sufficient statistics, one treatment–control pair at a time:

* θ = Cov(Y, X) / Var(X) pooled over **the two arms of the pair** (Bessel-corrected on the pooled n; θ = 0 when
  the pooled Var(X) < 1e-10). With several treatments each pair has its own θ.
* each arm: adjusted mean ȳ − θ·x̄ (the arm's own pre mean, not centred), adjusted variance
  σ²_Y + θ²σ²_X − 2θ·Cov_arm(Y, X), floored at 1e-10, where σ²_Y is the statistic's own variance (p(1 − p) for a
  funnel's proportion, whose covariate is a 0/1 "converted in the pre-window"); the result is a
  :class:`~.statistics.SampleMeanStatistic` rebuilt from that mean and variance, so the Bayesian and
  frequentist tests read it as any mean;
* the relative effect divides by the control's **unadjusted** mean (:func:`~.statistics.effect_between`'s
  ``unadjusted_mean``).

Randomisation makes E[x̄_T − x̄_C] = 0, so the difference of adjusted means stays unbiased; its variance shrinks by
the factor 1 − ρ² at the optimal θ.

>>> post = SampleMeanStatistic(5, 14, 48)
>>> pre = CupedCovariate(SampleMeanStatistic(5, 28.5, 520.3), 85.2)
>>> round(cuped_pair_theta(post, post, pre, pre), 9)
0.015090122
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._errors import StatsInputError
from .statistics import ProportionStatistic, RatioStatistic, SampleMeanStatistic

__all__ = ["CupedAdjustment", "CupedCovariate", "cuped_adjust", "cuped_adjust_arm", "cuped_pair_theta"]

VARIANCE_FLOOR = 1e-10

PostStatistic = SampleMeanStatistic | ProportionStatistic


@dataclass(frozen=True)
class CupedCovariate:
    """One arm's pre-exposure covariate: its statistics (n, Σx, Σx²) and Σ y·x over the arm's units."""

    pre: SampleMeanStatistic
    sum_of_cross_products: float


@dataclass(frozen=True)
class CupedAdjustment:
    """The adjusted pair, θ, the unadjusted means and each arm's variance reduction 1 − σ²_adj/σ²."""

    treatment_adjusted: SampleMeanStatistic
    control_adjusted: SampleMeanStatistic
    theta: float
    treatment_unadjusted_mean: float
    control_unadjusted_mean: float
    variance_reduction_treatment: float
    variance_reduction_control: float


def covariance(n: int, post_sum: float, pre_sum: float, sum_of_cross_products: float) -> float:
    """Sample covariance (Σyx − ΣyΣx/n)/(n − 1); 0 for a single unit.

    >>> round(covariance(5, 14, 28.5, 85.2), 12)
    1.35
    """
    if n <= 1:
        return 0.0
    return (sum_of_cross_products - post_sum * pre_sum / n) / (n - 1)


def cuped_pair_theta(treatment: PostStatistic, control: PostStatistic, treatment_pre: CupedCovariate,
                control_pre: CupedCovariate) -> float:  # fmt: skip
    """θ = Cov(Y, X)/Var(X) on the two arms pooled; 0 when the pooled Var(X) is below 1e-10."""
    n_all = treatment.n + control.n
    if n_all <= 1:
        return 0.0
    cross = treatment_pre.sum_of_cross_products + control_pre.sum_of_cross_products
    post_sum = treatment.sum + control.sum
    pre_sum = treatment_pre.pre.sum + control_pre.pre.sum
    pre_squares = treatment_pre.pre.sum_squares + control_pre.pre.sum_squares
    var_pre = (pre_squares - pre_sum**2 / n_all) / (n_all - 1)
    if var_pre < VARIANCE_FLOOR:
        return 0.0
    return (cross - post_sum * pre_sum / n_all) / (n_all - 1) / var_pre


def cuped_adjust_arm(post: PostStatistic, covariate: CupedCovariate, theta: float) -> tuple[SampleMeanStatistic, float]:
    """One arm adjusted with ``theta``: the adjusted statistic and its variance reduction.

    >>> pre = CupedCovariate(SampleMeanStatistic(5, 28.5, 520.3), 85.2)
    >>> adjusted, _ = cuped_adjust_arm(SampleMeanStatistic(5, 14, 48), pre, 0.31)
    >>> round(adjusted.mean, 5), round(adjusted.variance, 4)
    (1.033, 9.9603)
    """
    n = post.n
    pre = covariate.pre
    cov = covariance(n, post.sum, pre.sum, covariate.sum_of_cross_products)
    mean = post.mean - theta * pre.mean
    variance = max(post.variance + theta**2 * pre.variance - 2.0 * theta * cov, VARIANCE_FLOOR)
    reduction = 1.0 - variance / post.variance if post.variance > VARIANCE_FLOOR else 0.0
    total = mean * n
    squares = variance * (n - 1) + total**2 / n if n > 1 else total**2
    return SampleMeanStatistic(n, total, squares), reduction


def cuped_adjust(treatment: PostStatistic, control: PostStatistic, treatment_pre: CupedCovariate,
                 control_pre: CupedCovariate) -> CupedAdjustment:  # fmt: skip
    """PostHog's ``cuped_adjust``: θ from the pair, both arms adjusted (refusals as PostHog's)."""
    if isinstance(treatment, RatioStatistic) or isinstance(control, RatioStatistic):
        raise StatsInputError("CUPED adjustment for ratio metrics is not yet supported")
    if type(treatment) is not type(control):
        raise StatsInputError("Treatment and control post-statistics must be the same type")
    for name, post, pre in (("Treatment", treatment, treatment_pre), ("Control", control, control_pre)):
        if post.n != pre.pre.n:
            raise StatsInputError(f"{name} post n ({post.n}) does not match pre n ({pre.pre.n})")
    theta = cuped_pair_theta(treatment, control, treatment_pre, control_pre)
    t_adjusted, t_reduction = cuped_adjust_arm(treatment, treatment_pre, theta)
    c_adjusted, c_reduction = cuped_adjust_arm(control, control_pre, theta)
    if theta == 0.0:
        t_reduction = c_reduction = 0.0
    return CupedAdjustment(t_adjusted, c_adjusted, theta, treatment.mean, control.mean, t_reduction, c_reduction)
