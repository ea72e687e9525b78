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

import pandas as pd

from ...errors import HoglabError
from ...stats import StatsError
from ..picker.metric_view import exposure_srm, metric_settings
from .novelty import metric_novelty, novelty_figure
from .report import ExperimentReport, MetricOutcome

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...client import Client, MetricExperimentResult
    from ...schema import Experiment

__all__ = ["OVER_TIME_WAIT", "draw_metric_figures", "metric_over_time", "metric_report", "metric_summary_lines"]


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
    over_time, note = metric_over_time(client, result)
    novelty, novelty_note = metric_novelty(client, result)
    report = ExperimentReport(
        experiment=experiment,
        primary=MetricOutcome(name),
        metrics=result,
        exposure_srm=exposure_srm(result, rollout),
        recommendation=result.recommendation,
        health=result.health,
        over_time=over_time,
        over_time_note=note,
        novelty=novelty,
        novelty_note=novelty_note,
    )
    if figures:
        report = replace(report, figures=draw_metric_figures(report))
    return report


OVER_TIME_WAIT = 60.0
"""Seconds the report waits for the service to fill a metric's days (``timeseries_results``) before it goes on
without the chart, saying so."""


def metric_over_time(client: Client, result: MetricExperimentResult, *,
                     wait: float = OVER_TIME_WAIT) -> tuple[pd.DataFrame | None, str | None]:  # fmt: skip
    """The first primary metric's effect day by day (``date, variant, effect, low, high``), from the service's
    ``timeseries_results`` (PostHog's; each day the cumulative answer from the start to that day), each day's
    interval hoglab's always-valid one (the confidence sequence of the calibrated test, so it may be read every
    day); and a note when there is none (no such metric, the days still being computed, a service without them)."""
    import time
    from datetime import datetime

    from ...frames.experiments import arm_stats
    from ...schema import metric_fingerprint
    from ...stats.posthog import calibrated_results

    primary = [a for a in result.metrics if a.role == "primary" and a.answer is not None and a.uuid]
    if not primary:
        return None, None
    answer = primary[0]
    experiment = result.experiment
    metric = answer.metric
    parameters = experiment.get("parameters") or {}
    start = experiment.get("start_date")
    if isinstance(start, str) and start:  # the server fingerprints the stored moment, in UTC ISO form
        start = datetime.fromisoformat(start.replace("Z", "+00:00"))
    fingerprint = metric.get("fingerprint") or metric_fingerprint(
        metric, start, (experiment.get("stats_config") or {}).get("method"),
        experiment.get("exposure_criteria"), bool(experiment.get("only_count_matured_users")),
        parameters.get("excluded_variants"))  # fmt: skip
    path = client.path(f"experiments/{result.experiment_id}/timeseries_results/")
    deadline = time.monotonic() + wait
    while True:
        try:
            body = client.get_json(path, {"metric_uuid": answer.uuid, "fingerprint": fingerprint}) or {}
        except HoglabError as exc:
            return None, f"Effect over time: not available from this service ({exc})."
        status = body.get("status")
        if status in ("completed", "failed") or (status == "partial" and not body.get("recalculation_status")):
            break
        if time.monotonic() > deadline:
            return None, ("Effect over time: the service is still computing the days (timeseries_results); make the "
                          "report again in a minute.")  # fmt: skip
        time.sleep(0.5)
    config = result.stats_config or {"method": result.method}
    always = {**config, "method": "frequentist",
              "frequentist": {**(config.get("frequentist") or {}), "sequential_testing_enabled": True}}  # fmt: skip
    rows = []
    for day, stored in sorted((body.get("timeseries") or {}).items()):
        if not isinstance(stored, Mapping) or not isinstance(stored.get("baseline"), Mapping):
            continue
        try:
            served = [v for v in stored.get("variant_results") or [] if isinstance(v, Mapping)]
            base, others = arm_stats(stored["baseline"]), [arm_stats(v) for v in served]
            cuped = all(v.get("covariate_sum") is not None for v in [stored["baseline"], *served])
            ours, _ = calibrated_results(answer.metric_type, base, others, stats_config=always,  # type: ignore[arg-type]
                                         team=result.team, cuped=cuped)  # fmt: skip
        except (StatsError, TypeError, ValueError):
            continue
        for r in ours:
            if r.confidence_interval is None or r.point_estimate is None:
                continue
            rows.append({"date": pd.Timestamp(day), "variant": r.stats.key, "effect": float(r.point_estimate),
                         "low": float(r.confidence_interval[0]), "high": float(r.confidence_interval[1])})
    if not rows:
        return None, "Effect over time: no day has a tested variant yet."
    frame = pd.DataFrame(rows, columns=["date", "variant", "effect", "low", "high"])
    frame.attrs = {"metric": answer.label}
    return frame, None


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

    from ..plots.metric import plot_exposures, plot_metric_effects, plot_metric_over_time
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
    if report.over_time is not None:
        figures["over_time"] = figure = Figure(figsize=(8, 3.4), layout="constrained", dpi=110)
        metric = report.over_time.attrs.get("metric") or "primary metric"
        plot_metric_over_time(report.over_time, ax=figure.add_subplot(),
                              title=f"{metric}: effect over time, with always-valid bounds")  # fmt: skip
    if report.exposure_srm is not None:
        figures["srm"] = figure = Figure(figsize=(5.5, 3.2), layout="constrained", dpi=110)
        plot_srm(report.exposure_srm, ax=figure.add_subplot())
    if report.novelty is not None:
        figures["novelty"] = novelty_figure(report.novelty)
    return figures
