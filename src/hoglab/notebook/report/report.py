"""The experiment report: one experiment analysed end to end, as terminal text, PNG figures and an HTML page.

It gathers what an analyst checks before calling an experiment: the results of the primary metric recomputed
with :mod:`hoglab.stats` (frequentist and Bayesian side by side, PostHog's verdict), the traffic split (SRM),
whether the sample was large enough for the planned effect, the effect over time with always-valid bounds
(so it may be read every day), and the secondary metrics. It only talks HTTP through a :class:`~hoglab.Client`,
so it works against hoglab and against PostHog alike.

``hoglab demo`` writes it for the demo's experiment, ``hoglab report ID`` for any experiment::

    report = hoglab.experiment_report(7)        # shown inline in a notebook (_repr_html_)
    print(report.summary())
    report.write("out/")                        # report.html (self-contained), figures/*.png, variants.csv
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...client._metric_queries import is_metric_experiment
from ...client._metric_results import MetricExperimentResult
from ...client._results import ExperimentResult, explain_no_results
from ...client._verdict import legacy_recommendation
from ...errors import APIError, HoglabError
from ...schema import Experiment, funnel_window_seconds
from ...stats import (
    Recommendation,
    SRMResult,
    StatsError,
    minimum_detectable_effect,
    power,
    running_time,
    sample_size,
)
from ..analysis import Analysis, analyse, variant_rollout
from ..picker.metric_view import exposure_srm

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from ...client import Client

__all__ = ["ExperimentReport", "MetricOutcome", "Planning", "experiment_report"]

DEFAULT_MDE = 0.05  # PostHog's default minimum detectable effect (5%), used when the experiment names none
EXPOSURE_EVENT = "$feature_flag_called"

# Each exposed person on the day of their first exposure, with what they did after it: whether the metric's
# last event followed within the funnel window (conversions), and how many metric events followed (counts).
# It restates the primary metric per person so it can be cut by day; its totals equal the results' own counts
# when the metric's first step is the exposure itself (as in the demo), and the report says when they differ.
_OVER_TIME_HOGQL = """
SELECT toStartOfDay(first_seen) AS date, variant, count() AS n,
       countIf(arrayExists(t -> t >= first_seen AND dateDiff('second', first_seen, t) <= {window}, times))
           AS successes,
       sum(arrayCount(t -> t >= first_seen, times)) AS count
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


@dataclass(frozen=True)
class MetricOutcome:
    """One metric's results: the answer and its analysis, or why there is none (``error``)."""

    name: str
    result: ExperimentResult | None = None
    analysis: Analysis | None = None
    error: str | None = None


@dataclass(frozen=True)
class Planning:
    """Was the sample large enough? Power for the planned minimum detectable effect (``mde``, relative).

    ``needed_per_variant`` comes from the control's observed rate (``baseline``); ``days_needed`` from the
    rate at which units arrived so far.
    """

    metric: str
    baseline: float
    mde: float
    needed_per_variant: int
    smallest_variant: float
    power: float
    detectable_now: float
    days_running: float
    days_needed: int | None


@dataclass(frozen=True)
class ExperimentReport:
    """An experiment analysed: see :func:`experiment_report`. ``figures`` are matplotlib Figures by name."""

    experiment: Experiment
    primary: MetricOutcome
    secondary: tuple[MetricOutcome, ...] = ()
    planning: Planning | None = None
    over_time: pd.DataFrame | None = None
    over_time_note: str | None = None
    figures: Mapping[str, Figure] = field(default_factory=dict, repr=False)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    metrics: MetricExperimentResult | None = None
    exposure_srm: SRMResult | None = None
    recommendation: Recommendation | None = None
    """One reconciled verdict (ship, keep running, stop, investigate) from the results, the always-valid bound,
    power for the planned MDE and SRM (:func:`hoglab.stats.recommend`)."""

    @property
    def verdict(self) -> str | None:
        """PostHog's significance code of the primary metric (``None`` without results); for a metric
        experiment, ``"significant"`` when a variant of a primary metric is, else ``"not_significant"``, and
        ``None`` while no variant of a primary metric could be tested (nobody exposed, no metric data)."""
        if self.metrics is not None:
            frame = self.metrics.to_frame()
            tested = frame.loc[frame["role"] == "primary", ["p_value", "chance_to_win"]].notna().any(axis=None)
            if not tested:
                return None
            return "significant" if self.metrics.significant else "not_significant"
        result = self.primary.result
        return None if result is None or result.significance_code is None else str(result.significance_code)

    def summary(self) -> str:
        """The report as plain text, for a terminal."""
        from .render import summary_text

        return summary_text(self)

    def to_html(self) -> str:
        """The report as one self-contained HTML page (figures embedded)."""
        from .render import report_html

        return report_html(self)

    def _repr_html_(self) -> str:
        from .render import report_html

        return report_html(self, page=False)

    def write(self, directory: str | Path) -> Path:
        """Write ``report.html``, ``figures/<name>.png``, ``variants.csv`` and ``results.json`` into
        ``directory`` (created if needed); returns the path of ``report.html``."""
        from .render import write_report

        return write_report(self, directory)


