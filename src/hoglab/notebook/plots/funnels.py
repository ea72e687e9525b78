"""The funnel plot: a bar per step with conversion labels, the drop-off stacked and hatched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch
from matplotlib.ticker import StrMethodFormatter

from .common import (
    PALETTE,
    display_name,
    new_axes,
    percent_axis,
    plain,
    require_frame,
    unit_of,
)

__all__ = ["plot_funnel"]


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
        ax.set_ylabel(unit_of(df, "count"))
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
