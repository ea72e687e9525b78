"""The experiment report: one experiment analysed end to end, as terminal text, PNG figures and an HTML page.

It gathers what an analyst checks before calling an experiment: the results of the primary metric recomputed
with :mod:`hoglab.stats` (frequentist and Bayesian side by side, PostHog's verdict), the traffic split (SRM),
the health checks, whether the sample was large enough for the planned effect, the effect over time with
always-valid bounds (so it may be read every day), whether the effect fades or grows with time since exposure
(novelty), and the secondary metrics. It only talks HTTP through a :class:`~hoglab.Client`,
so it works against hoglab and against PostHog alike. Here are the report's types and :func:`experiment_report`,
which hands a legacy experiment to ``legacy.py`` and a metric experiment to ``metric.py``.

``hoglab demo`` writes it for the demo's experiment, ``hoglab report ID`` for any experiment::

    report = hoglab.experiment_report(7)        # shown inline in a notebook (_repr_html_)
    print(report.summary())
    report.write("out/")                        # report.html (self-contained), figures/*.png, variants.csv
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pandas as pd

from ...client._legacy_results import ExperimentResult
from ...client._metric_queries import is_metric_experiment
from ...client._metric_results import MetricExperimentResult
from ...schema import Experiment
from ...stats import Health, Novelty, Recommendation, SRMResult
from ..analysis import Analysis, variant_rollout

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from ...client import Client

__all__ = ["ExperimentReport", "MetricOutcome", "Planning", "experiment_report"]


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
    health: Health | None = None
    """The experiment's health checks (SRM over every arm, ``bias_risk``, the flag, exposures, metrics)."""
    novelty: Novelty | None = None
    """The primary metric's effect by days since first exposure and its trend test (is it fading?), or ``None``
    (``novelty_note`` says why); see :mod:`hoglab.notebook.report.novelty`."""
    novelty_note: str | None = None

    @property
    def verdict(self) -> str | None:
        """PostHog's significance code of the primary metric (``None`` without results).

        For a metric experiment, ``"significant"`` when a variant of a primary metric is, else
        ``"not_significant"``, and ``None`` while no variant of a primary metric could be tested (nobody exposed,
        no metric data).
        """
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
        from .metric import metric_report

        return metric_report(client, experiment, rollout, refresh, figures)
    from .legacy import legacy_report

    return legacy_report(client, experiment, rollout, refresh, figures)
