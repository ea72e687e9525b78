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
   would take more than ``max_days``.
5. Otherwise **keep running**, for about (days needed − days so far) more days at the rate units arrived so far.
   A fixed-horizon "significant" before the planned sample is not acted on: peeking at a fixed-horizon test
   inflates its false positives (26% at 25 looks, ``docs/statistics.md`` §6.6).

With several variants: investigate, else ship the best variant that may be shipped, else keep running while
any variant may still win, else stop.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ._compare.compare import compare
from ._compare.inputs import Statistic, metric_groups
from ._compare.results import VariantComparison
from ._errors import StatsError, StatsInputError
from ._frequentist.sequential import DEFAULT_TUNING
from ._options import MetricKind, check_alpha
from ._power import power as power_at, running_time, sample_size
from ._srm import SRM_THRESHOLD, SRMResult
from ._statistics import Count, Proportion, Ratio, SampleMean

__all__ = ["Decision", "Recommendation", "recommend"]


class Decision(StrEnum):
    """What to do with the experiment."""

    SHIP = "ship"
    KEEP_RUNNING = "keep_running"
    STOP = "stop"
    INVESTIGATE = "investigate"


_HEADLINE = {Decision.SHIP: "SHIP", Decision.KEEP_RUNNING: "KEEP RUNNING", Decision.STOP: "STOP",
             Decision.INVESTIGATE: "INVESTIGATE"}  # fmt: skip


@dataclass(frozen=True)
class Recommendation:
    """The reconciled verdict of :func:`recommend` and every number it rests on.

    ``recommendation`` is a :class:`Decision` (a string: ``"ship"``, ``"keep_running"``, ``"stop"``,
    ``"investigate"``), ``reason`` says why in one or two sentences, ``variant`` is the variant it is about
    (the one to ship, the closest to a decision). Effects are on the ``scale`` of the decision (``"lift"``,
    relative, or ``"difference"``); ``days_more`` is None when the days so far are unknown.
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

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        colour = {Decision.SHIP: "#1a7f37", Decision.STOP: "#57606a", Decision.INVESTIGATE: "#cf222e"}.get(
            self.recommendation, "#9a6700"
        )
        return (f'<div style="margin:4px 0"><b>Recommendation: <span style="color:{colour}">'
                f"{html.escape(self.headline)}</span></b>: {html.escape(self.reason)}</div>")  # fmt: skip


@dataclass(frozen=True)
class _SamplePlan:
    """Units per variant the MDE needs, the smallest arm's units and power now, and the days to get there."""

    needed: float
    smallest: float
    power: float
    days_needed: float | None
    days_more: float | None


