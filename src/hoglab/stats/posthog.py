"""PostHog's experiment statistics, as PostHog computes them (``hoglab.stats.posthog``).

Three generations, each with PostHog's fields, thresholds and decisions, deterministic where PostHog samples:

* legacy "v1" (``/results/``): :func:`funnel_verdict`, :func:`trend_verdict` (the seeded Monte Carlo references
  are here too: :func:`posthog_monte_carlo_funnel`, :func:`posthog_monte_carlo_trend`);
* "v2" Bayesian: :func:`funnel_verdict_v2`, :func:`count_verdict_v2`, :func:`continuous_verdict_v2`, and the
  loss against the best of several arms, :func:`loss_against_best`;
* the current engine behind ``ExperimentQuery``: :func:`experiment_results` over :class:`ExperimentStats`,
  frequentist or Bayesian.

hoglab's own methods (:func:`hoglab.stats.compare`) stay as they are; docs/statistics.md sets them side by side.

>>> from hoglab.stats.posthog import funnel_verdict
>>> funnel_verdict({"control": (60, 440), "test": (85, 415)}).significance_code.value
'significant'
"""

from ._errors import PostHogStatsError
from ._loss import loss_against_best
from ._posthog import funnel_verdict, posthog_funnel_sample_size, posthog_poisson_p_value, trend_verdict
from ._posthog_engine import ExperimentStats, ExperimentVariantResult, experiment_results
from ._posthog_mc import SIMULATIONS, posthog_monte_carlo_funnel, posthog_monte_carlo_trend
from ._posthog_types import (
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
from ._posthog_v2 import (
    PostHogV2Verdict,
    continuous_posterior_v2,
    continuous_verdict_v2,
    count_verdict_v2,
    funnel_verdict_v2,
)

__all__ = [
    "CONTROL_VARIANT_KEY",
    "EXPECTED_LOSS_SIGNIFICANCE_LEVEL",
    "FF_DISTRIBUTION_THRESHOLD",
    "MIN_PROBABILITY_FOR_SIGNIFICANCE",
    "P_VALUE_SIGNIFICANCE_LEVEL",
    "SIMULATIONS",
    "ExperimentStats",
    "ExperimentVariantResult",
    "FunnelVariant",
    "PostHogFunnelVerdict",
    "PostHogStatsError",
    "PostHogTrendVerdict",
    "PostHogV2Verdict",
    "SignificanceCode",
    "TrendVariant",
    "continuous_posterior_v2",
    "continuous_verdict_v2",
    "count_verdict_v2",
    "experiment_results",
    "funnel_verdict",
    "funnel_verdict_v2",
    "loss_against_best",
    "posthog_funnel_sample_size",
    "posthog_monte_carlo_funnel",
    "posthog_monte_carlo_trend",
    "posthog_poisson_p_value",
    "trend_verdict",
]
