"""The experiment report's figures, drawn with the toolkit's own plots on Figures of their own.

Figures are made with ``matplotlib.figure.Figure`` rather than pyplot, so building a report never opens a
window, needs no GUI backend (``hoglab demo`` runs in a terminal) and leaves pyplot's figure list alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...frames import funnel_frame, trends_frame
from ..plots.experiment import plot_experiment
from ..plots.funnels import plot_funnel
from ..plots.sequential import plot_cumulative_effect
from ..plots.srm import plot_srm
from ..plots.trends import plot_trends

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .report import ExperimentReport

__all__ = ["draw_figures"]


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained", dpi=110)


def _control_first(values: pd.Series) -> pd.Series:
    return values.astype(str) != "control"


def draw_figures(report: ExperimentReport) -> dict[str, Figure]:
    """The report's figures by name (only those its data allows), in reading order."""
    primary = report.primary
    figures: dict[str, Figure] = {}
    if primary.result is None or primary.analysis is None:
        return figures
    result, analysis = primary.result, primary.analysis

    figures["effect"] = figure = _figure(7.5, 2.2 + 0.45 * len(analysis.table))
    plot_experiment(result, ax=figure.add_subplot())

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
    plot_experiment(result, ax=figure.add_subplot(), kind="posteriors")

    if analysis.srm is not None:
        figures["srm"] = figure = _figure(5.5, 3.2)
        plot_srm(analysis.srm, ax=figure.add_subplot())
    return figures
