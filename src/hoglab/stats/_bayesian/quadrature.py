"""Deterministic Bayesian quantities by one-dimensional Gauss–Legendre quadrature.

Everything PostHog estimates with 100,000 random draws is a one-dimensional integral:

* chance that arm i is best:  P_i = ∫ f_i(x) Π_{j≠i} F_j(x) dx
* chance that arm i beats c:   ∫ f_i(x) F_c(x) dx
* expected loss of choosing i over c:  E[(X_c − X_i)⁺] = ∫ f_i(x) E[(X_c − x)⁺] dx, where the
  inner partial expectation has a closed form (see ``upper_partial`` of each family).

The integrals run on one composite Gauss–Legendre grid whose panel edges come from every
arm's own scale (mean ± k·sd, clipped to its 1e-13 tail quantiles). Each integrand is
smooth on the scale of the narrowest arm near it, so a few nodes per panel give ~1e-10
accuracy; tests check this against closed forms and adaptive quadrature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from .._errors import StatsComputationError, StatsInputError
from .posteriors import BetaPosterior, FloatArray, GammaPosterior, NormalPosterior, Posterior, StudentTPosterior, bounds

__all__ = [
    "chance_to_be_best",
    "chance_to_beat",
    "credible_intervals",
    "difference_interval",
    "expected_loss",
    "lift_interval",
    "summarise",
]

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
_MAX_PANELS_PER_ARM = 48
_PANELS = 12  # panels per window when solving for effect quantiles
_STEP = 2.0  # panel edges every 2 sd of each arm (8 Gauss–Legendre nodes each)
_MERGE = 1.0  # snap edges to a lattice of the narrowest sd


@dataclass(frozen=True, eq=False)
class Grid:
    """Composite Gauss–Legendre nodes and weights resolving every arm of a posterior."""

    nodes: FloatArray
    weights: FloatArray

    @classmethod
    def for_posterior(cls, posterior: Posterior) -> Grid:
        lo, hi = bounds(posterior)
        mean, sd = posterior.mean, posterior.sd
        edges = [lo, hi]
        for i in range(len(posterior)):
            span = (hi[i] - lo[i]) / sd[i]
            step = max(_STEP, span / _MAX_PANELS_PER_ARM)
            # Panel edges every _STEP sd from the mean outwards, inside this arm's support.
            z = np.arange(
                math.ceil((lo[i] - mean[i]) / (sd[i] * step)),
                math.floor((hi[i] - mean[i]) / (sd[i] * step)) + 1,
            )
            edges.append(mean[i] + sd[i] * step * z)
        start, stop = lo.min(), hi.max()
        points = np.concatenate(edges)
        points = points[(points > start) & (points < stop)]
        # Snap edges to a lattice of a fraction of the narrowest sd: edges of similar arms
        # interleave densely, and nearly coincident edges add nodes, not accuracy. (Snapping,
        # unlike dropping an edge close to its neighbour, can never chain into one wide panel.)
        step = _MERGE * sd.min()
        points = np.unique(np.round(points / step)) * step
        points = np.concatenate(([start], points[(points > start) & (points < stop)], [stop]))
        a, b = points[:-1], points[1:]
        half = (b - a)[:, None] / 2.0
        nodes = ((a + b)[:, None] / 2.0 + half * _GL_NODES).ravel()
        weights = (half * _GL_WEIGHTS).ravel()
        return cls(nodes, weights)

    @staticmethod
    def per_arm(posterior: Posterior, *, log: bool, panels: int = 16) -> tuple[FloatArray, FloatArray]:
        """Each arm's own grid over its support: nodes and density-weights, shape (k, m).

        With ``log=True`` the panels are uniform in log x (weights f(x)·x·dv), which resolves
        the long left tail of log X that ratios of small-count posteriors depend on.
        """
        lo, hi = bounds(posterior)
        if log:
            lo, hi = np.log(np.maximum(lo, 1e-300)), np.log(hi)
        t = (np.arange(panels)[:, None] + (_GL_NODES + 1.0) / 2.0).ravel() / panels
        w = np.tile(_GL_WEIGHTS / 2.0, panels) / panels
        width = (hi - lo)[:, None]
        nodes = lo[:, None] + width * t
        weights = width * w
        if log:
            nodes = np.exp(nodes)
            weights = weights * nodes
        return nodes, posterior.pdf(nodes) * weights


def _leave_one_out_products(cdf: FloatArray) -> FloatArray:
    """Π_{j≠i} F_j for each row i, from prefix and suffix products (no division: F_i may be 0)."""
    ones = np.ones((1, cdf.shape[1]))
    prefix = np.cumprod(np.vstack([ones, cdf[:-1]]), axis=0)
    suffix = np.vstack([np.cumprod(cdf[::-1], axis=0)[::-1][1:], ones])
    return np.asarray(prefix * suffix, dtype=np.float64)


def chance_to_be_best(posterior: Posterior, grid: Grid | None = None) -> FloatArray:
    """P(arm i has the highest value) for every arm; the entries sum to 1.

    Examples
    --------
    >>> chance_to_be_best(BetaPosterior([61, 86], [441, 416])).round(4)
    array([0.0125, 0.9875])
    """
    _need_arms(posterior, 1)
    if len(posterior) == 1:
        return np.ones(1)
    grid = grid or Grid.for_posterior(posterior)
    x = grid.nodes[None, :]
    dens = posterior.pdf(x) * grid.weights
    best = (dens * _leave_one_out_products(posterior.cdf(x))).sum(axis=1)
    return np.asarray(np.clip(best, 0.0, 1.0), dtype=np.float64)


def chance_to_beat(posterior: Posterior, control: int = 0, grid: Grid | None = None) -> FloatArray:
    """P(X_i > X_control) for every arm i (NaN for the control itself).

    Examples
    --------
    >>> chance_to_beat(GammaPosterior([121, 151], [1000, 1020])).round(4)
    array([   nan, 0.9516])
    """
    _need_arms(posterior, 2)
    grid = grid or Grid.for_posterior(posterior)
    x = grid.nodes[None, :]
    cdf_control = posterior.take(control).cdf(x)
    out = (posterior.pdf(x) * grid.weights * cdf_control).sum(axis=1)
    out = np.clip(out, 0.0, 1.0)
    out[control] = np.nan
    return out  # type: ignore[no-any-return]


def expected_loss(posterior: Posterior, control: int = 0, grid: Grid | None = None) -> FloatArray:
    """E[max(0, X_control − X_i)]: what choosing arm i over the control costs on average.

    The same "risk" as GrowthBook's and the VWO SmartStats loss PostHog uses, in the
    metric's own units (NaN for the control itself).

    Examples
    --------
    >>> expected_loss(BetaPosterior([61, 86], [441, 416])).round(6)
    array([    nan, 9.7e-05])
    """
    _need_arms(posterior, 2)
    grid = grid or Grid.for_posterior(posterior)
    x = grid.nodes[None, :]
    partial = posterior.take(control).upper_partial(x)
    out = np.maximum((posterior.pdf(x) * grid.weights * partial).sum(axis=1), 0.0)
    out[control] = np.nan
    return out  # type: ignore[no-any-return]


def pairwise_loss(posterior: Posterior, target: int, other: int, grid: Grid | None = None) -> float:
    """E[max(0, X_other − X_target)] for two arms of one family."""
    grid = grid or Grid.for_posterior(posterior.take([target, other]))
    x = grid.nodes[None, :]
    value = (posterior.take(target).pdf(x) * grid.weights * posterior.take(other).upper_partial(x)).sum()
    return max(0.0, float(value))


@dataclass(frozen=True, eq=False)
class BayesSummary:
    """Every quantity ``compare`` reports for one metric, from one set of evaluations."""

    best: FloatArray
    win: FloatArray
    loss: FloatArray
    difference: FloatArray
    lift: FloatArray


def summarise(posterior: Posterior, control: int = 0, alpha: float = 0.05) -> BayesSummary:
    """Chance to be best and to beat the control, expected loss and effect intervals.

    Same values as the separate functions, but densities and distribution functions on
    the grid are evaluated once and shared.
    """
    _need_arms(posterior, 2)
    grid = Grid.for_posterior(posterior)
    x = grid.nodes[None, :]
    dens = posterior.pdf(x) * grid.weights
    cdf = posterior.cdf(x)
    best = np.clip((dens * _leave_one_out_products(cdf)).sum(axis=1), 0.0, 1.0)
    win = np.clip((dens * cdf[control]).sum(axis=1), 0.0, 1.0)
    loss = np.maximum((dens * posterior.take(control).upper_partial(x)).sum(axis=1), 0.0)
    win[control] = loss[control] = np.nan
    return BayesSummary(
        best=np.asarray(best, dtype=np.float64),
        win=np.asarray(win, dtype=np.float64),
        loss=np.asarray(loss, dtype=np.float64),
        difference=difference_interval(posterior, control, alpha),
        lift=lift_interval(posterior, control, alpha),
    )


def credible_intervals(posterior: Posterior, level: float = 0.95) -> FloatArray:
    """Equal-tailed credible interval of each arm, shape (k, 2)."""
    tail = (1.0 - level) / 2.0
    q = np.array([[tail]])
    return np.column_stack([posterior.ppf(q)[:, 0], posterior.isf(q)[:, 0]])


def difference_interval(posterior: Posterior, control: int = 0, alpha: float = 0.05) -> FloatArray:
    """Equal-tailed credible interval of X_i − X_control for each arm, shape (k, 2).

    Normal posteriors have the closed form; other families solve
    P(X_i − X_c ≤ d) = ∫ f_A(x) F_B(x ± d) dx = p by safeguarded Newton, integrating over
    the narrower arm A so the integrand stays smooth.
    """
    return _effect_interval(posterior, control, alpha, relative=False)


def lift_interval(posterior: Posterior, control: int = 0, alpha: float = 0.05) -> FloatArray:
    """Equal-tailed credible interval of X_i/X_control − 1 for each arm, shape (k, 2).

    For Gamma posteriors the interval is exact: r_i·X_i/(r_i·X_i + r_c·X_c) ~ Beta(k_i, k_c)
    (a ratio of Gammas is beta-prime), so the quantiles come from ``betaincinv``. Normal
    posteriors use the delta method (as GrowthBook); Beta posteriors solve
    P(X_i ≤ (1 + ℓ)·X_c) = p numerically.
    """
    return _effect_interval(posterior, control, alpha, relative=True)


def _effect_interval(posterior: Posterior, control: int, alpha: float, *, relative: bool) -> FloatArray:
    _need_arms(posterior, 2)
    k = len(posterior)
    others = np.array([i for i in range(k) if i != control])
    out = np.full((k, 2), np.nan)
    probs = np.array([alpha / 2.0, 1.0 - alpha / 2.0])
    m, s = posterior.mean, posterior.sd
    mc, sc = m[control], s[control]
    if isinstance(posterior, NormalPosterior):
        z = float(special.ndtri(1.0 - alpha / 2.0))
        if relative:
            if not mc > 0:
                return out
            centre = m[others] / mc - 1.0
            se = np.sqrt(s[others] ** 2 / mc**2 + sc**2 * m[others] ** 2 / mc**4)
        else:
            centre = m[others] - mc
            se = np.sqrt(s[others] ** 2 + sc**2)
        out[others] = np.column_stack([centre - z * se, centre + z * se])
        return out
    if relative and isinstance(posterior, GammaPosterior):
        kc, rc = posterior.shape[control], posterior.rate[control]
        ki, ri = posterior.shape[others][:, None], posterior.rate[others][:, None]
        # X = Y/r with Y ~ Gamma(k, 1); Y_i/(Y_i + Y_c) ~ Beta(k_i, k_c), so with π its quantile
        # X_i/X_c = (π/(1 − π))·(r_c/r_i).
        pi = special.betaincinv(ki, kc, probs[None, :])
        out[others] = pi / (1.0 - pi) * (rc / ri) - 1.0
        return out
    out[others] = _solve_effect_quantiles(posterior, control, others, probs, relative=relative)
    return out


def _cumulants(posterior: Posterior, *, log: bool) -> tuple[FloatArray, FloatArray, FloatArray]:
    """First three cumulants of X (or of log X) for each arm, for Cornish–Fisher starting points."""
    if isinstance(posterior, BetaPosterior):
        a, b = posterior.alpha, posterior.beta
        if log:  # log of a Beta: polygamma differences (Johnson, Kotz & Balakrishnan, ch. 25)
            return (
                special.digamma(a) - special.digamma(a + b),
                special.polygamma(1, a) - special.polygamma(1, a + b),
                special.polygamma(2, a) - special.polygamma(2, a + b),
            )
        t = a + b
        third = 2.0 * a * b * (b - a) / (t**3 * (t + 1.0) * (t + 2.0))
        return posterior.mean, posterior.sd**2, third
    if isinstance(posterior, GammaPosterior):
        k, r = posterior.shape, posterior.rate
        if log:
            return special.digamma(k) - np.log(r), special.polygamma(1, k), special.polygamma(2, k)
        return k / r, k / r**2, 2.0 * k / r**3
    raise StatsInputError("cumulants are only needed for Beta and Gamma posteriors")


def _solve_effect_quantiles(
    posterior: Posterior, control: int, others: npt.NDArray[np.intp], probs: FloatArray, *, relative: bool
) -> FloatArray:
    """Quantiles of X_i − X_c (or X_i/X_c − 1) by safeguarded Newton on a 1-D integral.

    Work in v = x (difference) or v = log x (lift), where the effect is additive: the unknown
    u is the difference, or the log of the ratio. With A the narrower arm of the pair and B
    the other, P(effect ≤ u) is ∫ f_A(v)·F_B(v + u) dv when A is the control and
    ∫ f_A(v)·S_c(v − u) dv when A is arm i. The integral runs only over the window where
    B's distribution function is strictly between 0 and 1 (the mass outside is added in
    closed form), so a kink at a support edge, as with zero conversions, never sits inside
    a panel. Newton starts from the Cornish–Fisher expansion with the exact first three
    cumulants; bisection takes over whenever a step leaves the bracket.
    """
    c = control
    n_p = len(probs)
    k1, k2, k3 = _cumulants(posterior, log=relative)
    z = special.ndtri(probs)[None, :]
    var = (k2[others] + k2[c])[:, None]
    skew = (k3[others] - k3[c])[:, None] / var**1.5
    spread = np.sqrt(var) + 0.0 * z
    u = (k1[others] - k1[c])[:, None] + spread * (z + (z * z - 1.0) * skew / 6.0)

    lo, hi = bounds(posterior)
    if relative:
        lo, hi = np.log(np.maximum(lo, 1e-300)), np.log(hi)
    low = (lo[others] - hi[c])[:, None] + 0.0 * z
    high = (hi[others] - lo[c])[:, None] + 0.0 * z
    u = np.clip(u, low, high).ravel()
    low, high, spread = low.ravel(), high.ravel(), spread.ravel()

    # One row per (arm, probability). A is the narrower of (control, arm i).
    arm = np.repeat(others, n_p)
    over_control = np.sqrt(k2[c]) <= np.sqrt(k2[arm])
    a_idx = np.where(over_control, c, arm)
    b_idx = np.where(over_control, arm, c)
    sign = np.where(over_control, 1.0, -1.0)
    target = np.tile(probs, len(others))
    # Near-Normal posteriors (every shape parameter ≥ 50) give integrands smooth enough for
    # half the panels at the same ~1e-9 accuracy; skewed small-count ones need them all.
    panels = _PANELS // 2 if _min_shape(posterior) >= 50.0 else _PANELS
    t = (np.arange(panels)[:, None] + (_GL_NODES + 1.0) / 2.0).ravel() / panels
    w = np.tile(_GL_WEIGHTS / 2.0, panels) / panels

    def back(v: FloatArray) -> FloatArray:
        return np.exp(v) if relative else v

    def integral(rows: npt.NDArray[np.intp], u: FloatArray) -> tuple[FloatArray, FloatArray]:
        a, b = posterior.take(a_idx[rows]), posterior.take(b_idx[rows])
        sg = sign[rows]
        lo_a, hi_a, lo_b, hi_b = lo[a_idx[rows]], hi[a_idx[rows]], lo[b_idx[rows]], hi[b_idx[rows]]
        left = np.maximum(lo_a, lo_b - sg * u)
        right = np.minimum(hi_a, hi_b - sg * u)
        width = np.maximum(right - left, 0.0)[:, None]
        v = left[:, None] + width * t
        x = back(v)
        f_a = a.pdf(x) * width * w * (x if relative else 1.0)
        y = back(v + (sg * u)[:, None])
        # Rows integrating over the control need F_B and the mass above the window; rows
        # integrating over arm i need S_c and the mass below it. Evaluate each only where used.
        up = sg > 0
        mass = np.empty_like(y)
        outside = np.empty(len(rows))
        if up.any():
            mass[up] = b.take(up).cdf(y[up])
            outside[up] = a.take(up).sf(back(right[up])[:, None])[:, 0]
        if (~up).any():
            mass[~up] = b.take(~up).sf(y[~up])
            outside[~up] = a.take(~up).cdf(back(left[~up])[:, None])[:, 0]
        value = (f_a * mass).sum(axis=1) + outside
        deriv = (f_a * b.pdf(y) * (y if relative else 1.0)).sum(axis=1)
        return value, deriv

    active = np.arange(u.size)
    for _ in range(100):
        value, deriv = integral(active, u[active])
        gap = value - target[active]
        ua = u[active]
        low[active] = np.where(gap < 0.0, ua, low[active])
        high[active] = np.where(gap > 0.0, ua, high[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            new = ua - gap / deriv
        # A Newton step landing on a bracket end is a step below one ulp: converged, not bad.
        bad = ~np.isfinite(new) | (new < low[active]) | (new > high[active])
        new = np.where(bad, 0.5 * (low[active] + high[active]), new)
        # Newton converges quadratically: after a step of δ the error is O(δ²/spread), so a
        # Newton step below 1e-6·spread leaves ~1e-12·spread.
        done = ~bad & (np.abs(new - ua) <= 1e-6 * spread[active])
        u[active] = new
        active = active[~done]
        if active.size == 0:
            result = u.reshape(len(others), n_p)
            return np.asarray(np.expm1(result) if relative else result, dtype=np.float64)
    raise StatsComputationError("credible interval of the effect did not converge")


def _min_shape(posterior: Posterior) -> float:
    if isinstance(posterior, BetaPosterior):
        return float(min(posterior.alpha.min(), posterior.beta.min()))
    if isinstance(posterior, GammaPosterior):
        return float(posterior.shape.min())
    return math.inf


def _need_arms(posterior: Posterior, minimum: int) -> None:
    if not isinstance(posterior, BetaPosterior | GammaPosterior | NormalPosterior | StudentTPosterior):
        raise StatsInputError("expected a BetaPosterior, GammaPosterior, NormalPosterior or StudentTPosterior")
    if len(posterior) < minimum:
        raise StatsInputError(f"need at least {minimum} arm(s), got {len(posterior)}")
