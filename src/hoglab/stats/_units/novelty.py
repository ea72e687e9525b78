"""Novelty and time: the effect by days since each unit's first exposure, and a test for a trend in it.

A new feature can win at first because it is new (a novelty effect) or lose at first while users learn it (a
primacy or learning effect); either way the effect measured over the first days is not the effect that lasts
(Dmitriev, Frasca, Gupta, Kohavi & Vaz 2016, "Pitfalls of long-term online controlled experiments", IEEE Big Data;
Hohnhold, O'Brien & Tang 2015, "Focusing on the long-term: it's good for users and business", KDD). Two inputs:

* a **units frame** (one row per unit, as ``client.experiments.units`` returns: ``variant``,
  ``first_exposure_time`` and the metric columns). A unit's day is the number of whole days between its first
  exposure and ``as_of`` (default: the last exposure in the frame, so the last day's units are day 0): how long it
  had been exposed when its metric was read. Units of one day are a cohort, randomised within itself, so each
  day's effect is unbiased for that cohort and days are independent. If the effect fades, the recently exposed
  (small days, whose whole window is new) show more of it. Cohorts also differ in who they are (the first days
  bring the most active users), so a trend here says the effect differs by exposure cohort; read it with that in
  mind. With a ``day`` column (one row per unit and day since exposure, the metric on that day) the rows are used
  as given: the same units then appear on several days, and the test below treats days as independent.
* **per-day sufficient statistics**: one row per (``day``, ``variant``) with ``n`` and ``sum``, ``sum_squares``
  (a mean) or ``successes`` (a conversion), optionally a ``metric`` column.

Each day's effect against the control: the difference with Welch's standard error √(s²_T/n_T + s²_C/n_C) and the
lift μ_T/μ_C − 1 with the delta-method one (Deng, Knoblich & Lu 2018, §3), normal intervals. The **trend test**
is the weighted least squares of the day's effect e_d on the day x_d with weights w_d = 1/SE_d² (a meta-regression
of the days' effects; Thompson & Sharp 1999, "Explaining heterogeneity in meta-analysis: a comparison of
methods", *Stat. Med.* 18:2693):

    slope = Σw(x − x̄)(e − ē)/Σw(x − x̄)²,   x̄, ē weighted means
    SE² = φ/Σw(x − x̄)²,   φ = Σw·r²/(D − 2) (``trend_scale="estimated"``, t with D − 2 dof; statsmodels' WLS)
                          or φ = 1 (``"known"``: the standard errors taken as exact, a z-test)

over the D days with at least ``min_units`` units in the variant and in the control. The estimated scale absorbs
day-to-day variation beyond sampling noise (which the known scale would read as a trend). A significant slope
against the sign of the pooled effect is a **decaying** effect (novelty), with it a **growing** one (learning).
Cochran's Q of the days' effects (do they differ at all) is reported beside it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._distributions import chi2_sf, norm_sf, t_isf, t_sf, z_quantile
from .._errors import StatsInputError
from .._options import check_alpha
from .frame import Cells, cells, check_units

__all__ = ["DAY_COLUMNS", "TREND_COLUMNS", "Novelty", "novelty"]

NoveltyScale = Literal["lift", "difference"]
TrendScale = Literal["estimated", "known"]

DAY_COLUMNS = [
    "variant", "control", "day", "units", "control_units", "estimate", "control_estimate", "difference",
    "difference_se", "difference_ci_low", "difference_ci_high", "lift", "lift_se", "lift_ci_low", "lift_ci_high",
    "in_trend", "fitted",
]  # fmt: skip
TREND_COLUMNS = [
    "variant", "scale", "days", "first_day", "last_day", "pooled_effect", "pooled_se", "intercept", "slope",
    "slope_se", "slope_ci_low", "slope_ci_high", "statistic", "dof", "p_value", "heterogeneity_q",
    "heterogeneity_dof", "heterogeneity_p_value", "verdict",
]  # fmt: skip
STATISTIC_COLUMNS = ("day", "variant", "n")


@dataclass(frozen=True)
class Novelty:
    """The result of :func:`novelty`: ``days`` (a row per variant and day, plot-ready: the effect, its interval
    and the fitted trend line) and ``trends`` (a row per variant: the slope of the effect on the day, its test and
    the verdict ``"decaying"``, ``"growing"`` or ``"no trend"``)."""

    days: pd.DataFrame
    trends: pd.DataFrame
    metric: str
    control: str
    scale: NoveltyScale
    trend_scale: TrendScale
    alpha: float
    min_units: int
    as_of: pd.Timestamp | None

    def to_frame(self) -> pd.DataFrame:
        """The ``days`` frame: ``variant, control, day, units, control_units, estimate, control_estimate``, the
        ``difference`` and ``lift`` with their standard errors and intervals, ``in_trend`` (enough units to enter
        the test) and ``fitted`` (the trend line on the chosen scale)."""
        return self.days.copy()

    def summary(self) -> str:
        """One sentence per variant: is the effect decaying, growing, or steady?"""
        unit = "lift" if self.scale == "lift" else "difference"
        when = (f" (day d: units first exposed d whole days before {self.as_of:%Y-%m-%d %H:%M} UTC)"
                if self.as_of is not None else "")  # fmt: skip
        lines = [f"{self.metric}: the {unit} by days since each unit's first exposure{when}."]
        for r in self.trends.to_dict("records"):
            if not math.isfinite(r["p_value"]):
                lines.append(f"{r['variant']}: no trend test ({r['days']} days with {self.min_units}+ units per arm; "
                             "it needs 3).")  # fmt: skip
                continue
            fmt = _percent if self.scale == "lift" else _number
            start = r["intercept"] + r["slope"] * r["first_day"]
            end = r["intercept"] + r["slope"] * r["last_day"]
            text = {"decaying": "the effect fades with time since exposure (novelty)",
                    "growing": "the effect grows with time since exposure (learning)",
                    "no trend": "no evidence of a trend"}[r["verdict"]]  # fmt: skip
            lines.append(f"{r['variant']}: {text}: slope {fmt(r['slope'])} a day (p = {r['p_value']:.2g}), from "
                         f"{fmt(start)} on day {r['first_day']} to {fmt(end)} on day {r['last_day']}; pooled "
                         f"{fmt(r['pooled_effect'])}.")  # fmt: skip
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        text = "".join(f"<p>{html.escape(line)}</p>" for line in self.summary().splitlines())
        table = self.days.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        return f"<div>{text}{table}</div>"


def _percent(x: float) -> str:
    return f"{x:+.2%}"


def _number(x: float) -> str:
    return f"{x:+.4g}"


def _as_utc(values: Any) -> pd.Series:
    times = pd.to_datetime(pd.Series(values), utc=False)
    if times.dt.tz is None:
        times = times.dt.tz_localize("UTC")
    return times.dt.tz_convert("UTC")


def _exposure_days(units: pd.DataFrame, column: str, as_of: Any) -> tuple[np.ndarray, pd.Timestamp]:
    if column not in units.columns:
        raise StatsInputError(f"the units frame has no {column!r} column (nor a day column: pass day=...)")
    try:
        times = _as_utc(units[column])
    except (TypeError, ValueError):
        raise StatsInputError(f"column {column!r} does not hold times") from None
    if times.isna().any():
        raise StatsInputError(f"column {column!r} has units without a first exposure time")
    end = times.max() if as_of is None else _as_utc([as_of]).iloc[0]
    days = np.floor((end - times) / pd.Timedelta(days=1)).to_numpy(dtype=float)
    if (days < 0).any():
        raise StatsInputError(f"some units were first exposed after as_of={end}")
    return days.astype(np.intp), end


def _from_units(units: pd.DataFrame, metric: str, control: str, day: str | None, as_of: Any, covariate: str | None,
                variant_column: str, exposure_column: str) -> tuple[Cells, tuple[str, ...], np.ndarray,
                                                                    pd.Timestamp | None]:  # fmt: skip
    frame = check_units(units, control=control, columns=[metric, *([covariate] if covariate else [])],
                        variant_column=variant_column)  # fmt: skip
    if day is not None:
        if day not in units.columns:
            raise StatsInputError(f"the units frame has no day column {day!r}")
        raw = pd.to_numeric(units[day], errors="coerce").to_numpy(dtype=float)
        if not (np.all(np.isfinite(raw)) and np.all(raw >= 0) and np.all(raw == np.floor(raw))):
            raise StatsInputError(f"column {day!r} must hold whole numbers of days >= 0")
        days, end = raw.astype(np.intp), None
    else:
        days, end = _exposure_days(units, exposure_column, as_of)
    labels, codes = np.unique(days, return_inverse=True)
    grid = cells(frame.values(metric, covariate), codes.astype(np.intp), labels.size, frame.variant_codes,
                 len(frame.variants))  # fmt: skip
    return grid, frame.variants, labels, end


def _from_statistics(stats: pd.DataFrame, metric: str, control: str, day: str,
                     variant_column: str) -> tuple[Cells, tuple[str, ...], np.ndarray]:  # fmt: skip
    if "metric" in stats.columns:
        names = list(dict.fromkeys(stats["metric"].astype(str)))
        if len(names) > 1 or metric in names:
            stats = stats[stats["metric"].astype(str) == metric]
            if stats.empty:
                raise StatsInputError(f"no rows of metric {metric!r}; the statistics' metrics: {names}")
    missing = [c for c in (day, variant_column, "n") if c not in stats.columns]
    if missing:
        raise StatsInputError(f"per-day statistics need a {missing[0]!r} column; their columns: {list(stats.columns)}")
    n = pd.to_numeric(stats["n"], errors="coerce").to_numpy(dtype=float)
    if "successes" in stats.columns:
        s = pd.to_numeric(stats["successes"], errors="coerce").to_numpy(dtype=float)
        ss = s  # a 0/1 value squared is itself
    elif {"sum", "sum_squares"} <= set(stats.columns):
        s = pd.to_numeric(stats["sum"], errors="coerce").to_numpy(dtype=float)
        ss = pd.to_numeric(stats["sum_squares"], errors="coerce").to_numpy(dtype=float)
    else:
        raise StatsInputError("per-day statistics need 'sum' and 'sum_squares' (a mean) or 'successes' (a conversion)")
    if not (np.all(np.isfinite(n) & (n >= 0)) and np.all(np.isfinite(s)) and np.all(np.isfinite(ss))):
        raise StatsInputError("per-day statistics must be finite, with n >= 0")
    raw_day = pd.to_numeric(stats[day], errors="coerce").to_numpy(dtype=float)
    if not (np.all(np.isfinite(raw_day)) and np.all(raw_day >= 0) and np.all(raw_day == np.floor(raw_day))):
        raise StatsInputError(f"column {day!r} must hold whole numbers of days >= 0")
    variants_seen = list(dict.fromkeys(stats[variant_column].astype(str)))
    if control not in variants_seen:
        raise StatsInputError(f"no control variant {control!r} in the statistics; their variants: {variants_seen}")
    if len(variants_seen) < 2:
        raise StatsInputError("the statistics have a single variant; a comparison needs another one")
    variants = (control, *[v for v in variants_seen if v != control])
    labels, codes = np.unique(raw_day.astype(np.intp), return_inverse=True)
    position = {name: i for i, name in enumerate(variants)}
    variant_codes = np.array([position[v] for v in stats[variant_column].astype(str)], dtype=np.intp)
    flat = codes * len(variants) + variant_codes
    size = labels.size * len(variants)
    total_n = np.bincount(flat, weights=n, minlength=size).astype(float)
    total_s = np.bincount(flat, weights=s, minlength=size).astype(float)
    total_ss = np.bincount(flat, weights=ss, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total_n > 0, total_s / total_n, math.nan)
        var = np.where(total_n > 1, np.maximum(total_ss - total_s * mean, 0.0) / (total_n - 1.0), math.nan)
    shape = (labels.size, len(variants))
    return Cells(total_n.reshape(shape), mean.reshape(shape), var.reshape(shape)), variants, labels


def novelty(
    data: pd.DataFrame,
    metric: str = "value",
    *,
    control: str = "control",
    day: str | None = None,
    as_of: Any = None,
    covariate: str | None = None,
    scale: NoveltyScale = "lift",
    trend_scale: TrendScale = "estimated",
    min_units: int = 100,
    alpha: float = 0.05,
    variant_column: str = "variant",
    exposure_column: str = "first_exposure_time",
) -> Novelty:
    """The effect by days since each unit's first exposure, and whether it trends (is the lift decaying?).

    Parameters
    ----------
    data
        A units frame (one row per unit: ``variant``, ``first_exposure_time``, the ``metric`` column), or per-day
        sufficient statistics (one row per ``day`` and ``variant`` with ``n`` and ``sum``/``sum_squares`` or
        ``successes``).
    metric
        The metric's column (a 0/1 column is a conversion), or its name in the statistics' ``metric`` column.
    day
        A column of whole days since exposure to use instead of the exposure times (per-day statistics: default
        ``"day"``).
    as_of
        When the metrics were read (a time; default the last first exposure in the frame): a unit's day is the
        whole days from its first exposure to then.
    covariate
        A pre-exposure column of a units frame: CUPED-adjusted values first (θ pooled, as :func:`segments`).
    scale
        The effect the trend is fitted on: ``"lift"`` (relative, default) or ``"difference"``.
    trend_scale
        ``"estimated"`` (default): the WLS residual scale, t with D − 2 dof (statsmodels' ``WLS(...).fit()``);
        ``"known"``: the days' standard errors as exact, a z-test (``fit(cov_type="fixed scale")``).
    min_units
        Days with fewer units in the variant or the control get their effect but stay out of the test.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(8)
    >>> n = 40_000
    >>> first = pd.Timestamp("2026-03-01", tz="UTC") + pd.to_timedelta(rng.uniform(0, 14, n), unit="D")
    >>> variant = rng.choice(["control", "test"], n)
    >>> days_exposed = (first.max() - first) / pd.Timedelta(days=1)
    >>> lift = np.where(variant == "test", 0.02 + 0.10 * np.exp(-days_exposed / 3), 0.0)  # a fading novelty
    >>> units = pd.DataFrame({"variant": variant, "first_exposure_time": first,
    ...                       "value": rng.exponential(10.0, n) * (1 + lift)})
    >>> result = novelty(units)
    >>> result.trends[["verdict"]].values.tolist(), result.trends["slope"].round(3).tolist()
    ([['decaying']], [-0.011])
    """
    check_alpha(alpha)
    if scale not in ("lift", "difference"):
        raise StatsInputError(f"scale must be 'lift' or 'difference', got {scale!r}")
    if trend_scale not in ("estimated", "known"):
        raise StatsInputError(f"trend_scale must be 'estimated' or 'known', got {trend_scale!r}")
    if isinstance(min_units, bool) or not isinstance(min_units, int) or min_units < 2:
        raise StatsInputError(f"min_units must be an integer >= 2, got {min_units!r}")
    if not isinstance(data, pd.DataFrame):
        raise StatsInputError(f"data must be a DataFrame, got {type(data).__name__}")
    end: pd.Timestamp | None = None
    statistics = "n" in data.columns and ({"sum", "successes"} & set(data.columns)) and metric not in data.columns
    if statistics:
        if covariate is not None:
            raise StatsInputError("covariate= needs a units frame, not per-day statistics")
        c, variants, labels = _from_statistics(data, metric, control, day or "day", variant_column)
    else:
        c, variants, labels, end = _from_units(data, metric, control, day, as_of, covariate, variant_column,
                                               exposure_column)  # fmt: skip
    z = z_quantile(alpha)
    columns: dict[str, list[Any]] = {name: [] for name in DAY_COLUMNS}
    trend_rows = []
    for v in range(1, len(variants)):
        effects = _day_effects(c, v, z)
        effect, se = effects[scale], effects[f"{scale}_se"]
        with np.errstate(invalid="ignore"):
            usable = ((effects["units"] >= min_units) & (effects["control_units"] >= min_units) & np.isfinite(effect)
                      & np.isfinite(se) & (se > 0))  # fmt: skip
        trend = _trend(labels[usable].astype(float), effect[usable], se[usable], trend_scale, alpha)
        x = labels.astype(float)
        effects |= {"variant": np.full(labels.size, variants[v], dtype=object),
                    "control": np.full(labels.size, variants[0], dtype=object), "day": labels.astype(int),
                    "in_trend": usable, "fitted": trend["intercept"] + trend["slope"] * x}  # fmt: skip
        for name in DAY_COLUMNS:
            columns[name].append(effects[name])
        trend_rows.append({"variant": variants[v], "scale": scale, **trend})
    days = pd.DataFrame({name: np.concatenate(parts) for name, parts in columns.items()})
    trends = pd.DataFrame.from_records(trend_rows, columns=TREND_COLUMNS)
    return Novelty(days, trends, metric, variants[0], scale, trend_scale, alpha, min_units, end)


def _day_effects(c: Cells, v: int, z: float) -> dict[str, np.ndarray]:
    n_t, n_c = c.n[:, v], c.n[:, 0]
    m_t, m_c = c.mean[:, v], c.mean[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        var_t, var_c = c.var[:, v] / n_t, c.var[:, 0] / n_c
        difference = m_t - m_c
        difference_se = np.sqrt(var_t + var_c)
        positive = m_c > 0
        lift = np.where(positive, m_t / m_c - 1.0, math.nan)
        lift_se = np.where(positive, np.sqrt(var_t / m_c**2 + var_c * m_t**2 / m_c**4), math.nan)
    return {
        "units": n_t, "control_units": n_c, "estimate": m_t, "control_estimate": m_c, "difference": difference,
        "difference_se": difference_se, "difference_ci_low": difference - z * difference_se,
        "difference_ci_high": difference + z * difference_se, "lift": lift, "lift_se": lift_se,
        "lift_ci_low": lift - z * lift_se, "lift_ci_high": lift + z * lift_se,
    }  # fmt: skip


def _trend(x: np.ndarray, e: np.ndarray, se: np.ndarray, trend_scale: TrendScale, alpha: float) -> dict[str, Any]:
    """The weighted least squares of the effect on the day, and Cochran's Q of the days' effects."""
    days = int(x.size)
    nan = math.nan
    out: dict[str, Any] = {"days": days, "first_day": int(x.min()) if days else -1,
                           "last_day": int(x.max()) if days else -1}  # fmt: skip
    w = 1.0 / (se * se)
    if days >= 1:
        pooled = float(w @ e / w.sum())
        q = float(w @ (e - pooled) ** 2)
        out |= {"pooled_effect": pooled, "pooled_se": 1.0 / math.sqrt(float(w.sum())), "heterogeneity_q": q,
                "heterogeneity_dof": days - 1,
                "heterogeneity_p_value": chi2_sf(q, days - 1) if days >= 2 else nan}  # fmt: skip
    else:
        out |= {"pooled_effect": nan, "pooled_se": nan, "heterogeneity_q": nan, "heterogeneity_dof": 0,
                "heterogeneity_p_value": nan}  # fmt: skip
    dof = days - 2
    if days < 3 or np.ptp(x) == 0:
        return out | {"intercept": nan, "slope": nan, "slope_se": nan, "slope_ci_low": nan, "slope_ci_high": nan,
                      "statistic": nan, "dof": float(max(dof, 0)) if trend_scale == "estimated" else math.inf,
                      "p_value": nan, "verdict": "no trend"}  # fmt: skip
    x_bar = float(w @ x / w.sum())
    e_bar = float(w @ e / w.sum())
    sxx = float(w @ (x - x_bar) ** 2)
    slope = float(w @ ((x - x_bar) * (e - e_bar))) / sxx
    intercept = e_bar - slope * x_bar
    r = e - intercept - slope * x
    if trend_scale == "estimated":
        phi = float(w @ (r * r)) / dof
        slope_se = math.sqrt(phi / sxx)
        statistic = slope / slope_se if slope_se > 0 else nan
        p = 2.0 * t_sf(abs(statistic), dof)
        crit, reported_dof = t_isf(alpha / 2.0, dof), float(dof)
    else:
        slope_se = 1.0 / math.sqrt(sxx)
        statistic = slope / slope_se
        p = 2.0 * norm_sf(abs(statistic))
        crit, reported_dof = z_quantile(alpha), math.inf
    verdict = "no trend"
    if p < alpha:
        verdict = "growing" if (slope > 0) == (out["pooled_effect"] > 0) else "decaying"
    return out | {"intercept": intercept, "slope": slope, "slope_se": slope_se, "slope_ci_low": slope - crit * slope_se,
                  "slope_ci_high": slope + crit * slope_se, "statistic": statistic, "dof": reported_dof,
                  "p_value": p, "verdict": verdict}  # fmt: skip
