"""What every plot shares: the palette, input checks, new axes, date and percent axes, display names."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import PercentFormatter

from ...errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "CONTROL_COLOUR",
    "DATE_FORMATS",
    "HIGHER_COLOUR",
    "INCONCLUSIVE_COLOUR",
    "LOWER_COLOUR",
    "PALETTE",
    "date_axis",
    "display_name",
    "level_text",
    "new_axes",
    "percent_axis",
    "plain",
    "require_frame",
    "timezone_of",
    "variant_colours",
]

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
# Yellow (#F0E442) comes last: it is hard to see on white.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
CONTROL_COLOUR = "#7F7F7F"  # the control (and the zero line) is the neutral reference, never a hue
HIGHER_COLOUR = "#0072B2"
LOWER_COLOUR = "#D55E00"  # blue/vermillion, not green/red: "lower" is good news for latency or churn
INCONCLUSIVE_COLOUR = "#9A9A9A"

# PostHog's placeholders for the "other values" bucket and for a missing property in breakdowns.
DATE_FORMATS = {"hour": "%d %b %H:%M", "day": "%d %b", "week": "%d %b", "month": "%b %Y"}
"""How a date is ticked, by the interval or period of the frame."""
_BREAKDOWN_NAMES = {"$$_posthog_breakdown_other_$$": "Other", "$$_posthog_breakdown_null_$$": "(none)"}


def new_axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    """``ax`` itself, or the Axes of a new figure (a new one per call, as pandas does: plots never pile up)."""
    if ax is not None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
        return ax
    figure = plt.figure(figsize=figsize or (7.5, 4.2), layout="constrained")
    new: Axes = figure.add_subplot()
    return new


def unit_of(df: Any, default: str = "people") -> str:
    """What a frame counts, as its axes say it: ``df.attrs["unit"]`` (``"companies"`` for an insight counting
    groups, set by the client) or ``default``.

    >>> frame = pd.DataFrame({"x": [1]})
    >>> frame.attrs["unit"] = "companies"
    >>> unit_of(frame), unit_of(pd.DataFrame())
    ('companies', 'people')
    """
    attrs = getattr(df, "attrs", None) or {}
    return str(attrs.get("unit") or default)


def require_frame(df: Any, required: Iterable[str], what: str) -> pd.DataFrame:
    """``df`` if it is a non-empty DataFrame with every ``required`` column; otherwise an
    :class:`~hoglab.errors.InvalidArgument` (a ``ValueError``; ``InvalidArgumentType`` for a non-frame)
    naming the gap."""
    if not isinstance(df, pd.DataFrame):
        raise InvalidArgumentType(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InvalidArgument(f"{what} is missing column(s) {missing}; it has {list(df.columns)}")
    if df.empty:
        raise InvalidArgument(f"{what} is empty: there is nothing to plot")
    return df


def timezone_of(dates: pd.Series) -> Any:
    """The time zone of a datetime column (``None`` for naive datetimes)."""
    return getattr(dates.dt, "tz", None)


def date_axis(ax: Axes, tz: Any, *, axis: str = "x") -> None:
    """Concise date ticks, placed and labelled in ``tz``.

    Matplotlib stores instants in UTC and labels them in ``rcParams["timezone"]`` (UTC) by default, so a day
    starting at midnight in Los Angeles would be labelled as 07:00 of that day, or the day before for zones
    east of UTC. Giving the locator and the formatter the data's zone puts each day on its own tick.
    """
    locator = mdates.AutoDateLocator(tz=tz)
    formatter = mdates.ConciseDateFormatter(locator, tz=tz)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(locator)
    target.set_major_formatter(formatter)


def percent_axis(ax: Axes, *, axis: str = "y", decimals: int | None = None) -> None:
    """Label fractions (0.25) as percentages (25%)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(PercentFormatter(xmax=1.0, decimals=decimals))


def plain(text: str) -> str:
    """``text`` shown as written: PostHog's event names start with ``$``, and two of them would be mathtext."""
    return text.replace("$", r"\$")


def display_name(value: Any) -> str:
    """A breakdown value as a label: tuples joined, PostHog's placeholders named, missing values empty."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, tuple | list):
        return " / ".join(display_name(v) for v in value)
    text = str(value)
    return _BREAKDOWN_NAMES.get(text, text)


def variant_colours(variants: Sequence[str], control: str | None) -> dict[str, str]:
    """The control grey, every other variant its own palette colour in order."""
    colours: dict[str, str] = {}
    others = iter(PALETTE * (1 + len(variants) // len(PALETTE)))
    for name in variants:
        colours[name] = CONTROL_COLOUR if name == control else next(others)
    return colours


def level_text(alpha: float) -> str:
    """``0.05`` -> ``"95%"`` (``"97.5%"`` when the level is not whole)."""
    level = 100.0 * (1.0 - alpha)
    return f"{level:.0f}%" if abs(level - round(level)) < 1e-9 else f"{level:.3g}%"
