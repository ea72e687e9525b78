"""Quantile metrics: the difference in a quantile (p50, p90, ...) between variants, with a confidence interval.

GrowthBook's quantile test (gbstats ``QuantileStatistic``, ``packages/stats/gbstats/models/statistics.py``) and
the method it rests on, Woodruff (1952), "Confidence Intervals for Medians and Other Position Measures",
*JASA* 47:635. The sample quantile q̂_ν of n units has a distribution-free interval from the binomial law of
how many units fall below the true quantile: the order statistics at levels

    ν ∓ z_{1−α/2}·√(ν(1 − ν)/n)

bound it with probability ≈ 1 − α. Woodruff reads a standard error off that interval's width, which carries
the density at the quantile without estimating it:

    SE(q̂_ν)² = (n − 1)/n · ((upper − lower)/(2·z_{1−α/2}))²        (GrowthBook's ``variance_init``/n, n* = n)

Two independent arms then give Δ = q̂_T − q̂_C with SE² = SE_T² + SE_C², a normal interval and p-value, and the
lift q̂_T/q̂_C − 1 with the delta-method variance SE_T²/q̂_C² + q̂_T²·SE_C²/q̂_C⁴. As in GrowthBook the standard
error is undefined (NaN) when the bounds' levels leave [0, 1], i.e. n ≤ z²ν/(1 − ν) or n ≤ z²(1 − ν)/ν.
Sample quantiles are order statistics (numpy's ``inverted_cdf``: the smallest value with F̂ ≥ ν). The method
assumes a continuous metric: with many ties at the quantile (counts, zeros) the interval is conservative or
degenerate. ``tests/stats/units/test_quantiles.py`` checks 95% coverage in A/A simulations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._distributions import difference_p_value, z_quantile
from .._errors import StatsInputError
from .._options import check_alpha
from .frame import as_names, check_units

__all__ = ["QUANTILE_COLUMNS", "Quantile", "QuantileEffect", "quantile_difference", "quantile_effects"]

QUANTILE_COLUMNS = [
    "metric", "quantile", "variant", "control", "units", "control_units", "estimate", "control_estimate",
    "difference", "difference_ci_low", "difference_ci_high", "lift", "lift_ci_low", "lift_ci_high", "p_value",
]  # fmt: skip


@dataclass(frozen=True)
class Quantile:
    """A sample quantile and its Woodruff bounds: what one arm contributes to a quantile test.

    ``level`` ν in (0, 1); ``lower``/``upper`` are the order statistics at ν ∓ z·√(ν(1 − ν)/n) for
    z = z_{1−α/2} with ``alpha`` (NaN when those levels leave [0, 1]).

    >>> q = Quantile.from_values(np.arange(1.0, 1001.0), 0.5)
    >>> q.estimate, q.lower, q.upper, round(q.se, 3)
    (500.0, 470.0, 531.0, 15.554)
    """

    n: int
    level: float
    estimate: float
    lower: float
    upper: float
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise StatsInputError(f"a quantile level must lie strictly between 0 and 1, got {self.level!r}")
        check_alpha(self.alpha)
        if self.n < 1:
            raise StatsInputError(f"a quantile needs at least one unit, got n = {self.n!r}")

    @classmethod
    def from_values(cls, values: Iterable[float], level: float, *, alpha: float = 0.05) -> Quantile:
        """The quantile of raw per-unit values, with its bounds."""
        x = np.sort(np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float))
        if x.size == 0 or not np.all(np.isfinite(x)):
            raise StatsInputError("a quantile needs at least one value, all finite")
        if not 0.0 < level < 1.0:
            raise StatsInputError(f"a quantile level must lie strictly between 0 and 1, got {level!r}")
        half = z_quantile(check_alpha(alpha)) * math.sqrt(level * (1.0 - level) / x.size)
        low, high = level - half, level + half
        bounds = (_order_statistic(x, low), _order_statistic(x, high)) if low >= 0.0 and high <= 1.0 else (
            math.nan, math.nan)  # fmt: skip
        return cls(int(x.size), float(level), _order_statistic(x, level), *bounds, alpha=float(alpha))

    @property
    def se(self) -> float:
        """Woodruff's standard error: √((n − 1)/n)·(upper − lower)/(2z); NaN when undefined."""
        if self.n <= 1 or not math.isfinite(self.upper - self.lower):
            return math.nan
        return math.sqrt((self.n - 1.0) / self.n) * (self.upper - self.lower) / (2.0 * z_quantile(self.alpha))


