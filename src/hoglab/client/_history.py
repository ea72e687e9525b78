"""``client.experiments.history()``: every running or concluded experiment as data, one scale for all.

One row per experiment × metric × arm. The lift of each arm over the experiment's baseline is recomputed here
from the arms' sufficient statistics (PostHog's ``ExperimentQuery`` answer for a metric experiment, the
``/results/`` counts for a legacy one) as a *relative* lift with its *delta-method* standard error, whatever method
the experiment itself uses, so that lifts of different experiments are one quantity on one scale and can be
pooled (:func:`hoglab.stats.meta_analysis`):

* a mean, funnel, ratio or retention metric: PostHog's own per-arm statistics (``SampleMeanStatistic``,
  ``ProportionStatistic``, ``RatioStatistic``) and :func:`hoglab.stats.posthog.effect_between` with
  ``relative=True``: L = μ_T/μ_C − 1, Var = σ²_T/(n_T·μ_C²) + μ_T²·σ²_C/(n_C·μ_C⁴) (Deng, Knoblich & Lu 2018,
  "Applying the Delta Method in Metric Analytics", KDD). CUPED experiments read their raw (unadjusted) lift: the
  adjustment is a per-experiment choice, the raw lift is comparable across them;
* a legacy funnel: the same with proportions from ``success_count`` and ``failure_count``;
* a legacy trend: counts over exposure, λ = count/exposure, L = λ_T/λ_C − 1, Var = (1 + L)²·(1/count_T +
  1/count_C) (the delta method for Poisson counts).

``shipped`` is read from the experiment's flag as PostHog's ``ship_variant`` leaves it: one variant at 100% of the
split, the others at 0.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import APIError, InvalidArgument
from ..frames.experiments import metric_label
from ..stats import StatsInputError
from ..stats.posthog import ExperimentStats, ProportionStatistic, effect_between
from ..stats.posthog._metric.engine import statistic
from ._metric_queries import experiment_metrics, is_metric_experiment, post_query

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["HISTORY_COLUMNS", "experiment_history", "shipped_variant"]

HISTORY_COLUMNS = [
    "experiment_id", "experiment", "feature_flag_key", "status", "start_date", "end_date", "metric", "metric_uuid",
    "metric_type", "role", "variant", "baseline", "units", "control_units", "value", "control_value", "estimate",
    "standard_error", "decision", "shipped", "shipped_variant", "kind", "error",
]  # fmt: skip
"""The columns of :meth:`hoglab.client.Experiments.history`, in order."""

_STRINGS = ("experiment", "feature_flag_key", "status", "metric", "metric_uuid", "metric_type", "role", "variant",
            "baseline", "decision", "shipped_variant", "kind", "error")  # fmt: skip
_FLOATS = ("value", "control_value", "estimate", "standard_error")
_INTS = ("experiment_id", "units", "control_units")
_STATUSES = ("running", "complete")
_ROLES = ("primary", "secondary")


def _choice(argument: str, given: str | Sequence[str], allowed: Sequence[str]) -> set[str]:
    chosen = {given} if isinstance(given, str) else set(given)
    unknown = sorted(chosen - set(allowed))
    if unknown or not chosen:
        raise InvalidArgument(f"{argument}: expected some of {list(allowed)}, got {given!r}.", argument=argument)
    return chosen


def shipped_variant(experiment: Mapping[str, Any]) -> str | None:
    """The variant the experiment's flag serves to everyone (PostHog's ``ship_variant``), else ``None``.

    >>> flag = {"filters": {"multivariate": {"variants": [{"key": "control", "rollout_percentage": 0},
    ...                                                   {"key": "test", "rollout_percentage": 100}]}}}
    >>> shipped_variant({"feature_flag": flag}), shipped_variant({"feature_flag": {}})
    ('test', None)
    """
    flag = experiment.get("feature_flag")
    filters = flag.get("filters") if isinstance(flag, Mapping) else None
    variants = ((filters or {}).get("multivariate") or {}).get("variants") or []
    shares = {str(v.get("key")): float(v.get("rollout_percentage") or 0) for v in variants if isinstance(v, Mapping)}
    full = [key for key, share in shares.items() if share == 100]
    if len(shares) < 2 or len(full) != 1 or any(share != 0 for key, share in shares.items() if key != full[0]):
        return None
    return full[0]


def _flag_variants(experiment: Mapping[str, Any]) -> list[str]:
    flag = experiment.get("feature_flag")
    filters = flag.get("filters") if isinstance(flag, Mapping) else None
    keys = [str(v.get("key")) for v in ((filters or {}).get("multivariate") or {}).get("variants") or []
            if isinstance(v, Mapping)]  # fmt: skip
    if not keys:
        keys = [str(v.get("key")) for v in (experiment.get("parameters") or {}).get("feature_flag_variants") or []
                if isinstance(v, Mapping)]  # fmt: skip
    return sorted(keys, key=lambda k: k != "control")


def _status(experiment: Mapping[str, Any]) -> str:
    if not experiment.get("start_date"):
        return "draft"
    return "running" if not experiment.get("end_date") else "complete"


def _lift(treatment: Any, control: Any) -> tuple[float, float]:
    """The relative lift and its delta-method standard error; NaN where it is undefined (a zero baseline)."""
    try:
        effect = effect_between(treatment, control, relative=True)
    except StatsInputError:
        return math.nan, math.nan
    return effect.estimate, effect.standard_error if effect.variance > 0 else math.nan


def _arm_rows(metric_type: str, baseline: Mapping[str, Any], arms: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A metric's rows from ``ExperimentQuery``'s ``baseline`` and ``variant_results``, baseline first."""
    kind = metric_type if metric_type in ("funnel", "ratio", "retention") else "mean"

    def read(body: Mapping[str, Any]) -> tuple[Any, float]:
        try:
            stats = ExperimentStats.from_posthog(body)
            s = statistic(kind, stats)  # type: ignore[arg-type]
            return s, float(s.mean)
        except (StatsInputError, TypeError, ValueError, ZeroDivisionError):
            return None, math.nan

    control, control_value = read(baseline)
    n_control = baseline.get("number_of_samples")
    rows = [{"variant": str(baseline.get("key")), "units": n_control, "value": control_value}]
    for arm in arms:
        s, value = read(arm)
        estimate, se = _lift(s, control) if s is not None and control is not None else (math.nan, math.nan)
        rows.append({"variant": str(arm.get("key")), "units": arm.get("number_of_samples"), "value": value,
                     "estimate": estimate, "standard_error": se})  # fmt: skip
    for row in rows:
        row |= {"baseline": str(baseline.get("key")), "control_units": n_control, "control_value": control_value}
    return rows