def recommend(
    data: Any,
    *,
    control: str = "control",
    metric: MetricKind | None = None,
    mde: float = 0.05,
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
) -> Recommendation:
    """Reconcile the fixed-horizon test, the always-valid sequence, power for ``mde`` and SRM into one
    recommendation (the rules are in this module's docstring and ``docs/statistics.md`` §16).

    Parameters
    ----------
    data
        One metric's per-variant statistics, as :func:`hoglab.stats.compare` reads them.
    mde
        The smallest effect worth detecting, relative (0.05 = +5%) unless ``relative=False``.
    days_running
        Days the experiment has run; with it the answer says about how many more days are needed.
    higher_is_better
        False for metrics where a decrease is the good news (latency, churn).
    tuning
        N* of the confidence sequence (``compare``'s default, the one the report's over-time plot uses).
    max_days
        Stop for futility when reaching the planned sample would take longer than this in all.

    Examples
    --------
    >>> from hoglab.stats import Proportion
    >>> r = recommend({"control": Proportion(5000, 500), "test": Proportion(5000, 560)}, mde=0.05,
    ...               days_running=30)
    >>> r.recommendation.value, r.variant, round(r.p_value, 3), round(r.sequential_p_value, 3)
    ('keep_running', 'test', 0.051, 0.834)
    >>> print(r.headline)
    KEEP RUNNING (about 317 more days)
    """
    check_alpha(alpha)
    if not mde > 0:
        raise StatsInputError(f"mde must be positive, got {mde!r}")
    if days_running is not None and not days_running >= 0:
        raise StatsInputError(f"days_running must be >= 0, got {days_running!r}")
    groups = metric_groups(data, kind=metric, name=name)
    if len(groups) != 1:
        raise StatsInputError(f"recommend() takes one metric, got {len(groups)}: {[g[0] for g in groups]}")
    metric_name, kind, arms = groups[0]
    options: dict[str, Any] = {"control": control, "metric": kind, "alpha": alpha, "relative": relative,
                               "name": metric_name}  # fmt: skip
    fixed = compare(arms, method="frequentist", expected_split=expected_split, srm_threshold=srm_threshold,
                    **options)  # fmt: skip
    sequential = compare(arms, method="sequential", tuning=tuning, check_srm=False, **options)
    split = fixed.srm.get(metric_name)
    plan = _plan(kind, arms, control, mde, relative, alpha, power, days_running, max_days)
    sign = 1.0 if higher_is_better else -1.0
    verdicts = [
        _variant(row, sequential.row(row.variant), plan, mde, relative, alpha, sign, max_days) for row in fixed.rows
    ]

    def build(action: Decision, reason: str, pick: _Verdict) -> Recommendation:
        return Recommendation(
            action, reason, pick.variant, metric_name, pick.scale, pick.effect, pick.ci, pick.p_value,
            pick.sequential_ci, pick.sequential_p_value, mde, plan.power, plan.needed, plan.smallest,
            days_running, plan.days_needed, plan.days_more, split)  # fmt: skip

    closest = min(verdicts, key=lambda v: v.sequential_p_value if math.isfinite(v.sequential_p_value) else 2.0)
    if split is not None and split.mismatch:
        reason = (f"the traffic split differs from the plan ({split.planned_split}; SRM p = {split.p_value:.2g} < "
                  f"{split.threshold:g}): the arms are not comparable until the cause is found, so no effect can "
                  "be trusted yet.")  # fmt: skip
        return build(Decision.INVESTIGATE, reason, closest)
    winners = [v for v in verdicts if v.action is Decision.SHIP]
    if winners:
        best = max(winners, key=lambda v: sign * v.effect)
        return build(Decision.SHIP, best.reason, best)
    running = [v for v in verdicts if v.action is Decision.KEEP_RUNNING]
    if running:
        pick = min(running, key=lambda v: v.sequential_p_value if math.isfinite(v.sequential_p_value) else 2.0)
        return build(Decision.KEEP_RUNNING, pick.reason, pick)
    reason = " ".join(v.reason for v in verdicts)
    return build(Decision.STOP, reason, closest)


@dataclass(frozen=True)
class _Verdict:
    variant: str
    action: Decision
    reason: str
    scale: str
    effect: float
    ci: tuple[float, float]
    p_value: float
    sequential_ci: tuple[float, float]
    sequential_p_value: float


def _plan(kind: MetricKind, arms: Mapping[str, Statistic], control: str, mde: float, relative: bool, alpha: float,
          target: float, days_running: float | None, max_days: float | None) -> _SamplePlan:  # fmt: skip
    """Units per variant the MDE needs at the target power (from the control's baseline and spread), the power
    of the smallest arm now, and the days to get there at the rate so far."""
    units = {k: float(s.exposure if isinstance(s, Count) else s.n) for k, s in arms.items()}
    smallest = min(units.values())
    base = arms[control]
    shape: dict[str, Any]
    if isinstance(base, Proportion):
        baseline, shape = base.rate, {"metric": "conversion"}
    elif isinstance(base, Count):  # a count per unit planned as a mean with a Poisson spread, as the report does
        baseline, shape = base.rate, {"metric": "mean", "sd": math.sqrt(base.rate)}
    elif isinstance(base, SampleMean):
        baseline, shape = base.mean, {"metric": "mean", "sd": math.sqrt(base.variance)}
    else:
        assert isinstance(base, Ratio)
        baseline, shape = base.value, {"metric": "mean", "sd": math.sqrt(base.variance)}
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


