"""The trends plot: lines per series and breakdown value over dates; totals as bars; comparisons dashed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import StrMethodFormatter

from .common import (
    PALETTE,
    date_axis,
    display_name,
    new_axes,
    plain,
    require_frame,
    timezone_of,
    unit_of,
)

__all__ = ["plot_trends"]

_Key = tuple[int | None, str, str]  # (series position, label, breakdown value as shown)

def plot_trends(
    df: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    ylabel: str | None = None,
    legend: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot a trends frame (:func:`hoglab.frames.trends_frame`, what ``client.query(hoglab.trends(...))`` returns).

    One line per series and breakdown value over ``date`` (tz-aware dates stay on their own day: ticks are
    placed and labelled in the frame's time zone). With ``compare`` the previous period is drawn dashed, in
    the colour of its current line, over the current period's dates. Frames without ``date`` (total-value
    displays: ``BoldNumber``, ``ActionsPie``, ``ActionsTable``...) become horizontal bars, largest first.

    Columns used: ``value`` (required), ``date`` (for lines), and when present ``series``, ``label``,
    ``breakdown_value`` and ``compare_label``. ``legend=None`` shows a legend only for several lines.

    >>> from hoglab.frames import trends_frame
    >>> df = trends_frame({"timezone": "UTC", "results": [
    ...     {"label": "$pageview", "data": [3, 5, 4], "days": ["2025-06-01", "2025-06-02", "2025-06-03"],
    ...      "breakdown_value": ["Chrome"], "action": {"order": 0}},
    ...     {"label": "$pageview", "data": [1, 0, 2], "days": ["2025-06-01", "2025-06-02", "2025-06-03"],
    ...      "breakdown_value": ["Safari"], "action": {"order": 0}}]})
    >>> ax = plot_trends(df, ylabel="pageviews")
    >>> [(line.get_label(), line.get_ydata().tolist()) for line in ax.get_lines()]
    [('Chrome', [3.0, 5.0, 4.0]), ('Safari', [1.0, 0.0, 2.0])]
    """
    frame = require_frame(df, ["value"], "the trends frame")
    ax = new_axes(ax, figsize)
    keys, previous = _row_keys(frame)
    names = _names(list(dict.fromkeys(keys)))
    colours = {key: PALETTE[i % len(PALETTE)] for i, key in enumerate(dict.fromkeys(keys))}
    # Past the palette's eight colours, lines differ by style too ("--" stays the previous period's).
    styles = {key: ("-", "-.", ":")[(i // len(PALETTE)) % 3] for i, key in enumerate(dict.fromkeys(keys))}
    groups: dict[tuple[_Key, bool], list[int]] = {}
    for i, (key, prev) in enumerate(zip(keys, previous, strict=True)):
        groups.setdefault((key, prev), []).append(i)
    labels = list(dict.fromkeys(k[1] for k in keys))
    default_title = plain(labels[0]) if len(labels) == 1 and labels[0] else "Trends"
    # "value", or what the series count when the client says (unique companies: "companies").
    ylabel = ylabel if ylabel is not None else unit_of(df, "value")
    if any(previous):
        default_title += ", against the previous period"
    if "date" in frame.columns:
        _trend_lines(ax, frame, groups, names, colours, styles)
        tz = timezone_of(frame["date"])
        ax.set_xlabel(f"date ({tz})" if tz is not None else "date")
        ax.set_ylabel(ylabel)
        shown = len(groups) > 1
    else:
        _total_bars(ax, frame, groups, names, colours)
        ax.set_xlabel(ylabel)
        shown = False  # each bar is named on the axis
    ax.set_title(default_title if title is None else title)
    if legend or (legend is None and shown):
        ax.legend(loc="best", fontsize="small")
    return ax


def _row_keys(frame: pd.DataFrame) -> tuple[list[_Key], list[bool]]:
    n = len(frame)
    series: list[int | None] = (
        [None if pd.isna(v) else int(v) for v in frame["series"]] if "series" in frame else [None] * n
    )
    labels = ["" if pd.isna(v) else str(v) for v in frame["label"]] if "label" in frame else [""] * n
    breakdowns = [display_name(v) for v in frame["breakdown_value"]] if "breakdown_value" in frame else [""] * n
    compare = frame["compare_label"] if "compare_label" in frame else [None] * n
    previous = [str(v) == "previous" for v in compare]
    return list(zip(series, labels, breakdowns, strict=True)), previous


def _names(keys: Sequence[_Key]) -> dict[_Key, str]:
    """Short line names: the breakdown value alone when there is one series, ``label · value`` otherwise."""
    one_label = len({k[1] for k in keys}) == 1
    names: dict[_Key, str] = {}
    for i, (series, label, breakdown) in enumerate(keys):
        if breakdown:
            name = breakdown if one_label and label else f"{label} · {breakdown}" if label else breakdown
        else:
            name = label or f"series {i + 1}"
        names[(series, label, breakdown)] = name
    # The same event twice with different maths has the same label: tell them apart by position.
    counts = pd.Series(list(names.values())).value_counts()
    for key, name in names.items():
        if counts[name] > 1 and key[0] is not None:
            names[key] = f"{name} (series {key[0] + 1})"
    return {key: plain(name) for key, name in names.items()}


def _trend_lines(
    ax: Axes,
    frame: pd.DataFrame,
    groups: dict[tuple[_Key, bool], list[int]],
    names: dict[_Key, str],
    colours: dict[_Key, str],
    styles: dict[_Key, str],
) -> None:
    dates = frame["date"]
    if not pd.api.types.is_datetime64_any_dtype(dates):
        dates = pd.to_datetime(dates)
    values = frame["value"].to_numpy(dtype=float, na_value=np.nan)
    ordered = {g: sorted(rows, key=lambda r: dates.iloc[r]) for g, rows in groups.items()}
    current = [dates.iloc[r] for (_, prev), rows in ordered.items() if not prev for r in rows]
    former = [dates.iloc[r] for (_, prev), rows in ordered.items() if prev for r in rows]
    # A previous period without a matching current line is moved by the gap between the two periods.
    shift = (min(current) - min(former)) if current and former else pd.Timedelta(0)
    for (key, prev), rows in ordered.items():
        x = [dates.iloc[r] for r in rows]
        if prev:
            match = ordered.get((key, False))
            # Plot the previous period over the current one, interval by interval, as PostHog does.
            x = [dates.iloc[r] for r in match] if match and len(match) == len(rows) else [d + shift for d in x]
        ax.plot(
            pd.DatetimeIndex(x).to_pydatetime(),
            values[rows],
            color=colours[key],
            linestyle="--" if prev else styles[key],
            alpha=0.75 if prev else 1.0,
            marker="o" if len(rows) <= 31 else None,
            markersize=3,
            label=f"{names[key]} (previous)" if prev else names[key],
        )
    date_axis(ax, timezone_of(dates))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.10g}"))
    ax.grid(True, axis="y", alpha=0.3)


def _total_bars(
    ax: Axes,
    frame: pd.DataFrame,
    groups: dict[tuple[_Key, bool], list[int]],
    names: dict[_Key, str],
    colours: dict[_Key, str],
) -> None:
    values = frame["value"].to_numpy(dtype=float, na_value=np.nan)
    totals = {group: float(np.nansum(values[rows])) for group, rows in groups.items()}
    # Largest on top, as PostHog's tables sort; a previous period sits right under its current bar.
    keys = sorted(dict.fromkeys(k for k, _ in groups), key=lambda k: -totals.get((k, False), totals.get((k, True), 0)))
    bars = [(key, prev) for key in keys for prev in (False, True) if (key, prev) in groups]
    positions = np.arange(len(bars))
    container = ax.barh(positions, [totals[b] for b in bars], color=[colours[key] for key, _ in bars])
    for patch, (_, prev) in zip(container.patches, bars, strict=True):
        if prev:
            patch.set_alpha(0.45)
            patch.set_hatch("//")
    ax.bar_label(container, labels=[f"{totals[b]:,.10g}" for b in bars], padding=3, fontsize="small")
    ax.set_yticks(positions, [names[key] + (" (previous)" if prev else "") for key, prev in bars])
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.10g}"))
    ax.margins(x=0.12)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
