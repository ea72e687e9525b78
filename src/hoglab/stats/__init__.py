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

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from . import posthog as posthog  # PostHog's rules, a package of its own (lazy too)

# Nothing below is imported until first used: ``import hoglab.stats`` (and so the service's start, which reaches
# hoglab.stats.posthog) stays free of SciPy and pandas until a statistic is computed.
if TYPE_CHECKING:  # THE list of exports: type checkers read it, and lazy_exports reads it at run time
    from ._bayesian.posteriors import (
        BetaPosterior as BetaPosterior,
        GammaPosterior as GammaPosterior,
        NormalPosterior as NormalPosterior,
        StudentTPosterior as StudentTPosterior,
    )
    from ._bayesian.quadrature import (
        chance_to_be_best as chance_to_be_best,
        chance_to_beat as chance_to_beat,
        credible_intervals as credible_intervals,
        difference_interval as difference_interval,
        expected_loss as expected_loss,
        lift_interval as lift_interval,
    )
    from ._compare.compare import (
        compare as compare,
        compare_many as compare_many,
    )
    from ._compare.results import (
        ArmSummary as ArmSummary,
        Comparison as Comparison,
        VariantComparison as VariantComparison,
        Verdict as Verdict,
    )
    from ._cuped import (
        cuped_effect as cuped_effect,
        cuped_theta as cuped_theta,
    )
    from ._distributions import (
        TestResult as TestResult,
    )
    from ._errors import (
        PostHogStatsError as PostHogStatsError,
        StatsComputationError as StatsComputationError,
        StatsError as StatsError,
        StatsInputError as StatsInputError,
    )
    from ._frequentist.corrections import (
        adjust_pvalues as adjust_pvalues,
    )
    from ._frequentist.counts import (
        poisson_rate_ratio_interval as poisson_rate_ratio_interval,
        poisson_rate_test as poisson_rate_test,
    )
    from ._frequentist.means import (
        Effect as Effect,
        delta_method_lift as delta_method_lift,
        mean_difference_interval as mean_difference_interval,
        welch_ttest as welch_ttest,
    )
    from ._frequentist.proportions import (
        ChiSquareResult as ChiSquareResult,
        chi_square_test as chi_square_test,
        newcombe_interval as newcombe_interval,
        risk_ratio_interval as risk_ratio_interval,
        two_proportion_ztest as two_proportion_ztest,
        wilson_interval as wilson_interval,
    )
    from ._frequentist.sequential import (
        confidence_sequence as confidence_sequence,
        sequential_p_value as sequential_p_value,
    )
    from ._health import (
        Health as Health,
        HealthCheck as HealthCheck,
        Severity as Severity,
        bias_risk as bias_risk,
        planned_shares as planned_shares,
        srm_check as srm_check,
    )
    from ._meta.analysis import (
        MetaAnalysis as MetaAnalysis,
        WinnersCurse as WinnersCurse,
        meta_analysis as meta_analysis,
    )
    from ._meta.distribution import (
        EffectPosterior as EffectPosterior,
        EffectPrior as EffectPrior,
    )
    from ._meta.planning import (
        HistoryPlan as HistoryPlan,
        plan_from_history as plan_from_history,
        prior_from_history as prior_from_history,
    )
    from ._power import (
        minimum_detectable_effect as minimum_detectable_effect,
        power as power,
        running_time as running_time,
        sample_size as sample_size,
    )
    from ._recommend import (
        Decision as Decision,
        Recommendation as Recommendation,
        VariantTest as VariantTest,
        recommend as recommend,
        reconcile as reconcile,
    )
    from ._srm import (
        SRMResult as SRMResult,
        srm as srm,
    )
    from ._statistics import (
        Count as Count,
        Proportion as Proportion,
        Ratio as Ratio,
        SampleMean as SampleMean,
    )
    from ._units.heterogeneity import (
        HeterogeneityScan as HeterogeneityScan,
        heterogeneity_scan as heterogeneity_scan,
    )
    from ._units.novelty import (
        Novelty as Novelty,
        novelty as novelty,
    )
    from ._units.quantiles import (
        Quantile as Quantile,
        QuantileEffect as QuantileEffect,
        quantile_difference as quantile_difference,
        quantile_effects as quantile_effects,
    )
    from ._units.segments import (
        SegmentEffects as SegmentEffects,
        segments as segments,
    )
    from ._warnings import (
        StatsWarning as StatsWarning,
        WarningKind as WarningKind,
    )
    from .posthog import (  # aliases: hoglab.stats.posthog is their home
        FunnelVariant as FunnelVariant,
        PostHogFunnelVerdict as PostHogFunnelVerdict,
        PostHogTrendVerdict as PostHogTrendVerdict,
        SignificanceCode as SignificanceCode,
        TrendVariant as TrendVariant,
        funnel_verdict as funnel_verdict,
        posthog_monte_carlo_funnel as posthog_monte_carlo_funnel,
        posthog_monte_carlo_trend as posthog_monte_carlo_trend,
        trend_verdict as trend_verdict,
    )
    from .posthog._metric.ratio_cuped import (
        JointMoments as JointMoments,
        RatioCovariate as RatioCovariate,
        RatioCupedAdjustment as RatioCupedAdjustment,
        ratio_cuped as ratio_cuped,
    )

# Shown as hoglab.stats.X in reprs and docs rather than the private module (as httpx does); the aliases of
# hoglab.stats.posthog keep that home.
__getattr__, __dir__, _exported = lazy_exports(__name__, __file__, public_home="hoglab.stats", private_only=True)
__all__ = sorted([*_exported, "posthog"])
del TYPE_CHECKING, lazy_exports  # not exports
