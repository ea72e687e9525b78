"""PostHog's current experiment statistics (``ExperimentQuery``), as PostHog computes them, one metric at a time.

The orchestration of ``products/experiments/backend/hogql_queries/utils.py`` (``get_frequentist_experiment_result``,
``get_bayesian_experiment_result``) over each variant's sufficient statistics (:class:`ExperimentStats`, PostHog's
``ExperimentStatsBase``):

1. **validate** every arm (``validate_variant_result``): fewer than 50 units → ``not-enough-exposures``; funnel and
   retention metrics with a sum below 5 → ``not-enough-metric-data``; a baseline whose sum is 0 →
   ``baseline-mean-is-zero`` (hoglab also when a ratio's baseline denominator is 0: its mean does not exist). An
   arm that fails, or every arm when the baseline fails, keeps its statistics without test fields;
2. **statistic** per arm (:mod:`.statistics`): mean → sample mean; funnel, and a mean metric with a
   ``threshold`` → proportion; ratio and retention → ratio (retention: completions over starts);
3. **CUPED** when on (:mod:`.cuped`): mean and funnel metrics, θ per treatment–control pair, the relative
   effect over the unadjusted control mean. Ratio metrics: PostHog has none; hoglab adjusts them
   (:mod:`.ratio_cuped`) only when every arm carries the pre-period sums that extension needs
   (``ExperimentStats.ratio_covariate``), which PostHog's queries never produce;
4. **effect** relative by default, absolute with ``difference_type: "ABSOLUTE"``;
5. **test**: frequentist (:mod:`.frequentist`: Welch t, or the always-valid sequential test when
   ``sequential_testing_enabled``) or Bayesian (:mod:`.bayesian`: Gaussian posterior, ``significant`` =
   ``is_decisive``). A case the test refuses (too few units, zero variance, a zero baseline) leaves that variant
   without test fields, as PostHog's ``except StatisticError`` does.

The baseline is any arm (a holdout too): :func:`split_baseline` picks it by key, :func:`baseline_variant_key`
says which one PostHog uses. :func:`experiment_results_by_breakdown` runs the same statistics per breakdown value
and on all values together.

Deliberate differences: p-values use the t survival function (PostHog's ``2·(1 − cdf)`` rounds p < ~1e-16 to 0);
sums of squares a few ulps below (Σx)²/n are accepted (PostHog refuses them, losing the variant's test).

>>> control = ExperimentStats("control", 2507, 1196.87, 37377.9767)
>>> test = ExperimentStats("test", 2461, 1922.7, 94698.29)
>>> _, [result] = experiment_results("mean", control, [test], stats_config={"method": "frequentist"})
>>> round(result.p_value, 4), [round(x, 4) for x in result.confidence_interval]
(0.0849, [-0.0875, 1.3605])
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from ..._errors import StatsInputError
from .bayesian import BayesianResult, GaussianPrior, bayesian_test
from .config import (
    Method,
    TeamDefaults,
    missing_baseline,
    resolve_cuped,
    resolve_cuped_variance,
    resolve_stats_settings,
)
from .cuped import CupedAdjustment, CupedCovariate, covariance, cuped_adjust
from .frequentist import FrequentistResult, frequentist_test
from .ratio_cuped import JointMoments, RatioCovariate, RatioCupedAdjustment, ratio_cuped
from .statistics import (
    EffectEstimate,
    ProportionStatistic,
    RatioStatistic,
    SampleMeanStatistic,
    Statistic,
    effect_between,
)

__all__ = [
    "BreakdownResults",
    "ExperimentStats",
    "ExperimentVariantResult",
    "experiment_results",
    "experiment_results_by_breakdown",
    "split_baseline",
]

MetricType = Literal["mean", "funnel", "ratio", "retention"]
MIN_EXPOSURES = 50
MIN_METRIC_DATA = 5
_METRIC_TYPES = ("mean", "funnel", "ratio", "retention")
_COVARIATE_ALIASES = {"main_covariate_sum_product": "covariate_sum_product"}


@dataclass(frozen=True)
class ExperimentStats:
    """One variant's sufficient statistics, PostHog's ``ExperimentStatsBase``.

    CUPED adds the pre-exposure covariate's ``covariate_sum``, ``covariate_sum_squares`` and Σ metric·covariate,
    ``covariate_sum_product`` (PostHog's current name; its first CUPED answers called it
    ``main_covariate_sum_product``, which :meth:`from_posthog` also reads). ``ratio_covariate`` is hoglab's ratio
    CUPED extension. Statistics of the same arm add up with ``+`` (breakdown values, days, shards).

    >>> a = ExperimentStats("control", 100, 250.0, 750.0, step_counts=(100, 80))
    >>> (a + ExperimentStats("control", 80, 200.0, 600.0, step_counts=(80, 60))).step_counts
    (180, 140)
    """

    key: str
    number_of_samples: int
    sum: float
    sum_squares: float
    denominator_sum: float | None = None
    denominator_sum_squares: float | None = None
    numerator_denominator_sum_product: float | None = None
    step_counts: tuple[int, ...] | None = None
    covariate_sum: float | None = None
    covariate_sum_squares: float | None = None
    covariate_sum_product: float | None = None
    ratio_covariate: RatioCovariate | None = None

    @classmethod
    def from_posthog(cls, body: Mapping[str, Any]) -> ExperimentStats:
        """From PostHog's JSON (``ExperimentStatsBase`` and the result shapes that extend it); unknown members are
        ignored."""
        names = {f.name for f in fields(cls)} - {"ratio_covariate"}
        values = {_COVARIATE_ALIASES.get(k, k): v for k, v in body.items()}
        kept = {k: v for k, v in values.items() if k in names}
        if kept.get("step_counts") is not None:
            kept["step_counts"] = tuple(int(x) for x in kept["step_counts"])
        try:
            return cls(**kept)
        except TypeError as exc:  # a required member is missing
            raise StatsInputError(f"statistics need key, number_of_samples, sum and sum_squares: {exc}") from None

    def __add__(self, other: ExperimentStats) -> ExperimentStats:
        if not isinstance(other, ExperimentStats):
            return NotImplemented
        if other.key != self.key:
            raise StatsInputError(f"cannot add the statistics of {other.key!r} to those of {self.key!r}")
        merged: dict[str, Any] = {"key": self.key}
        for f in fields(self):
            if f.name == "key":
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a is None or b is None:
                merged[f.name] = a if b is None else b
            elif f.name == "step_counts":
                if len(a) != len(b):
                    raise StatsInputError("cannot add funnels with different numbers of steps")
                merged[f.name] = tuple(x + y for x, y in zip(a, b, strict=True))
            else:
                merged[f.name] = a + b
        return ExperimentStats(**merged)

    def has_covariate(self) -> bool:
        return self.covariate_sum is not None

    def to_posthog(self) -> dict[str, Any]:
        """The JSON members PostHog writes for these statistics (ratio, funnel and CUPED fields only when set)."""
        body: dict[str, Any] = {"key": self.key, "number_of_samples": self.number_of_samples, "sum": self.sum,
                                "sum_squares": self.sum_squares}  # fmt: skip
        if self.denominator_sum is not None:
            body["denominator_sum"] = self.denominator_sum
            body["denominator_sum_squares"] = self.denominator_sum_squares
            body["numerator_denominator_sum_product"] = self.numerator_denominator_sum_product
        if self.step_counts is not None:
            body["step_counts"] = list(self.step_counts)
        if self.covariate_sum is not None:
            body["covariate_sum"] = self.covariate_sum
            body["covariate_sum_squares"] = self.covariate_sum_squares
            body["covariate_sum_product"] = self.covariate_sum_product
        return body


@dataclass(frozen=True)
class ExperimentVariantResult:
    """One variant's answer: its statistics, validation failures and (when valid) its test, PostHog's
    ``ExperimentStatsBaseValidated`` (baseline) or ``ExperimentVariantResultFrequentist`` / ``...Bayesian``.

    Beyond PostHog's fields (for notebooks): ``point_estimate`` (the effect tested, CUPED-adjusted when CUPED is
    on), ``sequential`` (the interval is an always-valid confidence sequence), ``cuped`` (θ, adjusted and raw
    means, variance reductions) and ``test`` (the whole frequentist or Bayesian result).
    """

    stats: ExperimentStats
    method: Method
    significant: bool | None = None
    p_value: float | None = None
    confidence_interval: tuple[float, float] | None = None
    chance_to_win: float | None = None
    credible_interval: tuple[float, float] | None = None
    validation_failures: tuple[str, ...] = ()
    point_estimate: float | None = None
    sequential: bool = False
    cuped: CupedAdjustment | RatioCupedAdjustment | None = None
    test: FrequentistResult | BayesianResult | None = None

    def to_posthog(self, *, baseline: bool = False) -> dict[str, Any]:
        """PostHog's JSON: the baseline carries statistics and validation failures only."""
        body = {**self.stats.to_posthog(), "validation_failures": list(self.validation_failures)}
        if baseline:
            return body
        body["method"] = self.method
        body["significant"] = self.significant
        if self.method == "frequentist":
            body["p_value"] = self.p_value
            body["confidence_interval"] = list(self.confidence_interval) if self.confidence_interval else None
        else:
            body["chance_to_win"] = self.chance_to_win
            body["credible_interval"] = list(self.credible_interval) if self.credible_interval else None
        return body


