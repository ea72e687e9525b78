"""``recommend``: one verdict from the fixed-horizon test, the always-valid sequence, power and SRM."""

from __future__ import annotations

import math

import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from hoglab.stats import Count, Decision, Proportion, SampleMean, StatsInputError, recommend

RHO2 = (-2 * math.log(0.05) + math.log(-2 * math.log(0.05) + 1)) / 5000  # N* = 5000, α = 0.05


def _sequence(lift: float, se: float, n: float) -> tuple[float, float]:
    """Waudby-Smith et al.'s eq. 9 restated: the always-valid interval of an estimate after n units in all."""
    a = n * RHO2 + 1
    half = se * math.sqrt(n) * math.sqrt(2 * a / (n * n * RHO2) * math.log(math.sqrt(a) / 0.05))
    return lift - half, lift + half


def _lift_se(c: Proportion, t: Proportion) -> float:
    return math.sqrt(t.rate * (1 - t.rate) / t.n / c.rate**2 + c.rate * (1 - c.rate) / c.n * t.rate**2 / c.rate**4)


def test_significant_before_the_planned_sample_keeps_running_with_the_days_left() -> None:
    # The case: the fixed-horizon test says significant, the always-valid interval crosses 0, and the
    # sample is far from what the 5% MDE needs.
    c, t = Proportion(4000, 400), Proportion(4000, 460)
    z = (t.rate - c.rate) / math.sqrt(0.1075 * 0.8925 * 2 / 4000)
    assert 2 * stats.norm.sf(z) < 0.05
    r = recommend({"control": c, "test": t}, mde=0.05, days_running=30, max_days=math.inf)
    assert r.recommendation is Decision.KEEP_RUNNING and r.recommendation == "keep_running"
    assert r.p_value == pytest.approx(2 * stats.norm.sf(z), rel=1e-9)
    low, high = _sequence(0.15, _lift_se(c, t), 8000)
    assert r.sequential_interval == pytest.approx((low, high), rel=1e-9) and low < 0 < high
    # Units per variant for +5% on 10% at 80% power (statsmodels' normal power on Cohen's h, within 1%).
    h = proportion_effectsize(0.105, 0.10)
    assert r.needed_per_variant == pytest.approx(NormalIndPower().solve_power(h, power=0.8, alpha=0.05), rel=0.01)
    days_needed = math.ceil(r.needed_per_variant * 2 / (8000 / 30))
    assert r.days_needed == days_needed and r.days_more == days_needed - 30
    assert r.headline == f"KEEP RUNNING (about {days_needed - 30} more days)"
    assert "significant at the fixed horizon" in r.reason and "always-valid" in r.reason
    assert r.summary().startswith("KEEP RUNNING") and "<b" in r._repr_html_()


def test_an_always_valid_win_ships_at_any_time() -> None:
    c, t = Proportion(20_000, 2000), Proportion(20_000, 2400)
    r = recommend({"control": c, "test": t}, mde=0.05, days_running=3)
    low, _ = _sequence(0.2, _lift_se(c, t), 40_000)
    assert low > 0 and r.recommendation == "ship" and r.variant == "test"


def test_a_lower_is_better_metric_ships_a_decrease_and_stops_an_increase() -> None:
    arms = {"control": SampleMean(5000, 5000 * 2.0, 5000 * (4 + 1.0)),
            "test": SampleMean(5000, 5000 * 1.8, 5000 * (1.8**2 + 1.0))}  # fmt: skip
    assert recommend(arms, higher_is_better=False, days_running=10).recommendation == "ship"
    worse = recommend(arms, higher_is_better=True, days_running=10)
    assert worse.recommendation == "stop" and "worse than the control" in worse.reason


def test_srm_comes_first() -> None:
    arms = {"control": Proportion(5000, 500), "test": Proportion(4500, 900)}
    r = recommend(arms, days_running=10)
    assert r.recommendation == "investigate" and "SRM p" in r.reason
    assert r.srm is not None and r.srm.p_value == pytest.approx(stats.chisquare([5000, 4500]).pvalue, rel=1e-9)
    assert recommend(arms, expected_split=[0.526, 0.474], days_running=10).recommendation == "ship"


def test_the_planned_sample_without_an_effect_stops() -> None:
    c, t = Proportion(80_000, 8000), Proportion(80_000, 8010)
    r = recommend({"control": c, "test": t}, mde=0.05)
    assert r.smallest_variant >= r.needed_per_variant
    assert r.recommendation == "stop" and "without a significant effect" in r.reason