def experiment_report(
    experiment_id: int, client: Client | None = None, *, refresh: bool = False, figures: bool = True
) -> ExperimentReport:
    """Analyse experiment ``experiment_id``: results, significance, SRM, power, effect over time, secondaries.

    ``client`` defaults to :func:`hoglab.default_client`; ``refresh=True`` asks the service to recompute its
    results instead of answering from its cache; ``figures=False`` skips drawing (faster, no matplotlib).
    Missing results (a draft, no exposures yet) are reported, not raised: they are part of the answer. What
    leaves nothing to report raises the client's typed error, with its message: no client configured
    (:class:`~hoglab.ConfigurationError`), an experiment the project does not have (:class:`~hoglab.NotFound`).

    >>> report = hoglab.experiment_report(1)               # doctest: +SKIP
    >>> report.verdict, report.primary.analysis.table      # doctest: +SKIP
    """
    from ...client import default_client

    client = client or default_client()
    experiment = client.experiments.get(experiment_id)
    rollout = variant_rollout(experiment)
    if is_metric_experiment(experiment.model_dump(mode="json", by_alias=True)):
        return _metric_report(client, experiment, rollout, refresh, figures)
    primary = _outcome(client, experiment, None, "primary metric", rollout, refresh)
    secondary = tuple(
        _outcome(client, experiment, index, str(metric.get("name") or f"secondary metric {index}"), rollout, refresh)
        for index, metric in enumerate(experiment.secondary_metrics or [])
    )
    over_time, note = _over_time(client, experiment, primary)
    body = experiment.model_dump(mode="json", by_alias=True)
    recommendation = None
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
    )
    if figures:
        from .figures import draw_figures

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


def _metric_report(
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
    )
    if figures:
        from .metrics import draw_metric_figures

        report = replace(report, figures=draw_metric_figures(report))
    return report


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
    """The event a person must do after exposure (a funnel's last step, a trend's event) and the funnel window
    in seconds; no event when the metric is not a plain event (actions, or no events at all)."""
    filters = filters or {}
    events = [e for e in filters.get("events") or [] if isinstance(e, Mapping)]
    if not events or filters.get("actions"):
        return None, 0
    last = max(events, key=lambda e: int(e.get("order") or 0))
    window = funnel_window_seconds(filters.get("funnel_window_interval"), filters.get("funnel_window_interval_unit"))
    return (str(last["id"]) if last.get("id") else None), window


def _over_time(
    client: Client, experiment: Experiment, primary: MetricOutcome
) -> tuple[pd.DataFrame | None, str | None]:
    """Per-day sufficient statistics of the primary metric (``cumulative_effect``'s input), or why not."""
    if primary.analysis is None or experiment.start_date is None:
        return None, None
    if (experiment.parameters or {}).get("custom_exposure_filter"):
        return None, "Not shown over time: the experiment counts exposures with a custom filter."
    try:
        metric, window = _metric_event(experiment.filters)
    except (TypeError, ValueError) as exc:  # a filter the service tolerates but this restatement can't read
        return None, f"Not shown over time: {exc}"
    if metric is None:
        return None, "Not shown over time: the metric is not a plain event (actions are not restated per day)."
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
        return None, f"Not shown over time: {getattr(exc, 'detail', None) or exc}"
    if daily.empty:
        return None, "Not shown over time: no exposures recorded yet."
    conversions = "conversions" in primary.analysis.table
    frame = daily[["date", "variant", "n", "successes"] if conversions else ["date", "variant", "count", "n"]]
    frame = frame.rename(columns={"n": "exposure"}) if not conversions else frame
    return frame.reset_index(drop=True), _consistency_note(frame, primary.analysis, conversions)


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
