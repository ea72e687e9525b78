"""The trends plot: lines per series and breakdown value over dates; totals as bars; comparisons dashed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.dates as mdates
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
    variant_colours,
)

__all__ = ["partial_periods", "plot_trends"]

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
    ``breakdown_value`` and ``compare_label``. ``legend=None`` shows a legend only for several lines. A line is
    named by its breakdown value alone with one series ("Chrome", never "Chrome · Chrome": PostHog's label of a
    broken-down line already is its value), ``event · value`` with several.

    A period the data does not cover whole is marked: shaded, its point hollow and the line into it dotted, and
    the axis label says so. The last period is partial when it ends after the range's ``date_to`` or after the
    answer was computed (``last_refresh``); the first when the range is explicit (``explicit_date``: a relative
    range counts its first period whole) and starts inside it. Both come from ``df.attrs`` (kept by
    ``client.query``); a frame without them is drawn unmarked.

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
    shown_values = list(dict.fromkeys(k[2] for k in keys))
    if "control" in shown_values and len({k[0] for k in keys}) == 1:
        # A metric by variant: the variants' colours of every experiment figure (control grey).
        by_variant = variant_colours(shown_values, "control")
        colours = {key: by_variant[key[2]] for key in colours}
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
        partial = _trend_lines(ax, frame, groups, names, colours, styles)
        tz = timezone_of(frame["date"])
        marked = "; shaded: a partial period" if partial else ""
        ax.set_xlabel((f"date ({tz})" if tz is not None else "date") + marked)
        ax.set_ylabel(ylabel)
        shown = len(groups) > 1
    else:
        _total_bars(ax, frame, groups, names, colours)
        ax.set_xlabel(ylabel)
        shown = False  # each bar is named on the axis
    ax.set_title(default_title if title is None else title)
    if legend or (legend is None and shown):
        # Beside the axes, never over the lines (constrained layout makes the room).
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return ax


def _row_keys(frame: pd.DataFrame) -> tuple[list[_Key], list[bool]]:
    n = len(frame)
    series: list[int | None] = (
        [None if pd.isna(v) else int(v) for v in frame["series"]] if "series" in frame else [None] * n
    )
    labels = ["" if pd.isna(v) else str(v) for v in frame["label"]] if "label" in frame else [""] * n
    raw = list(frame["breakdown_value"]) if "breakdown_value" in frame else [None] * n
    breakdowns = [display_name(v) for v in raw]
    labels = [_own_label(label, value, shown) for label, value, shown in zip(labels, raw, breakdowns, strict=True)]
    compare = frame["compare_label"] if "compare_label" in frame else [None] * n
    previous = [str(v) == "previous" for v in compare]
    return list(zip(series, labels, breakdowns, strict=True)), previous


def _own_label(label: str, value: Any, shown: str) -> str:
    """The series' own label, without the breakdown value (which is shown apart).

    PostHog labels a broken-down line with its value ("Chrome"), or with ``"<series> - <value>"`` when there are
    several series.
    """
    if not shown:
        return label
    for text in dict.fromkeys((shown, display_name(value), "" if value is None else str(value))):
        if text and label == text:
            return ""
        if text and label.endswith(f" - {text}"):
            return label[: -len(text) - 3]
    return label


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


def _period_end(start: pd.Timestamp, interval: str) -> pd.Timestamp:
    step = {"minute": pd.DateOffset(minutes=1), "hour": pd.DateOffset(hours=1), "day": pd.DateOffset(days=1),
            "week": pd.DateOffset(days=7), "month": pd.DateOffset(months=1)}[interval]  # fmt: skip
    return start + step


def _interval_of(frame: pd.DataFrame, dates: pd.Series) -> str | None:
    """The frame's interval: from ``attrs`` (kept from the answer's ``filter``), else from the dates' spacing."""
    given = frame.attrs.get("interval")
    if given in ("minute", "hour", "day", "week", "month"):
        return str(given)
    unique = pd.DatetimeIndex(dates.dropna().unique()).sort_values()
    if len(unique) < 2:
        return None
    gap = (unique[1:] - unique[:-1]).min()
    for name, size in (("minute", "1min"), ("hour", "1h"), ("day", "1D"), ("week", "7D")):
        if gap == pd.Timedelta(size):
            return name
    return "month" if pd.Timedelta("28D") <= gap <= pd.Timedelta("31D") else None


