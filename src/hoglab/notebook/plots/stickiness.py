"""The stickiness plot: people by number of active intervals, bars side by side per series."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import StrMethodFormatter

from .common import (
    PALETTE,
    new_axes,
    percent_axis,
    plain,
    require_frame,
    unit_of,
)

__all__ = ["plot_stickiness"]


def plot_stickiness(
    df: pd.DataFrame,
    *,
    normalize: bool = False,
    ax: Axes | None = None,
    title: str | None = None,
    legend: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Stickiness bars (:func:`hoglab.frames.stickiness_frame`): people by the intervals they were active in.

    Bars are grouped by series (and by current and previous period with a comparison). ``normalize=True`` shows
    each series' share of its people instead of counts.

    >>> from hoglab.frames import stickiness_frame
    >>> ax = plot_stickiness(stickiness_frame({"results": [
    ...     {"label": "$pageview", "data": [5, 2, 1], "days": [1, 2, 3], "labels": ["1 day", "2 days", "3 days"],
    ...      "action": {"order": 0}}]}))
    >>> [float(p.get_height()) for p in ax.patches], ax.get_xlabel()
    ([5.0, 2.0, 1.0], 'days active')
    """
    # An insight counting groups names its count column after them ("companies"; client._groups.label_units).
    counted = str(df.attrs.get("unit")) if getattr(df, "attrs", {}).get("unit") in df.columns else "persons"
    frame = require_frame(df, ["intervals", counted], "the stickiness frame")
    ax = new_axes(ax, figsize)
    keys = [c for c in ("series", "label", "compare_label") if c in frame.columns]
    groups = list(frame.groupby(keys, sort=False, dropna=False)) if keys else [((), frame)]
    intervals = np.sort(frame["intervals"].dropna().unique().astype(int))
    width = 0.8 / len(groups)
    labels = set(frame["label"].astype(str)) if "label" in frame.columns else set()
    for i, (key, group) in enumerate(groups):
        parts = key if isinstance(key, tuple) else (key,)
        named: dict[str, Any] = dict(zip(keys, parts, strict=True))
        values = group.set_index("intervals")[counted].reindex(intervals).to_numpy(np.float64, na_value=0.0)
        if normalize and values.sum():
            values = values / values.sum()
        previous = str(named.get("compare_label")) == "previous"
        colour = PALETTE[(int(named["series"]) if pd.notna(named.get("series")) else i) % len(PALETTE)]
        name = plain(str(named.get("label") or f"series {i + 1}")) + (" (previous)" if previous else "")
        ax.bar(intervals + (i - (len(groups) - 1) / 2) * width, values, width, color=colour, label=name,
               alpha=0.45 if previous else 1.0, hatch="//" if previous else None)  # fmt: skip
    unit = str(frame.attrs.get("interval") or "interval")
    ax.set_xticks(intervals[:: max(1, -(-len(intervals) // 15))])  # at most 15 labels
    ax.set_xlabel(f"{unit}s active")
    if normalize:
        percent_axis(ax)
        ax.set_ylabel(f"share of {unit_of(df)}")
    else:
        ax.set_ylabel(unit_of(df, "people"))
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.10g}"))
    only = next(iter(labels)) if len(labels) == 1 else ""
    ax.set_title((f"Stickiness: {plain(only)}" if only else "Stickiness") if title is None else title)
    if legend or (legend is None and len(groups) > 1):
        ax.legend(loc="best", fontsize="small")
    return ax
