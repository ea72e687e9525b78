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

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:  # THE list of exports: type checkers read it, and lazy_exports reads it at run time
    from .. import (  # aliases: hoglab.stats is their home
        PostHogStatsError as PostHogStatsError,
        RatioCovariate as RatioCovariate,
    )
    from ._legacy.v1 import (
        funnel_verdict as funnel_verdict,
        posthog_funnel_sample_size as posthog_funnel_sample_size,
        posthog_poisson_p_value as posthog_poisson_p_value,
        trend_verdict as trend_verdict,
    )
    from ._legacy.v1_monte_carlo import (
        SIMULATIONS as SIMULATIONS,
        posthog_monte_carlo_funnel as posthog_monte_carlo_funnel,
        posthog_monte_carlo_trend as posthog_monte_carlo_trend,
    )
    from ._legacy.v2 import (
        PostHogV2Verdict as PostHogV2Verdict,
        continuous_posterior_v2 as continuous_posterior_v2,
        continuous_verdict_v2 as continuous_verdict_v2,
        count_verdict_v2 as count_verdict_v2,
        experiment_trends_verdict as experiment_trends_verdict,
        funnel_verdict_v2 as funnel_verdict_v2,
        pairwise_probabilities as pairwise_probabilities,
        trend_verdict_v2_early as trend_verdict_v2_early,
    )
    from ._legacy.v2_loss import (
        betabinomial_loss_against_best as betabinomial_loss_against_best,
        loss_against_best as loss_against_best,
    )
    from ._legacy.vocabulary import (
        CONTROL_VARIANT_KEY as CONTROL_VARIANT_KEY,
        EXPECTED_LOSS_SIGNIFICANCE_LEVEL as EXPECTED_LOSS_SIGNIFICANCE_LEVEL,
        FF_DISTRIBUTION_THRESHOLD as FF_DISTRIBUTION_THRESHOLD,
        MIN_PROBABILITY_FOR_SIGNIFICANCE as MIN_PROBABILITY_FOR_SIGNIFICANCE,
        P_VALUE_SIGNIFICANCE_LEVEL as P_VALUE_SIGNIFICANCE_LEVEL,
        FunnelVariant as FunnelVariant,
        PostHogFunnelVerdict as PostHogFunnelVerdict,
        PostHogTrendVerdict as PostHogTrendVerdict,
        SignificanceCode as SignificanceCode,
        TrendVariant as TrendVariant,
    )
    from ._metric.bayesian import (
        BayesianResult as BayesianResult,
        GaussianPrior as GaussianPrior,
        bayesian_test as bayesian_test,
        gaussian_risk as gaussian_risk,
    )
    from ._metric.config import (
        DEFAULT_CUPED_LOOKBACK_DAYS as DEFAULT_CUPED_LOOKBACK_DAYS,
        DEFAULT_SEQUENTIAL_TUNING_PARAMETER as DEFAULT_SEQUENTIAL_TUNING_PARAMETER,
        CupedSettings as CupedSettings,
        StatsSettings as StatsSettings,
        TeamDefaults as TeamDefaults,
        baseline_variant_key as baseline_variant_key,
        bayesian_ci_level as bayesian_ci_level,
        bayesian_interval_bounds as bayesian_interval_bounds,
        resolve_correction as resolve_correction,
        resolve_cuped as resolve_cuped,
        resolve_cuped_variance as resolve_cuped_variance,
        resolve_stats_settings as resolve_stats_settings,
    )
    from ._metric.cuped import (
        CupedAdjustment as CupedAdjustment,
        CupedCovariate as CupedCovariate,
        cuped_adjust as cuped_adjust,
        cuped_adjust_arm as cuped_adjust_arm,
        cuped_pair_theta as cuped_pair_theta,
    )
    from ._metric.engine import (
        BreakdownResults as BreakdownResults,
        ExperimentStats as ExperimentStats,
        ExperimentVariantResult as ExperimentVariantResult,
        experiment_results as experiment_results,
        experiment_results_by_breakdown as experiment_results_by_breakdown,
        split_baseline as split_baseline,
    )
    from ._metric.frequentist import (
        FrequentistResult as FrequentistResult,
        frequentist_test as frequentist_test,
    )
    from ._metric.statistics import (
        EffectEstimate as EffectEstimate,
        ProportionStatistic as ProportionStatistic,
        RatioStatistic as RatioStatistic,
        SampleMeanStatistic as SampleMeanStatistic,
        effect_between as effect_between,
    )
    from ._metric.verdict import (
        calibrated_results as calibrated_results,
        metric_recommendation as metric_recommendation,
        metric_test_name as metric_test_name,
        verdict_difference as verdict_difference,
    )

# Shown as hoglab.stats.posthog.X in reprs and docs rather than the private module; its two aliases keep
# hoglab.stats.
__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__, public_home="hoglab.stats.posthog", private_only=True)
del TYPE_CHECKING, lazy_exports  # not exports
