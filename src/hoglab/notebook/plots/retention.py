"""Retention plots: the cohort triangle, each cell coloured by its rate, and the pooled retention curve."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from ...errors import InvalidArgument
from .common import (
    DATE_FORMATS,
    PALETTE,
    display_name,
    new_axes,
    percent_axis,
    plain,
    require_frame,
    show_warnings,
    unit_of,
)

__all__ = ["plot_retention", "plot_retention_curve"]


def _retention_counts(df: pd.DataFrame, breakdown: Any) -> pd.DataFrame:
    # One cohort per cohort_date: a chosen breakdown value, or every value added up (rates are then recomputed).
    frame = require_frame(df, ["cohort_date", "period", "count"], "the retention frame")
    if "breakdown_value" in frame.columns:
        if breakdown is not None:
            frame = frame[frame["breakdown_value"] == breakdown]
            if frame.empty:
                raise InvalidArgument(
                    f"breakdown {breakdown!r} is not in the frame's breakdown_value column", argument="breakdown"
                )
        frame = frame.groupby(["cohort_date", "period"], as_index=False).agg(
            count=("count", lambda c: c.sum(min_count=1))
        )
    elif breakdown is not None:
        raise InvalidArgument(
            "breakdown= needs a frame broken down (with a breakdown_value column)", argument="breakdown"
        )
    return frame[["cohort_date", "period", "count"]]


def _period_name(df: pd.DataFrame) -> str:
    return str(df.attrs.get("period") or "period")


def plot_retention(
    df: pd.DataFrame,
    *,
    breakdown: Any = None,
    reference: str = "total",
    annotate: bool = True,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "Blues",
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """The retention triangle (:func:`hoglab.frames.retention_frame`), each cell coloured by its rate.

    A row per cohort, a column per period, each cell coloured and labelled by its rate (the share of the cohort
    that came back in that period).

    Cells not reached yet stay blank. Rows are named by the cohort's date and size. A frame with a breakdown shows
    every breakdown value added up, or the one given as ``breakdown=``. ``reference="previous"`` rates each period
    against the one before it instead of the cohort (PostHog's ``retentionReference``).

    >>> from hoglab.frames import retention_frame
    >>> df = retention_frame({"results": [
    ...     {"date": "2025-06-02T00:00:00Z", "label": "Week 0", "values": [{"count": 10}, {"count": 4}]},
    ...     {"date": "2025-06-09T00:00:00Z", "label": "Week 1", "values": [{"count": 8}]}]})
    >>> ax = plot_retention(df)
    >>> [t.get_text() for t in ax.texts], ax.get_xlabel()
    (['100%', '40%', '100%'], 'weeks after the cohort')
    """
    counts = _retention_counts(df, breakdown)
    table = counts.pivot(index="cohort_date", columns="period", values="count").astype("Float64")
    if reference not in ("total", "previous"):
        raise InvalidArgument(f"reference must be 'total' or 'previous', got {reference!r}", argument="reference")
    sizes = table.iloc[:, 0]
    if reference == "previous":
        base = table.shift(1, axis=1)
        base.iloc[:, 0] = sizes
    else:
        base = pd.DataFrame(dict.fromkeys(table.columns, sizes), index=table.index)
    rates = (table / base.where(base != 0)).to_numpy(dtype=np.float64, na_value=np.nan)
    n_rows, n_cols = rates.shape
    ax = new_axes(ax, figsize or (max(5.0, 0.75 * n_cols + 2.5), max(2.5, 0.42 * n_rows + 1.2)))
    ax.imshow(np.ma.masked_invalid(rates), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    if annotate:
        for (row, col), rate in np.ndenumerate(rates):
            if not np.isnan(rate):
                colour = "white" if rate > 0.55 else "black"
                ax.text(col, row, f"{rate:.0%}", ha="center", va="center", fontsize="x-small", color=colour)
    unit = _period_name(df)
    dates = pd.DatetimeIndex(table.index)
    fmt = DATE_FORMATS.get(unit, "%Y-%m-%d")
    size_text = ["" if pd.isna(n) else f"{int(n):,}" for n in sizes]
    ax.set_yticks(range(n_rows), [f"{d.strftime(fmt)}  (n={s})" for d, s in zip(dates, size_text, strict=True)])
    ax.set_xticks(range(n_cols), [str(p) for p in table.columns])
    ax.set_xlabel(f"{unit}s after the cohort")
    ax.set_ylabel("cohort")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    default = "Retention" + (f": {display_name(breakdown)}" if breakdown is not None else "")
    ax.set_title(default if title is None else title)
    show_warnings(ax, df)
    return ax


def _mean_curve(counts: pd.DataFrame, mean: str) -> pd.Series:
    # Over the cohorts that reached each period: "weighted" (PostHog's default) is people back over people in those
    # cohorts; "simple" the plain mean of their rates.
    table = counts.pivot(index="cohort_date", columns="period", values="count").astype("Float64")
    sizes = table.iloc[:, 0]
    if mean == "simple":
        return table.div(sizes.where(sizes != 0), axis=0).mean(axis=0, skipna=True).astype("float64")
    reached = table.notna()
    back = table.sum(axis=0, min_count=1)
    base = reached.mul(sizes, axis=0).where(reached).sum(axis=0, min_count=1)
    return (back / base.where(base != 0)).astype("float64")


def plot_retention_curve(
    df: pd.DataFrame,
    *,
    cohorts: bool = False,
    mean: str = "weighted",
    ax: Axes | None = None,
    title: str | None = None,
    legend: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """The retention curve: the share of people back in each period after their cohort's.

    All cohorts are pooled (each period over the cohorts that have reached it, weighted by their size), one line
    per breakdown value. ``mean="simple"`` averages the cohorts' rates instead (PostHog's ``meanRetentionCalculation``).
    ``cohorts=True`` adds each cohort's own curve, thin and pale.

    >>> from hoglab.frames import retention_frame
    >>> df = retention_frame({"results": [
    ...     {"date": "2025-06-02", "label": "Day 0", "values": [{"count": 10}, {"count": 4}, {"count": 2}]},
    ...     {"date": "2025-06-03", "label": "Day 1", "values": [{"count": 30}, {"count": 6}]}]})
    >>> ax = plot_retention_curve(df)
    >>> [round(float(y), 3) for y in ax.get_lines()[0].get_ydata()]
    [1.0, 0.25, 0.2]
    """
    frame = require_frame(df, ["cohort_date", "period", "count"], "the retention frame")
    if mean not in ("weighted", "simple"):
        raise InvalidArgument(f"mean must be 'weighted' or 'simple', got {mean!r}", argument="mean")
    ax = new_axes(ax, figsize)
    groups: list[Any] = list(dict.fromkeys(frame["breakdown_value"])) if "breakdown_value" in frame else [None]
    # People without the breakdown's value are a line of their own, named and drawn last, so the named values keep
    # the colours they have in a frame without them.
    groups.sort(key=lambda group: group is not None and not display_name(group))
    for i, group in enumerate(groups):
        colour = PALETTE[i % len(PALETTE)]
        counts = _retention_counts(frame, group)
        curve = _mean_curve(counts, mean)
        label = "all cohorts" if group is None else plain(display_name(group)) or "(none)"
        ax.plot(curve.index.astype(int), curve.to_numpy(), marker="o", color=colour, lw=2, label=label)
        if cohorts:
            for _, one in counts.groupby("cohort_date"):
                size = one["count"].iloc[0]
                if pd.notna(size) and size:
                    rates = one["count"].astype("Float64") / size
                    ax.plot(one["period"].astype(int), rates.to_numpy(np.float64, na_value=np.nan), color=colour,
                            lw=0.8, alpha=0.3, label="_cohort")  # fmt: skip
    percent_axis(ax)
    ax.set_ylim(0, 1.05)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # periods are whole weeks (days, months)
    ax.set_xlabel(f"{_period_name(frame)}s after the cohort")
    ax.set_ylabel(f"{unit_of(df)} back (share of the cohort)")
    ax.set_title("Retention curve" if title is None else title)
    if legend or (legend is None and len(groups) > 1):
        ax.legend(loc="best", fontsize="small")
    show_warnings(ax, frame)
    return ax
