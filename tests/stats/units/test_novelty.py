"""Novelty: the effect by days since first exposure against pandas, and the trend test against statsmodels' WLS."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from hoglab.stats import Novelty, StatsInputError, novelty

START = pd.Timestamp("2026-03-01", tz="UTC")


def _units(seed: int, n: int = 30_000, days: int = 14, novelty_lift: float = 0.0, arms: int = 2) -> pd.DataFrame:
    """A units frame: exposures spread over ``days``, revenue per unit, a +3% lift plus a novelty part that fades
    with the days a unit has been exposed."""
    rng = np.random.default_rng(seed)
    first = START + pd.to_timedelta(rng.uniform(0, days, n), unit="D")
    variant = rng.choice(["control", "test", "other"][:arms], n)
    exposed = ((first.max() - first) / pd.Timedelta(days=1)).to_numpy()
    lift = np.where(variant != "control", 0.03 + novelty_lift * np.exp(-exposed / 3), 0.0)
    return pd.DataFrame({"entity_id": [f"u{i}" for i in range(n)], "variant": variant, "first_exposure_time": first,
                         "revenue": rng.gamma(2.0, 5.0, n) * (1 + lift),
                         "converted": (rng.random(n) < 0.1 * (1 + lift)).astype(int)})  # fmt: skip


def _restated_days(units: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per day and variant: units, mean, and the Welch / delta-method standard errors, by pandas."""
    as_of = units["first_exposure_time"].max()
    day = np.floor((as_of - units["first_exposure_time"]) / pd.Timedelta(days=1)).astype(int)
    cells = units.assign(day=day).groupby(["day", "variant"])[metric].agg(["count", "mean", "var"]).unstack()
    t, c = cells.xs("test", axis=1, level=1), cells.xs("control", axis=1, level=1)
    out = pd.DataFrame({"day": cells.index, "units": t["count"].to_numpy(), "control_units": c["count"].to_numpy()})
    vt, vc = (t["var"] / t["count"]).to_numpy(), (c["var"] / c["count"]).to_numpy()
    mt, mc = t["mean"].to_numpy(), c["mean"].to_numpy()
    out["difference"], out["difference_se"] = mt - mc, np.sqrt(vt + vc)
    out["lift"], out["lift_se"] = mt / mc - 1, np.sqrt(vt / mc**2 + vc * mt**2 / mc**4)
    return out


def test_each_days_effect_restates_pandas() -> None:
    units = _units(1)
    result = novelty(units, "revenue")
    days = result.to_frame()
    ref = _restated_days(units, "revenue")
    assert days["day"].tolist() == ref["day"].tolist() == list(range(14))
    for column in ("units", "control_units", "difference", "difference_se", "lift", "lift_se"):
        np.testing.assert_allclose(days[column], ref[column], rtol=1e-9, err_msg=column)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(days["lift_ci_low"], ref["lift"] - z * ref["lift_se"], rtol=1e-9)
    assert (days["variant"] == "test").all() and (days["control"] == "control").all() and days["in_trend"].all()


