"""Experiment statistics: sufficient statistics in, typed results and tidy frames out.

Pure numpy/scipy/pandas, no I/O: the service and the notebook toolkit both call these
functions, so they agree to the last digit. See ``docs/statistics.md`` for every formula
and its source.

hoglab's own methods are grouped by family: ``_frequentist/`` (proportions, counts, means,
corrections, sequential tests), ``_bayesian/`` (posteriors and the quantities integrated over
them), ``_compare/`` (:func:`compare` and its inputs and results), ``_units/`` (per-unit data:
segments, the heterogeneity scan, quantiles, novelty), ``_meta/`` (a history of experiments:
the distribution of true effects, shrunken estimates, the winner's curse, a prior and planning
from it), and one module each for CUPED, planning (``_power``), the traffic-split check
(``_srm``) and :func:`recommend`. PostHog's rules are
:mod:`hoglab.stats.posthog`, a package of its own.

Each name has one home. PostHog's legacy verdicts (:func:`funnel_verdict`, :func:`trend_verdict`,
the two Monte Carlo references, their variant and verdict classes, :class:`SignificanceCode`)
live in :mod:`hoglab.stats.posthog`. They are aliases here: the same objects, kept so that
``from hoglab.stats import funnel_verdict`` still works.

>>> from hoglab.stats import compare, Proportion
>>> compare({"control": Proportion(1000, 100), "test": Proportion(1000, 130)}).row("test").verdict.value
'higher'
"""

import contextlib

from . import posthog
from ._bayesian.posteriors import BetaPosterior, GammaPosterior, NormalPosterior, StudentTPosterior
from ._bayesian.quadrature import (
    chance_to_be_best,
    chance_to_beat,
    credible_intervals,
    difference_interval,
    expected_loss,
    lift_interval,
)
from ._compare.compare import compare, compare_many
from ._compare.results import ArmSummary, Comparison, VariantComparison, Verdict
from ._cuped import cuped_effect, cuped_theta
from ._distributions import TestResult
from ._errors import PostHogStatsError, StatsComputationError, StatsError, StatsInputError
from ._frequentist.corrections import adjust_pvalues
from ._frequentist.counts import poisson_rate_ratio_interval, poisson_rate_test
from ._frequentist.means import Effect, delta_method_lift, mean_difference_interval, welch_ttest
from ._frequentist.proportions import (
    ChiSquareResult,
    chi_square_test,
    newcombe_interval,
    risk_ratio_interval,
    two_proportion_ztest,
    wilson_interval,
)
from ._frequentist.sequential import confidence_sequence, sequential_p_value
from ._health import Health, HealthCheck, Severity, bias_risk, planned_shares, srm_check
from ._meta.analysis import MetaAnalysis, WinnersCurse, meta_analysis
from ._meta.distribution import EffectPosterior, EffectPrior
from ._meta.planning import HistoryPlan, plan_from_history, prior_from_history
from ._power import minimum_detectable_effect, power, running_time, sample_size
from ._recommend import Decision, Recommendation, VariantTest, recommend, reconcile
from ._srm import SRMResult, srm
from ._statistics import Count, Proportion, Ratio, SampleMean
from ._units.heterogeneity import HeterogeneityScan, heterogeneity_scan
from ._units.novelty import Novelty, novelty
from ._units.quantiles import Quantile, QuantileEffect, quantile_difference, quantile_effects
from ._units.segments import SegmentEffects, segments
from ._warnings import StatsWarning, WarningKind
from .posthog import (  # aliases: hoglab.stats.posthog is their home
    FunnelVariant,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    SignificanceCode,
    TrendVariant,
    funnel_verdict,
    posthog_monte_carlo_funnel,
    posthog_monte_carlo_trend,
    trend_verdict,
)
from .posthog._metric.ratio_cuped import JointMoments, RatioCovariate, RatioCupedAdjustment, ratio_cuped

__all__ = [
    "ArmSummary",
    "BetaPosterior",
    "ChiSquareResult",
    "Comparison",
    "Count",
    "Decision",
    "Effect",
    "EffectPosterior",
    "EffectPrior",
    "FunnelVariant",
    "GammaPosterior",
    "Health",
    "HealthCheck",
    "HeterogeneityScan",
    "HistoryPlan",
    "JointMoments",
    "MetaAnalysis",
    "NormalPosterior",
    "Novelty",
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
    "Severity",
    "SignificanceCode",
    "StatsComputationError",
    "StatsError",
    "StatsInputError",
    "StatsWarning",
    "StudentTPosterior",
    "TestResult",
    "TrendVariant",
    "VariantComparison",
    "VariantTest",
    "Verdict",
    "WarningKind",
    "WinnersCurse",
    "adjust_pvalues",
    "bias_risk",
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
    "meta_analysis",
    "minimum_detectable_effect",
    "newcombe_interval",
    "novelty",
    "plan_from_history",
    "planned_shares",
    "poisson_rate_ratio_interval",
    "poisson_rate_test",
    "posthog",
    "posthog_monte_carlo_funnel",
    "posthog_monte_carlo_trend",
    "power",
    "prior_from_history",
    "quantile_difference",
    "quantile_effects",
    "ratio_cuped",
    "recommend",
    "reconcile",
    "risk_ratio_interval",
    "running_time",
    "sample_size",
    "segments",
    "sequential_p_value",
    "srm",
    "srm_check",
    "trend_verdict",
    "two_proportion_ztest",
    "welch_ttest",
    "wilson_interval",
]

# Show hoglab.stats.X in reprs and docs rather than the private module (as httpx does). The aliases above already
# show their home, hoglab.stats.posthog; ratio CUPED is hoglab's own, though the engine's folder holds its code.
for _name in __all__:
    _obj = globals()[_name]
    if "._" in getattr(_obj, "__module__", ""):
        with contextlib.suppress(AttributeError, TypeError):  # some objects refuse it
            _obj.__module__ = "hoglab.stats"
del _name, _obj, contextlib