def _order_statistic(sorted_values: np.ndarray, level: float) -> float:
    """The smallest value whose empirical CDF reaches ``level`` (level 0 is the minimum)."""
    index = max(math.ceil(level * sorted_values.size - 1e-9) - 1, 0)
    return float(sorted_values[min(index, sorted_values.size - 1)])


@dataclass(frozen=True)
class QuantileEffect:
    """The test arm's quantile against the control's: difference and lift with their intervals."""

    level: float
    difference: float
    difference_ci: tuple[float, float]
    lift: float
    lift_ci: tuple[float, float]
    p_value: float


def quantile_difference(control: Quantile, test: Quantile, *, alpha: float = 0.05) -> QuantileEffect:
    """Δ = q̂_T − q̂_C with a normal (1 − α) interval and p-value, and the lift by the delta method.

    >>> c = Quantile.from_values(np.arange(1.0, 1001.0), 0.5)
    >>> t = Quantile.from_values(np.arange(31.0, 1031.0), 0.5)
    >>> e = quantile_difference(c, t)
    >>> e.difference, [round(x, 1) for x in e.difference_ci], round(e.p_value, 3)
    (30.0, [-13.1, 73.1], 0.173)
    """
    check_alpha(alpha)
    if control.level != test.level:
        raise StatsInputError(f"the arms' quantile levels differ: {control.level} and {test.level}")
    z = z_quantile(alpha)
    difference = test.estimate - control.estimate
    se = math.sqrt(test.se**2 + control.se**2)
    p = difference_p_value(difference, se)
    if control.estimate > 0:
        lift = test.estimate / control.estimate - 1.0
        lift_se = math.sqrt(test.se**2 / control.estimate**2 + test.estimate**2 * control.se**2 / control.estimate**4)
    else:
        lift = lift_se = math.nan
    return QuantileEffect(
        test.level, difference, (difference - z * se, difference + z * se), lift, (lift - z * lift_se,
        lift + z * lift_se), p)  # fmt: skip


def quantile_effects(
    units: pd.DataFrame,
    metric: str | Sequence[str] = "value",
    quantiles: Sequence[float] = (0.5, 0.9),
    *,
    control: str = "control",
    alpha: float = 0.05,
    variant_column: str = "variant",
) -> pd.DataFrame:
    """Each variant's quantiles of ``metric`` against the control's, on a units frame.

    Returns one row per (metric, quantile, non-control variant) with columns ``metric, quantile, variant,
    control, units, control_units, estimate, control_estimate`` (the arms' sample quantiles), ``difference,
    difference_ci_low/high, lift, lift_ci_low/high, p_value`` (Woodruff's interval, GrowthBook's quantile test).

    >>> rng = np.random.default_rng(7)
    >>> units = pd.DataFrame({"variant": np.repeat(["control", "test"], 2000),
    ...                       "value": np.r_[rng.lognormal(3, 1, 2000), 1.2 * rng.lognormal(3, 1, 2000)]})
    >>> quantile_effects(units)[["quantile", "lift", "p_value"]].round(3).values.tolist()
    [[0.5, 0.285, 0.0], [0.9, 0.246, 0.001]]
    """
    check_alpha(alpha)
    levels = [float(q) for q in quantiles]
    if not levels or not all(0.0 < q < 1.0 for q in levels):
        raise StatsInputError(f"quantiles must be levels strictly between 0 and 1, got {quantiles!r}")
    metrics = as_names(metric, "metric")
    frame = check_units(units, control=control, columns=metrics, variant_column=variant_column)
    rows: list[dict[str, object]] = []
    for name in metrics:
        values = frame.values(name)
        arms = [values[frame.variant_codes == i] for i in range(len(frame.variants))]
        for level in levels:
            base = Quantile.from_values(arms[0], level, alpha=alpha)
            for i in range(1, len(arms)):
                arm = Quantile.from_values(arms[i], level, alpha=alpha)
                e = quantile_difference(base, arm, alpha=alpha)
                rows.append({
                    "metric": name, "quantile": level, "variant": frame.variants[i], "control": frame.control,
                    "units": float(arm.n), "control_units": float(base.n), "estimate": arm.estimate,
                    "control_estimate": base.estimate, "difference": e.difference,
                    "difference_ci_low": e.difference_ci[0], "difference_ci_high": e.difference_ci[1],
                    "lift": e.lift, "lift_ci_low": e.lift_ci[0], "lift_ci_high": e.lift_ci[1], "p_value": e.p_value,
                })  # fmt: skip
    return pd.DataFrame.from_records(rows, columns=QUANTILE_COLUMNS)