@pytest.mark.parametrize("scale", ["lift", "difference"])
def test_the_trend_is_statsmodels_weighted_least_squares(scale: str) -> None:
    units = _units(2, novelty_lift=0.25)
    result = novelty(units, "revenue", scale=scale)  # type: ignore[arg-type]
    days = result.to_frame()
    effect, se = days[scale].to_numpy(), days[f"{scale}_se"].to_numpy()
    x = sm.add_constant(days["day"].to_numpy(dtype=float))
    estimated = sm.WLS(effect, x, weights=1 / se**2).fit()
    trend = result.trends.iloc[0]
    assert trend["slope"] == pytest.approx(estimated.params[1], rel=1e-9)
    assert trend["intercept"] == pytest.approx(estimated.params[0], rel=1e-9)
    assert trend["slope_se"] == pytest.approx(estimated.bse[1], rel=1e-9)
    assert trend["p_value"] == pytest.approx(estimated.pvalues[1], rel=1e-9)
    assert trend["dof"] == estimated.df_resid
    np.testing.assert_allclose([trend["slope_ci_low"], trend["slope_ci_high"]], estimated.conf_int()[1], rtol=1e-9)
    np.testing.assert_allclose(days["fitted"], estimated.fittedvalues, rtol=1e-9)
    assert trend["verdict"] == "decaying"
    known = novelty(units, "revenue", scale=scale, trend_scale="known").trends.iloc[0]  # type: ignore[arg-type]
    fixed = sm.WLS(effect, x, weights=1 / se**2).fit(cov_type="fixed scale")
    assert known["slope_se"] == pytest.approx(fixed.bse[1], rel=1e-9)
    assert known["p_value"] == pytest.approx(fixed.pvalues[1], rel=1e-9)
    # Do the days' effects differ at all: Cochran's Q, as statsmodels' meta-analysis computes it.
    combined = combine_effects(effect, se**2)
    assert trend["heterogeneity_q"] == pytest.approx(combined.q, rel=1e-9)
    assert trend["pooled_effect"] == pytest.approx(combined.mean_effect_fe, rel=1e-9)
    assert trend["heterogeneity_p_value"] == pytest.approx(combined.test_homogeneity().pvalue, rel=1e-9)


def test_equal_weights_reduce_to_ordinary_least_squares() -> None:
    # With every day's standard error equal, WLS is OLS.
    stats_frame = pd.DataFrame({"day": np.repeat(np.arange(10), 2), "variant": np.tile(["control", "test"], 10),
                                "n": 1000, "successes": np.tile([100, 0], 10)})  # fmt: skip
    rng = np.random.default_rng(3)
    stats_frame.loc[stats_frame["variant"] == "test", "successes"] = 100 + rng.integers(-15, 16, 10)
    result = novelty(stats_frame, scale="difference")
    days = result.to_frame()
    ols = sm.OLS(days["difference"].to_numpy(), sm.add_constant(days["day"].to_numpy(dtype=float))).fit()
    weights = 1 / days["difference_se"].to_numpy() ** 2
    wls = sm.WLS(days["difference"].to_numpy(), sm.add_constant(days["day"].to_numpy(dtype=float)),
                 weights=weights).fit()  # fmt: skip
    assert result.trends["slope"].iloc[0] == pytest.approx(wls.params[1], rel=1e-9)
    # The binomial variances differ slightly by day; the slope is close to OLS's.
    assert result.trends["slope"].iloc[0] == pytest.approx(ols.params[1], abs=2e-4)


def test_per_day_statistics_give_the_units_frames_answer() -> None:
    units = _units(4, arms=3)
    as_of = units["first_exposure_time"].max()
    day = np.floor((as_of - units["first_exposure_time"]) / pd.Timedelta(days=1)).astype(int)
    for metric, columns in (("revenue", ("sum", "sum_squares")), ("converted", ("successes",))):
        grouped = units.assign(day=day, sq=units[metric] ** 2).groupby(["day", "variant"])
        sums = grouped.agg(n=(metric, "size"), sum=(metric, "sum"), sum_squares=("sq", "sum")).reset_index()
        if columns == ("successes",):
            sums = sums.rename(columns={"sum": "successes"}).drop(columns=["sum_squares"])
        from_units = novelty(units, metric).to_frame().sort_values(["variant", "day"], ignore_index=True)
        from_stats = novelty(sums.assign(metric=metric)).to_frame().sort_values(["variant", "day"], ignore_index=True)
        assert set(from_units["variant"]) == {"test", "other"}
        pd.testing.assert_frame_equal(from_units, from_stats, rtol=1e-9)