def validation_failures(metric_type: MetricType, s: ExperimentStats, *, baseline: bool) -> tuple[str, ...]:
    """PostHog's ``validate_variant_result`` codes for one arm."""
    failures = []
    if s.number_of_samples < MIN_EXPOSURES:
        failures.append("not-enough-exposures")
    if metric_type in ("funnel", "retention") and s.sum < MIN_METRIC_DATA:
        failures.append("not-enough-metric-data")
    # A ratio's baseline without denominator has no mean at all (PostHog only looks at the numerator's sum).
    if baseline and (s.sum == 0 or (metric_type in ("ratio", "retention") and not s.denominator_sum)):
        failures.append("baseline-mean-is-zero")
    return tuple(failures)


def statistic(metric_type: MetricType, s: ExperimentStats, *, threshold: bool = False) -> Statistic:
    """PostHog's ``metric_variant_to_statistic``."""
    n = int(s.number_of_samples)
    if metric_type == "funnel" or (metric_type == "mean" and threshold):
        return ProportionStatistic(n, int(s.sum))
    if metric_type == "mean":
        return SampleMeanStatistic(n, s.sum, s.sum_squares)
    return RatioStatistic(
        n,
        SampleMeanStatistic(n, s.sum, s.sum_squares),
        SampleMeanStatistic(n, float(s.denominator_sum or 0.0), float(s.denominator_sum_squares or 0.0)),
        float(s.numerator_denominator_sum_product or 0.0),
    )


