"""The cumulative effect over time, with always-valid (sequential) bounds that allow peeking."""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ...stats import compare
from .common import (
    CONTROL_COLOUR,
    date_axis,
    level_text,
    new_axes,
    percent_axis,
    plain,
    require_frame,
    timezone_of,
    variant_colours,
)

__all__ = ["cumulative_effect", "plot_cumulative_effect"]

# The statistic columns a daily frame may carry, the metric kind they make, and the units column.
_SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("conversion", ("n", "successes"), "n"),
    ("count", ("count", "exposure"), "exposure"),
    ("mean", ("n", "sum", "sum_squares"), "n"),
)
_COLUMNS = [
    "date",
    "variant",
    "units",
    "control_units",
    "estimate",
    "sequential_low",
    "sequential_high",
    "sequential_p_value",
    "naive_low",
    "naive_high",
    "naive_p_value",
]


def cumulative_effect(
    daily: pd.DataFrame,
    *,
    control: str = "control",
    alpha: float = 0.05,
    tuning: float | None = None,
    relative: bool = True,
    cumulative: bool = False,
) -> pd.DataFrame:
    """Each variant's effect against ``control`` on the data up to each date, with sequential and naive bounds.

    ``daily`` has one row per date and variant (several rows of one date and variant are added up) with
    ``date``, ``variant`` and the sufficient statistics of the units that arrived that day, in one of the shapes
    ``hoglab.stats.compare`` reads: ``n, successes`` (conversion), ``count, exposure`` (count) or
    ``n, sum, sum_squares`` (mean). With ``cumulative=True`` the rows already hold running totals. Each date is
    analysed on everything up to it (``compare`` on the cumulative sums) twice: ``method="sequential"`` gives
    the always-valid interval (a confidence sequence: it covers the true effect at every date at once with
    probability 1 − α, so it may be watched daily and acted on whenever it leaves zero) and
    ``method="frequentist"`` the fixed-horizon one, valid only at a single look decided in advance.
    ``tuning`` is the sequence's N* (``compare``'s default when None); dates before every arm has units
    (two for means) are left out.

    Returns a frame with columns ``date, variant, units, control_units, estimate`` (the lift when
    ``relative``, else the difference), ``sequential_low/high``, ``sequential_p_value``, ``naive_low/high``
    and ``naive_p_value``, one row per date and non-control variant.

    >>> daily = pd.DataFrame({"date": pd.to_datetime(["2025-06-01"] * 2 + ["2025-06-02"] * 2),
    ...                       "variant": ["control", "test"] * 2,
    ...                       "n": [500, 500, 500, 500], "successes": [50, 60, 50, 70]})
    >>> effects = cumulative_effect(daily)
    >>> effects[["units", "estimate"]].round(3).values.tolist()
    [[500.0, 0.2], [1000.0, 0.3]]
    """
    frame = require_frame(daily, ["date", "variant"], "the daily frame")
    kind, columns, units_column = _shape(frame)
    dates = frame["date"] if pd.api.types.is_datetime64_any_dtype(frame["date"]) else pd.to_datetime(frame["date"])
    variants = [str(v) for v in dict.fromkeys(frame["variant"])]
    if control not in variants:
        raise ValueError(f"no control variant {control!r} in the daily frame; its variants are {variants}")
    if len(variants) < 2:
        raise ValueError(f"the daily frame has only {variants}; a comparison needs another variant")
    values = frame[list(columns)].apply(pd.to_numeric, errors="raise").astype(float)
    data = pd.concat([dates.rename("date"), frame["variant"].astype(str).rename("variant"), values], axis=1)
    if cumulative and data.duplicated(["date", "variant"]).any():
        raise ValueError("with cumulative=True each date and variant must appear once (rows hold running totals)")
    wide = data.groupby(["date", "variant"], sort=True)[list(columns)].sum().unstack("variant")
    wide = wide.ffill().fillna(0.0) if cumulative else wide.fillna(0.0).cumsum()
    others = [v for v in variants if v != control]
    options: dict[str, Any] = {"control": control, "metric": kind, "alpha": alpha, "relative": relative}
    options["check_srm"] = False
    if tuning is not None:
        options["tuning"] = tuning
    minimum = 2.0 if kind == "mean" else 0.0
    records = []
    for date, row in wide.iterrows():
        arms = {v: {c: float(row[(c, v)]) for c in columns} for v in [control, *others]}
        if not all(arm[units_column] > minimum for arm in arms.values()):
            continue  # an arm without units yet: nothing to compare on this date
        sequential = compare(arms, method="sequential", **options)
        naive = compare(arms, method="frequentist", **options)
        for v in others:
            seq, fixed = sequential.row(v), naive.row(v)
            estimate, low_high = (seq.lift, seq.lift_ci) if relative else (seq.difference, seq.difference_ci)
            naive_low_high = fixed.lift_ci if relative else fixed.difference_ci
            records.append(
                (
                    date,
                    v,
                    seq.units,
                    seq.control_units,
                    estimate,
                    *low_high,
                    seq.p_value,
                    *naive_low_high,
                    fixed.p_value,
                )
            )
    out = pd.DataFrame.from_records(records, columns=_COLUMNS)
    if records:
        out["date"] = pd.DatetimeIndex([r[0] for r in records])
    return out


