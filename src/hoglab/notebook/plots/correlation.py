"""The funnel correlation plot: a bar per event or property value, its odds ratio on a log scale."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from .common import CONTROL_COLOUR, HIGHER_COLOUR, LOWER_COLOUR, new_axes, plain, require_frame

__all__ = ["plot_funnel_correlation"]


def plot_funnel_correlation(
    df: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Funnel correlations (:func:`hoglab.frames.funnel_correlation_frame`) as horizontal bars of odds ratios.

    Each bar starts at 1 (no association) and reaches the odds ratio on a log scale: to the right (blue) what goes
    with converting, to the left (vermillion) what goes with dropping off; each label says how many of those who
    did it converted. A skewed funnel (more than ten to one) says so in the title.

    >>> from hoglab.frames import funnel_correlation_frame
    >>> ax = plot_funnel_correlation(funnel_correlation_frame({"results": {"skewed": False, "events": [
    ...     {"event": {"event": "watched video"}, "success_count": 5, "failure_count": 1, "odds_ratio": 16.5,
    ...      "correlation_type": "success"},
    ...     {"event": {"event": "saw error"}, "success_count": 0, "failure_count": 5, "odds_ratio": 0.1,
    ...      "correlation_type": "failure"}]}}))
    >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_xscale()
    (['saw error', 'watched video'], 'log')
    """
    frame = require_frame(df, ["name", "odds_ratio", "success_count", "failure_count"], "the correlation frame")
    frame = frame[frame["odds_ratio"].notna() & (frame["odds_ratio"] > 0)].sort_values("odds_ratio")
    rows = len(frame)
    ax = new_axes(ax, figsize or (7.5, max(2.5, 0.32 * rows + 1.2)))
    ratios = frame["odds_ratio"].to_numpy(np.float64)
    colours = [HIGHER_COLOUR if r > 1 else LOWER_COLOUR for r in ratios]
    positions = np.arange(rows)
    ax.barh(positions, ratios - 1, left=1, color=colours, height=0.7)
    ax.set_xscale("log")
    ax.axvline(1, color=CONTROL_COLOUR, linewidth=1)
    ax.set_yticks(positions, [plain(str(n)) for n in frame["name"]])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    low, high = float(min(ratios.min(), 1.0)), float(max(ratios.max(), 1.0))
    span = math.log(high / low) if high > low else 1.0
    ax.set_xlim(low / math.exp(0.35 * span), high * math.exp(0.35 * span))
    for y, ratio, success, failure in zip(positions, ratios, frame["success_count"], frame["failure_count"],
                                          strict=True):  # fmt: skip
        total = int(success) + int(failure)
        share = f"{int(success):,}/{total:,} converted"
        ax.annotate(share, (ratio, y), xytext=(4 if ratio > 1 else -4, 0), textcoords="offset points",
                    ha="left" if ratio > 1 else "right", va="center", fontsize=8, color="#333333")  # fmt: skip
    ax.set_xlabel("odds ratio of converting (log scale; 1 = no association)")
    skewed = bool(frame.attrs.get("skewed") or df.attrs.get("skewed"))
    heading = title if title is not None else "What goes with converting, and with dropping off"
    ax.set_title(heading + (" (skewed: converted and dropped off more than 10:1 apart)" if skewed else ""))
    return ax