def partial_periods(frame: pd.DataFrame) -> set[pd.Timestamp]:
    """The starts of the frame's periods the data does not cover whole (see :func:`plot_trends`).

    >>> from hoglab.frames import trends_frame
    >>> df = trends_frame({"timezone": "UTC", "last_refresh": "2025-06-11T09:00:00Z",
    ...     "resolved_date_range": {"date_from": "2025-05-28T00:00:00+00:00", "date_to": "2025-06-11T23:59:59+00:00"},
    ...     "results": [{"label": "$pageview", "data": [3, 5, 4], "days": ["2025-05-26", "2025-06-02", "2025-06-09"],
    ...                  "filter": {"interval": "week", "explicit_date": False}}]})
    >>> sorted(str(d.date()) for d in partial_periods(df))  # the week of 9 June, computed on its Wednesday
    ['2025-06-09']
    """
    if "date" not in frame.columns or frame.empty:
        return set()
    dates = pd.to_datetime(frame["date"])
    interval = _interval_of(frame, dates)
    resolved = frame.attrs.get("resolved_date_range") or {}
    if interval is None or not isinstance(resolved, dict) or not resolved.get("date_to"):
        return set()
    tz = timezone_of(dates)

    def moment(text: Any) -> pd.Timestamp | None:
        if not text:
            return None
        value = pd.Timestamp(str(text))
        value = value.tz_localize(tz) if value.tzinfo is None and tz is not None else value
        return value.tz_convert(tz) if tz is not None and value.tzinfo is not None else value

    covered_to = moment(resolved["date_to"])
    refreshed = moment(frame.attrs.get("last_refresh"))
    assert covered_to is not None
    covered_to = covered_to + pd.Timedelta(microseconds=1)  # date_to is inclusive: 23:59:59.999999
    if refreshed is not None and refreshed < covered_to:
        covered_to = refreshed
    starts = [pd.Timestamp(d) for d in sorted(dates.dropna().unique())]
    first = starts[0]
    # Every period that ends after the data does: the last, and any before it within the same stretch.
    partial = {start for start in starts if _period_end(start, interval) > covered_to}
    date_from = moment(resolved.get("date_from"))
    if frame.attrs.get("explicit_date") and date_from is not None and first < date_from:
        partial.add(first)
    return partial


def _trend_lines(
    ax: Axes,
    frame: pd.DataFrame,
    groups: dict[tuple[_Key, bool], list[int]],
    names: dict[_Key, str],
    colours: dict[_Key, str],
    styles: dict[_Key, str],
) -> bool:
    """Draw the lines; returns whether a partial period was marked."""
    dates = frame["date"]
    if not pd.api.types.is_datetime64_any_dtype(dates):
        dates = pd.to_datetime(dates)
    values = frame["value"].to_numpy(dtype=float, na_value=np.nan)
    ordered = {g: sorted(rows, key=lambda r: dates.iloc[r]) for g, rows in groups.items()}
    current = [dates.iloc[r] for (_, prev), rows in ordered.items() if not prev for r in rows]
    former = [dates.iloc[r] for (_, prev), rows in ordered.items() if prev for r in rows]
    # A previous period without a matching current line is moved by the gap between the two periods.
    shift = (min(current) - min(former)) if current and former else pd.Timedelta(0)
    partial = partial_periods(frame)
    interval = _interval_of(frame, dates)
    for (key, prev), rows in ordered.items():
        x = [dates.iloc[r] for r in rows]
        if prev:
            match = ordered.get((key, False))
            # Plot the previous period over the current one, interval by interval, as PostHog does.
            x = [dates.iloc[r] for r in match] if match and len(match) == len(rows) else [d + shift for d in x]
        y = values[rows]
        # Partial periods (current lines only) are drawn apart: a dotted line into a hollow point.
        cut = [i for i, d in enumerate(x) if not prev and pd.Timestamp(d) in partial]
        whole = [i for i in range(len(x)) if i not in cut] or list(range(len(x)))
        cut = [i for i in cut if i not in whole]
        common: dict[str, Any] = {"color": colours[key], "alpha": 0.75 if prev else 1.0, "markersize": 3}
        ax.plot(
            pd.DatetimeIndex([x[i] for i in whole]).to_pydatetime(),
            y[whole],
            linestyle="--" if prev else styles[key],
            marker="o" if len(rows) <= 31 else None,
            label=f"{names[key]} (previous)" if prev else names[key],
            **common,
        )
        for i in cut:
            if i + 1 < len(x) or i - 1 >= 0:  # the dotted step from its neighbour towards the middle
                j = i - 1 if i - 1 >= 0 and (i - 1 in whole or i + 1 >= len(x)) else i + 1
                ends = sorted([i, j])
                ax.plot(pd.DatetimeIndex([x[k] for k in ends]).to_pydatetime(), y[ends], linestyle=":", **common,
                        gid="partial")  # fmt: skip
            ax.plot(pd.DatetimeIndex([x[i]]).to_pydatetime(), [y[i]], linestyle="none", marker="o",
                    markerfacecolor="white", gid="partial", **{**common, "markersize": 5})  # fmt: skip
    if interval is not None:
        for start in sorted(partial):
            end = _period_end(start, interval)
            span = mdates.date2num(pd.DatetimeIndex([start, end]).to_pydatetime())  # axvspan takes numbers
            ax.axvspan(float(span[0]), float(span[1]), color="#000000", alpha=0.06, linewidth=0, gid="partial period")
    date_axis(ax, timezone_of(dates))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.10g}"))
    ax.grid(True, axis="y", alpha=0.3)
    return bool(partial)


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