def _legacy_label(filters: Mapping[str, Any]) -> str:
    """A legacy metric's name: its series' names (a funnel's steps joined by →)."""
    series = sorted([*(filters.get("events") or []), *(filters.get("actions") or [])],
                    key=lambda s: s.get("order") or 0 if isinstance(s, Mapping) else 0)  # fmt: skip
    names = [str(s.get("custom_name") or s.get("name") or s.get("id")) for s in series if isinstance(s, Mapping)]
    insight = str(filters.get("insight") or "TRENDS").upper()
    if not names:
        return "primary metric"
    return " → ".join(names) if insight == "FUNNELS" else names[0]


def _legacy_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A legacy answer's rows: funnels as proportions, trends as Poisson rates (module docstring)."""
    variants = sorted((v for v in result.get("variants") or [] if isinstance(v, Mapping)),
                      key=lambda v: v.get("key") != "control")  # fmt: skip
    if not variants or variants[0].get("key") != "control":
        return []
    funnel = "success_count" in variants[0]

    def counts(v: Mapping[str, Any]) -> tuple[float, float]:
        if funnel:
            success = float(v.get("success_count") or 0)
            return success, success + float(v.get("failure_count") or 0)
        return float(v.get("count") or 0), float(v.get("absolute_exposure") or v.get("exposure") or 0)

    c_total, c_units = counts(variants[0])
    control_value = c_total / c_units if c_units else math.nan
    rows = []
    for v in variants:
        total, units = counts(v)
        value = total / units if units else math.nan
        row: dict[str, Any] = {"variant": str(v.get("key")), "units": round(units), "value": value}
        if v is not variants[0]:
            if funnel:
                with contextlib.suppress(StatsInputError):  # a baseline that never converts: no lift
                    treatment = ProportionStatistic(round(units), round(total))
                    row["estimate"], row["standard_error"] = _lift(treatment, ProportionStatistic(round(c_units),
                                                                                                  round(c_total)))
            elif total > 0 and c_total > 0 and c_units > 0 and units > 0:
                ratio = value / control_value
                row["estimate"], row["standard_error"] = ratio - 1, ratio * math.sqrt(1 / total + 1 / c_total)
        rows.append(row)
    for row in rows:
        row |= {"baseline": "control", "control_units": round(c_units), "control_value": control_value}
    return rows


def _failed(experiment: Mapping[str, Any], error: str) -> list[dict[str, Any]]:
    return [{"variant": key, "error": error} for key in _flag_variants(experiment)] or [{"error": error}]


