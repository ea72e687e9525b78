"""Planning functions against statsmodels, and simulated power against the plan."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from statsmodels.stats.proportion import power_proportions_2indep, samplesize_proportions_2indep_onetail

from hoglab.stats import (
    Proportion,
    SampleMean,
    StatsInputError,
    minimum_detectable_effect,
    power,
    running_time,
    sample_size,
    two_proportion_ztest,
    welch_ttest,
)


@pytest.mark.parametrize(("baseline", "lift"), [(0.10, 0.10), (0.02, 0.25), (0.5, -0.04), (0.9, 0.05)])
@pytest.mark.parametrize("ratio", [1.0, 2.0, 0.5])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_conversion_power_matches_statsmodels(
    baseline: float, lift: float, ratio: float, alternative: str
) -> None:
    n = 5000
    diff = baseline * lift
    # statsmodels' sample 1 is the treatment; its ratio is n_control / n_treatment.
    sm_alt = "two-sided" if alternative == "two-sided" else ("larger" if diff > 0 else "smaller")
    ref = power_proportions_2indep(
        diff, baseline, n * ratio, ratio=1 / ratio, alternative=sm_alt, return_results=False
    )
    got = power(n, baseline, lift, ratio=ratio, alternative=alternative)  # type: ignore[arg-type]
    assert got == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize(("baseline", "lift"), [(0.10, 0.10), (0.02, 0.25), (0.5, -0.04)])
def test_conversion_sample_size_matches_statsmodels(baseline: float, lift: float) -> None:
    ref = samplesize_proportions_2indep_onetail(baseline * lift, baseline, 0.8)
    assert sample_size(baseline, lift) == math.ceil(ref)
    assert sample_size(baseline, baseline * lift, relative=False) == math.ceil(ref)


@pytest.mark.parametrize("ratio", [1.0, 1.5])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_mean_power_matches_ttestindpower(ratio: float, alternative: str) -> None:
    sm_alt = "two-sided" if alternative == "two-sided" else "larger"
    for n in (20, 300, 5000):
        ref = TTestIndPower().power(0.125, n, 0.05, ratio=ratio, alternative=sm_alt)
        got = power(n, 10.0, 0.5, metric="mean", sd=4.0, relative=False, ratio=ratio, alternative=alternative)  # type: ignore[arg-type]
        assert got == pytest.approx(ref, rel=1e-9)
    # For large samples the t-test power approaches the normal one.
    z_ref = NormalIndPower().power(0.05, 20_000, 0.05)
    assert power(20_000, 10.0, 0.005, metric="mean", sd=1.0) == pytest.approx(z_ref, abs=1e-4)


def test_mean_sample_size_and_mde_invert_power() -> None:
    n = sample_size(10.0, 0.5, metric="mean", sd=4.0, relative=False)
    ref = TTestIndPower().solve_power(0.125, nobs1=None, alpha=0.05, power=0.8)
    assert n == math.ceil(ref)
    mde = minimum_detectable_effect(n, 10.0, metric="mean", sd=4.0, relative=False)
    assert power(n, 10.0, mde, metric="mean", sd=4.0, relative=False) == pytest.approx(0.8, abs=1e-9)
    assert mde <= 0.5
    conv = minimum_detectable_effect(10_000, 0.05, power=0.9)
    assert power(10_000, 0.05, conv) == pytest.approx(0.9, abs=1e-9)


def test_running_time() -> None:
    assert running_time(14_751, 2_000) == 15
    assert running_time(14_751, 2_000, variants=3, traffic=0.5) == 45
    with pytest.raises(StatsInputError):
        running_time(100, 0)


def test_bad_plans() -> None:
    for bad in (
        lambda: sample_size(0.1, 0.0),
        lambda: sample_size(0.9, 0.2),  # 108% conversion
        lambda: sample_size(10.0, 0.1, metric="mean"),  # no sd
        lambda: sample_size(0.1, 0.1, power=1.2),
        lambda: minimum_detectable_effect(3, 0.5),  # nothing reachable within (0, 1)
    ):
        with pytest.raises(StatsInputError):
            bad()


def test_simulated_power_matches_the_plan() -> None:
    rng = np.random.default_rng(40)
    baseline, lift = 0.10, 0.15
    n = sample_size(baseline, lift)
    sims = 3000
    s_c = rng.binomial(n, baseline, size=sims)
    s_t = rng.binomial(n, baseline * (1 + lift), size=sims)
    hits = np.array(
        [
            two_proportion_ztest(Proportion(n, a), Proportion(n, b)).p_value < 0.05
            for a, b in zip(s_c, s_t, strict=True)
        ]
    )
    assert abs(hits.mean() - 0.8) < 4 * math.sqrt(0.8 * 0.2 / sims)
    # And at the MDE of a smaller experiment.
    mde = minimum_detectable_effect(4000, baseline)
    s_c = rng.binomial(4000, baseline, size=sims)
    s_t = rng.binomial(4000, baseline * (1 + mde), size=sims)
    hits = np.array(
        [
            two_proportion_ztest(Proportion(4000, a), Proportion(4000, b)).p_value < 0.05
            for a, b in zip(s_c, s_t, strict=True)
        ]
    )
    assert abs(hits.mean() - 0.8) < 4 * math.sqrt(0.8 * 0.2 / sims)


def test_simulated_mean_power_matches_the_plan() -> None:
    rng = np.random.default_rng(41)
    n = sample_size(10.0, 0.04, metric="mean", sd=4.0)  # +4% on a mean of 10, sd 4
    sims = 2000
    a = rng.normal(10.0, 4.0, size=(sims, n))
    b = rng.normal(10.4, 4.0, size=(sims, n))
    hits = np.array(
        [
            welch_ttest(SampleMean(n, x.sum(), x @ x), SampleMean(n, y.sum(), y @ y)).p_value < 0.05
            for x, y in zip(a, b, strict=True)
        ]
    )
    assert abs(hits.mean() - 0.8) < 4 * math.sqrt(0.8 * 0.2 / sims)
