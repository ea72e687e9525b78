"""Results of a metric experiment: one ``ExperimentQuery`` answer per metric and the exposures, as tidy frames.

PostHog's current experiments carry their metrics (``metrics``, ``metrics_secondary``) and are analysed through
``POST /query``; :class:`MetricExperimentResult` keeps every answer exactly as sent (``raw``) and reads them into
one long frame, a row per (metric, variant), with the same columns whichever the method.

An experiment with a holdout also gets each metric against the holdout arm (hoglab's ``compare_to_holdout``; PostHog
leaves the holdout out of results): :meth:`MetricExperimentResult.holdout_frame` has the same columns, the holdout
being each metric's baseline row.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ..frames.experiments import (
    METRIC_COLUMNS,
    exposure_frame,
    metric_frame_of_rows,
    metric_label,
    metric_rows,
)
from ..stats.posthog import TeamDefaults, resolve_stats_settings

if TYPE_CHECKING:
    from ..stats import Health, Recommendation

__all__ = ["METRIC_COLUMNS", "MetricAnswer", "MetricExperimentResult", "metric_frame", "metric_label", "team_defaults"]


def team_defaults(config: Mapping[str, Any] | None) -> TeamDefaults | None:
    """The stats' view of a project's ``experiments_config`` answer (``None`` when there is none).

    >>> team_defaults({"default_cuped_enabled": True, "default_sequential_testing_enabled": False}).cuped_enabled
    True
    """
    if not config:
        return None
    return TeamDefaults(
        sequential_testing_enabled=bool(config.get("default_sequential_testing_enabled")),
        sequential_tuning_parameter=config.get("default_sequential_tuning_parameter"),
        cuped_enabled=bool(config.get("default_cuped_enabled")),
        cuped_lookback_days=config.get("default_cuped_lookback_days"),
    )


@dataclass(frozen=True)
class MetricAnswer:
    """One metric of the experiment and PostHog's ``ExperimentQueryResponse`` for it (``None`` with ``error``).

    ``stats_config`` and ``team`` (the experiment's settings, the project's defaults) say whether intervals are
    sequential and which effect CUPED estimates; see :func:`hoglab.frames.experiments.metric_rows`.
    """

    metric: Mapping[str, Any]
    role: Literal["primary", "secondary"]
    answer: Mapping[str, Any] | None
    error: str | None = None
    stats_config: Mapping[str, Any] | None = field(default=None, repr=False)
    team: TeamDefaults | None = field(default=None, repr=False)

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
        """``mean``, ``funnel``, ``ratio`` or ``retention``."""
        return str(self.metric.get("metric_type") or "mean")

    @property
    def breakdowns(self) -> list[str]:
        """The properties the metric is broken down by (empty without a breakdown)."""
        items = (self.metric.get("breakdownFilter") or {}).get("breakdowns") or []
        return [str(item.get("property")) for item in items if isinstance(item, Mapping)]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (breakdown value, variant), the overall rows first, baselines first (none when the query
        failed)."""
        if self.answer is None:
            return []
        return metric_rows(self.answer, self.metric, role=self.role, stats_config=self.stats_config, team=self.team)


def metric_frame(answers: Sequence[MetricAnswer]) -> pd.DataFrame:
    """The long frame of every metric's variants, with fixed columns and dtypes (see :data:`METRIC_COLUMNS`)."""
    return metric_frame_of_rows([row for a in answers for row in a.rows()])