def _metric_experiment_rows(client: Client, experiment: Mapping[str, Any], refresh: bool,
                            roles: set[str]) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for metric, role in experiment_metrics(experiment):
        if role not in roles:
            continue
        named = {"metric": metric_label(metric), "metric_uuid": metric.get("uuid") or None,
                 "metric_type": str(metric.get("metric_type") or "mean"), "role": role, "kind": "metrics"}  # fmt: skip
        query = {"kind": "ExperimentQuery", "experiment_id": experiment.get("id"), "metric": metric}
        try:
            answer = post_query(client, query, refresh=refresh)
        except APIError as exc:
            rows += [named | row for row in _failed(experiment, str(exc.detail or exc))]
            continue
        baseline = answer.get("baseline")
        arms = [a for a in answer.get("variant_results") or [] if isinstance(a, Mapping)]
        if not isinstance(baseline, Mapping):
            rows += [named | row for row in _failed(experiment, "the answer has no baseline")]
            continue
        rows += [named | row for row in _arm_rows(str(named["metric_type"]), baseline, arms)]
    return rows


def _legacy_experiment_rows(client: Client, experiment: Mapping[str, Any], refresh: bool,
                            roles: set[str]) -> list[dict[str, Any]]:  # fmt: skip
    if "primary" not in roles or not experiment.get("filters"):
        return []
    filters = experiment.get("filters") or {}
    insight = str(filters.get("insight") or "TRENDS").upper()
    named = {"metric": _legacy_label(filters), "metric_uuid": None,
             "metric_type": "funnel" if insight == "FUNNELS" else "count", "role": "primary", "kind": "legacy"}
    path = client.path(f"experiments/{int(experiment['id'])}/results/")
    try:
        raw = client.get_json(path, {"refresh": "true"} if refresh else None) or {}
    except APIError as exc:
        return [named | row for row in _failed(experiment, str(exc.detail or exc))]
    result = raw.get("result", raw) if isinstance(raw, Mapping) else {}
    rows = _legacy_rows(result if isinstance(result, Mapping) else {})
    return [named | row for row in rows] or [named | row for row in _failed(experiment, "no counts per variant")]


def experiment_history(
    client: Client,
    *,
    status: str | Sequence[str] = _STATUSES,
    roles: str | Sequence[str] = _ROLES,
    archived: bool | None = None,
    search: str | None = None,
    refresh: bool = False,
) -> pd.DataFrame:
    """The rows of :meth:`hoglab.client.Experiments.history` as a typed frame (see there)."""
    statuses = _choice("status", status, _STATUSES)
    wanted_roles = _choice("roles", roles, _ROLES)
    items = client.experiments._items(archived, search)
    chosen = [e for e in items if _status(e) in statuses]
    chosen.sort(key=lambda e: (str(e.get("start_date")), int(e.get("id") or 0)))
    rows: list[dict[str, Any]] = []
    for item in chosen:
        experiment = item
        if not any(k in item for k in ("metrics", "filters", "saved_metrics")):  # a listing of summaries
            experiment = client.get_json(client.path(f"experiments/{int(item['id'])}/")) or item
        shipped = shipped_variant(experiment)
        flag = experiment.get("feature_flag")
        common = {
            "experiment_id": experiment.get("id"), "experiment": experiment.get("name"),
            "feature_flag_key": experiment.get("feature_flag_key")
            or (flag.get("key") if isinstance(flag, Mapping) else None),
            "status": _status(experiment), "start_date": experiment.get("start_date"),
            "end_date": experiment.get("end_date"), "decision": experiment.get("conclusion") or None,
            "shipped_variant": shipped,
        }  # fmt: skip
        reader = _metric_experiment_rows if is_metric_experiment(experiment) else _legacy_experiment_rows
        for row in reader(client, experiment, refresh, wanted_roles):
            variant = row.get("variant")
            rows.append(common | row | {"shipped": None if variant is None else variant == shipped})
    return history_frame(rows)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def history_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as the history frame: the columns of :data:`HISTORY_COLUMNS`, with their dtypes."""
    df = pd.DataFrame(list(rows), columns=HISTORY_COLUMNS)
    for name in _INTS:
        df[name] = pd.array([None if v is None or pd.isna(v) else int(v) for v in df[name]], dtype="Int64")
    for name in _FLOATS:
        df[name] = pd.to_numeric(df[name], errors="coerce").astype("float64")
    for name in _STRINGS:
        df[name] = pd.array([None if _missing(v) else str(v) for v in df[name]], dtype=pd.StringDtype())
    df["shipped"] = pd.array([None if _missing(v) else bool(v) for v in df["shipped"]], dtype="boolean")
    for name in ("start_date", "end_date"):
        df[name] = pd.to_datetime(pd.Series(df[name].tolist(), dtype=object), utc=True,
                                  format="ISO8601").dt.as_unit("us")  # fmt: skip
    return df
