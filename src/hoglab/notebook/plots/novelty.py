"""Novelty and time: the effect by days since first exposure, with the fitted trend (:func:`hoglab.stats.novelty`).

>>> import pandas as pd, hoglab.stats as hs
>>> days = pd.DataFrame({"day": [0, 0, 1, 1, 2, 2, 3, 3], "variant": ["control", "test"] * 4,
...                      "n": [400] * 8, "successes": [100, 140, 100, 130, 100, 120, 100, 110]})
>>> ax = plot_novelty(hs.novelty(days, "bought", min_units=30, scale="difference"), percent=True)
>>> ax.get_xlabel(), ax.get_ylabel()
('days since first exposure (0: the most recent)', 'difference against control (pp)')
"""

from __future__ import annotations

import math
from typing import Any

from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from ...errors import InvalidArgumentType
from ...stats import Novelty
from .common import CONTROL_COLOUR, new_axes, percent_axis, variant_colours

__all__ = ["plot_novelty"]


def plot_novelty(
    result: Any,
    *,
    ax: Axes | None = None,
    percent: bool = False,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Each variant's effect per day since first exposure with its interval, and the fitted trend line.

    ``result`` is a :class:`hoglab.stats.Novelty`. Days in the trend test are filled dots, days with too few
    units (``in_trend`` false) hollow; the dashed line is the weighted least-squares trend over the tested days.
    ``percent=True`` reads a difference of rates in percentage points (a lift is always in percent). The title
    says the test's verdict and p-value (one variant) unless ``title`` is given.
    """
    if not isinstance(result, Novelty):
        raise InvalidArgumentType(f"result: expected a hoglab.stats.Novelty (hoglab.stats.novelty(...)), got "
                                  f"{type(result).__name__}.", argument="result")  # fmt: skip
    ax = new_axes(ax, figsize or (7.5, 3.4))
    days, scale = result.days, result.scale
    variants = list(dict.fromkeys(days["variant"].astype(str)))
    colours = variant_colours([result.control, *variants], result.control)
    shift = 0.12 if len(variants) > 1 else 0.0
    for i, variant in enumerate(variants):
        rows = days[days["variant"].astype(str) == variant].sort_values("day")
        x = rows["day"].to_numpy(dtype=float) + shift * (i - (len(variants) - 1) / 2)
        effect = rows[scale].to_numpy(dtype=float)
        low, high = rows[f"{scale}_ci_low"].to_numpy(dtype=float), rows[f"{scale}_ci_high"].to_numpy(dtype=float)
        tested = rows["in_trend"].to_numpy(dtype=bool)
        colour = colours[variant]
        ax.errorbar(x, effect, yerr=[effect - low, high - effect], fmt="none", ecolor=colour, alpha=0.35,
                    linewidth=1)  # fmt: skip
        ax.plot(x[tested], effect[tested], "o", color=colour, markersize=4, label=variant)
        ax.plot(x[~tested], effect[~tested], "o", markerfacecolor="none", color=colour, markersize=4,
                label="_nolegend_")  # fmt: skip
        if tested.sum() >= 3 and not rows["fitted"].isna().all():
            ax.plot(x[tested], rows["fitted"].to_numpy(dtype=float)[tested], "--", color=colour, linewidth=1.6,
                    label=f"{variant}: trend")  # fmt: skip
    ax.axhline(0, color=CONTROL_COLOUR, linewidth=1, linestyle="--")
    if scale == "lift":
        percent_axis(ax, axis="y")
        ax.set_ylabel(f"lift against {result.control}")
    elif percent:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:+.0f} pp" if v else "0"))
        ax.set_ylabel(f"difference against {result.control} (pp)")
    else:
        ax.set_ylabel(f"difference against {result.control}")
    ax.set_xlabel("days since first exposure (0: the most recent)")
    ax.set_title(_title(result) if title is None else title)
    if variants:
        ax.legend(frameon=False, loc="best", fontsize="small")
    return ax


def _title(result: Novelty) -> str:
    name = result.metric[:1].upper() + result.metric[1:]
    if len(result.trends) != 1:
        return f"{name}: the effect by days since first exposure"
    row = result.trends.iloc[0]
    if not math.isfinite(float(row["p_value"])):
        return f"{name} by days since first exposure: too few days for a trend test"
    said = {"decaying": "the effect fades (novelty)", "growing": "the effect grows (learning)",
            "no trend": "no trend in the effect"}  # fmt: skip
    return f"{name} by days since first exposure: {said[str(row['verdict'])]}, p = {float(row['p_value']):.2g}"
