"""CUPED: variance reduction with a pre-period covariate and a pooled θ.

For each unit, Y_adj = Y − θ·(X − x̄), with X the same unit's pre-experiment value and
θ = Cov(Y, X)/Var(X) estimated on all arms pooled (Deng, Xu, Kohavi & Walker 2013,
"Improving the Sensitivity of Online Controlled Experiments by Utilizing Pre-Experiment
Data", WSDM, §3.3). Pooling keeps θ the same for every arm, so the adjustment cannot
create a difference where there is none; randomisation makes E[x̄_T − x̄_C] = 0 and the
estimator unbiased. Per arm, Var(Y_adj) = σ²_Y + θ²σ²_X − 2θσ_XY: a (1 − ρ²) reduction at
the optimal θ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce

from ._errors import StatsInputError
from ._frequentist.means import ArmEstimate, Effect, welch_dof
from ._statistics import SampleMean

__all__ = ["cuped_effect", "cuped_theta"]


def pooled_pre_mean(arms: Sequence[SampleMean]) -> float:
    """Mean of the pre-period covariate over all arms."""
    pooled = reduce(lambda x, y: x + y, arms)
    if pooled.pre is None:
        raise StatsInputError("CUPED needs a pre-period covariate (SampleMean.pre) in every arm")
    return pooled.pre.mean


def cuped_theta(arms: Sequence[SampleMean]) -> float:
    """Pooled θ = Cov(Y, X)/Var(X) over all arms; 0 when the covariate is constant.

    Examples
    --------
    >>> a = SampleMean.from_values([3.0, 5.0, 4.0], pre=[1.0, 2.0, 1.5])
    >>> b = SampleMean.from_values([6.0, 4.0], pre=[2.5, 1.0])
    >>> round(cuped_theta([a, b]), 4)
    1.6471
    """
    if not arms or any(arm.pre is None for arm in arms):
        raise StatsInputError("CUPED needs a pre-period covariate (SampleMean.pre) in every arm")
    pooled = reduce(lambda x, y: x + y, arms)
    assert pooled.pre is not None
    var_pre = pooled.pre.variance
    if not var_pre > 0:
        return 0.0
    return pooled.covariance / var_pre


def cuped_arm(mean: SampleMean, theta: float, pooled_pre_mean: float = 0.0) -> ArmEstimate:
    """Adjusted arm: estimate ȳ − θ·(x̄ − x̄_pooled), with the adjusted per-unit variance.

    The pooled pre-period mean cancels in differences; it keeps each adjusted mean on the
    metric's own scale, so it can be shown next to the raw means.
    """
    if mean.pre is None:
        raise StatsInputError("CUPED needs a pre-period covariate in every arm")
    if mean.n < 2:
        raise StatsInputError(f"CUPED needs at least 2 units per arm, got n = {mean.n:g}")
    variance = mean.variance + theta * theta * mean.pre.variance - 2.0 * theta * mean.covariance
    return ArmEstimate(mean.mean - theta * (mean.pre.mean - pooled_pre_mean), max(0.0, variance), mean.n)


def cuped_effect(control: SampleMean, treatment: SampleMean, theta: float) -> Effect:
    """Adjusted difference and lift, lift = Δ_adj / ȳ_C, with delta-method standard errors.

    Δ_adj = (ȳ_T − ȳ_C) − θ(x̄_T − x̄_C). The lift divides by the control's unadjusted mean,
    whose gradient term keeps the control's covariance:
    Var(lift) = Var_adj,T/(n_T ȳ_C²) + gᵀΣ_C g/n_C with g = (−(ȳ_T − θ(x̄_T − x̄_C))/ȳ_C², θ/ȳ_C)
    and Σ_C the control's covariance matrix of (Y, X).
    """
    c, t = cuped_arm(control, theta), cuped_arm(treatment, theta)
    assert control.pre is not None and treatment.pre is not None
    difference = t.estimate - c.estimate
    se = math.sqrt(t.variance_of_mean + c.variance_of_mean)
    y_c = control.mean
    if not y_c > 0:
        return Effect(difference, se, math.nan, math.nan, welch_dof(c, t))
    g_y = -(treatment.mean - theta * (treatment.pre.mean - control.pre.mean)) / y_c**2
    g_x = theta / y_c
    control_part = (
        g_y * g_y * control.variance + g_x * g_x * control.pre.variance + 2.0 * g_y * g_x * control.covariance
    ) / control.n
    lift_variance = t.variance_of_mean / y_c**2 + max(0.0, control_part)
    return Effect(difference, se, difference / y_c, math.sqrt(lift_variance), welch_dof(c, t))
