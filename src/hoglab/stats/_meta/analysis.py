"""Random-effects meta-analysis of a history of experiments: the distribution of true effects and what it implies.

Each experiment i reads a lift y_i with standard error s_i (v_i = s_i²). The model is the normal–normal
hierarchy (DerSimonian & Laird 1986; Higgins, Thompson & Spiegelhalter 2009, *JRSS-A* 172:137):

    y_i | θ_i ~ N(θ_i, v_i),    θ_i ~ N(μ, τ²)

* **τ²** by REML (default), DerSimonian–Laird or Paule–Mandel (:mod:`.tau`), with its Q-profile interval.
* **μ̂** = Σw*y/Σw*, w* = 1/(v + τ̂²), SE = 1/√Σw*, interval μ̂ ± z·SE; ``interval="hksj"`` uses the
  Hartung–Knapp–Sidik–Jonkman variance Σw*(y − μ̂)²/((k − 1)Σw*) with t_{k−1} (Hartung & Knapp 2001, *Stat. Med.*
  20:3875; Sidik & Jonkman 2002, *Stat. Med.* 21:3153), statsmodels' ``conf_int(use_t=True)``.
* **Prediction interval** for a new true effect: μ̂ ± t_{k−2}·√(τ̂² + SE²) (Higgins et al. 2009, §3.2).
* **Heterogeneity**: Cochran's Q = Σw(y − ȳ_w)², w = 1/v, against χ²_{k−1} (Cochran 1954, *Biometrics* 10:101);
  I² = max(0, (Q − (k − 1))/Q) and H² = Q/(k − 1) (Higgins & Thompson 2002, *Stat. Med.* 21:1539).
* **Shrunken estimates** (empirical Bayes; Efron & Morris 1975, "Data analysis using Stein's estimator and its
  generalizations", *JASA* 70:311; Raudenbush & Bryk 1985): with B_i = v_i/(v_i + τ̂²),
  θ̃_i = B_i·μ̂ + (1 − B_i)·y_i and Var = (1 − B_i)v_i + B_i²·SE(μ̂)², the second term for the estimated μ
  (metafor's ``blup``; Viechtbauer 2010, *J. Stat. Softw.* 36(3)). The interval θ̃_i ± z·√Var.
* **Win rate corrected for noise**: the share of true effects above 0 in the fitted distribution, Φ(μ̂/τ̂), and
  the expected number of these experiments whose true effect is positive, Σ P(θ_i > 0 | y); against the naive
  share of significant wins (y_i/s_i > z_{1−α/2}).
* **Winner's curse** of the shipped experiments: given the fitted distribution, the expected true effect of an
  experiment is its shrunken estimate whatever rule selected it on its data (the posterior does not depend on the
  selection: Dawid 1994, "Selection paradoxes of Bayesian inference", *IMS Lecture Notes* 24:211; Efron 2011,
  "Tweedie's formula and selection bias", *JASA* 106:1602). So the shipped experiments' read lifts overstate their
  worth by Σ(y_i − θ̃_i) (Lee & Shen 2018, "Winner's curse: bias estimation for total effects of features in
  online controlled experiments", KDD, measure the same bias). The total's variance given the data is
  Σ_S(1 − B_i)v_i + (Σ_S B_i)²·SE(μ̂)² (the θ_i are independent given μ, and μ | y ~ N(μ̂, SE²)).

The fit needs the history of *all* experiments on the metric, shipped or not: the distribution of true effects is
estimated from everything that was tried, and the shipped ones are then read against it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special

from .._distributions import norm_sf, t_isf, t_sf, z_quantile
from .._errors import StatsInputError
from .._options import check_alpha
from .distribution import EffectPrior
from .history import History, read_history
from .posterior import plug_in, posteriors, tau_posterior
from .tau import TAU_METHODS, TauMethod, generalised_q, q_profile_interval, tau2_estimate

__all__ = ["EXPERIMENT_COLUMNS", "IntervalMethod", "MetaAnalysis", "Shrinkage", "WinnersCurse", "meta_analysis"]

IntervalMethod = Literal["z", "hksj"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("z", "hksj")
Shrinkage = Literal["hierarchical", "empirical"]
SHRINKAGES: tuple[Shrinkage, ...] = ("hierarchical", "empirical")

EXPERIMENT_COLUMNS = [
    "estimate", "standard_error", "ci_low", "ci_high", "p_value", "significant", "weight", "shrinkage", "shrunken",
    "shrunken_se", "shrunken_ci_low", "shrunken_ci_high", "chance_positive",
]  # fmt: skip
"""The columns :meth:`MetaAnalysis.to_frame` adds to the history's own."""


