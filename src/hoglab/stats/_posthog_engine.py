"""PostHog's current experiment statistics (``ExperimentQuery``: ``products/experiments/stats/``), as PostHog's.

Each variant's sufficient statistics (:class:`ExperimentStats`, PostHog's ``ExperimentStatsBase``) become one of
three statistics (PostHog's ``metric_variant_to_statistic``):

* mean metrics: a sample mean, mean = sum/n, variance s² = (Σx² − (Σx)²/n)/(n − 1);
* funnel metrics: a proportion, p = sum/n with variance p(1 − p) (no n − 1: the *unpooled* test);
* ratio metrics: a ratio of two sample means, R = Σm/Σd with the delta-method variance
  Var(m)/d̄² + m̄²·Var(d)/d̄⁴ − 2·m̄·Cov(m, d)/d̄³, Cov = (Σmd − ΣmΣd/n)/(n − 1).

The effect is **relative** by default, Δ = (μ_T − μ_C)/μ_C, with the delta-method variance
V = σ²_T/(n_T·μ_C²) + μ_T²·σ²_C/(n_C·μ_C⁴) (``difference_type: ABSOLUTE``: Δ = μ_T − μ_C, V = σ²_T/n_T + σ²_C/n_C).

* **frequentist** (``stats_config.method: "frequentist"``): Welch's t on Δ/√V with the Welch–Satterthwaite
  degrees of freedom of the raw variances, ν = (σ²_T/n_T + σ²_C/n_C)² / ((σ²_T/n_T)²/(n_T − 1) + (σ²_C/n_C)²/(n_C − 1));
  ``p_value`` two-sided; ``confidence_interval`` Δ ± t_{1−α/2, ν}·√V; ``significant`` when p < α
  (``stats_config.frequentist.alpha``, default 0.05).
* **bayesian** (the default): a flat prior on Δ, so the posterior is N(Δ, V); ``chance_to_win`` =
  P(effect > 0) (P(effect < 0) for a metric whose goal is to decrease); ``credible_interval`` the central
  ``ci_level`` (default 0.95) interval; ``significant`` when the chance to win is above ``ci_level`` or below
  1 − ``ci_level`` (PostHog's ``is_decisive``).

Before testing, PostHog validates every arm: fewer than 50 exposed units → ``not-enough-exposures``; funnel
metrics with fewer than 5 conversions → ``not-enough-metric-data``; a baseline whose sum is 0 →
``baseline-mean-is-zero``. An arm that fails (or any arm, when the baseline fails) gets no test fields.

Differences from PostHog, both deliberate: p-values use the t distribution's survival function (PostHog's
``2·(1 − cdf)`` rounds p-values below ~1e-16 to 0), and a case PostHog's test refuses mid-way (a Bayesian
proportion test needs ≥ 5 successes *and* failures; a relative effect needs a positive baseline mean) leaves the
variant without test fields instead of failing the whole query.

>>> control = ExperimentStats("control", 2507, 1196.87, 37377.9767)
>>> test = ExperimentStats("test", 2461, 1922.7, 94698.29)
>>> _, [result] = experiment_results("mean", control, [test], stats_config={"method": "frequentist"})
>>> round(result.p_value, 4), [round(x, 4) for x in result.confidence_interval]
(0.0849, [-0.0875, 1.3605])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from scipy import special

from ._errors import StatsInputError

__all__ = ["ExperimentStats", "ExperimentVariantResult", "experiment_results", "relative_effect"]

MetricType = Literal["mean", "funnel", "ratio"]
Method = Literal["bayesian", "frequentist"]
MIN_EXPOSURES = 50
MIN_FUNNEL_CONVERSIONS = 5


@dataclass(frozen=True)
class ExperimentStats:
    """One variant's sufficient statistics, PostHog's ``ExperimentStatsBase``."""

    key: str
    number_of_samples: int
    sum: float
    sum_squares: float
    denominator_sum: float | None = None
    denominator_sum_squares: float | None = None
    numerator_denominator_sum_product: float | None = None
    step_counts: tuple[int, ...] | None = None

    def to_posthog(self) -> dict[str, Any]:
        """The JSON members PostHog writes for these statistics (ratio and funnel fields only when set)."""
        body: dict[str, Any] = {"key": self.key, "number_of_samples": self.number_of_samples, "sum": self.sum,
                                "sum_squares": self.sum_squares}  # fmt: skip
        if self.denominator_sum is not None:
            body["denominator_sum"] = self.denominator_sum
            body["denominator_sum_squares"] = self.denominator_sum_squares
            body["numerator_denominator_sum_product"] = self.numerator_denominator_sum_product
        if self.step_counts is not None:
            body["step_counts"] = list(self.step_counts)
        return body


@dataclass(frozen=True)
class ExperimentVariantResult:
    """One variant's answer: its statistics, validation failures and (when valid) its test, PostHog's
    ``ExperimentStatsBaseValidated`` (baseline) or ``ExperimentVariantResultFrequentist`` / ``...Bayesian``."""

    stats: ExperimentStats
    method: Method
    significant: bool | None = None
    p_value: float | None = None
    confidence_interval: tuple[float, float] | None = None
    chance_to_win: float | None = None
    credible_interval: tuple[float, float] | None = None
    validation_failures: tuple[str, ...] = ()

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


@dataclass(frozen=True)
class _Moments:
    n: int
    mean: float
    variance: float


def _moments(metric_type: MetricType, s: ExperimentStats) -> _Moments:
    n = int(s.number_of_samples)
    if metric_type == "funnel":
        p = s.sum / n
        return _Moments(n, p, p * (1.0 - p))
    if metric_type == "mean":
        return _Moments(n, s.sum / n, _sample_variance(n, s.sum, s.sum_squares))
    d_sum = float(s.denominator_sum or 0.0)
    if abs(d_sum / n) < 1e-10:
        raise StatsInputError(f"ratio metric of {s.key!r}: the denominator's mean is zero")
    m_mean, d_mean = s.sum / n, d_sum / n
    m_var = _sample_variance(n, s.sum, s.sum_squares)
    d_var = _sample_variance(n, d_sum, float(s.denominator_sum_squares or 0.0))
    cov = 0.0 if n == 1 else (float(s.numerator_denominator_sum_product or 0.0) - s.sum * d_sum / n) / (n - 1)
    variance = m_var / d_mean**2 + m_mean**2 * d_var / d_mean**4 - 2.0 * m_mean * cov / d_mean**3
    return _Moments(n, s.sum / d_sum, variance)


def _sample_variance(n: int, total: float, squares: float) -> float:
    return 0.0 if n <= 1 else (squares - total * total / n) / (n - 1)


def relative_effect(treatment: _Moments, control: _Moments, *, relative: bool = True) -> tuple[float, float]:
    """The effect and its variance: relative lift by the delta method, or the absolute difference."""
    if not relative:
        return treatment.mean - control.mean, treatment.variance / treatment.n + control.variance / control.n
    if abs(control.mean) < 1e-10:
        raise StatsInputError("a relative effect needs a non-zero baseline mean")
    effect = (treatment.mean - control.mean) / control.mean
    variance = treatment.variance / (treatment.n * control.mean**2) + (
        treatment.mean**2 * control.variance / (control.n * control.mean**4)
    )
    return effect, variance


def _welch_df(t: _Moments, c: _Moments) -> float:
    a, b = t.variance / t.n, c.variance / c.n
    return (a + b) ** 2 / (a * a / (t.n - 1) + b * b / (c.n - 1))


def _frequentist(t: _Moments, c: _Moments, alpha: float, relative: bool) -> tuple[float, tuple[float, float]]:
    effect, variance = relative_effect(t, c, relative=relative)
    if variance <= 0 or min(t.n, c.n) < 2:
        raise StatsInputError("the t-test needs positive variance and two units per arm")
    df, se = _welch_df(t, c), math.sqrt(variance)
    p_value = float(2.0 * special.stdtr(df, -abs(effect / se)))
    margin = float(special.stdtrit(df, 1.0 - alpha / 2.0)) * se
    return p_value, (effect - margin, effect + margin)


def _bayesian(t: _Moments, c: _Moments, metric_type: MetricType, ci_level: float, relative: bool,
              decrease: bool) -> tuple[float, tuple[float, float]]:  # fmt: skip
    if metric_type == "funnel":
        for m in (t, c):  # PostHog's normal-approximation check: five successes and five failures
            if min(m.mean * m.n, (1 - m.mean) * m.n) < 5 - 1e-9:
                raise StatsInputError("the Bayesian proportion test needs 5 successes and 5 failures per arm")
    if relative and c.mean <= 0:
        raise StatsInputError("a relative effect needs a positive baseline mean")
    effect, variance = relative_effect(t, c, relative=relative)
    if variance <= 0:
        raise StatsInputError("the effect's variance must be positive")
    sd = math.sqrt(variance)
    win = float(special.ndtr(-effect / sd) if decrease else special.ndtr(effect / sd))
    z = float(special.ndtri(1.0 - (1.0 - ci_level) / 2.0))
    return win, (effect - z * sd, effect + z * sd)


def _validate(metric_type: MetricType, s: ExperimentStats, *, baseline: bool) -> tuple[str, ...]:
    failures = []
    if s.number_of_samples < MIN_EXPOSURES:
        failures.append("not-enough-exposures")
    if metric_type == "funnel" and s.sum < MIN_FUNNEL_CONVERSIONS:
        failures.append("not-enough-metric-data")
    # A ratio's baseline without denominator has no mean at all (PostHog only looks at the numerator's sum).
    if baseline and (s.sum == 0 or (metric_type == "ratio" and not s.denominator_sum)):
        failures.append("baseline-mean-is-zero")
    return tuple(failures)


def _number(config: Mapping[str, Any], name: str, default: float) -> float:
    # PostHog falls back to the default for a value out of (0, 1) rather than refusing it.
    try:
        value = float(config.get(name, default))
    except (TypeError, ValueError):
        return default
    return value if 0.0 < value < 1.0 else default


def experiment_results(
    metric_type: MetricType,
    baseline: ExperimentStats,
    variants: Sequence[ExperimentStats],
    *,
    stats_config: Mapping[str, Any] | None = None,
    goal: Literal["increase", "decrease"] = "increase",
) -> tuple[ExperimentVariantResult, list[ExperimentVariantResult]]:
    """PostHog's answer for one metric: the baseline's validation and each variant's result.

    ``stats_config`` is the experiment's: ``{"method": "bayesian" | "frequentist", "frequentist": {"alpha": ..,
    "difference_type": "RELATIVE" | "ABSOLUTE"}, "bayesian": {"ci_level": .., "difference_type": ..}}``; an
    unknown method means Bayesian (PostHog's fallback).
    """
    if metric_type not in ("mean", "funnel", "ratio"):
        raise StatsInputError(f"metric_type must be mean, funnel or ratio, got {metric_type!r}")
    for s in (baseline, *variants):
        if s.number_of_samples < 0 or not all(math.isfinite(float(v)) for v in (s.sum, s.sum_squares)):
            raise StatsInputError(f"variant {s.key!r}: statistics must be finite with a non-negative count")
    config = dict(stats_config or {})
    method: Method = "frequentist" if config.get("method") == "frequentist" else "bayesian"
    given = config.get(method)
    own: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    relative = str(own.get("difference_type", "RELATIVE")).upper() != "ABSOLUTE"
    failures = _validate(metric_type, baseline, baseline=True)
    base = ExperimentVariantResult(baseline, method, validation_failures=failures)
    try:
        control = None if base.validation_failures else _moments(metric_type, baseline)
    except (StatsInputError, OverflowError):  # a denominator near 0, values near the float range: no test decides
        control = None
    results = []
    for stats in variants:
        failures = _validate(metric_type, stats, baseline=False)
        result = ExperimentVariantResult(stats, method, validation_failures=failures)
        if control is not None and not result.validation_failures:
            try:
                treatment = _moments(metric_type, stats)
                if method == "frequentist":
                    alpha = _number(own, "alpha", 0.05)
                    p_value, interval = _frequentist(treatment, control, alpha, relative)
                    result = replace(result, significant=p_value < alpha, p_value=p_value, confidence_interval=interval)
                else:
                    level = _number(own, "ci_level", 0.95)
                    win, interval = _bayesian(treatment, control, metric_type, level, relative, goal == "decrease")
                    decisive = win > level or win < 1.0 - level
                    result = replace(result, significant=decisive, chance_to_win=win, credible_interval=interval)
            except (StatsInputError, OverflowError):
                pass  # a case the test cannot decide: the variant keeps its statistics, without test fields
        results.append(result)
    return base, results
