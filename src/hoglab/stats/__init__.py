"""Experiment statistics: sufficient statistics in, typed results and tidy frames out.

Pure numpy/scipy/pandas, no I/O: the service and the notebook toolkit both call these
functions, so they agree to the last digit. See ``docs/statistics.md`` for every formula
and its source.

>>> from hoglab.stats import compare, Proportion
>>> compare({"control": Proportion(1000, 100), "test": Proportion(1000, 130)}).row("test").verdict.value
'higher'
"""

import contextlib

from . import posthog
from ._bayes import (
    chance_to_be_best,
    chance_to_beat,
    credible_intervals,
    difference_interval,
    expected_loss,
    lift_interval,
)
from ._compare import compare, compare_many
from ._corrections import adjust_pvalues
from ._counts import poisson_rate_ratio_interval, poisson_rate_test
from ._cuped import cuped_effect, cuped_theta
from ._data import Count, Proportion, Ratio, SampleMean
from ._errors import PostHogStatsError, StatsComputationError, StatsError, StatsInputError
from ._heterogeneity import HeterogeneityScan, heterogeneity_scan
from ._means import Effect, delta_method_lift, mean_difference_interval, welch_ttest
from ._posteriors import BetaPosterior, GammaPosterior, NormalPosterior, StudentTPosterior
from ._posthog import funnel_verdict, trend_verdict
from ._posthog_mc import posthog_monte_carlo_funnel, posthog_monte_carlo_trend
from ._posthog_types import (
    FunnelVariant,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    SignificanceCode,
    TrendVariant,
)
from ._power import minimum_detectable_effect, power, running_time, sample_size
from ._proportions import (
    ChiSquareResult,
    chi_square_test,
    newcombe_interval,
    risk_ratio_interval,
    two_proportion_ztest,
    wilson_interval,
)
from ._quantiles import Quantile, QuantileEffect, quantile_difference, quantile_effects
from ._ratio_cuped import JointMoments, RatioCovariate, RatioCupedAdjustment, ratio_cuped
from ._recommend import Decision, Recommendation, recommend
from ._results import ArmSummary, Comparison, VariantComparison, Verdict
from ._segments import SegmentEffects, segments
from ._sequential import confidence_sequence, sequential_p_value
from ._srm import SRMResult, srm
from ._types import TestResult
from ._warnings import StatsWarning, WarningKind

__all__ = [
    "ArmSummary",
    "BetaPosterior",
    "ChiSquareResult",
    "Comparison",
    "Count",
    "Decision",
    "Effect",
    "FunnelVariant",
    "GammaPosterior",
    "HeterogeneityScan",
    "JointMoments",
    "NormalPosterior",
    "PostHogFunnelVerdict",
    "PostHogStatsError",
    "PostHogTrendVerdict",
    "Proportion",
    "Quantile",
    "QuantileEffect",
    "Ratio",
    "RatioCovariate",
    "RatioCupedAdjustment",
    "Recommendation",
    "SRMResult",
    "SampleMean",
    "SegmentEffects",
    "SignificanceCode",
    "StatsComputationError",
    "StatsError",
    "StatsInputError",
    "StatsWarning",
    "StudentTPosterior",
    "TestResult",
    "TrendVariant",
    "VariantComparison",
    "Verdict",
    "WarningKind",
    "adjust_pvalues",
    "chance_to_be_best",
    "chance_to_beat",
    "chi_square_test",
    "compare",
    "compare_many",
    "confidence_sequence",
    "credible_intervals",
    "cuped_effect",
    "cuped_theta",
    "delta_method_lift",
    "difference_interval",
    "expected_loss",
    "funnel_verdict",
    "heterogeneity_scan",
    "lift_interval",
    "mean_difference_interval",
    "minimum_detectable_effect",
    "newcombe_interval",
    "poisson_rate_ratio_interval",
    "poisson_rate_test",
    "posthog",
    "posthog_monte_carlo_funnel",
    "posthog_monte_carlo_trend",
    "power",
    "quantile_difference",
    "quantile_effects",
    "ratio_cuped",
    "recommend",
    "risk_ratio_interval",
    "running_time",
    "sample_size",
    "segments",
    "sequential_p_value",
    "srm",
    "trend_verdict",
    "two_proportion_ztest",
    "welch_ttest",
    "wilson_interval",
]

# Show hoglab.stats.X in reprs and docs rather than the private module (as httpx does).
for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and getattr(_obj, "__module__", "").startswith("hoglab.stats._"):
        with contextlib.suppress(AttributeError, TypeError):  # some objects refuse it
            _obj.__module__ = "hoglab.stats"
del _name, _obj, contextlib
