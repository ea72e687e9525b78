"""Retention (the triangle and the curve), lifecycle, stickiness and paths plots, from hoglab's frames."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.path import Path

from ..errors import InvalidArgument
from ._plots_common import PALETTE, display_name, new_axes, percent_axis, plain, require_frame

__all__ = ["plot_lifecycle", "plot_paths", "plot_retention", "plot_retention_curve", "plot_stickiness"]

LIFECYCLE_COLOURS = {"new": PALETTE[0], "returning": PALETTE[2], "resurrecting": PALETTE[4], "dormant": PALETTE[1]}
_DATE_FORMATS = {"hour": "%d %b %H:%M", "day": "%d %b", "week": "%d %b", "month": "%b %Y"}


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
    """The retention triangle (:func:`hoglab.frames.retention_frame`): a row per cohort, a column per period,
    each cell coloured and labelled by its rate (the share of the cohort that came back in that period).

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
    fmt = _DATE_FORMATS.get(unit, "%Y-%m-%d")
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
    """The retention curve: the share of people back in each period after their cohort's, all cohorts pooled
    (each period over the cohorts that have reached it, weighted by their size), one line per breakdown value.
    ``mean="simple"`` averages the cohorts' rates instead (PostHog's ``meanRetentionCalculation``).
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
    for i, group in enumerate(groups):
        colour = PALETTE[i % len(PALETTE)]
        counts = _retention_counts(frame, group)
        curve = _mean_curve(counts, mean)
        ax.plot(curve.index.astype(int), curve.to_numpy(), marker="o", color=colour, lw=2,
                label=plain(display_name(group)) if group is not None else "all cohorts")  # fmt: skip
        if cohorts:
            for _, one in counts.groupby("cohort_date"):
                size = one["count"].iloc[0]
                if pd.notna(size) and size:
                    rates = one["count"].astype("Float64") / size
                    ax.plot(one["period"].astype(int), rates.to_numpy(np.float64, na_value=np.nan), color=colour,
                            lw=0.8, alpha=0.3, label="_cohort")  # fmt: skip
    percent_axis(ax)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(f"{_period_name(frame)}s after the cohort")
    ax.set_ylabel("people back (share of the cohort)")
    ax.set_title("Retention curve" if title is None else title)
    if legend or (legend is None and len(groups) > 1):
        ax.legend(loc="best", fontsize="small")
    return ax


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
    ax.set_xticks(x[::step], [d.strftime(_DATE_FORMATS.get(unit, "%Y-%m-%d")) for d in dates[::step]])
    tz = getattr(dates, "tz", None)
    ax.set_xlabel(f"{unit} ({tz})" if tz is not None else unit)
    ax.set_ylabel("people")
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


def plot_stickiness(
    df: pd.DataFrame,
    *,
    normalize: bool = False,
    ax: Axes | None = None,
    title: str | None = None,
    legend: bool | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Stickiness bars (:func:`hoglab.frames.stickiness_frame`): people by the number of intervals they were
    active in, grouped by series (and by current and previous period with a comparison). ``normalize=True``
    shows each series' share of its people instead of counts.

    >>> from hoglab.frames import stickiness_frame
    >>> ax = plot_stickiness(stickiness_frame({"results": [
    ...     {"label": "$pageview", "data": [5, 2, 1], "days": [1, 2, 3], "labels": ["1 day", "2 days", "3 days"],
    ...      "action": {"order": 0}}]}))
    >>> [float(p.get_height()) for p in ax.patches], ax.get_xlabel()
    ([5.0, 2.0, 1.0], 'days active')
    """
    frame = require_frame(df, ["intervals", "persons"], "the stickiness frame")
    ax = new_axes(ax, figsize)
    keys = [c for c in ("series", "label", "compare_label") if c in frame.columns]
    groups = list(frame.groupby(keys, sort=False, dropna=False)) if keys else [((), frame)]
    intervals = np.sort(frame["intervals"].dropna().unique().astype(int))
    width = 0.8 / len(groups)
    labels = set(frame["label"].astype(str)) if "label" in frame.columns else set()
    for i, (key, group) in enumerate(groups):
        parts = key if isinstance(key, tuple) else (key,)
        named: dict[str, Any] = dict(zip(keys, parts, strict=True))
        values = group.set_index("intervals")["persons"].reindex(intervals).to_numpy(np.float64, na_value=0.0)
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
        ax.set_ylabel("share of people")
    else:
        ax.set_ylabel("people")
    only = next(iter(labels)) if len(labels) == 1 else ""
    ax.set_title((f"Stickiness: {plain(only)}" if only else "Stickiness") if title is None else title)
    if legend or (legend is None and len(groups) > 1):
        ax.legend(loc="best", fontsize="small")
    return ax


