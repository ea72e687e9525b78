"""Results of a metric experiment: one ``ExperimentQuery`` answer per metric and the exposures, as tidy frames.

PostHog's current experiments carry their metrics (``metrics``, ``metrics_secondary``) and are analysed through
``POST /query``; :class:`MetricExperimentResult` keeps every answer exactly as sent (``raw``) and reads them into
one long frame, a row per (metric, variant), with the same columns whichever the method.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

if TYPE_CHECKING:
    from ..stats import Recommendation

__all__ = ["METRIC_COLUMNS", "MetricAnswer", "MetricExperimentResult", "metric_label"]

METRIC_COLUMNS = [
    "metric", "metric_uuid", "metric_type", "role", "variant", "number_of_samples", "sum", "denominator_sum",
    "mean", "lift", "interval_low", "interval_high", "p_value", "chance_to_win", "significant", "method", "goal",
    "validation_failures",
]  # fmt: skip
_FLOATS = ("sum", "denominator_sum", "mean", "lift", "interval_low", "interval_high", "p_value", "chance_to_win")
_STRINGS = ("metric", "metric_uuid", "metric_type", "role", "variant", "method", "goal", "validation_failures")


def _node_label(node: Any) -> str:
    if not isinstance(node, Mapping):
        return "?"
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
    """
    if metric.get("name"):
        return str(metric["name"])
    kind = metric.get("metric_type")
    if kind == "funnel":
        return " → ".join(_node_label(step) for step in metric.get("series") or [])
    if kind == "ratio":
        return f"{_node_label(metric.get('numerator'))} / {_node_label(metric.get('denominator'))}"
    return _node_label(metric.get("source"))


@dataclass(frozen=True)
class MetricAnswer:
    """One metric of the experiment and PostHog's ``ExperimentQueryResponse`` for it (``None`` with ``error``)."""

    metric: Mapping[str, Any]
    role: Literal["primary", "secondary"]
    answer: Mapping[str, Any] | None
    error: str | None = None

    @property
    def label(self) -> str:
        """The metric's name (or what it measures)."""
        return metric_label(self.metric)

    @property
    def uuid(self) -> str | None:
        """The metric's ``uuid`` (``None`` when it has none)."""
        value = self.metric.get("uuid")
        return str(value) if value else None

    @property
    def metric_type(self) -> str:
        """``mean``, ``funnel`` or ``ratio``."""
        return str(self.metric.get("metric_type") or "mean")

    def rows(self) -> list[dict[str, Any]]:
        """One dict per variant, baseline first (no rows when the query failed)."""
        if self.answer is None:
            return []
        baseline = self.answer.get("baseline")
        variants = list(self.answer.get("variant_results") or [])
        if baseline is None and not variants and self.answer.get("variants"):
            return self._v2_rows()
        arms = ([baseline] if isinstance(baseline, Mapping) else []) + [v for v in variants if isinstance(v, Mapping)]
        base_mean = _mean(self.metric_type, baseline) if isinstance(baseline, Mapping) else math.nan
        rows = []
        for arm in arms:
            is_base = arm is baseline
            method = None if is_base else arm.get("method")
            interval = arm.get("confidence_interval") if method == "frequentist" else arm.get("credible_interval")
            low, high = interval if isinstance(interval, Sequence) and len(interval) == 2 else (None, None)
            mean = _mean(self.metric_type, arm)
            usable = not is_base and math.isfinite(base_mean) and base_mean != 0
            lift = (mean - base_mean) / base_mean if usable else math.nan
            rows.append(
                {
                    "metric": self.label,
                    "metric_uuid": self.uuid,
                    "metric_type": self.metric_type,
                    "role": self.role,
                    "variant": str(arm.get("key")),
                    "number_of_samples": arm.get("number_of_samples"),
                    "sum": arm.get("sum"),
                    "denominator_sum": arm.get("denominator_sum"),
                    "mean": mean,
                    "lift": lift,
                    "interval_low": low,
                    "interval_high": high,
                    "p_value": arm.get("p_value"),
                    "chance_to_win": arm.get("chance_to_win"),
                    "significant": None if is_base else arm.get("significant"),
                    "method": method,
                    "goal": self.metric.get("goal") or "increase",
                    "validation_failures": ", ".join(map(str, arm.get("validation_failures") or [])) or None,
                }
            )
        return rows

    def _v2_rows(self) -> list[dict[str, Any]]:
        # PostHog's older answer (stats version 2): counts per variant in ``variants``, the chance of each being
        # best in ``probability`` and one verdict for the metric; its credible intervals are of each variant's own
        # rate, not of the lift, so the interval columns stay empty.
        answer = self.answer or {}
        arms = sorted((v for v in answer.get("variants") or [] if isinstance(v, Mapping)),
                      key=lambda v: v.get("key") != "control")  # fmt: skip
        probability = answer.get("probability") or {}
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
                "metric": self.label, "metric_uuid": self.uuid, "metric_type": self.metric_type, "role": self.role,
                "variant": str(arm.get("key")), "number_of_samples": round(n), "sum": total, "denominator_sum": None,
                "mean": mean, "lift": (mean - base_mean) / base_mean if usable else math.nan,
                "interval_low": None, "interval_high": None,
                "p_value": None if is_base else answer.get("p_value"),
                "chance_to_win": None if is_base else probability.get(arm.get("key")),
                "significant": None if is_base else answer.get("significant"),
                "method": None if is_base else "bayesian", "goal": self.metric.get("goal") or "increase",
                "validation_failures": None,
            })  # fmt: skip
        return rows


