"""Planning: power, sample size, minimum detectable effect and running time.

The variance model is the analysis' own: the pooled-variance z-test for conversions (pooled
rate under H0, unpooled under the alternative) and the two-sample t-test for means, so a
planned experiment is analysed by the test it was sized for.
"""

from __future__ import annotations

import math
from typing import Literal

from scipy import optimize, stats

from ._distributions import norm_isf, norm_sf, t_isf
from ._errors import StatsInputError
from ._options import Alternative, check_alpha, check_alternative

__all__ = ["minimum_detectable_effect", "power", "running_time", "sample_size"]

PlanMetric = Literal["conversion", "mean"]


def power(
    n: float,
    baseline: float,
    effect: float,
    *,
    metric: PlanMetric = "conversion",
    sd: float | None = None,
    alpha: float = 0.05,
    relative: bool = True,
    ratio: float = 1.0,
    alternative: Alternative = "two-sided",
) -> float:
    """Probability of a significant result with ``n`` control units and ``ratio·n`` treated.

    Conversion (baseline p₀, p₁ = p₀(1 + effect) or p₀ + effect), for the pooled z-test:
    power = Φ((|δ|√n − z·σ₀)/σ₁) + Φ((−|δ|√n − z·σ₀)/σ₁) with σ₀² = p̄(1 − p̄)(1 + 1/r),
    σ₁² = p₁(1 − p₁)/r + p₀(1 − p₀), p̄ = (p₀ + r·p₁)/(1 + r) (Fleiss, Levin & Paik 2003,
    §4.2; statsmodels ``power_proportions_2indep``). Mean (baseline μ₀, standard deviation
    ``sd``): the two-sample t-test with ν = n(1 + r) − 2 and noncentrality
    δ/sd·sqrt(n·r/(1 + r)), both tails of the noncentral t (Cohen 1988, ch. 2;
    statsmodels ``TTestIndPower``). One-sided alternatives assume the effect lies in the
    tested direction, so only |effect| matters.

    Examples
    --------
    >>> round(power(14_751, 0.10, 0.10), 3)
    0.8
    """
    check_alpha(alpha)
    check_alternative(alternative)
    if not n > 0 or not ratio > 0:
        raise StatsInputError("n and ratio must be positive")
    delta, sd0, sd1 = _spread(baseline, effect, metric, sd, relative, ratio)
    if metric == "conversion":
        tail = alpha / 2.0 if alternative == "two-sided" else alpha
        crit = norm_isf(tail)
        shift = delta * math.sqrt(n) / sd1
        upper = norm_sf(crit * sd0 / sd1 - shift)
        if alternative != "two-sided":
            return upper
        return upper + norm_sf(crit * sd0 / sd1 + shift)
    dof = n * (1.0 + ratio) - 2.0
    if dof <= 0:
        raise StatsInputError("need more than 2 units in all for a t-test")
    nc = delta / sd0 * math.sqrt(n * ratio / (1.0 + ratio))
    if alternative == "two-sided":
        crit = t_isf(alpha / 2.0, dof)
        return float(stats.nct.sf(crit, dof, nc) + stats.nct.cdf(-crit, dof, nc))
    return float(stats.nct.sf(t_isf(alpha, dof), dof, nc))


def sample_size(
    baseline: float,
    mde: float,
    *,
    metric: PlanMetric = "conversion",
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    relative: bool = True,
    ratio: float = 1.0,
    alternative: Alternative = "two-sided",
) -> int:
    """Units needed in the control arm (each treatment arm gets ``ratio`` times as many).

    Conversion: n = ((z_{1−α/2}·σ₀ + z_{power}·σ₁)/δ)², the usual closed form that ignores the
    far rejection tail (same as statsmodels ``samplesize_proportions_2indep_onetail``).
    Mean: the smallest n at which the t-test of :func:`power` reaches ``power``.

    Examples
    --------
    >>> sample_size(0.10, 0.10)  # 10% → 11%, α = 0.05, power 0.8
    14751
    >>> sample_size(10.0, 0.5, metric="mean", sd=4.0, relative=False)
    1006
    """
    target = _check_power(power)
    check_alpha(alpha)
    check_alternative(alternative)
    delta, sd0, sd1 = _spread(baseline, mde, metric, sd, relative, ratio)
    tail = alpha / 2.0 if alternative == "two-sided" else alpha
    if metric == "conversion":
        z_a, z_b = norm_isf(tail), norm_isf(1.0 - target)
        return math.ceil(((z_a * sd0 + z_b * sd1) / delta) ** 2)

    def gap(n: float) -> float:
        return (
            _power_fn(
                n,
                baseline,
                mde,
                metric=metric,
                sd=sd,
                alpha=alpha,
                relative=relative,
                ratio=ratio,
                alternative=alternative,
            )
            - target
        )

    z_guess = ((norm_isf(tail) + norm_isf(1.0 - target)) * sd0 / delta) ** 2
    n_min = 2.0 / (1.0 + ratio) + 1e-9
    upper = max(4.0, 2.0 * z_guess * (1.0 + 1.0 / ratio))
    while gap(upper) < 0:
        upper *= 2.0
    if gap(n_min + 1.0) >= 0:
        return math.ceil(n_min + 1.0)
    return math.ceil(float(optimize.brentq(gap, n_min + 1.0, upper, xtol=1e-10, rtol=1e-14)))