@dataclass(frozen=True)
class MetricExperimentResult:
    """Every metric's ``ExperimentQuery`` answer and the ``ExperimentExposureQuery`` answer of one experiment.

    ``to_frame()`` gives a row per (metric, breakdown value, variant): raw and CUPED-adjusted estimates, the
    interval (a confidence sequence where ``sequential``); ``exposures_frame()`` a row per (day, variant); ``raw``
    holds the answers exactly as sent; ``team`` is the project's experiment defaults the settings fall back to.
    Built by :meth:`hoglab.client.Experiments.results`:

    >>> answer = {"baseline": {"key": "control", "number_of_samples": 100, "sum": 10, "sum_squares": 10},
    ...           "variant_results": [{"key": "test", "number_of_samples": 100, "sum": 15, "sum_squares": 15,
    ...           "method": "frequentist", "p_value": 0.3, "confidence_interval": [-0.4, 1.4], "significant": False}]}
    >>> r = MetricExperimentResult(7, {"stats_config": {"method": "frequentist"}},
    ...     (MetricAnswer({"metric_type": "funnel", "name": "signed up", "series": []}, "primary", answer),))
    >>> r.to_frame()[["metric", "variant", "mean", "lift", "p_value"]].round(4).values.tolist()
    [['signed up', 'control', 0.1, nan, nan], ['signed up', 'test', 0.15, 0.5, 0.3]]
    >>> r.verdict
    'signed up: not significant (test +50.0%, p = 0.3; Welch t-test of the relative effect).'
    """

    experiment_id: int
    experiment: Mapping[str, Any] = field(repr=False)
    metrics: tuple[MetricAnswer, ...] = ()
    exposures: Mapping[str, Any] | None = field(default=None, repr=False)
    exposures_error: str | None = None
    kind: Literal["metrics"] = "metrics"
    team: TeamDefaults | None = field(default=None, repr=False)
    holdout_metrics: tuple[MetricAnswer, ...] = ()
    correction: Literal["holm", "bh", "bonferroni"] | None = None
    """Across the primary and secondary metrics and their variants (``replace(result, correction="bh")``); None
    reads hoglab's ``stats_config.multiple_comparisons`` (PostHog has no correction)."""

    @property
    def family_correction(self) -> Literal["holm", "bh", "bonferroni"] | None:
        """The multiple-comparison correction in force: ``correction``, else the experiment's setting."""
        from ..stats.posthog import resolve_correction

        return self.correction or resolve_correction(self.stats_config)

    def _adjusted(self) -> dict[tuple[int, str], float]:
        """(metric position, variant) -> the adjusted p-value of its overall test, over every metric's variants
        with a p-value (the frequentist ones); empty without a correction."""
        method = self.family_correction
        if method is None:
            return {}
        from ..stats import adjust_pvalues

        keys, values = [], []
        for i, answer in enumerate(self.metrics):
            for r in answer.rows():
                if r["breakdown"] is None and r["method"] == "frequentist" and r["p_value"] is not None:
                    keys.append((i, str(r["variant"])))
                    values.append(float(r["p_value"]))
        return dict(zip(keys, adjust_pvalues(values, method).tolist(), strict=True)) if values else {}

    @property
    def raw(self) -> dict[str, Any]:
        """The answers as sent: ``{"metrics": [{"metric", "role", "answer", "error"}], "exposures": ...}`` (and
        ``holdout_metrics``, the answers against the holdout, when the experiment has one)."""

        def items(answers: tuple[MetricAnswer, ...]) -> list[dict[str, Any]]:
            return [{"metric": dict(a.metric), "role": a.role, "answer": a.answer, "error": a.error} for a in answers]

        raw: dict[str, Any] = {"metrics": items(self.metrics), "exposures": self.exposures}
        if self.holdout_metrics:
            raw["holdout_metrics"] = items(self.holdout_metrics)
        return raw

    @property
    def holdout(self) -> Mapping[str, Any] | None:
        """The experiment's holdout (PostHog's ``ExperimentHoldout`` object), or ``None``."""
        holdout = self.experiment.get("holdout")
        return holdout if isinstance(holdout, Mapping) else None

    @property
    def holdout_key(self) -> str | None:
        """The holdout arm's key (``holdout-<id>``, its persons' flag value), when the experiment has a holdout."""
        from ..schema import holdout_variant_key

        holdout = self.holdout
        if holdout is None or holdout.get("id") is None:
            return None
        return holdout_variant_key(int(holdout["id"]), holdout.get("filters"))

    def holdout_frame(self) -> pd.DataFrame:
        """Each metric against the holdout (hoglab's ``compare_to_holdout``), as :meth:`to_frame` has it.

        Each metric's first row is the holdout arm, and ``lift`` each variant's (``control`` included) over it.
        Empty without a holdout.
        """
        df = metric_frame(self.holdout_metrics)
        df.attrs = {"experiment_id": self.experiment_id, "method": self.method, "sequential": self.sequential,
                    "baseline": self.holdout_key}
        return df

    @property
    def holdout_errors(self) -> dict[str, str]:
        """Metrics whose comparison with the holdout failed: label -> the reason."""
        return {a.label: a.error for a in self.holdout_metrics if a.error is not None}

    @property
    def holdout_verdict(self) -> str:
        """The primary metrics against the holdout, in words ("" without a holdout)."""
        if not self.holdout_metrics:
            return ""
        chosen = [a for a in self.holdout_metrics if a.role == "primary"] or list(self.holdout_metrics)
        return " ".join(f"Against {self.holdout_key}: {self.metric_verdict(a)}" for a in chosen)

    @property
    def method(self) -> str:
        """The experiment's statistical method: ``bayesian`` (PostHog's default) or ``frequentist``."""
        config = self.experiment.get("stats_config") or {}
        return "frequentist" if isinstance(config, Mapping) and config.get("method") == "frequentist" else "bayesian"

    @property
    def stats_config(self) -> Mapping[str, Any]:
        """The experiment's ``stats_config`` as stored (``{}`` when it has none)."""
        config = self.experiment.get("stats_config")
        return config if isinstance(config, Mapping) else {}

    @property
    def sequential(self) -> bool:
        """Whether the frequentist intervals are always-valid confidence sequences (sequential testing on)."""
        settings = resolve_stats_settings(self.stats_config, self.team)
        return settings.method == "frequentist" and settings.sequential

    @property
    def settings_line(self) -> str:
        """The statistics in words: method, sequential testing, CUPED (PostHog's resolution of the settings).

        >>> MetricExperimentResult(1, {"stats_config": {"method": "frequentist", "cuped": {"enabled": True},
        ...     "frequentist": {"sequential_testing_enabled": True}}}).settings_line
        'frequentist, sequential testing (N* = 5,000), CUPED (14-day lookback)'
        """
        from ..stats.posthog import resolve_cuped

        parts = [self.method]
        settings = resolve_stats_settings(self.stats_config, self.team)
        if self.sequential:
            parts.append(f"sequential testing (N* = {settings.sequential_tuning_parameter:,.0f})")
        cuped = resolve_cuped(self.stats_config, self.team)
        if cuped.enabled:
            ratio = (self.stats_config.get("cuped") or {}).get("ratio") is True
            parts.append(f"CUPED ({cuped.lookback_days}-day lookback{', ratio metrics too' if ratio else ''})")
        return ", ".join(parts)

    @property
    def errors(self) -> dict[str, str]:
        """Metrics whose query failed: label -> the reason."""
        return {a.label: a.error for a in self.metrics if a.error is not None}

    @property
    def significant(self) -> bool:
        """Whether any variant of any primary metric is significant (over all breakdown values together)."""
        df = self.to_frame()
        overall = (df["role"] == "primary") & df["breakdown"].isna()
        return bool(df.loc[overall, "significant"].fillna(False).any())

    def to_frame(self) -> pd.DataFrame:
        """One row per (metric, breakdown value, variant): primary metrics first; each metric's overall rows
        (``breakdown`` empty) before its breakdown values', each baseline first. ``df.attrs["health"]`` has the
        health checks, a line each, worst first."""
        df = metric_frame(self.metrics)
        adjusted = self._adjusted()
        if adjusted:
            # Which metric a row is: each answer's rows are contiguous, in order.
            position = [i for i, a in enumerate(self.metrics) for _ in a.rows()]
            keys = list(zip(position, df["variant"].astype(str), df["breakdown"].isna(), strict=True))
            df["adjusted_p_value"] = [adjusted.get((i, v), math.nan) if overall else math.nan for i, v, overall in keys]
            alpha = resolve_stats_settings(self.stats_config, self.team).alpha
            tested = df["adjusted_p_value"].notna()
            df.loc[tested, "significant"] = df.loc[tested, "adjusted_p_value"] < alpha
        df.attrs = {"experiment_id": self.experiment_id, "method": self.method, "sequential": self.sequential,
                    "health": self.health.lines(), "correction": self.family_correction}  # fmt: skip
        return df

    @property
    def health(self) -> Health:
        """The experiment's health checks: SRM over every arm (the holdout's included), the CUPED covariate's
        pre-period balance (``bias_risk``), the flag's state, forced variants, exposures, metrics."""
        from ._health import metric_health

        return metric_health(self)

    def exposures_frame(self) -> pd.DataFrame:
        """Exposures per day and variant: ``cumulative`` (exposed so far, as PostHog's ``exposure_counts``) and
        ``new`` (first exposed that day)."""
        df = exposure_frame(self.exposures)
        df.attrs = {}
        return df

    @property
    def total_exposures(self) -> dict[str, float]:
        """Exposed units per variant, from the exposure query."""
        totals = (self.exposures or {}).get("total_exposures") or {}
        return {str(k): float(v) for k, v in totals.items()}

    def metric_verdict(self, answer: MetricAnswer) -> str:
        """One metric's verdict in words: each variant against the baseline, by the test it names (hoglab's,
        calibrated: docs/statistics.md §6.5), and one more sentence when PostHog's formula would call another."""
        from ..stats.posthog import verdict_difference

        if answer.error is not None:
            return f"{answer.label}: no results ({answer.error})."
        rows = [r for r in answer.rows() if r["method"] is not None and r["breakdown"] is None]
        if not rows:
            return f"{answer.label}: no variant to compare yet."
        position = next((i for i, a in enumerate(self.metrics) if a is answer), None)
        adjusted = self._adjusted() if position is not None else {}
        alpha = resolve_stats_settings(self.stats_config, self.team).alpha
        names = {"holm": "Holm", "bh": "BH", "bonferroni": "Bonferroni"}
        parts = []
        for r in rows:
            family = adjusted.get((position, str(r["variant"]))) if position is not None else None
            r["raw_significant"] = r["significant"]  # hoglab's test before the family's correction
            if family is not None:
                r["significant"] = family < alpha
            if r["validation_failures"]:
                parts.append(f"{r['variant']} {r['validation_failures']}")
                continue
            lift = f"{r['lift']:+.1%}" if r["lift"] is not None and math.isfinite(r["lift"]) else "n/a"
            if r["cuped"] and math.isfinite(r["lift_cuped"]):
                lift += f" (CUPED {r['lift_cuped']:+.1%})"
            if r["method"] == "frequentist" and r["p_value"] is not None:
                valid = " always-valid" if r["sequential"] else ""
                said = f" ({names[str(self.family_correction)]}-adjusted {family:.3g})" if family is not None else ""
                parts.append(f"{r['variant']} {lift},{valid} p = {r['p_value']:.3g}{said}")
            elif r["chance_to_win"] is not None:
                parts.append(f"{r['variant']} {lift}, chance to win {r['chance_to_win']:.1%}")
            else:
                parts.append(f"{r['variant']} {lift}")
        winner = any(r["significant"] for r in rows)
        tests = list(dict.fromkeys(str(r["test"]) for r in rows if r["test"]))
        named = f"; {tests[0]}" if len(tests) == 1 else ""
        text = f"{answer.label}: {'significant' if winner else 'not significant'} ({'; '.join(parts)}{named})."
        differs = [verdict_difference(bool(r["raw_significant"]), bool(r["posthog_significant"])) for r in rows
                   if r["raw_significant"] is not None and r["posthog_significant"] is not None]  # fmt: skip
        noted = [d for d in differs if d]
        if noted:
            text += f" {noted[0]}."
        return text

    @property
    def verdict(self) -> str:
        """The primary metrics' verdicts in words (all metrics when none is primary)."""
        chosen = [a for a in self.metrics if a.role == "primary"] or list(self.metrics)
        return " ".join(self.metric_verdict(a) for a in chosen) or "This experiment has no metrics."

    @property
    def recommendation(self) -> Recommendation | None:
        """One reconciled verdict for the first primary metric (:func:`hoglab.stats.recommend`).

        Ship, keep running, stop or investigate, with its reason; None when that metric has no usable answer.
        """
        from ._verdict import metric_recommendation

        return metric_recommendation(self, correction=self.family_correction)

    def summary(self) -> str:
        """The primary metrics' verdicts, the reconciled recommendation and the health checks, in words."""
        recommendation = self.recommendation
        advice = recommendation.summary() if recommendation is not None else "none (no usable primary metric)."
        return f"Verdict: {self.verdict}\nRecommendation: {advice}\n{self.health.summary()}"

    def _repr_html_(self) -> str:
        title = f"Experiment {self.experiment_id} ({self.settings_line})"
        recommendation = self.recommendation
        advice = recommendation._repr_html_() if recommendation is not None else ""
        lines = "".join(f"<li>{html.escape(self.metric_verdict(a))}</li>" for a in self.metrics)

        def table(df: pd.DataFrame) -> str:
            return df.drop(columns=["metric_uuid"]).to_html(index=False, float_format=lambda x: f"{x:.4g}",
                                                            na_rep="–", border=0)  # fmt: skip

        held = ""
        if self.holdout_metrics:
            title_held = f"Against the holdout {self.holdout_key} (hoglab's compare_to_holdout)"
            verdicts = "".join(f"<li>{html.escape(self.metric_verdict(a))}</li>" for a in self.holdout_metrics)
            held = f"<strong>{html.escape(title_held)}</strong><ul>{verdicts}</ul>{table(self.holdout_frame())}"
        return (f"<div><strong>{html.escape(title)}</strong>{advice}{self.health._repr_html_()}<ul>{lines}</ul>"
                f"{table(self.to_frame())}{held}</div>")  # fmt: skip