def _mean(metric_type: str, arm: Mapping[str, Any]) -> float:
    # PostHog's statistic per unit: a mean per exposed unit, a conversion rate, or sum / denominator sum.
    total = float(arm.get("sum") or 0.0)
    if metric_type == "ratio":
        denominator = float(arm.get("denominator_sum") or 0.0)
        return total / denominator if denominator else math.nan
    n = float(arm.get("number_of_samples") or 0.0)
    return total / n if n else math.nan


def metric_frame(answers: Sequence[MetricAnswer]) -> pd.DataFrame:
    """The long frame of every metric's variants, with fixed columns and dtypes (see :data:`METRIC_COLUMNS`)."""
    df = pd.DataFrame([row for a in answers for row in a.rows()], columns=METRIC_COLUMNS)
    df["number_of_samples"] = pd.array([None if pd.isna(v) else int(v) for v in df["number_of_samples"]], "Int64")
    for name in _FLOATS:
        df[name] = pd.to_numeric(df[name], errors="coerce").astype("float64")
    for name in _STRINGS:
        df[name] = pd.array([None if pd.isna(v) else str(v) for v in df[name]], pd.StringDtype())
    df["significant"] = pd.array([None if pd.isna(v) else bool(v) for v in df["significant"]], "boolean")
    return df


