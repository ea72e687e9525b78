"""Expected loss against the best of the other arms, PostHog's v2 definition, by quadrature.

PostHog's v2 engines (``trends_statistics_v2_count.py``, ``..._continuous.py``) estimate, from 10,000 random
draws, the loss of choosing arm t: E[max(0, max_{j≠t} Y_j − Y_t)]. hoglab's own :func:`expected_loss` compares
one pair of arms; here the other arms are taken together. With M = max_{j≠t} Y_j,

    E[(M − Y_t)⁺] = ∫ f_t(y) · G(y) dy,   G(y) = E[(M − y)⁺] = ∫_y^∞ P(M > m) dm = ∫_y^∞ (1 − Π_{j≠t} F_j(m)) dm.

When the arms are posteriors of log values (PostHog's continuous metrics) and the loss is in the original
units, Y = e^X and the substitution m = e^u gives G(x) = ∫_x^∞ (1 − Π_{j≠t} F_j(u)) e^u du, on the log scale.
G is accumulated from the right on one fine uniform grid over every arm's support (trapezoid rule, 20,001
points: the error, O(h²), stays below 1e-8 of the loss for the families here; tests check it against
closed forms and seeded Monte Carlo).

PostHog's v2 funnel loss (``funnels_statistics_v2.calculate_expected_loss_v2``) draws each arm's *observed* rate
from the Beta-Binomial posterior predictive, K/n with K ~ BetaBinomial(n, 1 + successes, 1 + failures), rather
than the Beta posterior of the rate itself. Those are discrete laws on k/n, so :func:`betabinomial_loss_against_best`
sums them exactly: with M the largest of the other arms' rates, F_M(u) = Π_j P(K_j/n_j ≤ u) is a step function
whose steps sit at the fractions k/n_j, and E[(M − x)⁺] = ∫_x^1 (1 − F_M(u)) du is a finite sum over those steps.
Each law is summed over mean ± 12 standard deviations (the whole support when its edges still carry mass): the
mass left out is below 1e-30.
(Two fractions k/n and k'/n' that are equal as reals give the same double, and different ones differ by at least
1/(n·n'), far above the rounding, so the steps are located exactly.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..._bayesian.posteriors import FloatArray, Posterior, bounds
from ..._errors import StatsInputError

__all__ = ["betabinomial_loss_against_best", "loss_against_best"]

_POINTS = 20_001


def loss_against_best(posterior: Posterior, target: int, *, log_scale: bool = False) -> float:
    """E[max(0, max_{j≠target} Y_j − Y_target)], Y = X (or e^X with ``log_scale``), X the posterior's arms.

    Examples
    --------
    >>> from hoglab.stats import NormalPosterior
    >>> round(loss_against_best(NormalPosterior([0.0, 0.0], [1.0, 1.0]), 0), 6)  # E[(Z1 − Z0)⁺] = √2·φ(0)
    0.56419
    """
    k = len(posterior)
    if k < 2 or not 0 <= target < k:
        raise StatsInputError("loss_against_best needs at least two arms and a target among them")
    lo, hi = bounds(posterior)
    x = np.linspace(float(lo.min()), float(hi.max()), _POINTS)
    others = [j for j in range(k) if j != target]
    cdf = posterior.take(others).cdf(x[None, :])
    beyond: FloatArray = 1.0 - np.prod(cdf, axis=0)
    if log_scale:
        beyond = beyond * np.exp(x)
    h = x[1] - x[0]
    # G(x_i) = ∫_{x_i}^{end} beyond: trapezoids accumulated from the right.
    pieces = (beyond[1:] + beyond[:-1]) * (h / 2.0)
    tail = np.concatenate((np.cumsum(pieces[::-1])[::-1], [0.0]))
    density = posterior.take(target).pdf(x[None, :])[0]
    integrand = density * tail
    return max(0.0, float(np.sum((integrand[1:] + integrand[:-1]) * (h / 2.0))))


@dataclass(frozen=True)
class _Predictive:
    """A Beta-Binomial law on k/n over the part of its support that carries mass (k = first, ..., last)."""

    n: int
    first: int
    pmf: FloatArray

    @property
    def rates(self) -> FloatArray:
        return np.arange(self.first, self.first + self.pmf.size) / self.n


def _predictive(n: int, alpha: float, beta: float) -> _Predictive:
    # Outside mean ± 12 sd the mass is below 1e-30 for these unimodal laws unless they are very skewed (tiny α or
    # β), which the edge check below catches by falling back to the whole support.
    mean = n * alpha / (alpha + beta)
    sd = math.sqrt(n * alpha * beta * (alpha + beta + n) / ((alpha + beta) ** 2 * (alpha + beta + 1)))
    first, last = max(0, math.floor(mean - 12 * sd)), min(n, math.ceil(mean + 12 * sd))
    pmf = stats.betabinom.pmf(np.arange(first, last + 1), n, alpha, beta)
    peak = pmf.max()
    if (first > 0 and pmf[0] > 1e-16 * peak) or (last < n and pmf[-1] > 1e-16 * peak):
        first, pmf = 0, stats.betabinom.pmf(np.arange(n + 1), n, alpha, beta)
    return _Predictive(n, first, np.asarray(pmf / pmf.sum(), dtype=np.float64))


def betabinomial_loss_against_best(successes: FloatArray, failures: FloatArray, target: int) -> float:
    """E[max(0, max_{j≠target} R_j − R_target)], R = K/n, K ~ BetaBinomial(n, 1 + successes, 1 + failures).

    Counts are truncated to integers as PostHog's ``int(...)`` does. Exact up to rounding (no sampling, no grid).

    Examples
    --------
    >>> s, f = np.array([3.0, 2.0]), np.array([1.0, 2.0])  # 3/4 and 2/4 converted
    >>> round(betabinomial_loss_against_best(s, f, 0), 6)
    0.093159
    """
    s = np.asarray(successes, dtype=float)
    f = np.asarray(failures, dtype=float)
    k = s.size
    if k < 2 or f.size != k or not 0 <= target < k:
        raise StatsInputError("betabinomial_loss_against_best needs at least two arms and a target among them")
    n = [int(a + b) for a, b in zip(s, f, strict=True)]
    if min(n) < 1:
        raise StatsInputError("every arm needs at least one unit for the Beta-Binomial loss")
    alpha = [float(int(1 + a)) for a in s]
    beta = [float(int(1 + b)) for b in f]
    laws = [_predictive(n[j], alpha[j], beta[j]) for j in range(k)]
    others = [laws[j] for j in range(k) if j != target]
    # The steps of F_M: every rate some other arm can take (with mass), and the end of the range.
    steps = np.unique(np.concatenate([law.rates for law in others] + [np.array([1.0])]))
    cdf_max = np.ones_like(steps)
    for law in others:
        cdf = np.concatenate(([0.0], np.minimum(np.cumsum(law.pmf), 1.0)))
        cdf_max *= cdf[np.searchsorted(law.rates, steps, side="right")]
    beyond = 1.0 - cdf_max  # P(M > u) on [steps[i], steps[i + 1])
    widths = np.diff(steps)
    # tail[i] = ∫_{steps[i]}^{1} P(M > u) du
    tail = np.concatenate((np.cumsum((beyond[:-1] * widths)[::-1])[::-1], [0.0]))
    x = laws[target].rates
    i = np.searchsorted(steps, x, side="right") - 1
    # Below the first step, M exceeds u surely: G(x) = (steps[0] − x) + tail[0].
    below = i < 0
    i = np.maximum(i, 0)
    nxt = np.minimum(i + 1, steps.size - 1)
    gain = np.where(i + 1 < steps.size, beyond[i] * (steps[nxt] - x) + tail[nxt], 0.0)
    gain = np.where(below, steps[0] - x + tail[0], gain)
    pmf = laws[target].pmf
    return max(0.0, float(np.dot(pmf, gain)))
