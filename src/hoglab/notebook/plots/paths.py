"""The paths plot: a Sankey diagram, a column of nodes per step and a ribbon per edge, as wide as its people."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.path import Path

from .common import (
    PALETTE,
    new_axes,
    plain,
    require_frame,
)

__all__ = ["plot_paths"]


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
    """A Sankey diagram of a paths frame (:func:`hoglab.frames.paths_frame`).

    A column per step, a block per item sized by the people through it, a ribbon per edge as thick as its
    ``value``. ``max_edges`` keeps the
    heaviest edges (``None``: all); when it leaves some out, the figure says how many and how many people they
    carried, under the steps.

    >>> from hoglab.frames import paths_frame
    >>> ax = plot_paths(paths_frame({"results": [
    ...     {"source": "1_/home", "target": "2_/pricing", "value": 6, "average_conversion_time": 1.0},
    ...     {"source": "1_/home", "target": "2_/blog", "value": 3, "average_conversion_time": 1.0},
    ...     {"source": "2_/pricing", "target": "3_/signup", "value": 4, "average_conversion_time": 1.0}]}))
    >>> sum(isinstance(p, PathPatch) for p in ax.patches), sorted(t.get_text() for t in ax.texts)[:2]
    (3, ['/blog  3', '/home  9'])
    """
    frame = require_frame(df, ["step_from", "source", "step_to", "target", "value"], "the paths frame")
    every = frame.dropna(subset=["step_from", "step_to", "value"]).sort_values("value", ascending=False)
    edges = every.head(max_edges) if max_edges is not None else every
    left_out = every.iloc[len(edges):]
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
    if len(left_out):
        people = float(left_out["value"].sum())
        ax.set_xlabel(
            f"the {len(edges)} heaviest of {len(every)} edges; {len(left_out)} lighter edges ({people:,.0f} people) "
            "not drawn (max_edges=None draws all)",
            fontsize="small",
        )
    return ax