_power_fn = power


def minimum_detectable_effect(
    n: float,
    baseline: float,
    *,
    metric: PlanMetric = "conversion",
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    relative: bool = True,
    ratio: float = 1.0,
    alternative: Alternative = "two-sided",
) -> float:
    """Smallest positive effect detected with probability ``power`` given ``n`` control units.

    Returned on the scale asked for: relative (0.05 = +5%) or absolute. Solved on the same
    power function as :func:`power`, so ``power(n, baseline, mde) == power`` to 1e-10.

    Examples
    --------
    >>> round(minimum_detectable_effect(14_751, 0.10), 4)
    0.1
    """
    target = _check_power(power)
    check_alpha(alpha)
    if metric == "conversion":
        if not 0.0 < baseline < 1.0:
            raise StatsInputError("a conversion baseline must lie strictly between 0 and 1")
        ceiling = (1.0 / baseline - 1.0) if relative else (1.0 - baseline)
    else:
        ceiling = math.inf

    def gap(effect: float) -> float:
        return (
            _power_fn(
                n,
                baseline,
                effect,
                metric=metric,
                sd=sd,
                alpha=alpha,
                relative=relative,
                ratio=ratio,
                alternative=alternative,
            )
            - target
        )

    hi = 1e-6 * (1.0 if relative or metric == "conversion" else max(abs(baseline), sd or 1.0))
    while gap(hi) < 0:
        hi *= 2.0
        if hi >= ceiling:
            hi = ceiling * (1.0 - 1e-12)
            if gap(hi) < 0:
                raise StatsInputError("no effect within the metric's range reaches the requested power")
            break
    return float(optimize.brentq(gap, hi / 2.0 if gap(hi / 2.0) < 0 else 0.0, hi, xtol=1e-14, rtol=1e-12))


def running_time(
    units_per_variant: float, daily_units: float, *, variants: int = 2, traffic: float = 1.0
) -> int:
    """Whole days to enrol ``units_per_variant`` in each of ``variants`` arms.

    ``daily_units`` is the number of eligible units arriving per day and ``traffic`` the
    fraction of them enrolled in the experiment.

    Examples
    --------
    >>> running_time(14_751, daily_units=2_000)
    15
    """
    if not daily_units > 0 or not 0.0 < traffic <= 1.0 or variants < 2:
        raise StatsInputError("need daily_units > 0, 0 < traffic <= 1 and at least 2 variants")
    return math.ceil(units_per_variant * variants / (daily_units * traffic))


def _check_power(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise StatsInputError(f"power must be strictly between 0 and 1, got {value!r}")
    return float(value)


def _spread(
    baseline: float, effect: float, metric: str, sd: float | None, relative: bool, ratio: float
) -> tuple[float, float, float]:
    """Absolute effect δ and the per-unit standard deviations under H0 and H1.

    For conversions σ₀ and σ₁ are already scaled for the (control n, treated r·n) design;
    for means σ₀ = σ₁ = sd.
    """
    if not effect:
        raise StatsInputError("the effect must be non-zero")
    delta = baseline * effect if relative else effect
    if metric == "conversion":
        p0, p1 = baseline, baseline + delta
        if not (0.0 < p0 < 1.0 and 0.0 < p1 < 1.0):
            raise StatsInputError(f"conversion rates must lie in (0, 1): baseline {p0!r}, alternative {p1!r}")
        pooled = (p0 + ratio * p1) / (1.0 + ratio)
        sd0 = math.sqrt(pooled * (1.0 - pooled) * (1.0 + 1.0 / ratio))
        sd1 = math.sqrt(p1 * (1.0 - p1) / ratio + p0 * (1.0 - p0))
        return abs(delta), sd0, sd1
    if metric == "mean":
        if sd is None or not sd > 0:
            raise StatsInputError("a mean metric needs its standard deviation sd > 0")
        if relative and baseline == 0:
            raise StatsInputError("a relative effect needs a non-zero baseline")
        return abs(delta), float(sd), float(sd)
    raise StatsInputError(f"metric must be 'conversion' or 'mean', got {metric!r}")
