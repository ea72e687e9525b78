"""One reconciled verdict: ship, keep running, stop or investigate, with the reason.

An experiment's results carry several signals that can seem to disagree: the fixed-horizon test (valid once, at
the planned sample size), the always-valid confidence sequence (valid at every look, so wider), the power for
the planned minimum detectable effect (MDE) and the sample-ratio-mismatch check. :func:`recommend` reads them in
a fixed order, each where it is valid:

1. **investigate**: SRM (p < 0.001). The arms are not comparable; no effect can be trusted until the cause is
   found (Fabijan et al. 2019, KDD).
2. **ship** / **stop (harm)**: the always-valid interval excludes 0 (Waudby-Smith et al., arXiv:2103.06476).
   Valid however often the results were looked at, so it may be acted on any day.
3. At or beyond the planned sample (every arm has the units the MDE needs at the planned power), the
   fixed-horizon test is valid: significant in the good direction → **ship**, in the bad one → **stop**; not
   significant → **stop** (no effect of the planned size).
4. Before it: **stop (futility)** when the always-valid interval already rules out the MDE in the good
   direction (its best case is smaller than the effect worth detecting; the sequence covers the true effect
   at every look with probability 1 − α, so this holds even when peeking), or when reaching the planned sample
   would take longer than the horizon (``max_days`` in all; by default the larger of 90 days and 3× the days
   so far): "not feasible to detect +5% within 90 days". Without an MDE, +5% is assumed and the text says so.
5. Otherwise **keep running**, for about (days needed − days so far) more days at the rate units arrived so far.
   A fixed-horizon "significant" before the planned sample is not acted on: peeking at a fixed-horizon test
   inflates its false positives (26% at 25 looks, ``docs/statistics.md`` §6.6).

With several variants: investigate, else ship the best variant that may be shipped, else keep running while
any variant may still win, else stop. ``correction="holm"`` or ``"bh"`` adjusts the p-values across the variants
(both the fixed-horizon and the always-valid ones), and the decisions read the adjusted ones.

Every reason names the test its interval and p-value come from (one test per metric: the table's). A metric
experiment's recommendation reads PostHog's engine's test of the relative effect
(:func:`hoglab.stats.posthog.metric_recommendation`), through :func:`reconcile`, the rules above over tests
computed elsewhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd

from ._compare.compare import compare
from ._compare.inputs import Statistic, metric_groups
from ._compare.results import VariantComparison
from ._errors import StatsError, StatsInputError
from ._frequentist.corrections import adjust_pvalues
from ._frequentist.sequential import DEFAULT_TUNING
from ._options import Correction, MetricKind, check_alpha, few
from ._power import power as power_at, running_time, sample_size
from ._srm import SRM_THRESHOLD, SRMResult
from ._statistics import Count, Proportion, Ratio, SampleMean

__all__ = ["DEFAULT_HORIZON_DAYS", "DEFAULT_MDE", "Decision", "Recommendation", "VariantTest", "horizon_days",
           "recommend", "reconcile", "test_name"]  # fmt: skip

DEFAULT_MDE = 0.05
"""The effect assumed when the experiment names no minimum detectable effect (+5%, PostHog's default); the
recommendation says it was assumed."""
DEFAULT_HORIZON_DAYS = 90.0
"""The shortest horizon: an experiment needing longer than this (and than 3× its days so far) in all is not
feasible."""
HORIZON_MULTIPLE = 3.0


class Decision(StrEnum):
    """What to do with the experiment."""

    SHIP = "ship"
    KEEP_RUNNING = "keep_running"
    STOP = "stop"
    INVESTIGATE = "investigate"


_HEADLINE = {Decision.SHIP: "SHIP", Decision.KEEP_RUNNING: "KEEP RUNNING", Decision.STOP: "STOP",
             Decision.INVESTIGATE: "INVESTIGATE"}  # fmt: skip


def horizon_days(days_running: float | None, max_days: float | None = None) -> float | None:
    """The longest an experiment may take in all: ``max_days`` when given, else the larger of 90 days and 3× the
    days so far (None when neither is known).

    >>> horizon_days(31), horizon_days(40), horizon_days(10, max_days=30), horizon_days(None)
    (93.0, 120.0, 30.0, None)
    """
    if max_days is not None:
        return float(max_days)
    if days_running is None:
        return None
    return max(DEFAULT_HORIZON_DAYS, HORIZON_MULTIPLE * float(days_running))


@dataclass(frozen=True)
class Recommendation:
    """The reconciled verdict of :func:`recommend` and every number it rests on.

    ``recommendation`` is a :class:`Decision` (a string: ``"ship"``, ``"keep_running"``, ``"stop"``,
    ``"investigate"``), ``reason`` says why in one or two sentences, ``variant`` is the variant it is about
    (the one to ship, the closest to a decision). Effects are on the ``scale`` of the decision (``"lift"``,
    relative, or ``"difference"``); ``test`` names the test the interval and p-value come from; ``days_more`` is
    None when the days so far are unknown; ``mde_assumed`` says the MDE is the default, not the experiment's;
    ``horizon`` is the longest the experiment may take in all (days); ``adjusted_p_value`` the p-value after
    ``correction`` (Holm or Benjamini–Hochberg across the variants), NaN without one.
    """

    recommendation: Decision
    reason: str
    variant: str | None
    metric: str
    scale: str
    effect: float
    confidence_interval: tuple[float, float]
    p_value: float
    sequential_interval: tuple[float, float]
    sequential_p_value: float
    mde: float
    power: float
    needed_per_variant: float
    smallest_variant: float
    days_running: float | None = None
    days_needed: float | None = None
    days_more: float | None = None
    srm: SRMResult | None = field(default=None, repr=False)
    test: str = ""
    mde_assumed: bool = False
    horizon: float | None = None
    adjusted_p_value: float = math.nan
    correction: Correction | None = None

    def summary(self) -> str:
        """``"KEEP RUNNING (about 37 more days): <reason>"``: the headline and the reason, for any view."""
        return f"{self.headline}: {self.reason}"

    @property
    def headline(self) -> str:
        """The action in capitals, with the days left when the experiment should keep running."""
        head = _HEADLINE[self.recommendation]
        if self.recommendation is Decision.KEEP_RUNNING and self.days_more is not None:
            days = max(1, math.ceil(self.days_more))
            head += f" (about {days} more day{'s' if days != 1 else ''})"
        return head

    @property
    def significant(self) -> bool:
        """Whether the decision rests on a significant effect (ship, or stop for harm): hoglab's verdict."""
        if self.recommendation is Decision.SHIP:
            return True
        return self.recommendation is Decision.STOP and "worse than the control" in self.reason

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        colour = {Decision.SHIP: "#1a7f37", Decision.STOP: "#57606a", Decision.INVESTIGATE: "#cf222e"}.get(
            self.recommendation, "#9a6700"
        )
        return (f'<div style="margin:4px 0"><b>Recommendation: <span style="color:{colour}">'
                f"{html.escape(self.headline)}</span></b>: {html.escape(self.reason)}</div>")  # fmt: skip


@dataclass(frozen=True)
class VariantTest:
    """One variant's test against the control, on the decision's ``scale`` (``"lift"`` or ``"difference"``): the
    fixed-horizon interval and p-value, the always-valid ones, and the control's value (for an MDE on the
    difference scale). ``adjusted_p_value``/``adjusted_sequential_p_value``: after a multiple-comparison
    correction (NaN without one)."""

    variant: str
    scale: str
    effect: float
    confidence_interval: tuple[float, float]
    p_value: float
    sequential_interval: tuple[float, float]
    sequential_p_value: float
    control_estimate: float
    adjusted_p_value: float = math.nan
    adjusted_sequential_p_value: float = math.nan


@dataclass(frozen=True)
class _SamplePlan:
    """Units per variant the MDE needs, the smallest arm's units and power now, and the days to get there."""

    needed: float
    smallest: float
    power: float
    days_needed: float | None
    days_more: float | None


_TESTS = {"conversion": "pooled two-proportion z-test", "count": "exact Poisson rate test", "mean": "Welch t-test",
          "ratio": "Welch t-test (delta method)"}  # fmt: skip


def test_name(kind: MetricKind, arms: Mapping[str, Statistic] | None = None) -> str:
    """The test ``compare``'s frequentist row reads, in words (CUPED named when every arm has a covariate).

    >>> test_name("conversion"), test_name("mean", {"a": SampleMean(3, 3, 5, pre=SampleMean(3, 2, 2),
    ...                                                                 sum_of_products=3)})
    ('pooled two-proportion z-test', 'Welch t-test on CUPED-adjusted values')
    """
    if kind == "mean" and arms and all(isinstance(s, SampleMean) and s.pre is not None for s in arms.values()):
        return "Welch t-test on CUPED-adjusted values"
    return _TESTS[kind]


def _units_statistics(units: pd.DataFrame, value: str, covariate: str | None,
                      variant_column: str) -> dict[str, Statistic]:  # fmt: skip
    """Per-variant statistics of a units frame's ``value`` column: a 0/1 column is a conversion, else a mean (with
    the ``covariate`` column as CUPED's pre-exposure covariate)."""
    for column in (variant_column, value, covariate):
        if column is not None and column not in units.columns:
            raise StatsInputError(f"the units frame has no column {column!r}; its columns: "
                                  f"{few(list(map(str, units.columns)))}")  # fmt: skip
    try:
        y = pd.to_numeric(units[value], errors="raise").to_numpy(dtype=float)
        x = pd.to_numeric(units[covariate], errors="raise").to_numpy(dtype=float) if covariate else None
    except (TypeError, ValueError):
        raise StatsInputError(f"column {value!r} (or the covariate) of the units frame is not numeric") from None
    keep = np.isfinite(y) if x is None else np.isfinite(y) & np.isfinite(x)
    variants = units[variant_column].astype("string").to_numpy(dtype=object)[keep]
    y = y[keep]
    x = x[keep] if x is not None else None
    binary = x is None and bool(np.isin(y, (0.0, 1.0)).all())
    out: dict[str, Statistic] = {}
    for name in dict.fromkeys(v for v in variants if isinstance(v, str)):
        mask = variants == name
        ys = y[mask]
        if binary:
            out[name] = Proportion(float(ys.size), float(ys.sum()))
        elif x is not None:
            xs = x[mask]
            pre = SampleMean(float(xs.size), float(xs.sum()), float(xs @ xs))
            out[name] = SampleMean(float(ys.size), float(ys.sum()), float(ys @ ys), pre=pre,
                                   sum_of_products=float(ys @ xs))  # fmt: skip
        else:
            out[name] = SampleMean(float(ys.size), float(ys.sum()), float(ys @ ys))
    return out


def recommend(
    data: Any,
    *,
    control: str = "control",
    metric: MetricKind | None = None,
    value: str | None = None,
    covariate: str | None = None,
    mde: float | None = None,
    relative: bool = True,
    days_running: float | None = None,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    power: float = 0.8,
    tuning: float = DEFAULT_TUNING,
    expected_split: Mapping[str, float] | Sequence[float] | None = None,
    srm_threshold: float = SRM_THRESHOLD,
    max_days: float | None = None,
    name: str | None = None,
    correction: Correction | None = None,
    variant_column: str = "variant",
) -> Recommendation:
    """Reconcile the fixed-horizon test, the always-valid sequence, power for ``mde`` and SRM into one
    recommendation (the rules are in this module's docstring and ``docs/statistics.md`` §16).

    Parameters
    ----------
    data
        One metric's per-variant statistics, as :func:`hoglab.stats.compare` reads them, or a units frame (one row
        per unit, ``client.experiments.units``) with ``value=`` its metric's column.
    value, covariate
        With a units frame: the metric's column (0/1 is a conversion, else a mean) and optionally its pre-exposure
        covariate's column (CUPED).
    mde
        The smallest effect worth detecting, relative (0.05 = +5%) unless ``relative=False``; None assumes +5%
        and says so.
    days_running
        Days the experiment has run; with it the answer says about how many more days are needed.
    higher_is_better
        False for metrics where a decrease is the good news (latency, churn).
    tuning
        N* of the confidence sequence (``compare``'s default, the one the report's over-time plot uses).
    max_days
        The horizon: stop as not feasible when reaching the planned sample would take longer than this in all
        (default: the larger of 90 days and 3× ``days_running``; ``math.inf`` for none).
    correction
        ``"holm"``, ``"bh"`` or ``"bonferroni"``: adjust the p-values across the variants; decisions read them.

    Examples
    --------
    >>> from hoglab.stats import Proportion
    >>> r = recommend({"control": Proportion(5000, 500), "test": Proportion(5000, 560)}, mde=0.05,
    ...               days_running=30, max_days=math.inf)
    >>> r.recommendation.value, r.variant, round(r.p_value, 3), round(r.sequential_p_value, 3)
    ('keep_running', 'test', 0.051, 0.834)
    >>> print(r.headline)
    KEEP RUNNING (about 317 more days)
    >>> print(recommend({"control": Proportion(5000, 500), "test": Proportion(5000, 560)}, days_running=30))
    ... # doctest: +ELLIPSIS
    STOP: not feasible to detect +5% within 90 days (assumed: no minimum detectable effect was set): ...
    """
    check_alpha(alpha)
    if mde is not None and not mde > 0:
        raise StatsInputError(f"mde must be positive, got {mde!r}")
    if days_running is not None and not days_running >= 0:
        raise StatsInputError(f"days_running must be >= 0, got {days_running!r}")
    if isinstance(data, pd.DataFrame) and value is not None:
        data = _units_statistics(data, value, covariate, variant_column)
        name = name or value
    elif value is not None or covariate is not None:
        raise StatsInputError("value= and covariate= name columns of a units frame (one row per unit)")
    groups = metric_groups(data, kind=metric, name=name)
    if len(groups) != 1:
        raise StatsInputError(f"recommend() takes one metric, got {len(groups)}: {few([g[0] for g in groups])}")
    metric_name, kind, arms = groups[0]
    if control not in arms:
        raise StatsInputError(f"no control variant {control!r}; the variants are {few(list(arms))}")
    options: dict[str, Any] = {"control": control, "metric": kind, "alpha": alpha, "relative": relative,
                               "name": metric_name}  # fmt: skip
    fixed = compare(arms, method="frequentist", expected_split=expected_split, srm_threshold=srm_threshold,
                    correction=correction, **options)  # fmt: skip
    sequential = compare(arms, method="sequential", tuning=tuning, check_srm=False, correction=correction,
                         **options)  # fmt: skip
    tests = [_from_rows(row, sequential.row(row.variant), relative, correction is not None) for row in fixed.rows]
    return reconcile(tests, arms, control=control, kind=kind, test=test_name(kind, arms), metric=metric_name,
                     mde=mde, relative=relative, days_running=days_running, higher_is_better=higher_is_better,
                     alpha=alpha, power=power, max_days=max_days, split=fixed.srm.get(metric_name),
                     correction=correction)  # fmt: skip


def _from_rows(fixed: VariantComparison, seq: VariantComparison, relative: bool, corrected: bool) -> VariantTest:
    on_lift = relative and math.isfinite(fixed.lift)
    nan = math.nan
    return VariantTest(
        fixed.variant, "lift" if on_lift else "difference", fixed.lift if on_lift else fixed.difference,
        tuple(fixed.lift_ci if on_lift else fixed.difference_ci), fixed.p_value,  # type: ignore[arg-type]
        tuple(seq.lift_ci if on_lift else seq.difference_ci), seq.p_value,  # type: ignore[arg-type]
        fixed.control_estimate, fixed.adjusted_p_value if corrected else nan,
        seq.adjusted_p_value if corrected else nan,
    )  # fmt: skip


def reconcile(
    tests: Sequence[VariantTest],
    arms: Mapping[str, Statistic],
    *,
    control: str,
    kind: MetricKind,
    test: str,
    metric: str,
    mde: float | None = None,
    relative: bool = True,
    days_running: float | None = None,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    power: float = 0.8,
    max_days: float | None = None,
    split: SRMResult | None = None,
    correction: Correction | None = None,
) -> Recommendation:
    """The rules of :func:`recommend` over tests computed elsewhere (one per variant, on the decision's scale);
    ``arms`` give the planned sample size (from the control's baseline and spread) and the rate units arrived.

    ``correction`` adjusts the tests' p-values across the variants when they do not carry adjusted ones.
    """
    if not tests:
        raise StatsInputError("no variant has a test to reconcile")
    assumed = mde is None
    mde_value = DEFAULT_MDE if mde is None else float(mde)
    if correction is not None and not all(math.isfinite(t.adjusted_p_value) for t in tests):
        fixed_adjusted = adjust_pvalues(np.array([t.p_value for t in tests]), correction)
        seq_adjusted = adjust_pvalues(np.array([t.sequential_p_value for t in tests]), correction)
        tests = [VariantTest(**{**t.__dict__, "adjusted_p_value": float(a), "adjusted_sequential_p_value": float(b)})
                 for t, a, b in zip(tests, fixed_adjusted, seq_adjusted, strict=True)]  # fmt: skip
    horizon = horizon_days(days_running, max_days)
    plan = _plan(kind, arms, control, mde_value, relative, alpha, power, days_running)
    sign = 1.0 if higher_is_better else -1.0
    context = _Context(test, mde_value, assumed, relative, alpha, sign, horizon, correction)
    verdicts = [_variant(t, plan, context) for t in tests]

    def build(action: Decision, reason: str, pick: _Verdict) -> Recommendation:
        t = pick.test
        return Recommendation(
            action, reason, t.variant, metric, t.scale, t.effect, t.confidence_interval, t.p_value,
            t.sequential_interval, t.sequential_p_value, mde_value, plan.power, plan.needed, plan.smallest,
            days_running, plan.days_needed, plan.days_more, split, test, assumed, horizon, t.adjusted_p_value,
            correction)  # fmt: skip

    def closeness(v: _Verdict) -> float:
        p = v.test.sequential_p_value
        return p if math.isfinite(p) else 2.0

    closest = min(verdicts, key=closeness)
    if split is not None and split.mismatch:
        reason = (f"the traffic split differs from the plan ({split.planned_split}; SRM p = {split.p_value:.2g} < "
                  f"{split.threshold:g}): the arms are not comparable until the cause is found, so no effect can "
                  "be trusted yet.")  # fmt: skip
        return build(Decision.INVESTIGATE, reason, closest)
    winners = [v for v in verdicts if v.action is Decision.SHIP]
    if winners:
        best = max(winners, key=lambda v: sign * v.test.effect)
        return build(Decision.SHIP, best.reason, best)
    running = [v for v in verdicts if v.action is Decision.KEEP_RUNNING]
    if running:
        pick = min(running, key=closeness)
        return build(Decision.KEEP_RUNNING, pick.reason, pick)
    unfeasible = [v for v in verdicts if v.unfeasible]
    if unfeasible and len(unfeasible) == len(verdicts):
        return build(Decision.STOP, unfeasible[0].reason, min(unfeasible, key=closeness))
    reason = " ".join(v.reason for v in verdicts)
    return build(Decision.STOP, reason, closest)


@dataclass(frozen=True)
class _Context:
    test: str
    mde: float
    assumed: bool
    relative: bool
    alpha: float
    sign: float
    horizon: float | None
    correction: Correction | None


@dataclass(frozen=True)
class _Verdict:
    test: VariantTest
    action: Decision
    reason: str
    unfeasible: bool = False


def _spread(base: Statistic) -> tuple[float, dict[str, Any]]:
    """The control's baseline and the shape ``sample_size`` plans with (a CUPED mean: its adjusted spread)."""
    if isinstance(base, Proportion):
        return base.rate, {"metric": "conversion"}
    if isinstance(base, Count):  # a count per unit planned as a mean with a Poisson spread, as the report does
        return base.rate, {"metric": "mean", "sd": math.sqrt(base.rate)}
    if isinstance(base, SampleMean):
        variance = base.variance
        pre = base.pre
        if pre is not None and base.sum_of_products is not None and base.n > 1 and pre.variance > 0:
            # CUPED leaves (1 − ρ²) of the variance: the sample the adjusted test needs.
            cov = (base.sum_of_products - base.sum * pre.sum / base.n) / (base.n - 1)
            variance = max(variance - cov * cov / pre.variance, 0.0)
        return base.mean, {"metric": "mean", "sd": math.sqrt(variance)}
    assert isinstance(base, Ratio)
    return base.value, {"metric": "mean", "sd": math.sqrt(base.variance)}


def _plan(kind: MetricKind, arms: Mapping[str, Statistic], control: str, mde: float, relative: bool, alpha: float,
          target: float, days_running: float | None) -> _SamplePlan:  # fmt: skip
    """Units per variant the MDE needs at the target power (from the control's baseline and spread), the power
    of the smallest arm now, and the days to get there at the rate so far."""
    units = {k: float(s.exposure if isinstance(s, Count) else s.n) for k, s in arms.items()}
    smallest = min(units.values())
    baseline, shape = _spread(arms[control])
    options = {**shape, "alpha": alpha, "relative": relative}
    try:
        needed = float(sample_size(baseline, mde, power=target, **options))
        now = power_at(smallest, baseline, mde, **options)
    except (StatsError, ValueError, ZeroDivisionError):
        return _SamplePlan(math.nan, smallest, math.nan, None, None)
    days_needed = days_more = None
    if days_running is not None and days_running > 0:
        daily = sum(units.values()) / days_running
        if needed > smallest:
            days_needed = float(running_time(needed, daily, variants=len(units)))
            days_more = max(0.0, days_needed - days_running)
        else:
            days_needed, days_more = float(days_running), 0.0
    return _SamplePlan(needed, smallest, now, days_needed, days_more)


def _fmt(value: float, scale: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    # One decimal for percentages, none when it is .0 (a planned "+10%", not "+10.0%").
    return f"{value:+.1%}".replace(".0%", "%") if scale == "lift" else f"{value:+.4g}"


def _variant(t: VariantTest, plan: _SamplePlan, c: _Context) -> _Verdict:
    scale, effect, ci, s_ci = t.scale, t.effect, t.confidence_interval, t.sequential_interval
    # The MDE on the decision's scale: relative on the lift; on the difference, relative to the control's value.
    threshold = c.mde if scale == "lift" or not c.relative else c.mde * abs(t.control_estimate)
    v = t.variant
    corrected = c.correction is not None and math.isfinite(t.adjusted_p_value)
    p = t.adjusted_p_value if corrected else t.p_value
    s_p = t.adjusted_sequential_p_value if corrected and math.isfinite(t.adjusted_sequential_p_value) else \
        t.sequential_p_value  # fmt: skip
    adjusted = f", {_CORRECTIONS.get(str(c.correction), str(c.correction))}-adjusted p = {p:.3g}" if corrected else ""
    effect_text = (f"{_fmt(effect, scale)} [{_fmt(ci[0], scale)}, {_fmt(ci[1], scale)}] ({c.test}, p = "
                   f"{t.p_value:.3g}{adjusted})")  # fmt: skip
    s_adjusted = f", adjusted {s_p:.3g}" if corrected else ""
    s_text = (f"[{_fmt(s_ci[0], scale)}, {_fmt(s_ci[1], scale)}] (sequential p = {t.sequential_p_value:.3g}"
              f"{s_adjusted})")  # fmt: skip
    level = f"{1 - c.alpha:.0%}"
    note = " (assumed: no minimum detectable effect was set)" if c.assumed else ""
    planned = f"{_fmt(c.sign * threshold, scale)}{note}"

    def verdict(action: Decision, reason: str, unfeasible: bool = False) -> _Verdict:
        return _Verdict(t, action, reason, unfeasible)

    good = c.sign * effect > 0
    excludes = (s_p < c.alpha) if corrected else (s_ci[0] > 0 or s_ci[1] < 0)
    if excludes:
        if good:
            return verdict(Decision.SHIP, f"{v} {effect_text} beats the control, and its always-valid {level} "
                           f"interval {s_text} excludes 0, so the result holds however often it was looked at.")
        return verdict(Decision.STOP, f"{v} {effect_text} is worse than the control: its always-valid {level} "
                       f"interval {s_text} excludes 0.")  # fmt: skip
    reached = math.isfinite(plan.needed) and plan.smallest >= plan.needed
    significant = p < c.alpha
    if reached:
        at = f"reached the planned {plan.needed:,.0f} units per variant"
        if significant and good:
            return verdict(Decision.SHIP, f"{v} {at} and beats the control at the fixed horizon: {effect_text}.")
        if significant:
            return verdict(Decision.STOP, f"{v} {at} and is worse than the control: {effect_text}.")
        return verdict(Decision.STOP, f"{v} {at} without a significant effect ({effect_text}): no effect of the "
                       f"planned {planned}.")  # fmt: skip
    best_case = max(c.sign * s_ci[0], c.sign * s_ci[1])
    if best_case < threshold:
        return verdict(Decision.STOP, f"no effect worth the wait: {v}'s always-valid {level} interval {s_text} "
                       f"already rules out the planned {planned} (best case {_fmt(c.sign * best_case, scale)}).")
    if c.horizon is not None and plan.days_needed is not None and plan.days_needed > c.horizon:
        target = _fmt(c.sign * threshold, scale)
        return verdict(Decision.STOP, f"not feasible to detect {target} within {c.horizon:.0f} days{note}: that needs "
                       f"{plan.needed:,.0f} units per variant (the smallest has {plan.smallest:,.0f}), about "
                       f"{plan.days_needed:,.0f} days in all at the rate so far; {v} so far {effect_text}.", True)
    if math.isfinite(plan.needed):
        pending = (f"power for the planned {planned} is {plan.power:.0%} with {plan.smallest:,.0f} of the "
                   f"{plan.needed:,.0f} units per variant it needs")  # fmt: skip
    else:
        pending = "the planned sample size cannot be computed from the control's data"
    if significant:
        head = (f"{v} {effect_text} looks significant at the fixed horizon, but that test is valid only at the "
                f"planned sample, and the always-valid interval {s_text} still includes 0")  # fmt: skip
    else:
        head = f"{v} {effect_text} is not conclusive yet: the always-valid interval {s_text} includes 0"
    return verdict(Decision.KEEP_RUNNING, f"{head}; {pending}.")


_CORRECTIONS = {"holm": "Holm", "bh": "BH", "bonferroni": "Bonferroni"}
