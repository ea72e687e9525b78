"""Metric experiment answers (``ExperimentQuery``, ``ExperimentExposureQuery``) to tidy frames.

:func:`metric_rows` reads one ``ExperimentQueryResponse`` into a row per (breakdown value, variant): the overall
rows first (``breakdown`` empty), then each breakdown value's. Beside the numbers the server sent (samples, sums,
the interval and the test) each row has the raw estimate (``mean``, ``lift``) and, when the answer carries CUPED's
covariate sums, the CUPED-adjusted one (``mean_cuped``, ``lift_cuped``, ``theta``, ``variance_reduction``),
recomputed from those sums with :func:`hoglab.stats.posthog.experiment_results` (PostHog's formulas: the adjusted
effect is the centre of the served interval), with the interval the same test gives without CUPED
(``raw_interval_low``/``raw_interval_high``), so the two can be set side by side. ``sequential`` says whether the
interval is an always-valid confidence sequence (``None`` when the settings are not known, as for a bare
``client.query``).

The interval, ``p_value``, ``chance_to_win`` and ``significant`` are hoglab's verdict: under CUPED, the relative
effect's test with the delta-method variance (:func:`hoglab.stats.posthog.calibrated_results`; PostHog's own formula
calls ~14% of A/A experiments significant, docs/statistics.md §6.5), recomputed from the answer's sums; PostHog's
figures stay beside them (``posthog_interval_low/high``, ``posthog_p_value``, ``posthog_chance_to_win``,
``posthog_significant``), and ``test`` names the test. Without CUPED the two are the served test.
``adjusted_p_value`` is filled by a family correction (``MetricExperimentResult.correction``).

>>> answer = {"metric": {"metric_type": "mean", "source": {"event": "buy"}},
...           "baseline": {"key": "control", "number_of_samples": 100, "sum": 500, "sum_squares": 5000},
...           "variant_results": [{"key": "test", "number_of_samples": 100, "sum": 600, "sum_squares": 6500,
...                                "method": "frequentist", "p_value": 0.2, "confidence_interval": [-0.1, 0.5],
...                                "significant": False}]}
>>> experiment_frame(answer)[["metric", "variant", "mean", "lift", "p_value"]].values.tolist()
[['buy', 'control', 5.0, nan, nan], ['buy', 'test', 6.0, 0.2, 0.2]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd
from pydantic import BaseModel

from ..stats import StatsError
from ..stats.posthog import (
    CupedAdjustment,
    ExperimentStats,
    ExperimentVariantResult,
    RatioCovariate,
    TeamDefaults,
    calibrated_results,
    experiment_results,
    metric_test_name,
    resolve_stats_settings,
)
from .tables import as_dict

__all__ = [
    "BREAKDOWN_SEPARATOR",
    "EXPOSURE_COLUMNS",
    "METRIC_COLUMNS",
    "arm_stats",
    "breakdown_text",
    "experiment_frame",
    "exposure_frame",
    "metric_frame_of_rows",
    "metric_label",
    "metric_rows",
]

METRIC_COLUMNS = [
    "metric", "metric_uuid", "metric_type", "role", "breakdown", "variant", "number_of_samples", "sum",
    "denominator_sum", "mean", "lift", "interval_low", "interval_high", "p_value", "adjusted_p_value",
    "chance_to_win", "significant", "test", "posthog_interval_low", "posthog_interval_high", "posthog_p_value",
    "posthog_chance_to_win", "posthog_significant", "method", "sequential", "cuped", "covariate_mean", "theta",
    "mean_cuped", "lift_cuped", "variance_reduction", "raw_interval_low", "raw_interval_high", "goal",
    "validation_failures",
]  # fmt: skip
"""The columns of a metric frame, in order."""
_FLOATS = ("sum", "denominator_sum", "mean", "lift", "interval_low", "interval_high", "p_value", "adjusted_p_value",
           "chance_to_win",
           "posthog_interval_low", "posthog_interval_high", "posthog_p_value", "posthog_chance_to_win",
           "covariate_mean", "theta", "mean_cuped", "lift_cuped", "variance_reduction", "raw_interval_low",
           "raw_interval_high")  # fmt: skip
_STRINGS = ("metric", "metric_uuid", "metric_type", "role", "breakdown", "variant", "test", "method", "goal",
            "validation_failures")  # fmt: skip
_BOOLS = ("significant", "posthog_significant", "sequential", "cuped")
_VERDICT = ("interval_low", "interval_high", "p_value", "chance_to_win", "significant")
EXPOSURE_COLUMNS = ["date", "variant", "cumulative", "new"]
BREAKDOWN_SEPARATOR = " · "
_NAMES = {"$$_posthog_breakdown_null_$$": "(none)", "$$_posthog_breakdown_other_$$": "Other"}
_RATIO_COVARIATE = ("pre_sum", "pre_sum_squares", "pre_denominator_sum", "pre_denominator_sum_squares",
                    "pre_product", "numerator_pre_product", "numerator_pre_denominator_product",
                    "denominator_pre_product", "denominator_pre_denominator_product")  # fmt: skip


def breakdown_text(value: Sequence[Any] | None) -> str | None:
    """A breakdown value as one string, PostHog's null and Other labels in words.

    >>> breakdown_text(["Chrome", "$$_posthog_breakdown_null_$$"]), breakdown_text(None)
    ('Chrome · (none)', None)
    """
    if value is None:
        return None
    return BREAKDOWN_SEPARATOR.join(_NAMES.get(str(v), str(v)) for v in value)


def _node_label(node: Any) -> str:
    if not isinstance(node, Mapping):
        return "?"
    if node.get("kind") == "ExperimentExposureNode":
        return "exposure"
    name = node.get("custom_name") or node.get("name") or node.get("event") or node.get("table_name")
    if node.get("kind") == "ActionsNode" and not name:
        name = f"action {node.get('id')}"
    text = str(name) if name else "all events"
    math_name = node.get("math")
    if math_name in ("sum", "avg", "min", "max") and node.get("math_property"):
        return f"{math_name}({node['math_property']}) of {text}"
    if math_name == "hogql" and node.get("math_hogql"):
        return f"{node['math_hogql']} of {text}"
    if math_name == "unique_session":
        return f"sessions with {text}"
    return text


def metric_label(metric: Mapping[str, Any]) -> str:
    """The metric's name, else a description of what it measures.

    >>> metric_label({"metric_type": "funnel", "series": [{"event": "$pageview"}, {"event": "purchase"}]})
    '$pageview → purchase'
    >>> metric_label({"metric_type": "ratio", "numerator": {"event": "purchase", "math": "sum",
    ...               "math_property": "price"}, "denominator": {"event": "$pageview"}})
    'sum(price) of purchase / $pageview'
    >>> metric_label({"metric_type": "retention", "start_event": {"event": "signup"},
    ...               "completion_event": {"event": "login"}, "retention_window_start": 1,
    ...               "retention_window_end": 7, "retention_window_unit": "day"})
    'signup → login (days 1-7)'
    """
    if metric.get("name"):
        return str(metric["name"])
    kind = metric.get("metric_type")
    if kind == "funnel":
        return " → ".join(_node_label(step) for step in metric.get("series") or [])
    if kind == "ratio":
        return f"{_node_label(metric.get('numerator'))} / {_node_label(metric.get('denominator'))}"
    if kind == "retention":
        low, high = metric.get("retention_window_start"), metric.get("retention_window_end")
        unit = str(metric.get("retention_window_unit") or "day")
        span = f"{unit}s {low}-{high}" if low != high else f"{unit} {low}"
        return f"{_node_label(metric.get('start_event'))} → {_node_label(metric.get('completion_event'))} ({span})"
    return _node_label(metric.get("source"))


def _mean(metric_type: str, arm: Mapping[str, Any]) -> float:
    # PostHog's statistic per unit: a mean per exposed unit, a conversion rate, or sum / denominator sum.
    total = float(arm.get("sum") or 0.0)
    if metric_type in ("ratio", "retention"):
        denominator = float(arm.get("denominator_sum") or 0.0)
        return total / denominator if denominator else math.nan
    n = float(arm.get("number_of_samples") or 0.0)
    return total / n if n else math.nan


def arm_stats(arm: Mapping[str, Any]) -> ExperimentStats:
    """One arm of an answer as :class:`~hoglab.stats.posthog.ExperimentStats` (with hoglab's ratio covariate)."""
    stats = ExperimentStats.from_posthog(arm)
    ratio = arm.get("ratio_covariate")
    if isinstance(ratio, Mapping):  # hoglab's ratio CUPED extension
        stats = replace(stats, ratio_covariate=RatioCovariate(*(float(ratio.get(k) or 0.0) for k in _RATIO_COVARIATE)))
    return stats


def _verdict_fields(result: ExperimentVariantResult) -> dict[str, Any]:
    interval = result.confidence_interval or result.credible_interval
    low, high = (float(interval[0]), float(interval[1])) if interval is not None else (None, None)
    return {"interval_low": low, "interval_high": high, "p_value": result.p_value,
            "chance_to_win": result.chance_to_win, "significant": result.significant}  # fmt: skip


def _same(served: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    """Whether recomputed test fields reproduce what the server sent (interval ends to 1e-6)."""
    interval = served.get("confidence_interval") or served.get("credible_interval")
    if not isinstance(interval, Sequence) or len(interval) != 2 or fields["interval_low"] is None:
        return False
    return all(math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
               for a, b in zip(interval, (fields["interval_low"], fields["interval_high"]), strict=True))  # fmt: skip


def _cuped_estimates(metric_type: str, baseline: Mapping[str, Any], variants: Sequence[Mapping[str, Any]],
                     stats_config: Mapping[str, Any] | None,
                     team: TeamDefaults | None) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per variant key: θ, the adjusted means, the adjusted effect and the variance reduction, from the sums; and
    the test under hoglab's calibrated CUPED variance (``hoglab``) and PostHog's formula (``posthog``), when the
    served answer is one of the two (else the settings behind it are unknown and the served test stands)."""
    arms = [baseline, *variants]
    has_mean_covariate = all(a.get("covariate_sum") is not None for a in arms)
    has_ratio_covariate = all(isinstance(a.get("ratio_covariate"), Mapping) for a in arms)
    if not (has_mean_covariate or has_ratio_covariate) or len(arms) < 2:
        return {}
    config = stats_config or {"method": str(variants[0].get("method") or "frequentist")}
    try:
        base, others = arm_stats(baseline), [arm_stats(v) for v in variants]
        options: dict[str, Any] = {"stats_config": config, "team": team, "cuped": True}
        hoglab, posthog = calibrated_results(metric_type, base, others, **options)  # type: ignore[arg-type]
        _, unadjusted = experiment_results(metric_type, base, others, stats_config=config, cuped=False,  # type: ignore[arg-type]
                                           team=team)  # fmt: skip
    except (StatsError, TypeError, ValueError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for served, result, theirs, raw in zip(variants, hoglab, posthog, unadjusted, strict=True):
        adjustment = result.cuped
        if adjustment is None:
            continue
        entry: dict[str, Any] = {"theta": float(adjustment.theta),
                                 "lift_cuped": float(result.point_estimate or math.nan)}  # fmt: skip
        ours, formula = _verdict_fields(result), _verdict_fields(theirs)
        if _same(served, formula) or _same(served, ours):
            entry["hoglab"], entry["posthog"] = ours, formula
        interval = raw.confidence_interval or raw.credible_interval
        if interval is not None:
            entry["raw_interval_low"], entry["raw_interval_high"] = float(interval[0]), float(interval[1])
        if isinstance(adjustment, CupedAdjustment):  # mean and funnel CUPED
            entry["mean_cuped"] = float(adjustment.treatment_adjusted.mean)
            entry["variance_reduction"] = float(adjustment.variance_reduction_treatment)
            if len(hoglab) == 1:  # the baseline's adjusted mean depends on the pair's θ: shown with one pair only
                out[str(baseline.get("key"))] = {
                    "theta": entry["theta"], "mean_cuped": float(adjustment.control_adjusted.mean),
                    "variance_reduction": float(adjustment.variance_reduction_control),
                }  # fmt: skip
        else:
            entry["variance_reduction"] = float(adjustment.variance_reduction_treatment)
        out[result.stats.key] = entry
    return out


def metric_rows(
    answer: Mapping[str, Any] | BaseModel,
    metric: Mapping[str, Any] | None = None,
    *,
    role: str | None = None,
    stats_config: Mapping[str, Any] | None = None,
    team: TeamDefaults | None = None,
) -> list[dict[str, Any]]:
    """One dict per (breakdown value, variant) of an ``ExperimentQueryResponse``, baselines first.

    ``metric`` defaults to the answer's own; ``stats_config`` and ``team`` (the experiment's settings and the
    project's defaults) say whether the interval is sequential and which effect CUPED estimates (relative unless
    ``difference_type`` is ``ABSOLUTE``); without them the CUPED estimates assume PostHog's defaults.
    """
    data = as_dict(answer)
    metric = dict(metric if metric is not None else (data.get("metric") or {}))
    if data.get("baseline") is None and not data.get("variant_results") and data.get("variants"):
        return _v2_rows(data, metric, role)
    sequential: bool | None = None
    if stats_config is not None:
        settings = resolve_stats_settings(stats_config, team)
        sequential = settings.method == "frequentist" and settings.sequential
    groups: list[tuple[str | None, Any, Sequence[Any]]] = [(None, data.get("baseline"),
                                                           data.get("variant_results") or [])]  # fmt: skip
    for item in data.get("breakdown_results") or []:
        if isinstance(item, Mapping):
            groups.append((breakdown_text(item.get("breakdown_value")), item.get("baseline"),
                           item.get("variants") or []))  # fmt: skip
    rows: list[dict[str, Any]] = []
    for breakdown, baseline, variants in groups:
        rows += _group_rows(metric, role, breakdown, baseline, [v for v in variants if isinstance(v, Mapping)],
                            stats_config, team, sequential)  # fmt: skip
    return rows


def _group_rows(metric: Mapping[str, Any], role: str | None, breakdown: str | None, baseline: Any,
                variants: list[Mapping[str, Any]], stats_config: Mapping[str, Any] | None, team: TeamDefaults | None,
                sequential: bool | None) -> list[dict[str, Any]]:  # fmt: skip
    metric_type = str(metric.get("metric_type") or "mean")
    arms = ([baseline] if isinstance(baseline, Mapping) else []) + variants
    base_mean = _mean(metric_type, baseline) if isinstance(baseline, Mapping) else math.nan
    adjusted = _cuped_estimates(metric_type, baseline, variants, stats_config, team) \
        if isinstance(baseline, Mapping) else {}  # fmt: skip
    rows = []
    config = stats_config or ({"method": str(variants[0].get("method") or "frequentist")} if variants else None)
    for arm in arms:
        is_base = arm is baseline
        method = None if is_base else arm.get("method")
        interval = arm.get("confidence_interval") if method == "frequentist" else arm.get("credible_interval")
        low, high = interval if isinstance(interval, Sequence) and len(interval) == 2 else (None, None)
        served = {"interval_low": low, "interval_high": high, "p_value": arm.get("p_value"),
                  "chance_to_win": arm.get("chance_to_win"), "significant": None if is_base else arm.get("significant")}
        mean = _mean(metric_type, arm)
        usable = not is_base and math.isfinite(base_mean) and base_mean != 0
        n = float(arm.get("number_of_samples") or 0)
        covariate_mean = float(arm["covariate_sum"]) / n if arm.get("covariate_sum") is not None and n else math.nan
        cuped = adjusted.get(str(arm.get("key")), {})
        has_covariate = arm.get("covariate_sum") is not None or isinstance(arm.get("ratio_covariate"), Mapping)
        ours, theirs = cuped.get("hoglab", served), cuped.get("posthog", served)
        tested = method is not None and not is_base
        rows.append({
            "metric": metric_label(metric), "metric_uuid": metric.get("uuid") or None, "metric_type": metric_type,
            "role": role, "breakdown": breakdown, "variant": str(arm.get("key")),
            "number_of_samples": arm.get("number_of_samples"), "sum": arm.get("sum"),
            "denominator_sum": arm.get("denominator_sum"), "mean": mean,
            "lift": (mean - base_mean) / base_mean if usable else math.nan,
            **ours,
            "test": metric_test_name(metric_type, config, team, cuped="hoglab" in cuped) if tested else None,
            **{f"posthog_{k}": v for k, v in theirs.items()},
            "method": method, "sequential": None if is_base or method != "frequentist" else sequential,
            "cuped": has_covariate, "covariate_mean": covariate_mean, "theta": cuped.get("theta", math.nan),
            "mean_cuped": cuped.get("mean_cuped", math.nan), "lift_cuped": cuped.get("lift_cuped", math.nan),
            "variance_reduction": cuped.get("variance_reduction", math.nan),
            "raw_interval_low": cuped.get("raw_interval_low", math.nan),
            "raw_interval_high": cuped.get("raw_interval_high", math.nan),
            "goal": metric.get("goal") or "increase",
            "validation_failures": ", ".join(map(str, arm.get("validation_failures") or [])) or None,
        })  # fmt: skip
    return rows


def _v2_rows(answer: Mapping[str, Any], metric: Mapping[str, Any], role: str | None) -> list[dict[str, Any]]:
    # PostHog's older answer (stats version 2): counts per variant in ``variants``, the chance of each being best in
    # ``probability`` and one verdict for the metric; its credible intervals are of each variant's own rate, not of
    # the lift, so the interval columns stay empty.
    arms = sorted((v for v in answer.get("variants") or [] if isinstance(v, Mapping)),
                  key=lambda v: v.get("key") != "control")  # fmt: skip
    probability = answer.get("probability") or {}
    metric_type = str(metric.get("metric_type") or "mean")
    rows = []
    base_mean = math.nan
    for arm in arms:
        if "success_count" in arm:
            n = float(arm.get("success_count") or 0) + float(arm.get("failure_count") or 0)
            total = float(arm.get("success_count") or 0)
        else:
            n, total = float(arm.get("absolute_exposure") or 0), float(arm.get("count") or 0)
        mean = total / n if n else math.nan
        is_base = arm.get("key") == "control"
        if is_base:
            base_mean = mean
        usable = not is_base and math.isfinite(base_mean) and base_mean != 0
        rows.append({
            "metric": metric_label(metric), "metric_uuid": metric.get("uuid") or None, "metric_type": metric_type,
            "role": role, "breakdown": None, "variant": str(arm.get("key")), "number_of_samples": round(n),
            "sum": total, "denominator_sum": None, "mean": mean,
            "lift": (mean - base_mean) / base_mean if usable else math.nan, "interval_low": None,
            "interval_high": None, "p_value": None if is_base else answer.get("p_value"),
            "chance_to_win": None if is_base else probability.get(arm.get("key")),
            "significant": None if is_base else answer.get("significant"),
            "test": None, "posthog_interval_low": None, "posthog_interval_high": None,
            "posthog_p_value": None if is_base else answer.get("p_value"),
            "posthog_chance_to_win": None if is_base else probability.get(arm.get("key")),
            "posthog_significant": None if is_base else answer.get("significant"),
            "method": None if is_base else "bayesian", "sequential": None, "cuped": False,
            "covariate_mean": math.nan, "theta": math.nan, "mean_cuped": math.nan, "lift_cuped": math.nan,
            "variance_reduction": math.nan, "raw_interval_low": math.nan, "raw_interval_high": math.nan,
            "goal": metric.get("goal") or "increase", "validation_failures": None,
        })  # fmt: skip
    return rows


def metric_frame_of_rows(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of :func:`metric_rows` as a frame with fixed columns and dtypes (:data:`METRIC_COLUMNS`)."""
    df = pd.DataFrame(list(rows), columns=METRIC_COLUMNS)
    df["number_of_samples"] = pd.array([None if pd.isna(v) else int(v) for v in df["number_of_samples"]], "Int64")
    for name in _FLOATS:
        df[name] = pd.to_numeric(df[name], errors="coerce").astype("float64")
    for name in _STRINGS:
        df[name] = pd.array([None if pd.isna(v) else str(v) for v in df[name]], pd.StringDtype())
    for name in _BOOLS:
        df[name] = pd.array([None if v is None or pd.isna(v) else bool(v) for v in df[name]], "boolean")
    return df


def experiment_frame(answer: Mapping[str, Any] | BaseModel, **options: Any) -> pd.DataFrame:
    """An ``ExperimentQuery`` answer as a frame: a row per (breakdown value, variant).

    ``options`` go to :func:`metric_rows`. The answer's other members (cache fields) are kept in ``df.attrs``.
    """
    data = as_dict(answer)
    df = metric_frame_of_rows(metric_rows(data, **options))
    df.attrs = {k: v for k, v in data.items() if k not in ("baseline", "variant_results", "breakdown_results")}
    return df


def exposure_frame(answer: Mapping[str, Any] | BaseModel | None) -> pd.DataFrame:
    """An ``ExperimentExposureQuery`` answer as a row per (day, variant): ``cumulative`` (exposed so far, PostHog's
    ``exposure_counts``) and ``new`` (first exposed that day).

    >>> exposure_frame({"timeseries": [{"variant": "test", "days": ["2026-01-01", "2026-01-02"],
    ...                                 "exposure_counts": [3, 5]}]})["new"].tolist()
    [3.0, 2.0]
    """
    data = as_dict(answer) if answer is not None else {}
    rows = []
    for series in data.get("timeseries") or []:
        for day, count in zip(series.get("days") or [], series.get("exposure_counts") or [], strict=False):
            rows.append({"date": day, "variant": str(series.get("variant")), "cumulative": count})
    df = pd.DataFrame(rows, columns=["date", "variant", "cumulative"])
    df["date"] = pd.to_datetime(df["date"].astype(object), format="ISO8601").dt.as_unit("us")
    df["variant"] = df["variant"].astype(pd.StringDtype())
    df["cumulative"] = pd.to_numeric(df["cumulative"]).astype("float64")
    df["new"] = df.groupby("variant", sort=False)["cumulative"].diff().fillna(df["cumulative"]).astype("float64")
    df.attrs = {k: v for k, v in data.items() if k != "timeseries"}
    return df