def _shape(frame: pd.DataFrame) -> tuple[str, tuple[str, ...], str]:
    have = set(frame.columns)
    # The mean shape shares ``n`` with the conversion one: look for the more specific columns first.
    for kind, columns, units in sorted(_SHAPES, key=lambda s: -len(s[1])):
        if set(columns) <= have:
            return kind, columns, units
    wanted = "; ".join(f"{', '.join(c)} ({k})" for k, c, _ in _SHAPES)
    raise ValueError(
        f"the daily frame needs date, variant and the statistics of one metric shape: {wanted}; "
        f"it has {list(frame.columns)}"
    )


def plot_cumulative_effect(
    daily: pd.DataFrame,
    *,
    ax: Axes | None = None,
    control: str = "control",
    alpha: float = 0.05,
    tuning: float | None = None,
    relative: bool = True,
    naive: bool = True,
    cumulative: bool = False,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot each variant's cumulative effect against the control over time, with always-valid bounds.

    The solid line is the effect on all data up to each date (the lift on a percent axis when ``relative``,
    else the difference); the shaded band the always-valid 1 − α interval (``hoglab.stats``' confidence
    sequence), which may be checked every day and acted on as soon as it leaves zero. With ``naive=True`` the
    fixed-horizon interval is drawn dotted: it is narrower, and leaves zero by chance far more often than α
    when looked at daily, which is why peeking needs the sequential one. The input is the ``daily`` frame of
    :func:`cumulative_effect` (``date``, ``variant`` and ``n, successes`` / ``count, exposure`` /
    ``n, sum, sum_squares`` per day); tz-aware dates are labelled in their own time zone.

    >>> daily = pd.DataFrame({"date": pd.to_datetime(["2025-06-01"] * 2 + ["2025-06-02"] * 2),
    ...                       "variant": ["control", "test"] * 2,
    ...                       "n": [500, 500, 500, 500], "successes": [50, 60, 50, 70]})
    >>> ax = plot_cumulative_effect(daily)
    >>> ax.get_lines()[2].get_ydata().round(3).tolist()  # the band's two edges, then the estimate
    [0.2, 0.3]
    """
    effects = cumulative_effect(
        daily, control=control, alpha=alpha, tuning=tuning, relative=relative, cumulative=cumulative
    )
    if effects.empty:
        raise ValueError("no date of the daily frame has units in every variant yet: there is nothing to plot")
    ax = new_axes(ax, figsize)
    variants = list(dict.fromkeys(effects["variant"]))
    colours = variant_colours([control, *variants], control)
    for v in variants:
        part = effects[effects["variant"] == v]
        x = pd.DatetimeIndex(part["date"]).to_pydatetime()
        colour = colours[v]
        low, high = part["sequential_low"].to_numpy(), part["sequential_high"].to_numpy()
        band = ax.fill_between(x, low, high, color=colour, alpha=0.18, linewidth=0)
        band.set_gid(f"sequential:{v}")
        ax.plot(x, low, color=colour, linewidth=0.8, gid=f"sequential_low:{v}")
        ax.plot(x, high, color=colour, linewidth=0.8, gid=f"sequential_high:{v}")
        ax.plot(x, part["estimate"].to_numpy(), color=colour, linewidth=2, label=plain(v), gid=f"estimate:{v}")
        if naive:
            for side in ("low", "high"):
                ax.plot(
                    x,
                    part[f"naive_{side}"].to_numpy(),
                    color=colour,
                    linewidth=1,
                    linestyle=":",
                    gid=f"naive_{side}:{v}",
                )
    ax.axhline(0.0, color=CONTROL_COLOUR, linewidth=1, zorder=0, gid="zero")
    tz = timezone_of(effects["date"])
    date_axis(ax, tz)
    ax.set_xlabel(f"date ({tz})" if tz is not None else "date")
    what = "lift" if relative else "difference"
    control = plain(control)
    if relative:
        percent_axis(ax)
        ax.set_ylabel(f"cumulative lift against {control}")
    else:
        ax.set_ylabel(f"cumulative difference from {control}")
    ax.grid(True, alpha=0.3)
    ax.set_axisbelow(True)
    level = level_text(alpha)
    ax.set_title(f"Cumulative {what} against {control}, {level} always-valid bounds" if title is None else title)
    handles: list[Artist] = [Line2D([], [], color=colours[v], linewidth=2, label=plain(v)) for v in variants]
    handles.append(Patch(facecolor="#999999", alpha=0.35, label=f"always-valid {level} bounds"))
    if naive:
        handles.append(
            Line2D([], [], color="#555555", linestyle=":", label=f"fixed-horizon {level} CI (invalid when peeking)")
        )
    ax.legend(handles=handles, fontsize="small", loc="best")
    return ax