def test_a_day_column_and_as_of_choose_the_days() -> None:
    units = _units(5, n=8000)
    given = novelty(units.assign(d=3), "revenue", day="d", min_units=2)
    assert given.to_frame()["day"].tolist() == [3] and given.as_of is None
    later = novelty(units, "revenue", as_of=units["first_exposure_time"].max() + pd.Timedelta(days=2))
    assert later.to_frame()["day"].tolist() == list(range(2, 16))
    naive = units.assign(first_exposure_time=units["first_exposure_time"].dt.tz_localize(None))
    pd.testing.assert_frame_equal(novelty(naive, "revenue").to_frame(), novelty(units, "revenue").to_frame())
    with pytest.raises(StatsInputError, match="after as_of"):
        novelty(units, "revenue", as_of="2026-03-05")


def test_without_a_trend_the_test_keeps_its_level() -> None:
    # 400 experiments with a constant +3% lift: the share with p < 0.05 within the binomial band.
    rng = np.random.default_rng(6)
    runs, alpha, n = 400, 0.05, 6000
    rejected = []
    for _ in range(runs):
        treated = rng.random(n) < 0.5
        units = pd.DataFrame({
            "variant": pd.Categorical.from_codes(treated.astype(int), ["control", "test"]),
            "first_exposure_time": START + pd.to_timedelta(rng.uniform(0, 10, n), unit="D"),
            "revenue": rng.gamma(2.0, 5.0, n) * (1 + 0.03 * treated),
        })  # fmt: skip
        rejected.append(novelty(units, "revenue", min_units=50).trends["p_value"].iloc[0] < alpha)
    assert abs(np.mean(rejected) - alpha) <= 3 * math.sqrt(alpha * (1 - alpha) / runs)


def test_a_covariate_narrows_each_days_interval() -> None:
    units = _units(10, n=20_000)
    rng = np.random.default_rng(10)
    # A pre-exposure value: the unit's revenue without the treatment's lift, times noise.
    untreated = units["revenue"] / np.where(units["variant"] == "control", 1.0, 1.03)
    units["before"] = untreated * rng.uniform(0.7, 1.3, len(units))
    plain = novelty(units, "revenue").to_frame()
    adjusted = novelty(units, "revenue", covariate="before").to_frame()
    assert (adjusted["lift_se"] < plain["lift_se"]).all()
    with pytest.raises(StatsInputError, match="units frame"):
        novelty(pd.DataFrame({"day": [0, 0], "variant": ["control", "test"], "n": [10, 10], "successes": [1, 2]}),
                covariate="before")  # fmt: skip


def test_small_days_stay_out_of_the_test() -> None:
    units = _units(7, n=5000)
    result = novelty(units, "revenue", min_units=200)
    days = result.to_frame()
    assert not days["in_trend"].all() and days["lift"].notna().all()
    assert result.trends["days"].iloc[0] == days["in_trend"].sum()
    none = novelty(units, "revenue", min_units=10_000)
    assert none.trends["verdict"].iloc[0] == "no trend" and math.isnan(none.trends["p_value"].iloc[0])
    assert "no trend test" in none.summary()


def test_bad_input_is_refused() -> None:
    units = _units(8, n=2000)
    for kwargs, message in [({"metric": "missing"}, "no column"), ({"scale": "ratio"}, "scale"),
                            ({"trend_scale": "robust"}, "trend_scale"), ({"min_units": 1}, "min_units"),
                            ({"control": "nobody"}, "no control")]:  # fmt: skip
        with pytest.raises(StatsInputError, match=message):
            novelty(units, **{"metric": "revenue", **kwargs})  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="first_exposure_time"):
        novelty(units.drop(columns=["first_exposure_time"]), "revenue")
    with pytest.raises(StatsInputError, match="'sum' and 'sum_squares'"):
        novelty(pd.DataFrame({"day": [0, 0], "variant": ["control", "test"], "n": [10, 10], "sum": [1.0, 2.0]}))


def test_summary_and_html() -> None:
    result = novelty(_units(9, novelty_lift=0.15), "revenue")
    assert isinstance(result, Novelty)
    text = result.summary()
    assert text.startswith("revenue: the lift by days since each unit's first exposure (day d: units first exposed")
    assert "test: the effect fades with time since exposure (novelty): slope" in text
    assert "<table" in result._repr_html_() and str(result) == text
