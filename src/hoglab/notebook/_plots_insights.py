"""Insight plots: trends (lines over dates, or bars of totals) and funnels (steps with conversion and drop-off)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch
from matplotlib.ticker import StrMethodFormatter

from ._plots_common import (
    PALETTE,
    date_axis,
    display_name,
    new_axes,
    percent_axis,
    plain,
    require_frame,
    timezone_of,
)

__all__ = ["plot_funnel", "plot_trends"]

_Key = tuple[int | None, str, str]  # (series position, label, breakdown value as shown)


def plot_trends(
    df: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    ylabel: str = "value",
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


def plot_funnel(
    df: pd.DataFrame,
    *,
    ax: Axes | None = None,
    rate: Literal["overall", "step"] | None = "overall",
    normalize: bool = False,
    title: str | None = None,
    legend: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot a funnel frame (:func:`hoglab.frames.funnel_frame`): a bar per step, drop-off stacked and hatched.

    Each step's bar is the people who reached it; the hatched part above it, the people lost since the previous
    step (so the whole stack is the previous step's count). The label over each stack is the conversion rate:
    ``rate="overall"`` from the first step (PostHog's default), ``"step"`` from the previous step, ``None`` for
    no labels. With ``breakdown_value`` the bars are grouped, one colour per value; ``normalize=True`` draws
    each group as fractions of its first step (a percent axis), which compares groups of different sizes.

    Columns used: ``step`` and ``count`` (required), ``name`` and ``breakdown_value`` when present. Rates are
    computed from ``count``, as the frame's own ``conversion_rate``/``step_conversion_rate`` are.

    >>> from hoglab.frames import funnel_frame
    >>> df = funnel_frame({"results": [{"order": 0, "name": "$pageview", "count": 1000},
    ...                                {"order": 1, "name": "signup", "count": 400},
    ...                                {"order": 2, "name": "purchase", "count": 100}]})
    >>> ax = plot_funnel(df)
    >>> converted, dropped = ax.containers[:2]
    >>> [float(p.get_height()) for p in converted], [float(p.get_height()) for p in dropped]
    ([1000.0, 400.0, 100.0], [0.0, 600.0, 300.0])
    >>> [t.get_text() for t in ax.texts]
    ['100%', '40.0%', '10.0%']
    """
    if isinstance(df, pd.DataFrame) and "step" not in df.columns:
        if "seconds" in df.columns:
            raise ValueError(
                "this is a time-to-convert histogram (columns seconds, count), not funnel steps; "
                "draw it with ax.bar(df['seconds'], df['count'])"
            )
        if "date" in df.columns:
            raise ValueError("this is a funnel trends frame (conversion % over dates); draw it with plot_trends")
    frame = require_frame(df, ["step", "count"], "the funnel frame")
    if rate not in ("overall", "step", None):
        raise ValueError(f"rate must be 'overall', 'step' or None, got {rate!r}")
    ax = new_axes(ax, figsize)
    group_of = [display_name(v) for v in frame["breakdown_value"]] if "breakdown_value" in frame else [""] * len(frame)
    groups: dict[str, list[int]] = {}
    for i, g in enumerate(group_of):
        groups.setdefault(g, []).append(i)
    steps = sorted({int(s) for s in frame["step"]})
    position = {s: i for i, s in enumerate(steps)}
    names = _step_names(frame, steps)
    counts = frame["count"].to_numpy(dtype=float, na_value=0.0)
    width = 0.8 / len(groups)
    top = 0.0
    for j, (group, rows) in enumerate(groups.items()):
        rows = sorted(rows, key=lambda r: int(frame["step"].iloc[r]))
        if len({int(frame["step"].iloc[r]) for r in rows}) != len(rows):
            raise ValueError(f"the funnel frame has a step twice for breakdown value {group or '(none)'!r}")
        reached = counts[rows]
        before = np.concatenate([reached[:1], reached[:-1]])
        scale = reached[0] if normalize and reached[0] > 0 else 1.0
        x = np.array([position[int(frame["step"].iloc[r])] for r in rows]) + (j - (len(groups) - 1) / 2) * width
        colour = PALETTE[j % len(PALETTE)]
        converted = ax.bar(x, reached / scale, width, color=colour, label=plain(group) or "converted")
        dropped = ax.bar(
            x,
            (before - reached) / scale,
            width,
            bottom=reached / scale,
            color=colour,
            alpha=0.25,
            hatch="///",
            edgecolor=colour,
            linewidth=0,
            label="_dropped off",
        )
        for a, b in zip(converted.patches, dropped.patches, strict=True):
            a.set_gid(f"converted:{group}")
            b.set_gid(f"dropped:{group}")
            b.sticky_edges.y.clear()  # a bar's bottom is sticky: here it would stop the margin above the stack
        top = max(top, float(np.nanmax(before / scale)) if len(before) else 0.0)
        if rate is not None:
            base = before if rate == "step" else np.full_like(reached, reached[0])
            texts = [_percent(r, b) for r, b in zip(reached, base, strict=True)]
            # On the solid bar, the people who reached the step, which is what the rate is about.
            ax.bar_label(converted, labels=texts, padding=2, fontsize="small" if len(groups) < 4 else "x-small")
    ax.set_xticks(range(len(steps)), [plain(f"{s}. {names[s]}") for s in steps])
    if max((len(n) for n in names.values()), default=0) > 14 and len(steps) > 3:
        ax.tick_params(axis="x", labelrotation=20)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    if normalize:
        percent_axis(ax)
        ax.set_ylabel("share of the first step")
    else:
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.set_ylabel("count")
    ax.set_ylim(0.0, 1.15 * top if top > 0 else 1.0)  # room for the labels and the legend
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    breakdown = len(groups) > 1 or "breakdown_value" in frame
    ax.set_title(("Funnel by breakdown" if breakdown else "Funnel") if title is None else title)
    if legend or legend is None:
        handles, labels = ax.get_legend_handles_labels()
        if not breakdown:
            handles, labels = handles[:1], labels[:1]
        drop_key = Patch(facecolor="#BBBBBB", alpha=0.5, hatch="///", edgecolor="#555555", label="dropped off")
        ax.legend([*handles, drop_key], [*labels, "dropped off"], fontsize="small", loc="upper right")
    return ax


def _step_names(frame: pd.DataFrame, steps: Sequence[int]) -> dict[int, str]:
    names: dict[int, str] = {}
    has_names = "name" in frame.columns
    for step, name in zip(frame["step"], frame["name"] if has_names else [None] * len(frame), strict=True):
        if int(step) not in names and name is not None and not pd.isna(name):
            names[int(step)] = str(name)
    return {s: names.get(s, f"step {s}") for s in steps}


def _percent(part: float, whole: float) -> str:
    if not whole > 0:
        return "–"
    share = part / whole
    return "100%" if share == 1.0 else f"{share:.1%}"
