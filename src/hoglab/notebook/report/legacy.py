"""A legacy experiment's report (its metric an insight filter): its analysis and its figures.

Each metric's ``/results`` answer is recomputed with :mod:`hoglab.stats` (:func:`~hoglab.notebook.analysis.analyse`),
the sample is judged against the planned effect (:class:`Planning`), and the primary metric is restated per person
and day so its effect can be drawn over time. Figures are made with ``matplotlib.figure.Figure`` rather than
pyplot, so building a report never opens a window, needs no GUI backend (``hoglab demo`` runs in a terminal) and
leaves pyplot's figure list alone. A metric experiment's report is ``metric.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...client._health import legacy_health
from ...client._legacy_results import explain_no_results
from ...client._verdict import DEFAULT_MDE, legacy_recommendation
from ...errors import APIError, HoglabError
from ...schema import Experiment, funnel_window_seconds
from ...stats import StatsError, minimum_detectable_effect, power, running_time, sample_size
from ..analysis import Analysis, analyse
from .novelty import daily_novelty, novelty_figure
from .report import ExperimentReport, MetricOutcome, Planning

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ...client import Client

__all__ = ["draw_figures", "legacy_report"]

EXPOSURE_EVENT = "$feature_flag_called"

# Each exposed person on the day of their first exposure, with what they did after it: whether the metric's
# last event followed within the funnel window (conversions), and how many metric events followed (counts).
# It restates the primary metric per person so it can be cut by day; its totals equal the results' own counts
# when the metric's first step is the exposure itself (as in the demo), and the report says when they differ.
_OVER_TIME_HOGQL = """
SELECT toStartOfDay(first_seen) AS date, variant, count() AS n,
       countIf(arrayExists(t -> t >= first_seen AND dateDiff('second', first_seen, t) <= {window}, times))
           AS successes,
       sum(arrayCount(t -> t >= first_seen, times)) AS count,
       sum(arrayCount(t -> t >= first_seen, times) * arrayCount(t -> t >= first_seen, times)) AS count_squares
