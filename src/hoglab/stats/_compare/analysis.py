"""One metric, every variant against the control: the per-kind statistics behind ``compare``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._bayesian.posteriors import BetaPosterior, GammaPosterior, NormalPosterior, Posterior
from .._bayesian.quadrature import credible_intervals, summarise
from .._cuped import cuped_arm, cuped_effect, cuped_theta, pooled_pre_mean
from .._distributions import Interval, normal_p_value, t_p_value, z_quantile
from .._errors import StatsInputError
from .._frequentist.counts import count_arm, poisson_rate_ratio_interval, poisson_rate_test
from .._frequentist.means import ArmEstimate, Effect, effect_from_arms, mean_arm, ratio_arm, t_interval
from .._frequentist.proportions import newcombe_interval, risk_ratio_interval, two_proportion_ztest, wilson_interval
from .._frequentist.sequential import confidence_sequence, sequential_p_value
from .._options import Method, MetricKind
from .._statistics import Count, Proportion, SampleMean
from .._warnings import StatsWarning, WarningKind
from .inputs import Statistic
from .results import ArmSummary

__all__ = ["PairResult", "analyse_metric"]


@dataclass(frozen=True)
class PairResult:
    variant: str
    effect: Effect
    difference_ci: Interval
    lift_ci: Interval
    p_value: float = math.nan
    chance_to_win: float = math.nan
    chance_to_be_best: float = math.nan
    expected_loss: float = math.nan
    warnings: tuple[StatsWarning, ...] = ()


def analyse_metric(
    name: str,
    kind: MetricKind,
    arms: dict[str, Statistic],
    *,
    control: str,
    method: Method,
    alpha: float,
    relative: bool,
    cuped: bool | None,
    tuning: float,
    min_units: float,
) -> tuple[list[ArmSummary], list[PairResult]]:
    if control not in arms:
        raise StatsInputError(f"metric {name!r}: no control variant {control!r} among {list(arms)}")
    if len(arms) < 2:
        raise StatsInputError(
            f"metric {name!r}: need the control and at least one other variant, got {list(arms)}"
        )
    keys = [control, *[k for k in arms if k != control]]
    stats_ = [arms[k] for k in keys]
    units = [_units(s) for s in stats_]
    for key, u in zip(keys, units, strict=True):
        if not u > 0:
            raise StatsInputError(f"metric {name!r}: variant {key!r} has no exposed units")

    use_cuped = False
    if kind == "mean":
        has_pre = [isinstance(s, SampleMean) and s.pre is not None for s in stats_]
        use_cuped = all(has_pre) if cuped is None else cuped
        if use_cuped and not all(has_pre):
            raise StatsInputError(f"metric {name!r}: cuped=True needs a pre-period covariate in every arm")
    estimates = _arm_estimates(kind, keys, stats_, use_cuped)
    theta = cuped_theta([s for s in stats_ if isinstance(s, SampleMean)]) if use_cuped else 0.0

    posterior: Posterior | None = None
    best = np.full(len(keys), np.nan)
    bayes = None
    if method == "bayesian":
        posterior = _posterior(kind, stats_, estimates)
        bayes = _bayes_quantities(posterior, alpha)
        best = bayes[0]

    arm_results = [
        ArmSummary(
            name, kind, key, u, est.estimate, _arm_interval(kind, s, est, alpha, method, posterior, i), float(best[i])
        )
        for i, (key, s, u, est) in enumerate(zip(keys, stats_, units, estimates, strict=True))
    ]

    pairs: list[PairResult] = []
    for i in range(1, len(keys)):
        c_stat, t_stat = stats_[0], stats_[i]
        if use_cuped:
            assert isinstance(c_stat, SampleMean) and isinstance(t_stat, SampleMean)
            effect = cuped_effect(c_stat, t_stat, theta)
        else:
            effect = effect_from_arms(estimates[0], estimates[i], welch=kind in ("mean", "ratio"))
        warnings = _warnings(
            name, kind, keys[i], keys[0], c_stat, t_stat, units[0], units[i], effect, min_units
        )
        total = units[0] + units[i]
        if method == "frequentist":
            p, d_ci, l_ci = _frequentist(kind, c_stat, t_stat, effect, alpha)
            pairs.append(PairResult(keys[i], effect, d_ci, l_ci, p_value=p, warnings=warnings))
        elif method == "sequential":
            d_ci = confidence_sequence(
                effect.difference, effect.difference_se, total, alpha=alpha, tuning=tuning
            )
            l_ci = confidence_sequence(effect.lift, effect.lift_se, total, alpha=alpha, tuning=tuning)
            on_lift = relative and not math.isnan(effect.lift)
            est, se = (effect.lift, effect.lift_se) if on_lift else (effect.difference, effect.difference_se)
            p = sequential_p_value(est, se, total, alpha=alpha, tuning=tuning)
            pairs.append(PairResult(keys[i], effect, d_ci, l_ci, p_value=p, warnings=warnings))
        else:
            assert bayes is not None
            _, win, loss, d_int, l_int = bayes
            l_ci = (
                (float(l_int[i, 0]), float(l_int[i, 1]))
                if _control_positive(estimates[0])
                else (math.nan, math.nan)
            )
            pairs.append(
                PairResult(
                    keys[i],
                    effect,
                    (float(d_int[i, 0]), float(d_int[i, 1])),
                    l_ci,
                    chance_to_win=float(win[i]),
                    chance_to_be_best=float(best[i]),
                    expected_loss=float(loss[i]),
                    warnings=warnings,
                )
            )
    return arm_results, pairs


def _units(s: Statistic) -> float:
    return float(s.exposure if isinstance(s, Count) else s.n)


def _point(kind: MetricKind, s: Statistic) -> float:
    if isinstance(s, Proportion | Count):
        return s.rate
    if isinstance(s, SampleMean):
        return s.mean
    return s.value


def _arm_estimates(
    kind: MetricKind, keys: list[str], stats_: list[Statistic], use_cuped: bool
) -> list[ArmEstimate]:
    out = []
    means = [s for s in stats_ if isinstance(s, SampleMean)]
    theta = cuped_theta(means) if use_cuped else 0.0
    centre = pooled_pre_mean(means) if use_cuped else 0.0
    for key, s in zip(keys, stats_, strict=True):
        if isinstance(s, Proportion):
            out.append(ArmEstimate(s.rate, s.variance, s.n))
        elif isinstance(s, Count):
            out.append(count_arm(s))
        elif isinstance(s, SampleMean):
            out.append(cuped_arm(s, theta, centre) if use_cuped else mean_arm(s, key))
        else:
            out.append(ratio_arm(s, key))
    return out


def _control_positive(arm: ArmEstimate) -> bool:
    return arm.estimate > 0


def _frequentist(
    kind: MetricKind, c: Statistic, t: Statistic, effect: Effect, alpha: float
) -> tuple[float, Interval, Interval]:
    z = z_quantile(alpha)
    lift_ci = (effect.lift - z * effect.lift_se, effect.lift + z * effect.lift_se)
    if isinstance(c, Proportion) and isinstance(t, Proportion):
        p = two_proportion_ztest(c, t).p_value
        if c.successes > 0:
            lo, hi = risk_ratio_interval(c, t, alpha)
            lift_ci = (lo - 1.0, hi - 1.0)
        return p, newcombe_interval(c, t, alpha), lift_ci
    if isinstance(c, Count) and isinstance(t, Count):
        p = poisson_rate_test(c, t).p_value
        d_ci = (effect.difference - z * effect.difference_se, effect.difference + z * effect.difference_se)
        if c.count > 0:
            lo, hi = poisson_rate_ratio_interval(c, t, alpha)
            lift_ci = (lo - 1.0, hi - 1.0)
        return p, d_ci, lift_ci
    # Means and ratios: Welch's t on the difference; the lift interval uses the same dof.
    dof = effect.dof
    if effect.difference_se == 0.0:
        p = 1.0 if effect.difference == 0.0 else math.nan
    elif math.isfinite(dof):
        p = t_p_value(effect.difference / effect.difference_se, dof)
    else:
        p = normal_p_value(effect.difference / effect.difference_se)
    return (
        p,
        t_interval(effect.difference, effect.difference_se, dof, alpha),
        t_interval(effect.lift, effect.lift_se, dof, alpha),
    )


def _posterior(kind: MetricKind, stats_: list[Statistic], estimates: list[ArmEstimate]) -> Posterior:
    if kind == "conversion":
        props = [s for s in stats_ if isinstance(s, Proportion)]
        return BetaPosterior.from_counts([p.successes for p in props], [p.failures for p in props])
    if kind == "count":
        counts = [s for s in stats_ if isinstance(s, Count)]
        shape = np.array([c.count + 1.0 for c in counts])
        return GammaPosterior(shape, np.array([c.exposure for c in counts]))
    # Flat prior + CLT: the posterior of each arm's mean is Normal(estimate, SE²).
    loc = np.array([e.estimate for e in estimates])
    return NormalPosterior(loc, np.array([math.sqrt(e.variance_of_mean) for e in estimates]))


def _bayes_quantities(
    posterior: Posterior, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    summary = summarise(posterior, 0, alpha)
    return summary.best, summary.win, summary.loss, summary.difference, summary.lift


def _arm_interval(
    kind: MetricKind,
    s: Statistic,
    est: ArmEstimate,
    alpha: float,
    method: Method,
    posterior: Posterior | None,
    i: int,
) -> Interval:
    if posterior is not None:
        lo, hi = credible_intervals(posterior.take(i), 1.0 - alpha)[0]
        return float(lo), float(hi)
    if isinstance(s, Proportion):
        return wilson_interval(s, alpha)
    if isinstance(s, Count):
        # Exact (Garwood 1936) interval for a Poisson count, divided by the exposure.
        lo = 0.0 if s.count == 0 else float(special.gammaincinv(s.count, alpha / 2.0))
        hi = float(special.gammainccinv(s.count + 1.0, alpha / 2.0))
        return lo / s.exposure, hi / s.exposure
    se = math.sqrt(est.variance_of_mean)
    dof = est.n - 1.0
    return t_interval(est.estimate, se, dof, alpha)


def _warnings(
    metric: str,
    kind: MetricKind,
    variant: str,
    control: str,
    c: Statistic,
    t: Statistic,
    c_units: float,
    t_units: float,
    effect: Effect,
    min_units: float,
) -> tuple[StatsWarning, ...]:
    out: list[StatsWarning] = []

    def add(kind_: WarningKind, message: str) -> None:
        out.append(StatsWarning(kind_, message, variant=variant, metric=metric))

    for label, units in ((control, c_units), (variant, t_units)):
        if units < min_units:
            add(WarningKind.LOW_EXPOSURE, f"{label!r} has {units:g} units, fewer than {min_units:g}")
    for label, s in ((control, c), (variant, t)):
        if isinstance(s, Proportion) and min(s.successes, s.failures) < 5:
            add(
                WarningKind.FEW_EVENTS, f"{label!r} has {s.successes:g} successes and {s.failures:g} failures"
            )
        if isinstance(s, Count) and s.count < 5:
            add(WarningKind.FEW_EVENTS, f"{label!r} has only {s.count:g} events")
    if effect.difference_se == 0.0:
        add(WarningKind.ZERO_VARIANCE, "both arms have zero variance; the test statistic is undefined")
    control_value = _point(kind, c)
    if not control_value > 0:
        add(WarningKind.ZERO_BASELINE, f"control value is {control_value:g}; relative lift is undefined")
    return tuple(out)
