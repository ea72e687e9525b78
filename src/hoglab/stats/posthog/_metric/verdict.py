"""hoglab's verdict on a metric experiment: PostHog's engine, calibrated, and one test per metric.

The table, the recommendation, the picker, the report and the frame all read one test per metric: PostHog's
engine's test of the effect (relative unless ``difference_type`` is ``ABSOLUTE``), with one change where PostHog's
formula does not hold its level: under CUPED the relative effect's variance is the delta method's
(``cuped_relative_variance``, docs/statistics.md §6.5; PostHog's own formula calls about
15% of A/A experiments significant at α = 0.05). PostHog's figures are kept beside hoglab's, and
:func:`verdict_difference` says in one line when they would call a different verdict.

* :func:`calibrated_results`: hoglab's results for one metric (the engine with ``cuped_variance="delta"``) and
  PostHog's (its formula), variant by variant.
* :func:`metric_test_name`: the test in words, as every view names it.
* :func:`metric_recommendation`: :func:`hoglab.stats.recommend`'s rules over that same test: its fixed-horizon
  interval (for a Bayesian experiment, the flat-prior credible interval, with p = 2·min(P, 1 − P)) and its
  always-valid sequence, so the recommendation quotes the table's interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from ..._compare.inputs import Statistic
from ..._errors import StatsInputError
from ..._options import Correction, MetricKind
from ..._recommend import Recommendation, VariantTest, reconcile
from ..._srm import SRM_THRESHOLD, srm
from ..._statistics import Proportion, Ratio, SampleMean
from .config import TeamDefaults, resolve_stats_settings
from .engine import ExperimentStats, ExperimentVariantResult, MetricType, experiment_results

__all__ = ["calibrated_results", "metric_recommendation", "metric_test_name", "verdict_difference"]


def metric_test_name(metric_type: str, stats_config: object = None, team: TeamDefaults | None = None, *,
                     cuped: bool = False, sequential: bool | None = None) -> str:  # fmt: skip
    """The test every view of a metric experiment reads, in words (``sequential``: None as the settings say).

    >>> metric_test_name("mean", {"method": "frequentist", "frequentist": {"sequential_testing_enabled": True}},
    ...                  cuped=True)
    'always-valid Welch t-test of the relative effect, CUPED with the delta-method variance'
    >>> metric_test_name("funnel")
    'Gaussian test of the relative effect, flat-prior posterior'
    """
    settings = resolve_stats_settings(stats_config, team)
    if sequential is not None:
        settings = replace(settings, sequential=sequential)
    effect = "relative effect" if settings.relative else "difference"
    if metric_type in ("ratio", "retention"):
        effect += " of ratios, delta method"
    if settings.method == "bayesian":
        name = f"Gaussian test of the {effect}, flat-prior posterior"
    else:
        name = f"{'always-valid ' if settings.sequential else ''}Welch t-test of the {effect}"
    if cuped:
        name += ", CUPED with the delta-method variance" if settings.relative else ", CUPED"
    return name


def calibrated_results(
    metric_type: MetricType,
    baseline: ExperimentStats,
    variants: Sequence[ExperimentStats],
    **options: Any,
) -> tuple[list[ExperimentVariantResult], list[ExperimentVariantResult]]:
    """hoglab's results (the delta-method CUPED variance) and PostHog's (its formula), one per variant, in order.

    ``options`` go to :func:`~hoglab.stats.posthog.experiment_results` (``stats_config``, ``team``, ``goal``,
    ``cuped``, ``threshold``). Without CUPED, or on the absolute scale, the two are the same.
    """
    options.pop("cuped_variance", None)
    _, hoglab = experiment_results(metric_type, baseline, variants, cuped_variance="delta", **options)
    _, posthog = experiment_results(metric_type, baseline, variants, cuped_variance="posthog", **options)
    return hoglab, posthog


def verdict_difference(hoglab_significant: bool | None, posthog_significant: bool | None) -> str | None:
    """One line when PostHog's formula would call another verdict than hoglab's, else None.

    >>> verdict_difference(False, True)
    "PostHog's formula: significant; hoglab: not yet"
    """
    if hoglab_significant is None or posthog_significant is None or hoglab_significant == posthog_significant:
        return None
    words = {True: "significant", False: "not yet"}
    return f"PostHog's formula: {words[posthog_significant]}; hoglab: {words[hoglab_significant]}"


def _with(stats_config: object, method: str, sequential: bool) -> dict[str, Any]:
    """``stats_config`` with the method (and sequential testing) set, other settings kept."""
    config = dict(stats_config) if isinstance(stats_config, Mapping) else {}
    relative = resolve_stats_settings(stats_config).relative
    config["method"] = method
    if method == "frequentist":
        freq = dict(config.get("frequentist") or {}) if isinstance(config.get("frequentist"), Mapping) else {}
        freq["sequential_testing_enabled"] = sequential
        freq.setdefault("difference_type", "RELATIVE" if relative else "ABSOLUTE")
        config["frequentist"] = freq
    return config


def _statistic(metric_type: str, s: ExperimentStats, threshold: bool, cuped: bool) -> Statistic:
    """The arm as hoglab.stats' statistic, for planning the sample size."""
    n = float(s.number_of_samples)
    if metric_type == "funnel" or threshold:
        return Proportion(n, min(float(s.sum), n))
    if metric_type == "mean":
        if cuped and s.covariate_sum is not None:
            pre = SampleMean(n, float(s.covariate_sum), float(s.covariate_sum_squares or 0.0))
            return SampleMean(n, s.sum, s.sum_squares, pre=pre, sum_of_products=float(s.covariate_sum_product or 0))
        return SampleMean(n, s.sum, s.sum_squares)
    numerator = SampleMean(n, s.sum, s.sum_squares)
    denominator = SampleMean(n, float(s.denominator_sum or 0.0), float(s.denominator_sum_squares or 0.0))
    return Ratio(numerator, denominator, float(s.numerator_denominator_sum_product or 0.0))