FROM (
    SELECT person_id,
           argMinIf(properties.$feature_flag_response, timestamp, event = {exposure}) AS variant,
           minIf(timestamp, event = {exposure}) AS first_seen,
           groupArrayIf(timestamp, event = {metric}) AS times
    FROM events
    WHERE timestamp >= {start} AND timestamp < {end}
      AND ((event = {exposure} AND properties.$feature_flag = {flag}) OR event = {metric})
    GROUP BY person_id
    HAVING countIf(event = {exposure}) > 0
)
WHERE variant IN {variants}
GROUP BY date, variant
ORDER BY date, variant
"""


def legacy_report(
    client: Client, experiment: Experiment, rollout: Mapping[str, float], refresh: bool, figures: bool
) -> ExperimentReport:
    """A legacy experiment's report: each metric's results analysed, power, the primary metric over time."""
    primary = _outcome(client, experiment, None, "primary metric", rollout, refresh)
    secondary = tuple(
        _outcome(client, experiment, index, str(metric.get("name") or f"secondary metric {index}"), rollout, refresh)
        for index, metric in enumerate(experiment.secondary_metrics or [])
    )
    over_time, note, daily = _over_time(client, experiment, primary)
    novelty = novelty_note = None
    if daily is not None and primary.analysis is not None:
        control = primary.analysis.comparison.control
        novelty, novelty_note = daily_novelty(daily, _novelty_metric(primary.analysis), control)
    body = experiment.model_dump(mode="json", by_alias=True)
    recommendation = health = None
    if primary.result is not None:
        health = legacy_health(replace(primary.result, experiment=body))
    if primary.result is not None and primary.analysis is not None:
        recommendation = legacy_recommendation(replace(primary.result, experiment=body))
    report = ExperimentReport(
        experiment=experiment,
        primary=primary,
        secondary=secondary,
        planning=_planning(experiment, primary),
        over_time=over_time,
        over_time_note=note,
        recommendation=recommendation,
        health=health,
        novelty=novelty,
        novelty_note=novelty_note,
    )
    if figures:
        report = replace(report, figures=draw_figures(report))
    return report


def _outcome(
    client: Client,
    experiment: Experiment,
    index: int | None,
    name: str,
    rollout: Mapping[str, float],
    refresh: bool,
) -> MetricOutcome:
    if experiment.status == "draft":
        return MetricOutcome(name, error="The experiment is a draft: it has no results until it is launched.")
    try:
        if index is None:
            result = client.experiments.legacy_results(experiment.id, refresh=refresh)
        else:
            result = client.experiments.secondary_results(experiment.id, index, refresh=refresh)
    except APIError as exc:
        return MetricOutcome(name, error=explain_no_results(str(exc.detail)))
    except HoglabError as exc:
        return MetricOutcome(name, error=f"No results: {exc}")
    try:
        analysis = analyse(result, rollout)
    except (StatsError, ValueError) as exc:
        return MetricOutcome(name, result=result, error=f"Results that cannot be analysed: {exc}")
    return MetricOutcome(name, result=result, analysis=analysis)


def _planning(experiment: Experiment, primary: MetricOutcome) -> Planning | None:
    analysis = primary.analysis
    if analysis is None or experiment.start_date is None:
        return None
    table = analysis.table.set_index("variant")
    control = analysis.comparison.control
    counted = "conversions" if "conversions" in table else "count"
    baseline = float(table["rate"].loc[control])
    if not 0 < baseline < (1 if counted == "conversions" else math.inf):
        return None
    parameters = experiment.parameters or {}
    mde = float(parameters.get("minimum_detectable_effect") or DEFAULT_MDE * 100) / 100
    # Counts per unit are planned as means with a Poisson spread (sd = sqrt(rate)).
    shape: dict[str, Any] = (
        {"metric": "conversion"} if counted == "conversions" else {"metric": "mean", "sd": math.sqrt(baseline)}
    )
    smallest = float(table["units"].min())
    end = experiment.end_date or datetime.now(UTC)
    days = max((end - experiment.start_date).total_seconds() / 86_400, 1e-9)
    needed = sample_size(baseline, mde, **shape)
    try:
        detectable = minimum_detectable_effect(smallest, baseline, **shape)
    except StatsError:
        detectable = math.nan
    daily_units = float(table["units"].sum()) / days
    days_needed = running_time(needed, daily_units, variants=len(table)) if daily_units > 0 else None
    return Planning(
        metric=counted,
        baseline=baseline,
        mde=mde,
        needed_per_variant=needed,
        smallest_variant=smallest,
        power=power(smallest, baseline, mde, **shape),
        detectable_now=detectable,
        days_running=days,
        days_needed=days_needed,
    )


def _metric_event(filters: Mapping[str, Any] | None) -> tuple[str | None, int]:
    """The event a person must do after exposure, and the funnel window in seconds.

    The event is a funnel's last step or a trend's event; there is none when the metric is not a plain event
    (actions, or no events at all).
    """
    filters = filters or {}
    events = [e for e in filters.get("events") or [] if isinstance(e, Mapping)]
    if not events or filters.get("actions"):
        return None, 0
    last = max(events, key=lambda e: int(e.get("order") or 0))
    window = funnel_window_seconds(filters.get("funnel_window_interval"), filters.get("funnel_window_interval_unit"))
    return (str(last["id"]) if last.get("id") else None), window


def _novelty_metric(analysis: Analysis) -> str:
    return "conversion rate" if "conversions" in analysis.table else "events per person"


def _over_time(
    client: Client, experiment: Experiment, primary: MetricOutcome
) -> tuple[pd.DataFrame | None, str | None, pd.DataFrame | None]:
    """Per-day sufficient statistics of the primary metric (``cumulative_effect``'s input), or why not; and the
    query's rows as read (with ``count_squares``, for the novelty section)."""
    if primary.analysis is None or experiment.start_date is None:
        return None, None, None
    if (experiment.parameters or {}).get("custom_exposure_filter"):
        return None, "Not shown over time: the experiment counts exposures with a custom filter.", None
    try:
        metric, window = _metric_event(experiment.filters)
    except (TypeError, ValueError) as exc:  # a filter the service tolerates but this restatement can't read
        return None, f"Not shown over time: {exc}", None
    if metric is None:
        return None, "Not shown over time: the metric is not a plain event (actions are not restated per day).", None
    variants = [str(v) for v in primary.analysis.table["variant"]]
    values = {
        "exposure": EXPOSURE_EVENT,
        "flag": experiment.feature_flag_key,
        "metric": metric,
        "window": window,
        "start": experiment.start_date,
        "end": experiment.end_date or datetime.now(UTC),
        "variants": variants,
    }
    try:
        daily = client.hogql(_OVER_TIME_HOGQL, values, limit=10_000)
    except HoglabError as exc:
        return None, f"Not shown over time: {getattr(exc, 'detail', None) or exc}", None
    if daily.empty:
        return None, "Not shown over time: no exposures recorded yet.", None
    conversions = "conversions" in primary.analysis.table
    frame = daily[["date", "variant", "n", "successes"] if conversions else ["date", "variant", "count", "n"]]
    frame = frame.rename(columns={"n": "exposure"}) if not conversions else frame
    return frame.reset_index(drop=True), _consistency_note(frame, primary.analysis, conversions), daily


def _consistency_note(frame: pd.DataFrame, analysis: Analysis, conversions: bool) -> str | None:
    """Say so when the per-person restatement's totals differ from the results' own counts."""
    units = frame.groupby("variant")["n" if conversions else "exposure"].sum()
    table = analysis.table.set_index("variant")["units"]
    differ = [str(v) for v in table.index if float(units.get(v, 0)) != float(table[v])]
    if not differ:
        return None
    return (
        "Over time, each exposed person counts on the day of their first exposure, so the totals differ from "
        f"the results' units for {', '.join(differ)} (the metric's first step is not the exposure itself)."
    )


# ---------------------------------------------------------------------------------------------------- figures


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained", dpi=110)


def _control_first(values: pd.Series) -> pd.Series:
    return values.astype(str) != "control"


def _said(ax: Axes, report: ExperimentReport) -> None:
    """The title's first line says the report's recommendation, in place of PostHog's significance code, so a
    chart never reads "significant" above a "KEEP RUNNING"."""
    recommendation = report.recommendation
    if recommendation is None:
        return
    lines = ax.get_title().split("\n")
    name = lines[0].split(":")[0] if len(lines) > 1 else f"Experiment {report.experiment.id}"
    ax.set_title("\n".join([f"{name}: {recommendation.headline}", *lines[1:]]))


def draw_figures(report: ExperimentReport) -> dict[str, Figure]:
    """The report's figures by name (only those its data allows), in reading order."""
    from ...frames import funnel_frame, trends_frame
    from ..plots.funnels import plot_funnel
    from ..plots.legacy import plot_experiment
    from ..plots.sequential import plot_cumulative_effect
    from ..plots.srm import plot_srm
    from ..plots.trends import plot_trends

    primary = report.primary
    figures: dict[str, Figure] = {}
    if primary.result is None or primary.analysis is None:
        return figures
    result, analysis = primary.result, primary.analysis

    figures["effect"] = figure = _figure(7.5, 2.2 + 0.45 * len(analysis.table))
    _said(plot_experiment(result, ax=figure.add_subplot()), report)

    if report.over_time is not None:
        figures["over_time"] = figure = _figure(9, 3.8)
        plot_cumulative_effect(report.over_time, ax=figure.add_subplot(), control=analysis.comparison.control)

    insight = result.result.get("insight")
    if insight:
        figures["metric"] = figure = _figure(7.5, 3.6)
        if result.kind == "funnel":
            steps = funnel_frame({"results": insight})
            if "breakdown_value" in steps:  # control's bars first, as in every other figure of the report
                steps = steps.sort_values("breakdown_value", key=_control_first, kind="stable")
            plot_funnel(steps, ax=figure.add_subplot(), title="Funnel by variant")
        else:
            plot_trends(trends_frame({"results": insight}), ax=figure.add_subplot(), title="Metric by variant")

    figures["posteriors"] = figure = _figure(7.5, 3.4)
    _said(plot_experiment(result, ax=figure.add_subplot(), kind="posteriors"), report)

    if analysis.srm is not None:
        figures["srm"] = figure = _figure(5.5, 3.2)
        plot_srm(analysis.srm, ax=figure.add_subplot())
    if report.novelty is not None:
        figures["novelty"] = novelty_figure(report.novelty)
    return figures
