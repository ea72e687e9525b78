"""A history's distribution of true effects as a prior and a planning tool: what an experiment of n units can see.

With a new experiment's true lift θ ~ N(μ, T²) (the history's prior, :class:`EffectPrior`) and its estimate
y | θ ~ N(θ, s²), s² = 2σ₁²/n for n units per arm (σ₁² the history's lift variance with one unit per arm), a
two-sided test at level α is significant when |y| > c = z_{1−α/2}·s. Then (y, θ) is bivariate normal with
Var y = T² + s², Cov = T², and

* **chance of a significant win / loss**: P(y > c) = Φ̄((c − μ)/√(T² + s²)), P(y < −c) likewise;
* **assurance**, the chance the experiment is significant in the direction of its true effect,
  P(θ > 0, y > c) + P(θ < 0, y < −c): the power averaged over the prior (O'Hagan, Stevens & Campbell 2005,
  "Assurance in clinical trial design", *Pharm. Stat.* 4:187); and **wrong sign**, significant the other way (the
  type S error of Gelman & Carlin 2014, "Beyond power calculations", *Perspect. Psychol. Sci.* 9:641). The
  orthant probabilities are exact, by Owen's T function (Owen 1956, "Tables for computing bivariate normal
  probabilities", *Ann. Math. Stat.* 27:1075);
* **MDE** at the planned power: (z_{1−α/2} + z_{power})·s, and the **share of true lifts at least that large**,
  P(|θ| ≥ MDE);
* the **winner's curse at this size**: a significant win reads E[y | y > c] = μ + σ_y·λ(a) on average but is
  worth E[θ | y > c] = μ + (T²/σ_y)·λ(a), σ_y² = T² + s², a = (c − μ)/σ_y, λ the inverse Mills ratio φ/Φ̄
  (E[θ | y] is linear in y).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from .._distributions import norm_isf, z_quantile
from .._errors import StatsInputError
from .._options import check_alpha
from .analysis import MetaAnalysis, meta_analysis
from .distribution import EffectPrior

__all__ = ["PLAN_COLUMNS", "HistoryPlan", "bivariate_upper", "plan_from_history", "prior_from_history"]

Floats = npt.NDArray[np.float64]
PLAN_COLUMNS = [
    "units", "standard_error", "mde", "share_detectable", "chance_significant_win", "chance_significant_loss",
    "assurance", "wrong_sign", "win_reads", "win_worth",
]  # fmt: skip


def prior_from_history(history: Any, **fit: Any) -> EffectPrior:
    """The prior for a new experiment's relative lift from a history of experiments (or a fitted
    :class:`MetaAnalysis`): N(μ̂, τ̂² + SE(μ̂)²), its :attr:`MetaAnalysis.prior`. ``fit`` goes to
    :func:`meta_analysis` (``standard_error=``, ``metric=``, ``method=``, ...).

    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> se = rng.uniform(0.005, 0.02, 40)
    >>> prior = prior_from_history(rng.normal(0.01, 0.02, 40) + rng.normal(0, se), standard_error=se)
    >>> print(prior.update(0.04, 0.015))  # doctest: +ELLIPSIS
    Lift +4.00% ± 1.50% read, +2.84% after the history's prior (95% credible interval [+0.48%, +5.21%]; ...
    """
    return _fitted(history, fit).prior


def _fitted(history: Any, fit: dict[str, Any]) -> MetaAnalysis:
    if isinstance(history, MetaAnalysis):
        if fit:
            raise StatsInputError(f"a fitted MetaAnalysis takes no fitting arguments, got {sorted(fit)}")
        return history
    return meta_analysis(history, **fit)


def bivariate_upper(h: Any, k: Any, rho: Any) -> Floats:
    """P(X > h, Y > k) for standard bivariate normals with correlation ρ (|ρ| < 1), by Owen's T:
    Φ₂(a, b; ρ) = ½Φ(a) + ½Φ(b) − T(a, (b − ρa)/(a√(1 − ρ²))) − T(b, (a − ρb)/(b√(1 − ρ²))) − δ, at a = −h,
    b = −k, where δ = ½ when ab < 0 or (ab = 0 and a + b < 0), else 0 (Owen 1956, eq. 2.1).

    >>> round(float(bivariate_upper(0.0, 0.0, 0.5)[0]), 6)  # ¼ + arcsin(ρ)/2π
    0.333333
    """
    a, b, r = np.broadcast_arrays(-np.atleast_1d(np.asarray(h, dtype=float)),
                                  -np.atleast_1d(np.asarray(k, dtype=float)), np.asarray(rho, dtype=float))  # fmt: skip
    root = np.sqrt(1.0 - r * r)
    with np.errstate(divide="ignore", invalid="ignore"):
        # At a = 0 the slope is ±∞ by the limit a → 0⁺, where T(0, ±∞) = ±¼ (δ below follows the same side).
        t_a = np.where(a != 0, special.owens_t(a, (b - r * a) / (a * root)), 0.25 * np.sign(b))
        t_b = np.where(b != 0, special.owens_t(b, (a - r * b) / (b * root)), 0.25 * np.sign(a))
    delta = np.where((a * b < 0) | ((a * b == 0) & (a + b < 0)), 0.5, 0.0)
    out = 0.5 * special.ndtr(a) + 0.5 * special.ndtr(b) - t_a - t_b - delta
    both_zero = (a == 0) & (b == 0)
    result: Floats = np.clip(np.where(both_zero, 0.25 + np.arcsin(r) / (2.0 * math.pi), out), 0.0, 1.0)
    return result


def _mills(x: Floats) -> Floats:
    """φ(x)/Φ̄(x), in logs so that it stays finite far in the tail."""
    out: Floats = np.exp(-0.5 * x * x - 0.5 * math.log(2.0 * math.pi) - special.log_ndtr(-x))
    return out


@dataclass(frozen=True)
class HistoryPlan:
    """The result of :func:`plan_from_history`: a row per planned size (``to_frame()``), from the ``prior``."""

    frame: pd.DataFrame
    prior: EffectPrior
    alpha: float
    power: float

    def to_frame(self) -> pd.DataFrame:
        """``units`` (per arm; NaN when sized by standard error), ``standard_error`` of the lift, ``mde`` at
        ``power``, ``share_detectable`` = P(|θ| ≥ mde), ``chance_significant_win/loss``, ``assurance`` (significant
        with the true effect's sign), ``wrong_sign`` (significant with the other), ``win_reads`` and
        ``win_worth`` (a significant win's average read and true lift)."""
        return self.frame.copy()

    def summary(self) -> str:
        """One line per planned size."""
        lines = [f"Planning from the history's prior N({self.prior.mean:+.2%}, {self.prior.sd:.2%}²), two-sided "
                 f"α = {self.alpha:g}:"]  # fmt: skip
        for r in self.frame.to_dict("records"):
            size = f"{r['units']:,.0f} units per arm" if math.isfinite(r["units"]) else f"SE {r['standard_error']:.2%}"
            lines.append(
                f"{size}: MDE {r['mde']:.2%} at {self.power:.0%} power ({r['share_detectable']:.0%} of true lifts are "
                f"that large); significant in the true direction {r['assurance']:.0%} of the time, the wrong way "
                f"{r['wrong_sign']:.1%}; a significant win reads {r['win_reads']:+.2%} and is worth "
                f"{r['win_worth']:+.2%}."
            )  # fmt: skip
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        lines = self.summary().splitlines()
        table = self.frame.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        return f"<div><p>{html.escape(lines[0])}</p>{table}</div>"


def plan_from_history(
    history: Any,
    units: float | Sequence[float] | None = None,
    *,
    standard_error: float | Sequence[float] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    **fit: Any,
) -> HistoryPlan:
    """What experiments of ``units`` per arm (or of lift standard errors ``standard_error``) would see, if their
    true lifts follow the history's distribution.

    ``history`` is a history (fitted with ``fit``, see :func:`meta_analysis`) or a :class:`MetaAnalysis`. Sizing by
    ``units`` needs the history's noise per unit, from its ``units`` and ``control_units`` columns
    (:attr:`MetaAnalysis.unit_variance`): s = √(2σ₁²/n).

    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> n = rng.integers(5_000, 50_000, 40)
    >>> se = np.sqrt(0.5 * 2 / n)  # a lift's variance of 0.5 with one unit per arm
    >>> history = pd.DataFrame({"estimate": rng.normal(0.01, 0.02, 40) + rng.normal(0, se), "standard_error": se,
    ...                         "units": n, "control_units": n})
    >>> plan = plan_from_history(history, units=[10_000, 100_000])
    >>> plan.to_frame()[["units", "mde", "assurance"]].round(3).values.tolist()
    [[10000.0, 0.028, 0.442], [100000.0, 0.009, 0.794]]
    """
    check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise StatsInputError(f"power must be strictly between 0 and 1, got {power!r}")
    if (units is None) == (standard_error is None):
        raise StatsInputError("pass exactly one of units= (per arm) and standard_error=")
    meta = _fitted(history, fit)
    if units is not None:
        n = np.atleast_1d(np.asarray(units, dtype=float))
        if not np.all(np.isfinite(n) & (n > 0)):
            raise StatsInputError("units must be positive numbers (units per arm)")
        if not math.isfinite(meta.unit_variance):
            raise StatsInputError("sizing by units needs the history's 'units' and 'control_units' columns; "
                                  "pass standard_error= instead")  # fmt: skip
        s = np.sqrt(2.0 * meta.unit_variance / n)
    else:
        s = np.atleast_1d(np.asarray(standard_error, dtype=float))
        if not np.all(np.isfinite(s) & (s > 0)):
            raise StatsInputError("standard_error must be positive numbers")
        n = np.full(s.shape, math.nan)
    prior = meta.prior
    mu, t2 = prior.mean, prior.variance
    c = z_quantile(alpha) * s
    sd_y = np.sqrt(t2 + s * s)
    rho = math.sqrt(t2) / sd_y
    win = special.ndtr((mu - c) / sd_y)
    loss = special.ndtr((-c - mu) / sd_y)
    # P(θ > 0, y > c) and P(θ < 0, y < −c) in standardised coordinates, one correlation per size.
    h_pos, k_pos = -mu / prior.sd, (c - mu) / sd_y
    h_neg, k_neg = mu / prior.sd, (c + mu) / sd_y
    right = bivariate_upper(h_pos, k_pos, rho) + bivariate_upper(h_neg, k_neg, rho)
    mde = (z_quantile(alpha) + norm_isf(1.0 - power)) * s
    share = special.ndtr((mu - mde) / prior.sd) + special.ndtr((-mde - mu) / prior.sd)
    a = (c - mu) / sd_y
    frame = pd.DataFrame({
        "units": n, "standard_error": s, "mde": mde, "share_detectable": share, "chance_significant_win": win,
        "chance_significant_loss": loss, "assurance": right, "wrong_sign": win + loss - right,
        "win_reads": mu + sd_y * _mills(a), "win_worth": mu + t2 / sd_y * _mills(a),
    })  # fmt: skip
    return HistoryPlan(frame, prior, alpha, power)
