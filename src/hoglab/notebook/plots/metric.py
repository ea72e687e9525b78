"""Plots of a metric experiment (:class:`hoglab.MetricExperimentResult`): each metric's effect with its interval,
and the exposures over time.

>>> from hoglab.client._metric_results import MetricAnswer, MetricExperimentResult
>>> answer = {"baseline": {"key": "control", "number_of_samples": 1000, "sum": 100, "sum_squares": 100},
...           "variant_results": [{"key": "test", "number_of_samples": 1000, "sum": 130, "sum_squares": 130,
...           "method": "bayesian", "chance_to_win": 0.98, "credible_interval": [0.04, 0.56], "significant": True}]}
>>> result = MetricExperimentResult(1, {}, (MetricAnswer({"metric_type": "funnel", "name": "bought"}, "primary",
...                                                      answer),))
>>> ax = plot_metric_effects(result)
>>> [t.get_text() for t in ax.get_yticklabels()], ax.get_xlabel()
(['bought · test'], 'effect against the baseline (relative: variant / baseline − 1)')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...client._metric_results import MetricExperimentResult
from ...errors import InvalidArgumentType
from ...stats import SRMResult
from .common import (
    CONTROL_COLOUR,
    HIGHER_COLOUR,
    INCONCLUSIVE_COLOUR,
    LOWER_COLOUR,
    keep_inside,
    new_axes,
    percent_axis,
    variant_colours,
)

__all__ = ["draw_metric_figure", "plot_exposures", "plot_metric_effects", "plot_metric_over_time"]


def _result(data: Any) -> MetricExperimentResult:
    if not isinstance(data, MetricExperimentResult):
        raise InvalidArgumentType(
            f"result: expected a hoglab.MetricExperimentResult (client.experiments.results of a metric experiment), "
            f"got {type(data).__name__}.",
            argument="result",
        )
    return data


def plot_metric_effects(
    result: MetricExperimentResult, *, ax: Axes | None = None, figsize: tuple[float, float] | None = None
) -> Axes:
    """A forest plot of each metric's effect: one line per (metric, breakdown value, variant).

    The point is at the effect and the bar across hoglab's interval of PostHog's relative effect (a confidence
    interval, a confidence sequence with sequential testing, or a credible interval when Bayesian; under CUPED with
    the calibrated delta-method variance). With CUPED the point is the adjusted effect and a thin grey bar behind
    shows the interval without CUPED.

    Blue: significant and better for the metric's goal; vermillion: significant and worse; grey: not
    significant. Secondary metrics are marked "(secondary)", breakdown values follow their metric.
    """
    frame = _result(result).to_frame()
    rows = frame[frame["method"].notna()].reset_index(drop=True)
    ax = new_axes(ax, figsize or (7.5, 0.5 + 0.45 * max(len(rows), 1)))
    y = np.arange(len(rows))[::-1]
    cuped_shown = False
    for pos, row in zip(y, rows.to_dict("records"), strict=True):
        lift, low, high = row["lift"], row["interval_low"], row["interval_high"]
        if row["cuped"] is True and not math.isnan(row["lift_cuped"]):
            lift = row["lift_cuped"]
            raw_low, raw_high = row["raw_interval_low"], row["raw_interval_high"]
            if not (math.isnan(raw_low) or math.isnan(raw_high)):
                ax.hlines(pos + 0.22, raw_low, raw_high, color=INCONCLUSIVE_COLOUR, linewidth=1.2, alpha=0.7,
                          label="_nolegend_" if cuped_shown else "without CUPED")  # fmt: skip
                cuped_shown = True
        better = (lift > 0) == (row["goal"] != "decrease")
        colour = (HIGHER_COLOUR if better else LOWER_COLOUR) if row["significant"] is True else INCONCLUSIVE_COLOUR
        if not (math.isnan(low) or math.isnan(high)):
            ax.hlines(pos, low, high, color=colour, linewidth=2.5)
        if not math.isnan(lift):
            ax.plot([lift], [pos], "o", color=colour, markersize=7)
    ax.axvline(0, color=CONTROL_COLOUR, linewidth=1, linestyle="--")
    if cuped_shown:
        ax.legend(frameon=False, loc="lower right", fontsize="small")
    labels = [f"{r['metric']} · {r['variant']}" + (f" · {r['breakdown']}" if isinstance(r["breakdown"], str) else "")
              + (" (secondary)" if r["role"] == "secondary" else "") for r in rows.to_dict("records")]  # fmt: skip
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, max(len(rows), 1) - 0.3)
    percent_axis(ax, axis="x")
    ax.set_xlabel("effect against the baseline (relative: variant / baseline − 1)")
    if not len(rows):
        ax.set_title("No variant results yet")
    else:
        kind = ("confidence sequence" if result.sequential else "confidence interval") \
            if result.method == "frequentist" else "credible interval"  # fmt: skip
        extras = " + CUPED" if bool(rows["cuped"].fillna(False).any()) else ""
        ax.set_title(f"Metrics: effect and {kind} ({result.method}{extras})")
    return ax


def plot_exposures(
    result: MetricExperimentResult, *, ax: Axes | None = None, figsize: tuple[float, float] | None = None
) -> Axes:
    """Exposed units per variant so far, day by day (the exposure query's cumulative counts)."""
    frame = _result(result).exposures_frame()
    ax = new_axes(ax, figsize or (7.5, 3.0))
    variants = list(dict.fromkeys(frame["variant"].tolist()))
    colours = variant_colours(variants, "control" if "control" in variants else None)
    for variant in variants:
        rows = frame[frame["variant"] == variant].sort_values("date")
        ax.plot(rows["date"], rows["cumulative"], marker="o", markersize=3, color=colours[variant], label=variant)
    ax.set_ylabel("exposed (cumulative)")
    ax.set_title("Exposures over time" if variants else "No exposures yet")
    if variants:
        ax.legend(frameon=False, loc="upper left")
    ax.tick_params(axis="x", labelrotation=30)
    return ax


def draw_metric_figure(result: MetricExperimentResult, check: SRMResult | None) -> Figure:
    """The picker's and the report's figure: the metrics' effects above the exposures, the SRM check beside."""
    from .srm import plot_srm

    rows = int(result.to_frame()["method"].notna().sum())
    # A Figure of its own, not pyplot's: the inline backend would also show pyplot figures made in callbacks.
    figure = Figure(figsize=(9.5, 3.8 + 0.45 * max(rows, 1)), layout="constrained")  # 912 CSS pixels wide
    axes: dict[Any, Axes] = figure.subplot_mosaic([["effects", "srm"], ["exposures", "srm"]], width_ratios=[1.8, 1],
                                                  height_ratios=[max(rows, 2), 2.5])  # fmt: skip
    plot_metric_effects(result, ax=axes["effects"])
    plot_exposures(result, ax=axes["exposures"])
    if check is not None:
        plot_srm(check, ax=axes["srm"])
        axes["srm"].title.set_fontsize("small")  # its title states the test in full: room beside the metrics
    else:
        axes["srm"].set_axis_off()
    return keep_inside(figure)


def plot_metric_over_time(
    daily: Any, *, ax: Axes | None = None, title: str | None = None, figsize: tuple[float, float] | None = None
) -> Axes:
    """Each variant's cumulative effect day by day with its always-valid band: the frame of
    :func:`hoglab.notebook.report.metric.metric_over_time` (``date, variant, effect, low, high``), from the
    service's ``timeseries_results``.

    >>> import pandas as pd
    >>> daily = pd.DataFrame({"date": pd.to_datetime(["2025-06-01", "2025-06-02"]), "variant": ["test"] * 2,
    ...                       "effect": [0.1, 0.05], "low": [-0.2, -0.05], "high": [0.4, 0.15]})
    >>> plot_metric_over_time(daily).get_lines()[0].get_ydata().tolist()
    [0.1, 0.05]
    """
    ax = new_axes(ax, figsize or (8.0, 3.2))
    variants = list(dict.fromkeys(daily["variant"].tolist()))
    colours = variant_colours(["control", *variants], "control")
    for variant in variants:
        rows = daily[daily["variant"] == variant].sort_values("date")
        ax.plot(rows["date"], rows["effect"], marker="o", markersize=3, color=colours[variant], label=variant)
        ax.fill_between(rows["date"], rows["low"], rows["high"], color=colours[variant], alpha=0.18, linewidth=0)
    ax.axhline(0, color=CONTROL_COLOUR, linewidth=1, linestyle="--")
    percent_axis(ax, axis="y")
    ax.set_ylabel("effect against the baseline")
    ax.set_title("Effect over time, with always-valid bounds" if title is None else title)
    if variants:
        ax.legend(frameon=False, loc="upper left")
    ax.tick_params(axis="x", labelrotation=30)
    return ax
