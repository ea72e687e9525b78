"""The between-experiment variance τ² of the random-effects model y_i ~ N(θ_i, v_i), θ_i ~ N(μ, τ²).

Three estimators, each on the estimates y and their (known) variances v:

* **DerSimonian–Laird** (DerSimonian & Laird 1986, "Meta-analysis in clinical trials", *Controlled Clinical
  Trials* 7:177), the method of moments on Cochran's Q with fixed-effect weights w = 1/v:
  τ² = max(0, (Q − (k − 1))/(Σw − Σw²/Σw)).
* **Paule–Mandel** (Paule & Mandel 1982, "Consensus values and weighting factors", *J. Res. Natl. Bur. Stand.*
  87:377): the τ² at which the generalised Q with weights 1/(v + τ²) equals its expectation k − 1 (0 when even
  τ² = 0 gives less). Q decreases in τ², so the root is unique.
* **REML** (Harville 1977, *JASA* 72:320; for meta-analysis Raudenbush & Bryk 1985, *J. Educ. Stat.* 10:75, and
  Viechtbauer 2005, "Bias and efficiency of meta-analytic variance estimators in the random-effects model",
  *J. Educ. Behav. Stat.* 30:261): the root of the restricted score
  Σw²(y − μ̂)² − (Σw − Σw²/Σw) = 0 with w = 1/(v + τ²), μ̂ = Σwy/Σw, truncated at 0 (the restricted likelihood
  then peaks at the boundary).

The roots are found by Brent's method on a bracket (Brent 1973, *Algorithms for Minimization without
Derivatives*, ch. 4) to a relative 4·10⁻¹⁶, not by a tolerance on the estimating equation, so two correct
implementations agree to the last digits. The **Q-profile interval** for τ² (Viechtbauer 2007, "Confidence
intervals for the amount of heterogeneity in meta-analysis", *Stat. Med.* 26:37) inverts the generalised Q at the
χ²_{k−1} quantiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from .._errors import StatsComputationError

__all__ = ["TAU_METHODS", "TauMethod", "generalised_q", "q_profile_interval", "tau2_estimate"]

Floats = npt.NDArray[np.float64]
TauMethod = Literal["reml", "dl", "pm"]
TAU_METHODS: tuple[TauMethod, ...] = ("reml", "dl", "pm")


def _weighted_mean(y: Floats, w: Floats) -> float:
    return float(w @ y / w.sum())


def generalised_q(y: Floats, v: Floats, tau2: float) -> float:
    """Σ w(y − μ̂)² with w = 1/(v + τ²): Cochran's Q at τ² = 0."""
    w = 1.0 / (v + tau2)
    r = y - _weighted_mean(y, w)
    return float(w @ (r * r))


def _reml_score(y: Floats, v: Floats, tau2: float) -> float:
    """Twice the derivative of the restricted log-likelihood in τ²: Σw²r² − tr(P), tr(P) = Σw − Σw²/Σw."""
    w = 1.0 / (v + tau2)
    r = y - _weighted_mean(y, w)
    w_sum = float(w.sum())
    w2 = w * w
    return float(w2 @ (r * r)) - (w_sum - float(w2.sum()) / w_sum)


def _root(f: Callable[[float], float], start: float) -> float:
    """The root of a function positive at 0 and negative far out: bracket by doubling from ``start``, then Brent."""
    high = max(start, 1e-300)
    for _ in range(2100):  # from 1e-300 to beyond 1e300
        if f(high) < 0.0:
            break
        high *= 2.0
    else:
        raise StatsComputationError("could not bracket the between-experiment variance")
    low = high / 2.0 if high > start else 0.0
    if f(low) < 0.0:
        low = 0.0
    return float(optimize.brentq(f, low, high, xtol=1e-300, rtol=4.0 * np.finfo(float).eps, maxiter=500))


def _dl(y: Floats, v: Floats) -> float:
    w = 1.0 / v
    w_sum = float(w.sum())
    c = w_sum - float((w * w).sum()) / w_sum
    return max(0.0, (generalised_q(y, v, 0.0) - (y.size - 1)) / c) if c > 0 else 0.0


def tau2_estimate(y: Floats, v: Floats, method: TauMethod) -> float:
    """τ² by ``method`` (``"reml"``, ``"dl"`` or ``"pm"``) from estimates ``y`` and their variances ``v``.

    >>> y, v = np.array([0.1, -0.05, 0.2, 0.02]), np.array([0.01, 0.02, 0.015, 0.01])
    >>> [round(tau2_estimate(y, v, m), 5) for m in ("dl", "pm", "reml")]
    [0.0, 0.0, 0.0]
    >>> y = np.array([0.3, -0.2, 0.4, 0.05])
    >>> [round(tau2_estimate(y, v, m), 5) for m in ("dl", "pm", "reml")]
    [0.04528, 0.05558, 0.05247]
    """
    k = y.size
    if k < 2:
        return 0.0
    if method == "dl":
        return _dl(y, v)
    # Start the bracket near the DL value, on the scale of the data (variances of lifts are ~1e-4).
    start = max(_dl(y, v), float(np.median(v)) * 1e-3)
    if method == "pm":

        def excess_q(tau2: float) -> float:
            return generalised_q(y, v, tau2) - (k - 1)

        return 0.0 if excess_q(0.0) <= 0.0 else _root(excess_q, start)

    def score(tau2: float) -> float:
        return _reml_score(y, v, tau2)

    return 0.0 if score(0.0) <= 0.0 else _root(score, start)


def q_profile_interval(y: Floats, v: Floats, alpha: float) -> tuple[float, float]:
    """The Q-profile 1 − α interval for τ²: the τ² where the generalised Q equals χ²_{k−1} at 1 − α/2 and α/2
    (each end 0 when even τ² = 0 gives a smaller Q)."""
    k = y.size
    if k < 2:
        return math.nan, math.nan
    start = float(np.median(v))
    ends = []
    for level in (1.0 - alpha / 2.0, alpha / 2.0):
        target = float(special.chdtri(k - 1, 1.0 - level))  # the χ² quantile at `level`

        def excess(tau2: float, target: float = target) -> float:
            return generalised_q(y, v, tau2) - target

        ends.append(0.0 if excess(0.0) <= 0.0 else _root(excess, start))
    return ends[0], ends[1]