def _covariate(s: ExperimentStats) -> CupedCovariate:
    # PostHog's metric_variant_to_cuped_data: a missing field counts as 0.
    pre = SampleMeanStatistic(int(s.number_of_samples), float(s.covariate_sum or 0.0),
                              float(s.covariate_sum_squares or 0.0))  # fmt: skip
    return CupedCovariate(pre, float(s.covariate_sum_product or 0.0))


def _joint(s: ExperimentStats) -> JointMoments:
    assert s.ratio_covariate is not None
    return JointMoments.from_ratio(int(s.number_of_samples), s.sum, s.sum_squares, float(s.denominator_sum or 0.0),
                                   float(s.denominator_sum_squares or 0.0),
                                   float(s.numerator_denominator_sum_product or 0.0), s.ratio_covariate)  # fmt: skip


@dataclass(frozen=True)
class _TestPlan:
    """One metric's resolved settings: how every variant is tested against the baseline."""

    metric_type: MetricType
    threshold: bool
    method: Method
    relative: bool
    alpha: float
    ci_level: float
    sequential: bool
    tuning: float
    cuped: bool
    ratio_cuped: bool
    inverse: bool
    prior: GaussianPrior | None
    delta_cuped: bool = False


Adjustment = CupedAdjustment | RatioCupedAdjustment


