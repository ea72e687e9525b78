"""The reconciled verdict of an experiment's results, for either generation.

What :func:`hoglab.stats.recommend` needs is read from the experiment (its planned minimum detectable effect, days
running, planned split) and from either kind of result (legacy or metric).

``results(...).summary()``, the picker, the report and ``hoglab demo`` all say the recommendation through here,
so they agree.

>>> planning_inputs({"parameters": {"minimum_detectable_effect": 10}, "start_date": "2025-01-01T00:00:00Z",
...                  "end_date": "2025-01-31T00:00:00Z"})
(0.1, 30.0)
>>> planning_inputs({"parameters": {}})
(None, None)
>>> planned_split({"parameters": {"feature_flag_variants": [{"key": "control", "rollout_percentage": 50},
...                                                          {"key": "test", "rollout_percentage": 50}]}})
{'control': 0.5, 'test': 0.5}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..stats import Count, Proportion, Recommendation
    from ..stats._options import Correction
    from ._legacy_results import ExperimentResult
    from ._metric_results import MetricExperimentResult

__all__ = ["DEFAULT_MDE", "legacy_recommendation", "metric_recommendation", "planned_split", "planning_inputs",
           "variant_statistics"]  # fmt: skip

DEFAULT_MDE = 0.05
"""PostHog's default minimum detectable effect (5%), assumed (and said so) when the experiment names none."""

def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def planning_inputs(experiment: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    """The relative MDE (``parameters.minimum_detectable_effect`` is in percent; None when unset, so the
    recommendation says which effect it assumed) and the days from ``start_date`` to ``end_date`` (or now), None
    before the start."""
    experiment = experiment or {}
    parameters = experiment.get("parameters") or {}
    mde: float | None
    try:
        raw = parameters.get("minimum_detectable_effect")
        mde = float(raw) / 100 if raw is not None else None
    except (TypeError, ValueError):
        mde = None
    if mde is not None and (not mde > 0 or not math.isfinite(mde)):
        mde = None
    start = _moment(experiment.get("start_date"))
    if start is None:
        return mde, None
    end = _moment(experiment.get("end_date")) or datetime.now(UTC)
    return mde, max((end - start).total_seconds() / 86_400, 0.0)


def planned_split(experiment: Mapping[str, Any] | None) -> dict[str, float]:
    """Planned share of each variant (0–1), from the flag's variants, else the experiment's parameters."""
    experiment = experiment or {}
    flag = experiment.get("feature_flag") or {}
    flag_filters = (flag.get("filters") if isinstance(flag, Mapping) else None) or {}
    variants = (flag_filters.get("multivariate") or {}).get("variants") or []
    if not variants:
        variants = (experiment.get("parameters") or {}).get("feature_flag_variants") or []
    return {
        str(v["key"]): float(v.get("rollout_percentage") or 0) / 100
        for v in variants
        if isinstance(v, Mapping) and "key" in v
    }


def _split_for(statistics: Mapping[str, Any], experiment: Mapping[str, Any] | None) -> dict[str, float] | None:
    planned = planned_split(experiment)
    return planned if planned and set(planned) == set(statistics) and sum(planned.values()) > 0 else None


def variant_statistics(result: ExperimentResult) -> tuple[dict[str, Proportion | Count], str]:
    """Per-variant sufficient statistics of a legacy result, and the metric kind for ``compare``.

    Funnels: ``Proportion(success + failure, success)``; trends: ``Count(count, absolute_exposure)``. A result
    with a value per variant but no counts raises ``ValueError``.
    """
    from ..stats import Count, Proportion

    if result.kind == "values":
        raise ValueError(
            "this experiment result has a value per variant but no counts (success_count/failure_count or "
            "count/absolute_exposure), so there is no interval to compute"
        )
    frame = result.to_frame()
    keys = [str(k) for k in frame["key"]]
    if result.kind == "funnel":
        success = frame["success_count"].to_numpy(dtype=float)
        failure = frame["failure_count"].to_numpy(dtype=float)
        return {k: Proportion(s + f, s) for k, s, f in zip(keys, success, failure, strict=True)}, "conversion"
    counts = frame["count"].to_numpy(dtype=float)
    exposures = frame["absolute_exposure"].to_numpy(dtype=float)
    return {k: Count(c, e) for k, c, e in zip(keys, counts, exposures, strict=True)}, "count"


def legacy_recommendation(result: ExperimentResult) -> Recommendation | None:
    """The recommendation for a legacy result's counts, with its experiment's plan when the result carries
    the experiment (as :meth:`~hoglab.client.Experiments.results` gives it); None without usable counts."""
    from ..stats import StatsError, recommend

    try:
        statistics, kind = variant_statistics(result)
    except (StatsError, ValueError):
        return None
    mde, days = planning_inputs(result.experiment)
    try:
        return recommend(statistics, metric=kind, mde=mde, days_running=days,  # type: ignore[arg-type]
                         expected_split=_split_for(statistics, result.experiment), name=result.metric)  # fmt: skip
    except (StatsError, ValueError):
        return None


def metric_recommendation(result: MetricExperimentResult, *, correction: Correction | None = None,
                          max_days: float | None = None) -> Recommendation | None:  # fmt: skip
    """The recommendation for a metric experiment's first primary metric; None when it has no usable answer.

    It reads the metric's own test, the one its table shows (:func:`hoglab.stats.posthog.metric_recommendation`:
    PostHog's engine with the calibrated CUPED variance), so the two quote the same interval. ``correction``
    adjusts the p-values across the variants; ``max_days`` is the horizon (default: 90 days or 3× the days so far).
    """
    from ..frames.experiments import arm_stats
    from ..stats import StatsError
    from ..stats.posthog import metric_recommendation as recommend_metric

    answers = [a for a in result.metrics if a.role == "primary" and a.answer is not None] or [
        a for a in result.metrics if a.answer is not None
    ]
    if not answers:
        return None
    answer = answers[0]
    assert answer.answer is not None
    baseline = answer.answer.get("baseline")
    variants = answer.answer.get("variant_results") or []
    arms = [baseline, *variants]
    if not all(isinstance(arm, Mapping) and arm.get("key") is not None for arm in arms):
        return None
    try:
        stats = [arm_stats(arm) for arm in arms]
    except (StatsError, TypeError, ValueError):
        return None
    cuped = all(arm.get("covariate_sum") is not None or isinstance(arm.get("ratio_covariate"), Mapping)
                for arm in arms)  # fmt: skip
    mde, days = planning_inputs(result.experiment)
    goal: Literal["increase", "decrease"] = "decrease" if answer.metric.get("goal") == "decrease" else "increase"
    split = _split_for({s.key: s for s in stats}, result.experiment)
    try:
        return recommend_metric(
            answer.metric_type,  # type: ignore[arg-type]
            stats[0], stats[1:], stats_config=result.stats_config or {"method": result.method}, team=result.team,
            goal=goal, cuped=cuped, mde=mde, days_running=days, expected_split=split, max_days=max_days,
            correction=correction, name=answer.label,
        )  # fmt: skip
    except (StatsError, TypeError, ValueError, ZeroDivisionError):
        return None