def _kind(metric_type: str, threshold: bool) -> MetricKind:
    if metric_type == "funnel" or threshold:
        return "conversion"
    return "mean" if metric_type == "mean" else "ratio"


def _interval(result: ExperimentVariantResult) -> tuple[float, float] | None:
    interval = result.confidence_interval or result.credible_interval
    return (float(interval[0]), float(interval[1])) if interval is not None else None


def metric_recommendation(
    metric_type: MetricType,
    baseline: ExperimentStats,
    variants: Sequence[ExperimentStats],
    *,
    stats_config: Mapping[str, Any] | None = None,
    team: TeamDefaults | None = None,
    goal: Literal["increase", "decrease"] = "increase",
    cuped: bool | None = None,
    threshold: bool = False,
    mde: float | None = None,
    days_running: float | None = None,
    expected_split: Mapping[str, float] | None = None,
    srm_threshold: float = SRM_THRESHOLD,
    max_days: float | None = None,
    power: float = 0.8,
    correction: Correction | None = None,
    name: str = "metric",
) -> Recommendation:
    """:func:`hoglab.stats.recommend`'s rules over the metric's own test (the one its table shows, calibrated).

    Parameters
    ----------
    stats_config, team, goal, cuped, threshold
        As :func:`~hoglab.stats.posthog.experiment_results` reads them (``cuped``: whether the arms' covariate
        sums are to be used).
    mde, days_running, max_days, power
        The plan: the relative MDE (None assumes +5% and says so), the days so far and the horizon
        (default: the larger of 90 days and 3× the days so far).
    expected_split
        The planned share of each arm (every arm of ``baseline`` and ``variants``); equal shares when None.
    correction
        ``"holm"`` or ``"bh"``: adjust the variants' p-values; decisions read the adjusted ones.
    """
    settings = resolve_stats_settings(stats_config, team)
    options: dict[str, Any] = {"team": team, "goal": goal, "cuped": cuped, "threshold": threshold,
                               "cuped_variance": "delta"}  # fmt: skip
    _, fixed = experiment_results(metric_type, baseline, variants, stats_config=_with(
        stats_config, settings.method, False), **options)  # fmt: skip
    _, always = experiment_results(metric_type, baseline, variants, stats_config=_with(
        stats_config, "frequentist", True), **options)  # fmt: skip
    scale = "lift" if settings.relative else "difference"
    alpha = settings.alpha if settings.method == "frequentist" else 1.0 - settings.ci_level
    control = _control_mean(metric_type, baseline)
    tests = []
    for f, s in zip(fixed, always, strict=True):
        ci, s_ci = _interval(f), _interval(s)
        if ci is None or s_ci is None or f.point_estimate is None or s.p_value is None:
            continue  # PostHog's validation left this variant untested
        if f.method == "frequentist":
            p = float(f.p_value) if f.p_value is not None else math.nan
        else:  # the flat-prior posterior: the two-sided normal test whose interval is the credible interval
            chance = float(f.chance_to_win) if f.chance_to_win is not None else math.nan
            p = 2.0 * min(chance, 1.0 - chance)
        tests.append(VariantTest(f.stats.key, scale, float(f.point_estimate), ci, p, s_ci, float(s.p_value),
                                 control))  # fmt: skip
    if not tests:
        raise StatsInputError("no variant of this metric could be tested yet (see its validation failures)")
    arms = [baseline, *variants]
    uses_cuped = any(r.cuped is not None for r in fixed)
    statistics = {s.key: _statistic(metric_type, s, threshold, uses_cuped) for s in arms}
    observed = {s.key: float(s.number_of_samples) for s in arms}
    split = None
    if sum(observed.values()) > 0:
        shares = dict(expected_split) if expected_split and set(expected_split) == set(observed) else None
        split = srm(observed, shares, threshold=srm_threshold)
    return reconcile(
        tests, statistics, control=baseline.key, kind=_kind(metric_type, threshold),
        test=metric_test_name(metric_type, stats_config, team, cuped=uses_cuped, sequential=False), metric=name,
        mde=mde,
        relative=settings.relative, days_running=days_running, higher_is_better=goal != "decrease", alpha=alpha,
        power=power, max_days=max_days, split=split, correction=correction,
    )  # fmt: skip


def _control_mean(metric_type: str, s: ExperimentStats) -> float:
    """The arm's unadjusted mean as PostHog's statistic has it (a rate, a mean, or Σnumerator/Σdenominator)."""
    n = float(s.number_of_samples)
    if metric_type in ("ratio", "retention"):
        return float(s.sum) / float(s.denominator_sum) if s.denominator_sum else math.nan
    return float(s.sum) / n if n else math.nan