def _effect(plan: _TestPlan, t_stats: ExperimentStats, c_stats: ExperimentStats, treatment: Statistic,
            control: Statistic) -> tuple[EffectEstimate, Adjustment | None, float]:  # fmt: skip
    """The effect to test, the CUPED adjustment behind it, and the relative effect's denominator."""
    if plan.ratio_cuped:
        ratio = ratio_cuped(_joint(t_stats), _joint(c_stats))
        return ratio.effect(relative=plan.relative), ratio, ratio.control_ratio
    if plan.cuped and isinstance(treatment, SampleMeanStatistic | ProportionStatistic) and isinstance(
            control, SampleMeanStatistic | ProportionStatistic):  # fmt: skip
        c_covariate = _covariate(c_stats)
        adjusted = cuped_adjust(treatment, control, _covariate(t_stats), c_covariate)
        effect = effect_between(adjusted.treatment_adjusted, adjusted.control_adjusted, relative=plan.relative,
                                unadjusted_mean=adjusted.control_unadjusted_mean)  # fmt: skip
        if plan.relative and plan.delta_cuped:
            effect = replace(effect, variance=cuped_relative_variance(adjusted, control, c_covariate))
        return effect, adjusted, adjusted.control_unadjusted_mean
    return effect_between(treatment, control, relative=plan.relative), None, control.mean


def cuped_relative_variance(adjusted: CupedAdjustment, control: Statistic, covariate: CupedCovariate) -> float:
    """The delta-method variance of PostHog's CUPED relative effect L = (T_adj − C_adj)/ȳ_C (hoglab's correction).

    PostHog's formula treats L like an uncorrected lift, V = σ²_T,adj/(n_T ȳ_C²) + T_adj²·σ²_C,adj/(n_C ȳ_C⁴), which
    drops most of the control's share whenever the adjusted mean T_adj = ȳ_T − θx̄_T is small next to ȳ_C (θx̄
    comparable to ȳ: the usual case when the covariate is the same metric before exposure); its A/A false-positive
    rate then exceeds α (tests/stats/posthog/metric/test_cuped.py). Over the control's (ȳ_C, x̄_C), with the treatment's
    part unchanged (Deng, Knoblich & Lu 2018, §3):

        V = σ²_T,adj/(n_T ȳ_C²) + gᵀ Σ_C g / n_C,   g = (−(T_adj + θx̄_C)/ȳ_C², θ/ȳ_C)

    Σ_C the control's per-unit covariance of (Y, X). This is hoglab's own :func:`hoglab.stats.cuped_effect` lift
    variance.
    """
    y_c, theta, n_c = adjusted.control_unadjusted_mean, adjusted.theta, control.n
    t = adjusted.treatment_adjusted
    pre = covariate.pre
    cov = covariance(n_c, control.mean * n_c, pre.sum, covariate.sum_of_cross_products)
    g_y, g_x = -(t.mean + theta * pre.mean) / y_c**2, theta / y_c
    control_part = (g_y * g_y * control.variance + g_x * g_x * pre.variance + 2.0 * g_y * g_x * cov) / n_c
    return t.variance / (t.n * y_c**2) + max(control_part, 0.0)


def _tested(plan: _TestPlan, result: ExperimentVariantResult, t_stats: ExperimentStats, c_stats: ExperimentStats,
            control: Statistic) -> ExperimentVariantResult:  # fmt: skip
    treatment = statistic(plan.metric_type, t_stats, threshold=plan.threshold)
    effect, adjustment, denominator = _effect(plan, t_stats, c_stats, treatment, control)
    if plan.method == "frequentist":
        f = frequentist_test(effect, n_treatment=treatment.n, n_control=control.n, alpha=plan.alpha,
                             sequential=plan.sequential, tuning=plan.tuning)  # fmt: skip
        return replace(result, significant=f.is_significant, p_value=f.p_value,
                       confidence_interval=f.confidence_interval, point_estimate=f.point_estimate,
                       sequential=plan.sequential, cuped=adjustment, test=f)  # fmt: skip
    if adjustment is None and isinstance(treatment, ProportionStatistic) and isinstance(control, ProportionStatistic):
        for s in (treatment, control):  # PostHog's normal-approximation check for proportions
            if min(s.sum, s.n - s.sum) < MIN_METRIC_DATA:
                raise StatsInputError("the Bayesian proportion test needs 5 successes and 5 failures per arm")
    if plan.relative and not denominator > 0:
        raise StatsInputError("Control mean must be positive for relative difference calculation")
    b = bayesian_test(effect, ci_level=plan.ci_level, inverse=plan.inverse, prior=plan.prior)
    return replace(result, significant=b.is_decisive, chance_to_win=b.chance_to_win,
                   credible_interval=b.credible_interval, point_estimate=b.effect_size, cuped=adjustment,
                   test=b)  # fmt: skip


