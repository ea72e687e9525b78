"""PostHog-compatible experiment verdicts (``hoglab.stats.posthog``).

The same fields, thresholds and decisions as PostHog's legacy experiment results, with the
probabilities and expected loss computed deterministically instead of by 100,000 unseeded
random draws. The Monte Carlo versions are here too, seeded, as references.

>>> from hoglab.stats.posthog import funnel_verdict
>>> funnel_verdict({"control": (60, 440), "test": (85, 415)}).significance_code.value
'significant'
"""

from ._errors import PostHogStatsError
from ._posthog import funnel_verdict, posthog_funnel_sample_size, posthog_poisson_p_value, trend_verdict
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

__all__ = [
    "CONTROL_VARIANT_KEY",
    "EXPECTED_LOSS_SIGNIFICANCE_LEVEL",
    "FF_DISTRIBUTION_THRESHOLD",
    "MIN_PROBABILITY_FOR_SIGNIFICANCE",
    "P_VALUE_SIGNIFICANCE_LEVEL",
    "SIMULATIONS",
    "FunnelVariant",
    "PostHogFunnelVerdict",
    "PostHogStatsError",
    "PostHogTrendVerdict",
    "SignificanceCode",
    "TrendVariant",
    "funnel_verdict",
    "posthog_funnel_sample_size",
    "posthog_monte_carlo_funnel",
    "posthog_monte_carlo_trend",
    "posthog_poisson_p_value",
    "trend_verdict",
]