def _variant(fixed: VariantComparison, seq: VariantComparison, plan: _SamplePlan, mde: float, relative: bool,
             alpha: float, sign: float, max_days: float | None) -> _Verdict:  # fmt: skip
    on_lift = relative and math.isfinite(fixed.lift)
    scale = "lift" if on_lift else "difference"
    effect = fixed.lift if on_lift else fixed.difference
    ci = fixed.lift_ci if on_lift else fixed.difference_ci
    s_ci = seq.lift_ci if on_lift else seq.difference_ci
    # The MDE on the decision's scale: relative on the lift; on the difference, relative to the control's value.
    threshold = mde if on_lift or not relative else mde * abs(fixed.control_estimate)
    v = fixed.variant
    effect_text = f"{_fmt(effect, scale)} [{_fmt(ci[0], scale)}, {_fmt(ci[1], scale)}]"
    s_text = f"[{_fmt(s_ci[0], scale)}, {_fmt(s_ci[1], scale)}] (sequential p = {seq.p_value:.3g})"
    level = f"{1 - alpha:.0%}"

    def verdict(action: Decision, reason: str) -> _Verdict:
        return _Verdict(v, action, reason, scale, effect, ci, fixed.p_value, s_ci, seq.p_value)

    good = sign * effect > 0
    if s_ci[0] > 0 or s_ci[1] < 0:
        if good:
            return verdict(Decision.SHIP, f"{v} {effect_text} beats the control, and its always-valid {level} "
                           f"interval {s_text} excludes 0, so the result holds however often it was looked at.")
        return verdict(Decision.STOP, f"{v} {effect_text} is worse than the control: its always-valid {level} "
                       f"interval {s_text} excludes 0.")  # fmt: skip
    reached = math.isfinite(plan.needed) and plan.smallest >= plan.needed
    significant = fixed.p_value < alpha
    if reached:
        at = f"reached the planned {plan.needed:,.0f} units per variant"
        if significant and good:
            return verdict(Decision.SHIP, f"{v} {at} and beats the control at the fixed horizon: {effect_text}, "
                           f"p = {fixed.p_value:.3g}.")  # fmt: skip
        if significant:
            return verdict(Decision.STOP, f"{v} {at} and is worse than the control: {effect_text}, "
                           f"p = {fixed.p_value:.3g}.")  # fmt: skip
        return verdict(Decision.STOP, f"{v} {at} without a significant effect ({effect_text}, p = "
                       f"{fixed.p_value:.3g}): no effect of the planned {_fmt(sign * threshold, scale)}.")
    best_case = max(sign * s_ci[0], sign * s_ci[1])
    if best_case < threshold:
        return verdict(Decision.STOP, f"no effect worth the wait: {v}'s always-valid {level} interval {s_text} "
                       f"already rules out the planned {_fmt(sign * threshold, scale)} (best case "
                       f"{_fmt(sign * best_case, scale)}).")  # fmt: skip
    if max_days is not None and plan.days_needed is not None and plan.days_needed > max_days:
        return verdict(Decision.STOP, f"reaching the {plan.needed:,.0f} units per variant that the planned "
                       f"{_fmt(sign * threshold, scale)} needs would take {plan.days_needed:.0f} days in all, more "
                       f"than the {max_days:g} allowed; {v} so far {effect_text}.")  # fmt: skip
    if math.isfinite(plan.needed):
        pending = (f"power for the planned {_fmt(sign * threshold, scale)} is {plan.power:.0%} with "
                   f"{plan.smallest:,.0f} of the {plan.needed:,.0f} units per variant it needs")  # fmt: skip
    else:
        pending = "the planned sample size cannot be computed from the control's data"
    if significant:
        head = (f"{v} {effect_text} looks significant at the fixed horizon (p = {fixed.p_value:.3g}), but that "
                f"test is valid only at the planned sample, and the always-valid interval {s_text} still "
                "includes 0")  # fmt: skip
    else:
        head = f"{v} {effect_text} is not conclusive yet: the always-valid interval {s_text} includes 0"
    return verdict(Decision.KEEP_RUNNING, f"{head}; {pending}.")
