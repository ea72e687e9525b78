"""Quantile metrics: Woodruff's interval (GrowthBook's quantile test), calibrated in A/A simulations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hoglab.stats import Quantile, StatsInputError, quantile_difference, quantile_effects

Z = stats.norm.isf(0.025)


def _band(rate: float, runs: int) -> float:
    return 3 * math.sqrt(rate * (1 - rate) / runs)


def test_the_statistic_is_the_order_statistic_with_binomial_bounds() -> None:
    values = np.random.default_rng(1).exponential(2.0, 801)
    for level in (0.1, 0.5, 0.9):
        q = Quantile.from_values(values, level)
        half = Z * math.sqrt(level * (1 - level) / values.size)
        oracle = np.quantile(values, [level, level - half, level + half], method="inverted_cdf")
        assert (q.estimate, q.lower, q.upper) == tuple(oracle)
        assert q.se == pytest.approx(math.sqrt(800 / 801) * (oracle[2] - oracle[1]) / (2 * Z), rel=1e-12)


def test_effects_frame_restates_the_normal_interval_and_delta_lift() -> None:
    rng = np.random.default_rng(2)
    units = pd.DataFrame({"variant": np.repeat(["control", "a", "b"], [1500, 1400, 1300]),
                          "value": rng.lognormal(2, 0.8, 4200), "other": rng.gamma(2, 3, 4200)})  # fmt: skip
    frame = quantile_effects(units, ["value", "other"], (0.5, 0.9, 0.99))
    assert len(frame) == 2 * 3 * 2
    for row in frame.to_dict("records"):
        c = units.loc[units["variant"] == "control", row["metric"]].to_numpy()
        t = units.loc[units["variant"] == row["variant"], row["metric"]].to_numpy()
        qc, qt = Quantile.from_values(c, row["quantile"]), Quantile.from_values(t, row["quantile"])
        se = math.hypot(qc.se, qt.se)
        assert row["difference"] == qt.estimate - qc.estimate
        assert row["difference_ci_low"] == pytest.approx(row["difference"] - Z * se, rel=1e-12)
        assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(row["difference"]) / se), rel=1e-9)
        lift_se = math.sqrt(qt.se**2 / qc.estimate**2 + qt.estimate**2 * qc.se**2 / qc.estimate**4)
        assert row["lift_ci_high"] == pytest.approx(qt.estimate / qc.estimate - 1 + Z * lift_se, rel=1e-12)


@pytest.mark.parametrize("level", [0.5, 0.9])
def test_aa_coverage_is_nominal(level: float) -> None:
    # 1,000 A/A experiments of skewed values (1,500 units per arm): the 95% interval of the difference covers 0
    # at 95% within three binomial standard errors; so does the one-arm interval of the true quantile.
    rng = np.random.default_rng(int(level * 100))
    runs, covered, covered_truth = 1000, 0, 0
    truth = math.exp(1.0 + 0.9 * stats.norm.ppf(level))  # lognormal(1, 0.9) quantile
    for _ in range(runs):
        c = Quantile.from_values(rng.lognormal(1.0, 0.9, 1500), level)
        t = Quantile.from_values(rng.lognormal(1.0, 0.9, 1500), level)
        low, high = quantile_difference(c, t).difference_ci
        covered += low <= 0.0 <= high
        covered_truth += abs(c.estimate - truth) <= Z * c.se
    assert abs(covered / runs - 0.95) <= _band(0.95, runs)
    assert abs(covered_truth / runs - 0.95) <= _band(0.95, runs)


def test_a_real_shift_is_detected() -> None:
    rng = np.random.default_rng(5)
    units = pd.DataFrame({"variant": np.repeat(["control", "test"], 3000),
                          "value": np.r_[rng.lognormal(1, 0.9, 3000), 1.15 * rng.lognormal(1, 0.9, 3000)]})  # fmt: skip
    frame = quantile_effects(units).set_index("quantile")
    assert frame.loc[0.5, "lift_ci_low"] < 0.15 < frame.loc[0.5, "lift_ci_high"]
    assert frame.loc[0.5, "p_value"] < 0.01


def test_too_few_units_for_the_bounds_give_nan_not_an_error() -> None:
    q = Quantile.from_values([1.0, 2.0, 3.0], 0.99)  # n <= z²ν/(1 − ν): the upper level passes 1
    assert q.estimate == 3.0 and math.isnan(q.se)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Quantile.from_values([], 0.5), "at least one value"),
        (lambda: Quantile.from_values([1.0], 1.0), "strictly between 0 and 1"),
        (lambda: quantile_difference(Quantile.from_values([1.0, 2.0], 0.5), Quantile.from_values([1.0], 0.9)),
         "levels differ"),
        (lambda: quantile_effects(pd.DataFrame({"variant": ["control", "test"], "value": [1, 2]}), quantiles=[90]),
         "quantiles must be levels"),
    ],
)
def test_bad_input_is_named(call: object, message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        call()  # type: ignore[operator]
