"""PostHog's experiment statistics, as PostHog computes them (``hoglab.stats.posthog``).

Two generations of experiments, each with PostHog's fields, thresholds and decisions, deterministic where PostHog
samples. The code is in two folders named after them:

* ``_legacy/``, the filters-based results (``/results/``). Rules "v1": :func:`funnel_verdict`,
  :func:`trend_verdict` (with seeded Monte Carlo references, :func:`posthog_monte_carlo_funnel`,
  :func:`posthog_monte_carlo_trend`). Rules "v2" (Bayesian): :func:`funnel_verdict_v2`, :func:`count_verdict_v2`,
  :func:`continuous_verdict_v2` (pairwise probabilities, the loss against the best of the others, Beta-Binomial
  for funnels), the two older trend rules PostHog's tests still exercise (:func:`trend_verdict_v2_early`,
  :func:`experiment_trends_verdict`), and the losses, :func:`loss_against_best`,
  :func:`betabinomial_loss_against_best`.
* ``_metric/``, the current engine behind ``ExperimentQuery``: :func:`experiment_results` over
  :class:`ExperimentStats`, frequentist (fixed or sequential) or Bayesian, with CUPED, any baseline arm
  (holdouts) and breakdowns (:func:`experiment_results_by_breakdown`). Its parts are public too: the statistics
  (:class:`SampleMeanStatistic`, :class:`ProportionStatistic`, :class:`RatioStatistic`, :func:`effect_between`),
  CUPED (:func:`cuped_adjust`), the tests (:func:`frequentist_test`, :func:`bayesian_test`) and the settings
  (:func:`resolve_stats_settings`, :func:`resolve_cuped`, :func:`baseline_variant_key`).

hoglab's own methods (:func:`hoglab.stats.compare`) stay as they are; docs/statistics.md sets them side by side.
Two names here are aliases of hoglab.stats' own, the same objects: :class:`PostHogStatsError` (hoglab.stats'
error tree) and :class:`RatioCovariate` (hoglab's ratio CUPED, an extension PostHog's engine lacks).

>>> from hoglab.stats.posthog import funnel_verdict
>>> funnel_verdict({"control": (60, 440), "test": (85, 415)}).significance_code.value
'significant'
"""

import contextlib

from .._errors import PostHogStatsError  # alias: hoglab.stats is its home
from ._legacy.v1 import funnel_verdict, posthog_funnel_sample_size, posthog_poisson_p_value, trend_verdict
from ._legacy.v1_monte_carlo import SIMULATIONS, posthog_monte_carlo_funnel, posthog_monte_carlo_trend
from ._legacy.v2 import (
    PostHogV2Verdict,
    continuous_posterior_v2,
    continuous_verdict_v2,
    count_verdict_v2,
    experiment_trends_verdict,
    funnel_verdict_v2,
    pairwise_probabilities,
    trend_verdict_v2_early,
)
from ._legacy.v2_loss import betabinomial_loss_against_best, loss_against_best
from ._legacy.vocabulary import (
    CONTROL_VARIANT_KEY,
    EXPECTED_LOSS_SIGNIFICANCE_LEVEL,
    FF_DISTRIBUTION_THRESHOLD,
    MIN_PROBABILITY_FOR_SIGNIFICANCE,
    P_VALUE_SIGNIFICANCE_LEVEL,
    FunnelVariant,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    SignificanceCode,
    TrendVariant,
)
from ._metric.bayesian import BayesianResult, GaussianPrior, bayesian_test, gaussian_risk
from ._metric.config import (
    DEFAULT_CUPED_LOOKBACK_DAYS,
    DEFAULT_SEQUENTIAL_TUNING_PARAMETER,
    CupedSettings,
    StatsSettings,
    TeamDefaults,
    baseline_variant_key,
    bayesian_ci_level,
    bayesian_interval_bounds,
    resolve_correction,
    resolve_cuped,
    resolve_cuped_variance,
    resolve_stats_settings,
)
from ._metric.cuped import CupedAdjustment, CupedCovariate, cuped_adjust, cuped_adjust_arm, cuped_pair_theta
from ._metric.engine import (
    BreakdownResults,
    ExperimentStats,
    ExperimentVariantResult,
    experiment_results,
    experiment_results_by_breakdown,
    split_baseline,
)
from ._metric.frequentist import FrequentistResult, frequentist_test
from ._metric.ratio_cuped import RatioCovariate  # alias: hoglab.stats is its home
from ._metric.statistics import EffectEstimate, ProportionStatistic, RatioStatistic, SampleMeanStatistic, effect_between
from ._metric.verdict import calibrated_results, metric_recommendation, metric_test_name, verdict_difference

__all__ = [
    "CONTROL_VARIANT_KEY",
    "DEFAULT_CUPED_LOOKBACK_DAYS",
    "DEFAULT_SEQUENTIAL_TUNING_PARAMETER",
    "EXPECTED_LOSS_SIGNIFICANCE_LEVEL",
    "FF_DISTRIBUTION_THRESHOLD",
    "MIN_PROBABILITY_FOR_SIGNIFICANCE",
    "P_VALUE_SIGNIFICANCE_LEVEL",
    "SIMULATIONS",
    "BayesianResult",
    "BreakdownResults",
    "CupedAdjustment",
    "CupedCovariate",
    "CupedSettings",
    "EffectEstimate",
    "ExperimentStats",
    "ExperimentVariantResult",
    "FrequentistResult",
    "FunnelVariant",
    "GaussianPrior",
    "PostHogFunnelVerdict",
    "PostHogStatsError",
    "PostHogTrendVerdict",
    "PostHogV2Verdict",
    "ProportionStatistic",
    "RatioCovariate",
    "RatioStatistic",
    "SampleMeanStatistic",
    "SignificanceCode",
    "StatsSettings",
    "TeamDefaults",
    "TrendVariant",
    "baseline_variant_key",
    "bayesian_ci_level",
    "bayesian_interval_bounds",
    "bayesian_test",
    "betabinomial_loss_against_best",
    "calibrated_results",
    "continuous_posterior_v2",
    "continuous_verdict_v2",
    "count_verdict_v2",
    "cuped_adjust",
    "cuped_adjust_arm",
    "cuped_pair_theta",
    "effect_between",
    "experiment_results",
    "experiment_results_by_breakdown",
    "experiment_trends_verdict",
    "frequentist_test",
    "funnel_verdict",
    "funnel_verdict_v2",
    "gaussian_risk",
    "loss_against_best",
    "metric_recommendation",
    "metric_test_name",
    "pairwise_probabilities",
    "posthog_funnel_sample_size",
    "posthog_monte_carlo_funnel",
    "posthog_monte_carlo_trend",
    "posthog_poisson_p_value",
    "resolve_correction",
    "resolve_cuped",
    "resolve_cuped_variance",
    "resolve_stats_settings",
    "split_baseline",
    "trend_verdict",
    "trend_verdict_v2_early",
    "verdict_difference",
]

# Show hoglab.stats.posthog.X in reprs and docs rather than the private module; the two aliases keep hoglab.stats.
for _name in __all__:
    _obj = globals()[_name]
    if _name not in ("PostHogStatsError", "RatioCovariate") and "._" in getattr(_obj, "__module__", ""):
        with contextlib.suppress(AttributeError, TypeError):  # some objects refuse it
            _obj.__module__ = "hoglab.stats.posthog"
del _name, _obj, contextlib