def test_futility_stops_early_when_the_mde_is_ruled_out() -> None:
    # -3% after 40,000 units per arm of the 58,000 that +5% needs: the always-valid interval still includes 0
    # but its best case is below +5%.
    c, t = Proportion(40_000, 4000), Proportion(40_000, 3880)
    low, high = _sequence(-0.03, _lift_se(c, t), 80_000)
    assert low < 0 < high < 0.05
    r = recommend({"control": c, "test": t}, mde=0.05, days_running=20)
    assert r.smallest_variant < r.needed_per_variant
    assert r.sequential_interval == pytest.approx((low, high), rel=1e-9)
    assert r.recommendation == "stop" and "no effect worth the wait" in r.reason


def test_an_experiment_beyond_the_horizon_is_not_feasible() -> None:
    # +2% on 10% needs ~350,000 units per variant: at 2,000 units a week that is decades. The horizon is the larger
    # of 90 days and 3x the days so far, unless max_days says otherwise.
    arms = {"control": Proportion(1000, 100), "test": Proportion(1000, 103)}
    assert recommend(arms, mde=0.02, days_running=7, max_days=math.inf).recommendation == "keep_running"
    r = recommend(arms, mde=0.02, days_running=7)
    assert r.recommendation == "stop" and r.horizon == 90
    assert r.summary().startswith("STOP: not feasible to detect +2% within 90 days: ")
    days = math.ceil(r.needed_per_variant * 2 / (2000 / 7))
    assert r.days_needed == days and f"about {days:,} days in all" in r.reason
    assert recommend(arms, mde=0.02, days_running=40).horizon == 120
    assert recommend(arms, mde=0.02, days_running=7, max_days=30).horizon == 30


def test_without_an_mde_the_assumed_effect_is_said() -> None:
    arms = {"control": Proportion(1000, 100), "test": Proportion(1000, 103)}
    r = recommend(arms, days_running=7)
    assert r.mde == 0.05 and r.mde_assumed and "assumed: no minimum detectable effect was set" in r.reason
    assert r.summary().startswith("STOP: not feasible to detect +5% within 90 days (assumed")
    assert not recommend(arms, mde=0.05, days_running=7).mde_assumed


def test_several_variants_ship_the_best_winner() -> None:
    arms = {"control": Proportion(20_000, 2000), "a": Proportion(20_000, 2300), "b": Proportion(20_000, 2500),
            "c": Proportion(20_000, 2010)}  # fmt: skip
    r = recommend(arms, days_running=5)
    assert r.recommendation == "ship" and r.variant == "b"


def test_counts_are_planned_with_a_poisson_spread() -> None:
    arms = {"control": Count(900, 1000), "test": Count(950, 1000)}
    r = recommend(arms, metric="count", days_running=7)
    assert r.recommendation == "keep_running" and math.isfinite(r.needed_per_variant)


def test_bad_input_is_named() -> None:
    arms = {"control": Proportion(1000, 100), "test": Proportion(1000, 110)}
    with pytest.raises(StatsInputError, match="mde must be positive"):
        recommend(arms, mde=0)
    with pytest.raises(StatsInputError, match="days_running"):
        recommend(arms, days_running=-1)


def test_a_correction_adjusts_the_variants_p_values_and_the_decision_reads_them() -> None:
    from statsmodels.stats.multitest import multipletests

    arms = {"control": Proportion(20_000, 2000), "a": Proportion(20_000, 2120), "b": Proportion(20_000, 2090),
            "c": Proportion(20_000, 2010)}  # fmt: skip
    raw = recommend(arms, mde=0.05, days_running=20, max_days=math.inf)
    holm = recommend(arms, mde=0.05, days_running=20, max_days=math.inf, correction="holm")
    assert math.isnan(raw.adjusted_p_value) and holm.correction == "holm"
    p_values = {v: 2 * stats.norm.sf(abs((arms[v].rate - 0.1) / math.sqrt(
        ((arms[v].successes + 2000) / 40_000) * (1 - (arms[v].successes + 2000) / 40_000) * 2 / 20_000)))
        for v in ("a", "b", "c")}  # fmt: skip
    adjusted = dict(zip(p_values, multipletests(list(p_values.values()), method="holm")[1], strict=True))
    assert holm.adjusted_p_value == pytest.approx(adjusted[str(holm.variant)], rel=1e-9)
    assert f"Holm-adjusted p = {holm.adjusted_p_value:.3g}" in holm.reason
