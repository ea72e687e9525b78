"""The report's novelty section: is the primary metric's effect fading or growing with time since exposure?

:func:`hoglab.stats.novelty` on the primary metric, cut by how many days before the last exposure each unit was
first exposed. A legacy experiment's per-day restatement (``legacy.py``: each exposed person on the day of their
first exposure, with what they did after it) already is that cut; a metric experiment's comes from its units
(``client.experiments.units``, the first primary metric that is a mean or a funnel, the holdout left out).

Two choices the report makes (``hoglab.stats.novelty`` leaves both to its caller):

* the trend is fitted on the **difference** (variant − control), not the lift: a day's lift has a delta-method
  standard error that grows with the lift itself, so inverse-variance weights lean towards the days whose lift is
  small (on the demo's daily cohorts of ~55 persons per arm, the weighted mean of the days' lifts is +2.7% where
  the experiment's is +15%); a difference's standard error barely depends on the effect.
* a day enters the test with at least :data:`MIN_UNITS` units in the variant and in the control (normal intervals
  for a day's difference), not the library's default of 100: a report is read on experiments of a few thousand.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from ...errors import HoglabError
from ...stats import Novelty, StatsError, novelty

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...client import Client, MetricExperimentResult

__all__ = ["MIN_UNITS", "SECTION_TITLE", "daily_novelty", "metric_novelty", "novelty_figure", "novelty_lines"]

MIN_UNITS = 30
"""Units a day needs in the variant and in the control to enter the trend test."""

SECTION_TITLE = "Novelty: the effect by days since first exposure"


def _fit(stats: pd.DataFrame, metric: str, control: str, *, percent: bool, day: str | None = None,
         covariate: str | None = None) -> tuple[Novelty | None, str | None]:  # fmt: skip
    """The report's novelty (see the module), ``days.attrs["percent"]`` saying a difference of rates."""
    try:
        result = novelty(stats, metric, control=control, day=day, covariate=covariate, scale="difference",
                         min_units=MIN_UNITS)  # fmt: skip
    except StatsError as exc:
        return None, f"Novelty: not tested ({exc})."
    result.days.attrs["percent"] = percent
    return result, None


def daily_novelty(daily: pd.DataFrame, metric: str, control: str) -> tuple[Novelty | None, str | None]:
    """The novelty of a legacy experiment's primary metric from its per-day restatement.

    ``daily``: one row per (``date`` of first exposure, ``variant``) with ``n`` persons and ``successes`` (a
    conversion), or ``n``, ``count`` and ``count_squares`` (events per person). A cohort's day is the whole days
    from its date to the last cohort's (the most recent cohort is day 0).
    """
    if daily.empty:
        return None, None
    dates = pd.to_datetime(daily["date"])
    day = ((dates.max() - dates) / pd.Timedelta(days=1)).round().astype(int)  # 23- and 25-hour days count as one
    stats = pd.DataFrame({"day": day.to_numpy(), "variant": daily["variant"].astype(str).to_numpy(),
                          "n": pd.to_numeric(daily["n"]).to_numpy(dtype=float)})  # fmt: skip
    conversions = "successes" in daily.columns
    if conversions:
        stats["successes"] = pd.to_numeric(daily["successes"]).to_numpy(dtype=float)
    else:
        stats["sum"] = pd.to_numeric(daily["count"]).to_numpy(dtype=float)
        stats["sum_squares"] = pd.to_numeric(daily["count_squares"]).to_numpy(dtype=float)
    return _fit(stats, metric, control, percent=conversions, day="day")


def metric_novelty(client: Client, result: MetricExperimentResult) -> tuple[Novelty | None, str | None]:
    """The novelty of a metric experiment's first primary mean or funnel metric, from its units (or why not)."""
    answers = [a for a in result.metrics if a.role == "primary" and a.answer is not None]
    if not answers:
        return None, None
    chosen = next((a for a in answers if a.metric_type in ("mean", "funnel")), None)
    if chosen is None:
        kinds = ", ".join(sorted({a.metric_type for a in answers}))
        return None, f"Novelty: not tested (primary metrics: {kinds}; the report cuts means and funnels by day)."
    baseline = (chosen.answer or {}).get("baseline") or {}
    control = str(baseline.get("key") or "control")
    try:
        units = client.experiments.units(result.experiment_id, metric=[dict(chosen.metric)])
    except HoglabError as exc:
        return None, f"Novelty: not tested (the units could not be read: {getattr(exc, 'detail', None) or exc})."
    if units.empty:
        return None, "Novelty: not tested (no exposed units yet)."
    if result.holdout_key is not None:
        units = units[units["variant"] != result.holdout_key]
    columns = units.attrs.get("columns", {}).get(chosen.label) or [chosen.label]
    # A funnel's columns are its 0/1 value and "<label> step"; CUPED adds "<label> covariate".
    value = next((c for c in columns if not c.endswith((" step", " covariate"))), columns[0])
    covariate = next((c for c in columns if c.endswith(" covariate")), None)
    counted = units[units[value].notna()]
    return _fit(counted, value, control, percent=chosen.metric_type == "funnel", covariate=covariate)


def _number(value: float, percent: bool, digits: int = 1) -> str:
    return f"{value * 100:+.{digits}f} pp" if percent else f"{value:+.3g}"


def novelty_lines(result: Novelty) -> list[str]:
    """One line per variant: the trend's verdict, its slope with its interval and test, and the fitted ends."""
    percent = bool(result.days.attrs.get("percent"))
    lines = []
    for r in result.trends.to_dict("records"):
        head = f"Novelty ({result.metric}): {r['variant']}'s effect by days since first exposure"
        if not math.isfinite(r["p_value"]):
            lines.append(f"{head}: no trend test ({r['days']} days with {result.min_units}+ units per arm; it "
                         "needs 3).")  # fmt: skip
            continue
        said = {"decaying": "fades with time since exposure (a novelty effect)",
                "growing": "grows with time since exposure (a learning effect)",
                "no trend": "shows no trend"}[r["verdict"]]  # fmt: skip
        test = "WLS t-test" if result.trend_scale == "estimated" else "WLS z-test"
        level = f"{1 - result.alpha:.0%}"
        slope, low, high = (_number(r[k], percent, 2) for k in ("slope", "slope_ci_low", "slope_ci_high"))
        start, end = (_number(r["intercept"] + r["slope"] * r[k], percent) for k in ("first_day", "last_day"))
        lines.append(
            f"{head} {said}: slope {slope} a day [{level} CI {low}, {high}] ({test} over {r['days']} days with "
            f"{result.min_units}+ units per arm, p = {r['p_value']:.2g}); fitted {start} on day {r['first_day']} "
            f"(the most recent), {end} on day {r['last_day']}; pooled {_number(r['pooled_effect'], percent)}."
        )
    return lines


def novelty_figure(result: Novelty) -> Figure:
    """The section's small plot: each day's effect with its interval and the fitted trend."""
    from matplotlib.figure import Figure

    from ..plots.novelty import plot_novelty

    figure = Figure(figsize=(7.5, 3.2), layout="constrained", dpi=110)
    plot_novelty(result, ax=figure.add_subplot(), percent=bool(result.days.attrs.get("percent")))
    return figure