def experiment_results(
    metric_type: MetricType,
    baseline: ExperimentStats,
    variants: Sequence[ExperimentStats],
    *,
    stats_config: Mapping[str, Any] | None = None,
    goal: Literal["increase", "decrease"] = "increase",
    cuped: bool | None = None,
    threshold: bool = False,
    team: TeamDefaults | None = None,
    prior: GaussianPrior | None = None,
    cuped_variance: Literal["posthog", "delta"] | None = None,
) -> tuple[ExperimentVariantResult, list[ExperimentVariantResult]]:
    """PostHog's answer for one metric: the baseline's validation and each variant's result against it.

    ``stats_config`` is the experiment's (``method``, ``frequentist: {alpha, difference_type,
    sequential_testing_enabled, sequential_tuning_parameter}``, ``bayesian: {ci_level, difference_type}``,
    ``cuped: {enabled, lookback_days}``), resolved with ``team``'s defaults as PostHog resolves it
    (:func:`resolve_stats_settings`). ``cuped`` overrides the resolved CUPED switch (the caller knows whether the
    metric supports it; ``None`` means ``stats_config``/team default, for mean and funnel metrics without a
    threshold). ``threshold``: a mean metric with a threshold (each unit 0/1), a proportion to PostHog.
    ``prior``: a proper Gaussian prior for the Bayesian method (PostHog's service always uses the flat one).
    ``cuped_variance``: ``"posthog"`` (PostHog's relative-effect variance under CUPED, which understates the
    control's share, :func:`cuped_relative_variance`) or ``"delta"`` (hoglab's delta-method correction; same point
    estimate, calibrated intervals); ``None`` reads hoglab's ``stats_config.cuped.variance`` extension
    (:func:`resolve_cuped_variance`), PostHog's formula unless it says ``"delta"``.

    >>> base = ExperimentStats("control", 2801, 280, 560, covariate_sum=195, covariate_sum_squares=390,
    ...                        covariate_sum_product=-18)
    >>> test = ExperimentStats("test", 2800, 205, 510, covariate_sum=110, covariate_sum_squares=380,
    ...                        covariate_sum_product=-8)
    >>> _, [r] = experiment_results("mean", base, [test], stats_config={"method": "frequentist"}, cuped=True)
    >>> round(r.point_estimate, 6), round(r.cuped.theta, 6), r.significant
    (-0.288704, -0.069566, True)
    """
    if cuped_variance is None:
        cuped_variance = resolve_cuped_variance(stats_config)
    if cuped_variance not in ("posthog", "delta"):
        raise StatsInputError(f"cuped_variance must be 'posthog' or 'delta', got {cuped_variance!r}")
    if metric_type not in _METRIC_TYPES:
        raise StatsInputError(f"metric_type must be one of {', '.join(_METRIC_TYPES)}, got {metric_type!r}")
    for s in (baseline, *variants):
        if s.number_of_samples < 0 or not all(math.isfinite(float(v)) for v in (s.sum, s.sum_squares)):
            raise StatsInputError(f"variant {s.key!r}: statistics must be finite with a non-negative count")
    settings = resolve_stats_settings(stats_config, team)
    if cuped is None:
        cuped = resolve_cuped(stats_config, team).enabled and metric_type in ("mean", "funnel") and not threshold
    ratio_cuped_on = bool(cuped) and metric_type == "ratio" and all(
        s.ratio_covariate is not None for s in (baseline, *variants))  # fmt: skip
    mean_cuped = bool(cuped) and metric_type in ("mean", "funnel")
    plan = _TestPlan(metric_type, threshold, settings.method, settings.relative, settings.alpha, settings.ci_level,
                 settings.sequential, settings.sequential_tuning_parameter, mean_cuped, ratio_cuped_on,
                 goal == "decrease", prior, cuped_variance == "delta")  # fmt: skip
    failures = validation_failures(metric_type, baseline, baseline=True)
    base = ExperimentVariantResult(baseline, plan.method, validation_failures=failures)
    control: Statistic | None = None
    if not base.validation_failures:
        try:
            control = statistic(metric_type, baseline, threshold=threshold)
        except StatsInputError:  # a denominator near 0, inconsistent sums: no test decides
            control = None
    results = []
    for stats in variants:
        failures = validation_failures(metric_type, stats, baseline=False)
        result = ExperimentVariantResult(stats, plan.method, validation_failures=failures)
        if control is not None and not result.validation_failures:
            # A case the test cannot decide: the variant keeps its statistics, without test fields.
            with contextlib.suppress(StatsInputError, OverflowError, ZeroDivisionError):
                result = _tested(plan, result, stats, baseline, control)
        results.append(result)
    return base, results