@dataclass(frozen=True)
class WinnersCurse:
    """The shipped experiments read against the fitted distribution: what their lifts read and are worth.

    ``observed_*`` sum or average the read lifts; ``expected_*`` the shrunken ones (the expected true lifts given
    the data), with their standard errors and ``1 − alpha`` intervals.
    """

    shipped: int
    observed_mean: float
    expected_mean: float
    expected_mean_se: float
    observed_total: float
    expected_total: float
    expected_total_se: float
    alpha: float

    @property
    def expected_total_ci(self) -> tuple[float, float]:
        z = z_quantile(self.alpha)
        return self.expected_total - z * self.expected_total_se, self.expected_total + z * self.expected_total_se

    @property
    def expected_mean_ci(self) -> tuple[float, float]:
        z = z_quantile(self.alpha)
        return self.expected_mean - z * self.expected_mean_se, self.expected_mean + z * self.expected_mean_se

    @property
    def overstatement(self) -> float:
        """How much the average shipped lift reads above its expected true value."""
        return self.observed_mean - self.expected_mean

    @property
    def kept_share(self) -> float:
        """The expected true total as a share of the read total (NaN when the read total is 0)."""
        return self.expected_total / self.observed_total if self.observed_total != 0 else math.nan

    def summary(self) -> str:
        low, high = self.expected_total_ci
        kept = f" ({self.kept_share:.0%} of what they read)" if math.isfinite(self.kept_share) else ""
        return (f"{self.shipped} shipped experiments read {self.observed_mean:+.2%} on average, expected true "
                f"{self.expected_mean:+.2%}{kept}; together {self.observed_total:+.2%} read, "
                f"{self.expected_total:+.2%} expected [{low:+.2%}, {high:+.2%}].")  # fmt: skip

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.summary())}</p>"