def _band(x0: float, x1: float, top0: float, top1: float, height: float) -> Path:
    # A ribbon from (x0, top0) to (x1, top1), ``height`` thick, with horizontal tangents at both ends.
    mid = (x0 + x1) / 2
    verts = [(x0, top0), (mid, top0), (mid, top1), (x1, top1), (x1, top1 - height), (mid, top1 - height),
             (mid, top0 - height), (x0, top0 - height), (x0, top0)]  # fmt: skip
    codes = [Path.MOVETO, *[Path.CURVE4] * 3, Path.LINETO, *[Path.CURVE4] * 3, Path.CLOSEPOLY]
    return Path(verts, codes)


def plot_paths(
    df: pd.DataFrame,
    *,
    max_edges: int | None = 30,
    ax: Axes | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """A Sankey diagram of a paths frame (:func:`hoglab.frames.paths_frame`): a column per step, a block per
    item sized by the people through it, a ribbon per edge as thick as its ``value``. ``max_edges`` keeps the
    heaviest edges (``None``: all).

    >>> from hoglab.frames import paths_frame
    >>> ax = plot_paths(paths_frame({"results": [
    ...     {"source": "1_/home", "target": "2_/pricing", "value": 6, "average_conversion_time": 1.0},
    ...     {"source": "1_/home", "target": "2_/blog", "value": 3, "average_conversion_time": 1.0},
    ...     {"source": "2_/pricing", "target": "3_/signup", "value": 4, "average_conversion_time": 1.0}]}))
    >>> sum(isinstance(p, PathPatch) for p in ax.patches), sorted(t.get_text() for t in ax.texts)[:2]
    (3, ['/blog  3', '/home  9'])
    """
    frame = require_frame(df, ["step_from", "source", "step_to", "target", "value"], "the paths frame")
    edges = frame.dropna(subset=["step_from", "step_to", "value"]).sort_values("value", ascending=False)
    if max_edges is not None:
        edges = edges.head(max_edges)
    ax = new_axes(ax, figsize or (9.0, 5.0))
    src = list(zip(edges["step_from"].astype(int), edges["source"].astype(str), strict=True))
    dst = list(zip(edges["step_to"].astype(int), edges["target"].astype(str), strict=True))
    values = edges["value"].to_numpy(np.float64)
    flow_out: dict[Hashable, float] = {}
    flow_in: dict[Hashable, float] = {}
    for s, d, v in zip(src, dst, values, strict=True):
        flow_out[s] = flow_out.get(s, 0.0) + v
        flow_in[d] = flow_in.get(d, 0.0) + v
    nodes = list(dict.fromkeys([*src, *dst]))
    size = {n: max(flow_in.get(n, 0.0), flow_out.get(n, 0.0)) for n in nodes}
    steps = sorted({step for step, _ in nodes})
    columns = {step: sorted((n for n in nodes if n[0] == step), key=lambda n: -size[n]) for step in steps}
    gap = 0.04 * max(sum(size[n] for n in here) for here in columns.values())
    # Every column hangs from the same top, its items largest first.
    summit = max(sum(size[n] for n in here) + gap * (len(here) - 1) for here in columns.values())
    top: dict[Hashable, float] = {}
    colours: dict[str, str] = {}
    node_width = 0.12
    for column, step in enumerate(steps):
        y = summit
        for node in columns[step]:
            top[node] = y
            colour = colours.setdefault(node[1], PALETTE[len(colours) % len(PALETTE)])
            ax.add_patch(Rectangle((column - node_width / 2, y - size[node]), node_width, size[node], color=colour))
            ax.text(column + node_width / 2 + 0.03, y - size[node] / 2, f"{plain(node[1])}  {size[node]:,.0f}",
                    va="center", ha="left", fontsize="x-small")  # fmt: skip
            y -= size[node] + gap
    column_of = {step: i for i, step in enumerate(steps)}
    out_cursor = dict(top)
    in_cursor = dict(top)
    for s, d, v in zip(src, dst, values, strict=True):
        x0, x1 = column_of[s[0]] + node_width / 2, column_of[d[0]] - node_width / 2
        ribbon = _band(x0, x1, out_cursor[s], in_cursor[d], v)
        ax.add_patch(PathPatch(ribbon, facecolor=colours[s[1]], edgecolor="none", alpha=0.35))
        out_cursor[s] -= v
        in_cursor[d] -= v
    ax.set_xlim(-0.4, len(steps) - 0.2)
    ax.set_ylim(-gap, summit + gap)
    ax.set_xticks(range(len(steps)), [f"step {s}" for s in steps])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title("Paths" if title is None else title)
    return ax