def split_baseline(
    stats: Iterable[ExperimentStats], baseline_key: str
) -> tuple[ExperimentStats, list[ExperimentStats]]:
    """The baseline arm (``control``, another variant, or a holdout) and the others, in their order.

    >>> arms = [ExperimentStats("control", 10, 1, 1), ExperimentStats("holdout-7", 10, 2, 2)]
    >>> [s.key for s in split_baseline(arms, "holdout-7")[1]]
    ['control']
    """
    arms = list(stats)
    found = [s for s in arms if s.key == baseline_key]
    if not found:
        raise missing_baseline(baseline_key)
    if len(found) > 1:
        raise StatsInputError(f"several rows for the baseline variant {baseline_key!r}")
    return found[0], [s for s in arms if s.key != baseline_key]


@dataclass(frozen=True)
class BreakdownResults:
    """The metric's results on all rows together (``overall``) and per breakdown value (a tuple, one string per
    breakdown property), each a (baseline, variant results) pair as :func:`experiment_results` returns."""

    overall: tuple[ExperimentVariantResult, list[ExperimentVariantResult]]
    by_breakdown: dict[tuple[str, ...], tuple[ExperimentVariantResult, list[ExperimentVariantResult]]]


def _zeros(key: str, like: ExperimentStats) -> ExperimentStats:
    steps = tuple(0 for _ in like.step_counts) if like.step_counts is not None else None
    ratio = 0.0 if like.denominator_sum is not None else None
    cov = 0.0 if like.covariate_sum is not None else None
    return ExperimentStats(key, 0, 0.0, 0.0, ratio, ratio, ratio, steps, cov, cov, cov)


def experiment_results_by_breakdown(
    metric_type: MetricType,
    rows: Iterable[tuple[tuple[str, ...] | None, ExperimentStats]],
    *,
    baseline_key: str,
    variant_keys: Sequence[str] | None = None,
    **options: Any,
) -> BreakdownResults:
    """The same statistics per breakdown value and on every value together (PostHog sums each variant's
    statistics across values, ``aggregate_variants_across_breakdowns``, for the overall result).

    ``rows`` are (breakdown value tuple, statistics), as PostHog's query returns them; a variant without a row for
    some value counts as zero units there (PostHog adds missing variants the same way). ``options`` go to
    :func:`experiment_results`.

    >>> rows = [(("Chrome",), ExperimentStats("control", 900, 90, 90)),
    ...         (("Chrome",), ExperimentStats("test", 900, 120, 120)),
    ...         (("Safari",), ExperimentStats("control", 30, 3, 3))]
    >>> r = experiment_results_by_breakdown("funnel", rows, baseline_key="control")
    >>> r.overall[0].stats.number_of_samples, r.by_breakdown[("Safari",)][1][0].validation_failures
    (930, ('not-enough-exposures', 'not-enough-metric-data'))
    """
    grouped: dict[tuple[str, ...], dict[str, ExperimentStats]] = {}
    totals: dict[str, ExperimentStats] = {}
    order: list[str] = list(variant_keys or [])
    for value, s in rows:
        cell = grouped.setdefault(tuple(value or ()), {})
        cell[s.key] = cell[s.key] + s if s.key in cell else s
        totals[s.key] = totals[s.key] + s if s.key in totals else s
        if s.key not in order:
            order.append(s.key)
    if baseline_key not in totals:
        raise missing_baseline(baseline_key)
    keys = [baseline_key, *(k for k in order if k != baseline_key)]
    template = totals[baseline_key]

    def run(cell: Mapping[str, ExperimentStats]) -> tuple[ExperimentVariantResult, list[ExperimentVariantResult]]:
        arms = [cell.get(k) or _zeros(k, template) for k in keys]
        return experiment_results(metric_type, arms[0], arms[1:], **options)

    return BreakdownResults(run(totals), {value: run(cell) for value, cell in grouped.items() if value})