@dataclass(frozen=True)
class MetricExperimentResult:
    """Every metric's ``ExperimentQuery`` answer and the ``ExperimentExposureQuery`` answer of one experiment.

    ``to_frame()`` gives a row per (metric, variant); ``exposures_frame()`` a row per (day, variant); ``raw``
    holds the answers exactly as sent. Built by :meth:`hoglab.client.Experiments.results`:

    >>> answer = {"baseline": {"key": "control", "number_of_samples": 100, "sum": 10, "sum_squares": 10},
    ...           "variant_results": [{"key": "test", "number_of_samples": 100, "sum": 15, "sum_squares": 15,
    ...           "method": "frequentist", "p_value": 0.3, "confidence_interval": [-0.4, 1.4], "significant": False}]}
    >>> r = MetricExperimentResult(7, {"stats_config": {"method": "frequentist"}},
    ...     (MetricAnswer({"metric_type": "funnel", "name": "signed up", "series": []}, "primary", answer),))
    >>> r.to_frame()[["metric", "variant", "mean", "lift", "p_value"]].round(4).values.tolist()
    [['signed up', 'control', 0.1, nan, nan], ['signed up', 'test', 0.15, 0.5, 0.3]]
    >>> r.verdict
    'signed up: not significant (test +50.0%, p = 0.3).'
    """

    experiment_id: int
    experiment: Mapping[str, Any] = field(repr=False)
    metrics: tuple[MetricAnswer, ...] = ()
    exposures: Mapping[str, Any] | None = field(default=None, repr=False)
    exposures_error: str | None = None
    kind: Literal["metrics"] = "metrics"

    @property
    def raw(self) -> dict[str, Any]:
        """The answers as sent: ``{"metrics": [{"metric", "role", "answer", "error"}], "exposures": ...}``."""
        items = [{"metric": dict(a.metric), "role": a.role, "answer": a.answer, "error": a.error} for a in self.metrics]
        return {"metrics": items, "exposures": self.exposures}

    @property
    def method(self) -> str:
        """The experiment's statistical method: ``bayesian`` (PostHog's default) or ``frequentist``."""
        config = self.experiment.get("stats_config") or {}
        return "frequentist" if isinstance(config, Mapping) and config.get("method") == "frequentist" else "bayesian"

    @property
    def errors(self) -> dict[str, str]:
        """Metrics whose query failed: label -> the reason."""
        return {a.label: a.error for a in self.metrics if a.error is not None}

    @property
    def significant(self) -> bool:
        """Whether any variant of any primary metric is significant."""
        df = self.to_frame()
        return bool(df.loc[df["role"] == "primary", "significant"].fillna(False).any())

    def to_frame(self) -> pd.DataFrame:
        """One row per (metric, variant): primary metrics first, each metric's baseline first."""
        df = metric_frame(self.metrics)
        df.attrs = {"experiment_id": self.experiment_id, "method": self.method}
        return df

    def exposures_frame(self) -> pd.DataFrame:
        """Exposures per day and variant: ``cumulative`` (exposed so far, as PostHog's ``exposure_counts``) and
        ``new`` (first exposed that day)."""
        rows = []
        for series in (self.exposures or {}).get("timeseries") or []:
            for day, count in zip(series.get("days") or [], series.get("exposure_counts") or [], strict=False):
                rows.append({"date": day, "variant": str(series.get("variant")), "cumulative": count})
        df = pd.DataFrame(rows, columns=["date", "variant", "cumulative"])
        df["date"] = pd.to_datetime(df["date"].astype(object), format="ISO8601").dt.as_unit("us")
        df["variant"] = df["variant"].astype(pd.StringDtype())
        df["cumulative"] = pd.to_numeric(df["cumulative"]).astype("float64")
        df["new"] = df.groupby("variant", sort=False)["cumulative"].diff().fillna(df["cumulative"]).astype("float64")
        return df

    @property
    def total_exposures(self) -> dict[str, float]:
        """Exposed units per variant, from the exposure query."""
        totals = (self.exposures or {}).get("total_exposures") or {}
        return {str(k): float(v) for k, v in totals.items()}

    def metric_verdict(self, answer: MetricAnswer) -> str:
        """One metric's verdict in words: each variant against the baseline."""
        if answer.error is not None:
            return f"{answer.label}: no results ({answer.error})."
        rows = [r for r in answer.rows() if r["method"] is not None]
        if not rows:
            return f"{answer.label}: no variant to compare yet."
        parts = []
        for r in rows:
            if r["validation_failures"]:
                parts.append(f"{r['variant']} {r['validation_failures']}")
                continue
            lift = f"{r['lift']:+.1%}" if r["lift"] is not None and math.isfinite(r["lift"]) else "n/a"
            if r["method"] == "frequentist" and r["p_value"] is not None:
                parts.append(f"{r['variant']} {lift}, p = {r['p_value']:.3g}")
            elif r["chance_to_win"] is not None:
                parts.append(f"{r['variant']} {lift}, chance to win {r['chance_to_win']:.1%}")
            else:
                parts.append(f"{r['variant']} {lift}")
        winner = any(r["significant"] for r in rows)
        return f"{answer.label}: {'significant' if winner else 'not significant'} ({'; '.join(parts)})."

    @property
    def verdict(self) -> str:
        """The primary metrics' verdicts in words (all metrics when none is primary)."""
        chosen = [a for a in self.metrics if a.role == "primary"] or list(self.metrics)
        return " ".join(self.metric_verdict(a) for a in chosen) or "This experiment has no metrics."

    @property
    def recommendation(self) -> Recommendation | None:
        """One reconciled verdict for the first primary metric (:func:`hoglab.stats.recommend`): ship, keep
        running, stop or investigate, with its reason; None when that metric has no usable answer."""
        from ._verdict import metric_recommendation

        return metric_recommendation(self)

    def summary(self) -> str:
        """The primary metrics' verdicts and the reconciled recommendation, in words."""
        recommendation = self.recommendation
        advice = recommendation.summary() if recommendation is not None else "none (no usable primary metric)."
        return f"Verdict: {self.verdict}\nRecommendation: {advice}"

    def _repr_html_(self) -> str:
        title = f"Experiment {self.experiment_id} ({self.method})"
        recommendation = self.recommendation
        advice = recommendation._repr_html_() if recommendation is not None else ""
        lines = "".join(f"<li>{html.escape(self.metric_verdict(a))}</li>" for a in self.metrics)
        table = (
            self.to_frame()
            .drop(columns=["metric_uuid"])
            .to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        )
        return f"<div><strong>{html.escape(title)}</strong>{advice}<ul>{lines}</ul>{table}</div>"