@dataclass(frozen=True)
class MetaAnalysis:
    """The result of :func:`meta_analysis`: the fitted distribution of true effects N(``mean``, ``tau2``), its
    uncertainty, heterogeneity, win rates, the winner's curse of the shipped experiments and, in ``to_frame()``,
    every experiment's shrunken estimate. Lifts are fractions (0.02 = +2%)."""

    method: TauMethod
    interval: IntervalMethod
    shrinkage: Shrinkage
    alpha: float
    metric: str | None
    experiments: int
    left_out: int
    mean: float
    mean_se: float
    mean_ci: tuple[float, float]
    mean_p_value: float
    tau2: float
    tau2_ci: tuple[float, float]
    prediction_interval: tuple[float, float]
    fixed_mean: float
    fixed_se: float
    q: float
    q_dof: int
    q_p_value: float
    i2: float
    h2: float
    win_rate: float
    expected_winners: float
    naive_win_rate: float
    winners_curse: WinnersCurse | None
    prior: EffectPrior
    """A new experiment's true lift, N(μ̂, τ̂² + SE(μ̂)²) (with hierarchical shrinkage, that mixed over τ's
    posterior and matched by its mean and variance): the prior for its Bayesian analysis and for planning."""
    unit_variance: float
    """The history's lift variance with one unit per arm (median of s²/(1/n + 1/n_control); NaN without the
    ``units`` and ``control_units`` columns): a new experiment with n units per arm reads ±√(2·this/n)."""
    model_se: float
    """The model's standard error of μ̂, 1/√Σw* (``mean_se`` unless ``interval="hksj"``)."""
    frame: pd.DataFrame = field(repr=False)

    @property
    def tau(self) -> float:
        """The standard deviation of true effects."""
        return math.sqrt(self.tau2)

    def to_frame(self) -> pd.DataFrame:
        """One row per experiment: the history's columns, then ``estimate, standard_error``, the observed interval
        ``ci_low/ci_high``, ``p_value``, ``significant``, the random-effects ``weight`` (summing to 1), the
        ``shrinkage`` B, the ``shrunken`` estimate with ``shrunken_se`` and ``shrunken_ci_low/high``, and
        ``chance_positive`` = P(true lift > 0 | data)."""
        return self.frame.copy()

    def statistics(self) -> pd.DataFrame:
        """The fit as a table: ``quantity, value, ci_low, ci_high``."""
        nan = math.nan
        low, high = self.prediction_interval
        rows = [
            ("mean lift", self.mean, *self.mean_ci),
            ("sd of true lifts (τ)", self.tau, *(math.sqrt(t) for t in self.tau2_ci)),
            ("new true lift (prediction)", self.mean, low, high),
            ("win rate (true lifts > 0)", self.win_rate, nan, nan),
            ("naive win rate (significant wins)", self.naive_win_rate, nan, nan),
            ("Q", self.q, nan, nan),
            ("I²", self.i2, nan, nan),
        ]
        return pd.DataFrame(rows, columns=["quantity", "value", "ci_low", "ci_high"])

    def summary(self) -> str:
        """The fit in words: the distribution, heterogeneity, win rates and the winner's curse."""
        level = f"{1 - self.alpha:.0%}"
        metric = f" of {self.metric}" if self.metric else ""
        lines = [
            f"Meta-analysis{metric} over {self.experiments} experiments ({self.method.upper()}): true lifts ~ "
            f"N({self.mean:+.2%}, {self.tau:.2%}²). Mean lift {self.mean:+.2%} [{self.mean_ci[0]:+.2%}, "
            f"{self.mean_ci[1]:+.2%}]; {level} of new experiments' true lifts in [{self.prediction_interval[0]:+.2%}, "
            f"{self.prediction_interval[1]:+.2%}].",
            f"Heterogeneity: Q = {self.q:.3g} ({self.q_dof} dof, p = {self.q_p_value:.2g}), I² = {self.i2:.0%}.",
            f"Win rate corrected for noise: {self.win_rate:.0%} of true lifts are positive (expected "
            f"{self.expected_winners:.1f} of these {self.experiments}); naive: {self.naive_win_rate:.0%} significant "
            "wins.",
        ]  # fmt: skip
        if self.winners_curse is not None:
            lines.append(f"Winner's curse: {self.winners_curse.summary()}")
        if self.left_out:
            lines.append(f"({self.left_out} rows without an estimate, such as control arms, left out.)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        esc = html.escape
        text = "".join(f"<p>{esc(line)}</p>" for line in self.summary().splitlines())
        stats = self.statistics().to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        shown = self.frame.copy()
        for column in ("estimate", "ci_low", "ci_high", "shrunken", "shrunken_ci_low", "shrunken_ci_high"):
            shown[column] = shown[column].map(lambda x: f"{x:+.2%}")
        table = shown.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        return f"<div>{text}{stats}{table}</div>"


def meta_analysis(
    history: Any,
    standard_error: Any = None,
    *,
    estimate: str = "estimate",
    shipped: Any = None,
    metric: str | None = None,
    method: TauMethod = "reml",
    interval: IntervalMethod = "z",
    shrinkage: Shrinkage = "hierarchical",
    alpha: float = 0.05,
) -> MetaAnalysis:
    """The distribution of true effects behind a history of experiments, and each experiment read against it.

    Parameters
    ----------
    history
        A history frame (one row per experiment × arm: the ``estimate`` column, a relative lift, and its
        ``standard_error``; optionally ``shipped``, ``metric``, ``units``, ``control_units`` and any other columns,
        which are carried through), or an array of estimates.
    standard_error
        With a frame, the standard errors' column (default ``standard_error``, else ``se``); with arrays, the
        standard errors themselves. Rows missing either value (control arms) are left out.
    estimate
        The estimates' column of a frame.
    shipped
        With a frame, the shipped flags' column (default ``shipped`` when present); with arrays, the flags. Gives
        :attr:`MetaAnalysis.winners_curse`.
    metric
        The metric to analyse when the frame's ``metric`` column holds several.
    method
        τ²'s estimator: ``"reml"`` (default), ``"dl"`` (DerSimonian–Laird) or ``"pm"`` (Paule–Mandel).
    interval
        The mean's interval: ``"z"`` (default) or ``"hksj"`` (Hartung–Knapp–Sidik–Jonkman, t with k − 1 dof;
        better with few experiments).
    shrinkage
        How each experiment's true effect is estimated: ``"hierarchical"`` (default, from 4 experiments) integrates
        over τ²'s posterior (flat prior on τ²), whose intervals keep their coverage when τ is small;
        ``"empirical"`` plugs in τ̂² (empirical Bayes, metafor's ``blup``), whose intervals then cover less than
        they say.
    alpha
        1 − the level of every interval, and the significance level of the naive win rate.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> truth = rng.normal(0.01, 0.02, 40)
    >>> se = rng.uniform(0.005, 0.02, 40)
    >>> fit = meta_analysis(truth + rng.normal(0, se), standard_error=se)
    >>> round(fit.mean, 3), round(fit.tau, 3), round(fit.win_rate, 2), round(fit.naive_win_rate, 2)
    (0.01, 0.027, 0.64, 0.38)
    """
    check_alpha(alpha)
    if method not in TAU_METHODS:
        raise StatsInputError(f"method must be one of {TAU_METHODS}, got {method!r}")
    if interval not in INTERVAL_METHODS:
        raise StatsInputError(f"interval must be one of {INTERVAL_METHODS}, got {interval!r}")
    if shrinkage not in SHRINKAGES:
        raise StatsInputError(f"shrinkage must be one of {SHRINKAGES}, got {shrinkage!r}")
    h = read_history(history, standard_error, estimate=estimate, shipped=shipped, metric=metric)
    return _fit(h, method, interval, shrinkage, alpha)


def _fit(h: History, method: TauMethod, interval: IntervalMethod, shrinkage: Shrinkage, alpha: float) -> MetaAnalysis:
    y, v, k = h.y, h.v, h.k
    z = z_quantile(alpha)
    tau2 = tau2_estimate(y, v, method)
    w = 1.0 / (v + tau2)
    w_sum = float(w.sum())
    mean = float(w @ y) / w_sum
    model_se = 1.0 / math.sqrt(w_sum)
    if interval == "hksj":
        r = y - mean
        mean_se = math.sqrt(float(w @ (r * r)) / ((k - 1) * w_sum))
        crit = t_isf(alpha / 2.0, k - 1)
        p_value = 2.0 * t_sf(abs(mean) / mean_se, k - 1) if mean_se > 0 else math.nan
    else:
        mean_se, crit = model_se, z
        p_value = 2.0 * norm_sf(abs(mean) / mean_se)
    w_fixed = 1.0 / v
    q = generalised_q(y, v, 0.0)
    dof = k - 1
    spread = math.sqrt(tau2 + model_se**2)
    prediction = ((mean - t_isf(alpha / 2.0, k - 2) * spread, mean + t_isf(alpha / 2.0, k - 2) * spread)
                  if k >= 3 else (math.nan, math.nan))  # fmt: skip

    if shrinkage == "hierarchical" and k < 4:
        raise StatsInputError("hierarchical shrinkage needs at least 4 experiments; use shrinkage='empirical'")
    post = posteriors(y, v, tau_posterior(y, v) if shrinkage == "hierarchical" else plug_in(tau2))
    shrunken, shrunken_se = post.mean, np.sqrt(post.variance)
    shrunken_low, shrunken_high = post.quantiles(alpha / 2.0, 1.0 - alpha / 2.0)
    chance_positive = post.chance_positive()
    significant = np.abs(y) / h.se > z

    added = pd.DataFrame({
        "estimate": y, "standard_error": h.se, "ci_low": y - z * h.se, "ci_high": y + z * h.se,
        "p_value": 2.0 * special.ndtr(-np.abs(y) / h.se), "significant": significant, "weight": w / w_sum,
        "shrinkage": (post.p @ post.shrink) if shrinkage == "hierarchical" else v / (v + tau2),
        "shrunken": shrunken, "shrunken_se": shrunken_se, "shrunken_ci_low": shrunken_low,
        "shrunken_ci_high": shrunken_high, "chance_positive": chance_positive,
    })  # fmt: skip
    # The history's columns keep their places (those of the same name, such as its estimate, are replaced).
    clashing = [c for c in EXPERIMENT_COLUMNS if c in h.frame.columns]
    frame = h.frame.assign(**{c: added[c].to_numpy() for c in clashing}) if clashing else h.frame
    frame = pd.concat([frame, added.drop(columns=clashing)], axis=1)

    curse = None
    if h.shipped is not None and h.shipped.any():
        s = h.shipped
        count = int(s.sum())
        expected, variance = post.total(s)
        curse = WinnersCurse(
            shipped=count,
            observed_mean=float(y[s].mean()),
            expected_mean=expected / count,
            expected_mean_se=math.sqrt(variance) / count,
            observed_total=float(y[s].sum()),
            expected_total=expected,
            expected_total_se=math.sqrt(variance),
            alpha=alpha,
        )
    prior_mean, prior_variance = post.predictive()
    tau = math.sqrt(tau2)
    win_rate = float(special.ndtr(mean / tau)) if tau > 0 else float(mean > 0) + 0.5 * float(mean == 0)
    return MetaAnalysis(
        method=method,
        interval=interval,
        shrinkage=shrinkage,
        alpha=alpha,
        metric=h.metric,
        experiments=k,
        left_out=h.left_out,
        mean=mean,
        mean_se=mean_se,
        mean_ci=(mean - crit * mean_se, mean + crit * mean_se),
        mean_p_value=p_value,
        tau2=tau2,
        tau2_ci=q_profile_interval(y, v, alpha),
        prediction_interval=prediction,
        fixed_mean=float(w_fixed @ y) / float(w_fixed.sum()),
        fixed_se=1.0 / math.sqrt(float(w_fixed.sum())),
        q=q,
        q_dof=dof,
        q_p_value=float(special.chdtrc(dof, q)),
        i2=max(0.0, (q - dof) / q) if q > 0 else 0.0,
        h2=q / dof,
        win_rate=win_rate,
        expected_winners=float(chance_positive.sum()),
        naive_win_rate=float((significant & (y > 0)).mean()),
        winners_curse=curse,
        prior=EffectPrior(prior_mean, math.sqrt(prior_variance), k, method),
        unit_variance=h.unit_variance,
        model_se=model_se,
        frame=frame,
    )
