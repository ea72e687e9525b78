"""The lifecycle plot: new, returning and resurrecting people stacked above zero, dormant below."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from .common import (
    DATE_FORMATS,
    PALETTE,
    new_axes,
    require_frame,
    unit_of,
)

__all__ = ["LIFECYCLE_COLOURS", "plot_lifecycle"]

LIFECYCLE_COLOURS = {"new": PALETTE[0], "returning": PALETTE[2], "resurrecting": PALETTE[4], "dormant": PALETTE[1]}

def plot_lifecycle(
    df: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    interval: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Lifecycle stacked bars (:func:`hoglab.frames.lifecycle_frame`): new, returning and resurrecting people
    stacked above zero, dormant people below it, one bar per interval.

    >>> from hoglab.frames import lifecycle_frame
    >>> days = ["2025-06-01", "2025-06-02"]
    >>> ax = plot_lifecycle(lifecycle_frame({"results": [
    ...     {"status": "new", "data": [3.0, 1.0], "days": days},
    ...     {"status": "returning", "data": [0.0, 2.0], "days": days},
    ...     {"status": "dormant", "data": [0.0, -1.0], "days": days}]}))
    >>> [round(p.get_height()) for p in ax.patches]
    [3, 1, 0, 2, 0, -1]
    """
    frame = require_frame(df, ["date", "status", "count"], "the lifecycle frame")
    ax = new_axes(ax, figsize)
    table = frame.pivot_table(index="date", columns="status", values="count", aggfunc="sum", observed=True)
    dates = pd.DatetimeIndex(table.index)
    x = np.arange(len(dates))
    above = np.zeros(len(dates))
    for status, colour in LIFECYCLE_COLOURS.items():
        if status not in table.columns:
            continue
        heights = table[status].to_numpy(dtype=np.float64, na_value=0.0)
        # Dormant counts arrive negative; the others stack upwards from zero.
        bottom = 0.0 if status == "dormant" else above.copy()
        ax.bar(x, heights, 0.8, bottom=bottom, color=colour, label=status)
        if status != "dormant":
            above += heights
    ax.axhline(0, color="black", lw=0.8)
    unit = interval or _guess_interval(dates)
    step = max(1, -(-len(dates) // 8))  # at most eight date labels
    ax.set_xticks(x[::step], [d.strftime(DATE_FORMATS.get(unit, "%Y-%m-%d")) for d in dates[::step]])
    tz = getattr(dates, "tz", None)
    ax.set_xlabel(f"{unit} ({tz})" if tz is not None else unit)
    ax.set_ylabel(unit_of(df))
    ax.set_title("Lifecycle" if title is None else title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    return ax


def _guess_interval(dates: pd.DatetimeIndex) -> str:
    if len(dates) < 2:
        return "day"
    gap = pd.Series(dates).diff().dropna().min()
    if gap < pd.Timedelta(days=1):
        return "hour"
    if gap < pd.Timedelta(days=7):
        return "day"
    return "week" if gap < pd.Timedelta(days=28) else "month"
