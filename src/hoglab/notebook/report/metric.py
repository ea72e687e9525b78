"""A metric experiment's report (PostHog's current kind): its results, its text and its figures.

The HTML page reuses the picker's view (:mod:`hoglab.notebook.picker.metric_view`); here are the results (an
``ExperimentQuery`` per metric and the exposures' SRM check), the terminal lines and the figures: each metric's
effect with its interval, the exposures over time and the traffic split. A legacy experiment's report is
``legacy.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import HoglabError
from ..picker.metric_view import exposure_srm, metric_settings
from .report import ExperimentReport, MetricOutcome

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...client import Client
    from ...schema import Experiment

__all__ = ["draw_metric_figures", "metric_report", "metric_summary_lines"]


def metric_report(
    client: Client, experiment: Experiment, rollout: Mapping[str, float], refresh: bool, figures: bool
) -> ExperimentReport:
    """PostHog's current kind: an ``ExperimentQuery`` per metric, the exposures and their SRM check."""
    name = "metrics"
    if experiment.status == "draft":
        outcome = MetricOutcome(name, error="The experiment is a draft: it has no results until it is launched.")
        return ExperimentReport(experiment=experiment, primary=outcome)
    try:
        result = client.experiments.metric_results(experiment, refresh=refresh)
    except HoglabError as exc:
        return ExperimentReport(experiment=experiment, primary=MetricOutcome(name, error=f"No results: {exc}"))
    report = ExperimentReport(
        experiment=experiment,
        primary=MetricOutcome(name),
        metrics=result,
        exposure_srm=exposure_srm(result, rollout),
        recommendation=result.recommendation,
        health=result.health,
    )
    if figures:
        report = replace(report, figures=draw_metric_figures(report))
    return report


def _cuped_line(row: dict[str, object]) -> str | None:
    low, high = row["interval_low"], row["interval_high"]
    raw_low, raw_high = row["raw_interval_low"], row["raw_interval_high"]
    numbers = (low, high, raw_low, raw_high, row["theta"])
    if not all(isinstance(v, float) and math.isfinite(v) for v in numbers):
        return None
    line = (f"    CUPED {row['variant']}: {row['lift_cuped']:+.1%} [{low:+.1%}, {high:+.1%}]; without CUPED "
            f"[{raw_low:+.1%}, {raw_high:+.1%}] (θ = {row['theta']:.3g})")
    theirs = (row["posthog_interval_low"], row["posthog_interval_high"], row["posthog_p_value"])
    if all(isinstance(v, float) and math.isfinite(v) for v in theirs) and theirs != (low, high, row["p_value"]):
        p_low, p_high, p_value = theirs
        line += f"; PostHog's formula [{p_low:+.1%}, {p_high:+.1%}], p = {p_value:.2g}"
    return line


def metric_summary_lines(report: ExperimentReport) -> list[str]:
    """The report's terminal lines: the settings, the exposures' SRM check, then each metric.

    Each metric gets its settings, its verdict, CUPED's interval beside the unadjusted one, and a line per
    breakdown value (and against the holdout, when the experiment has one).
    """
    result = report.metrics
    if result is None:
        return [report.primary.error or "No results."]
    lines = [f"Method: {result.settings_line} (PostHog's current engine)."]
    check = report.exposure_srm
    if check is not None:
        lines.append(check.summary("line", counted="Exposures"))
    elif result.exposures_error:
        lines.append(f"Exposures: {result.exposures_error}")
    if report.health is not None:
        lines.append(report.health.summary())
    for answer in result.metrics:
        lines.append(f"[{answer.role}] {result.metric_verdict(answer)}")
        lines.append(f"    {answer.metric_type}: {metric_settings(answer.metric)}")
        rows = [r for r in answer.rows() if r["method"] is not None]
        for row in rows:
            if row["breakdown"] is None and row["cuped"]:
                line = _cuped_line(row)
                if line:
                    lines.append(line)
        for row in rows:
            if row["breakdown"] is not None:
                decided = (f"p = {row['p_value']:.3g}" if row["p_value"] is not None else
                           row["validation_failures"] or "no test")  # fmt: skip
                lift = row["lift_cuped"] if row["cuped"] and math.isfinite(row["lift_cuped"]) else row["lift"]
                shown = f"{lift:+.1%}" if isinstance(lift, float) and math.isfinite(lift) else "n/a"
                lines.append(f"    {row['breakdown']}: {row['variant']} {shown}, {decided}")
    for answer in result.holdout_metrics:
        # hoglab's compare_to_holdout: every variant, control included, against the holdout arm.
        lines.append(f"[{answer.role}] Against {result.holdout_key}: {result.metric_verdict(answer)}")
    return lines


def draw_metric_figures(report: ExperimentReport) -> dict[str, Figure]:
    """The figures by name: ``metric_effects``, ``exposures`` and ``srm`` (those the data allows)."""
    from matplotlib.figure import Figure

    from ..plots.metric import plot_exposures, plot_metric_effects
    from ..plots.srm import plot_srm

    result = report.metrics
    figures: dict[str, Figure] = {}
    if result is None:
        return figures
    rows = int(result.to_frame()["method"].notna().sum())
    if rows:
        figures["metric_effects"] = figure = Figure(figsize=(8, 1.4 + 0.45 * rows), layout="constrained", dpi=110)
        plot_metric_effects(result, ax=figure.add_subplot())
    if not result.exposures_frame().empty:
        figures["exposures"] = figure = Figure(figsize=(8, 3.2), layout="constrained", dpi=110)
        plot_exposures(result, ax=figure.add_subplot())
    if report.exposure_srm is not None:
        figures["srm"] = figure = Figure(figsize=(5.5, 3.2), layout="constrained", dpi=110)
        plot_srm(report.exposure_srm, ax=figure.add_subplot())
    return figures
