"""CUPED as PostHog's stats library does it: PostHog's ``products/experiments/stats/tests/test_cuped.py`` reproduced
(28 cases: same seeded data, PostHog's expected numbers), then ``experiment_results`` with CUPED against an
independent numpy restatement on unit-level data, funnels, three arms, and an A/A simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import StatsInputError
from hoglab.stats.posthog import (
    CupedCovariate,
    ExperimentStats,
    ProportionStatistic,
    SampleMeanStatistic,
    bayesian_test,
    cuped_adjust,
    cuped_adjust_arm,
    cuped_pair_theta,
    effect_between,
    experiment_results,
    frequentist_test,
)
from hoglab.stats.posthog._metric.cuped import covariance

from ..cases import places


def _stat(values: np.ndarray) -> SampleMeanStatistic:
    return SampleMeanStatistic(values.size, float(values.sum()), float((values**2).sum()))


def _cov(pre: np.ndarray, post: np.ndarray) -> CupedCovariate:
    return CupedCovariate(_stat(pre), float((post * pre).sum()))


# --- TestComputeTheta (3) ------------------------------------------------------------------------------------------


def test_theta_with_known_correlation() -> None:
    rng = np.random.default_rng(42)
    pre_t, pre_c = rng.normal(10, 3, 1000), rng.normal(10, 3, 1000)
    post_t, post_c = 2 * pre_t + rng.normal(0, 1, 1000), 2 * pre_c + rng.normal(0, 1, 1000)
    theta = cuped_pair_theta(_stat(post_t), _stat(post_c), _cov(pre_t, post_t), _cov(pre_c, post_c))
    assert places(theta, 2.0, 1)


def test_theta_zero_when_no_pre_variance() -> None:
    constant = SampleMeanStatistic(100, 500.0, 2500.0)
    theta = cuped_pair_theta(SampleMeanStatistic(100, 500.0, 3000.0), SampleMeanStatistic(100, 480.0, 2800.0),
                             CupedCovariate(constant, 2500.0), CupedCovariate(constant, 2400.0))  # fmt: skip
    assert theta == 0.0


def test_theta_with_uncorrelated_data() -> None:
    rng = np.random.default_rng(123)
    pre, post = rng.normal(10, 3, 5000), rng.normal(20, 5, 5000)
    assert places(cuped_pair_theta(_stat(post), _stat(post), _cov(pre, post), _cov(pre, post)), 0.0, 0)


# --- TestCupedAdjust (7) -------------------------------------------------------------------------------------------


def _correlated_pair(seed: int = 42):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    pre_t, pre_c = rng.normal(10, 3, 1000), rng.normal(10, 3, 1000)
    post_t, post_c = 2 * pre_t + rng.normal(0.5, 1, 1000), 2 * pre_c + rng.normal(0, 1, 1000)
    return _stat(post_t), _stat(post_c), _cov(pre_t, post_t), _cov(pre_c, post_c)


def test_variance_reduction_with_correlated_data() -> None:
    t, c, tc, cc = _correlated_pair()
    r = cuped_adjust(t, c, tc, cc)
    assert r.variance_reduction_treatment > 0.5 and r.variance_reduction_control > 0.5
    assert r.treatment_adjusted.variance < t.variance and r.control_adjusted.variance < c.variance
    assert places(r.theta, 2.0, 1)


def test_unadjusted_means_preserved() -> None:
    rng = np.random.default_rng(42)
    pre = rng.normal(10, 3, 500)
    post_t, post_c = pre + rng.normal(1, 1, 500), pre + rng.normal(0, 1, 500)
    r = cuped_adjust(_stat(post_t), _stat(post_c), _cov(pre, post_t), _cov(pre, post_c))
    assert places(r.treatment_unadjusted_mean, _stat(post_t).mean, 10)
    assert places(r.control_unadjusted_mean, _stat(post_c).mean, 10)


def test_no_adjustment_when_zero_pre_variance() -> None:
    t, c = SampleMeanStatistic(100, 500.0, 3000.0), SampleMeanStatistic(100, 480.0, 2800.0)
    constant = SampleMeanStatistic(100, 500.0, 2500.0)
    r = cuped_adjust(t, c, CupedCovariate(constant, 2500.0), CupedCovariate(constant, 2400.0))
    assert (r.theta, r.variance_reduction_treatment, r.variance_reduction_control) == (0.0, 0.0, 0.0)
    assert places(r.treatment_adjusted.mean, t.mean, 10) and places(r.control_adjusted.mean, c.mean, 10)


def test_proportion_input_produces_sample_mean_output() -> None:
    rng = np.random.default_rng(42)
    pre_t, pre_c = rng.normal(0.15, 0.05, 1000), rng.normal(0.12, 0.05, 1000)
    tc = CupedCovariate(_stat(pre_t), float((rng.binomial(1, 0.15, 1000) * pre_t).sum()))
    cc = CupedCovariate(_stat(pre_c), float((rng.binomial(1, 0.12, 1000) * pre_c).sum()))
    r = cuped_adjust(ProportionStatistic(1000, 150), ProportionStatistic(1000, 120), tc, cc)
    assert isinstance(r.treatment_adjusted, SampleMeanStatistic) and isinstance(r.control_adjusted, SampleMeanStatistic)


@pytest.mark.parametrize(("correlation", "minimum"), [(0.95, 0.8), (0.5, 0.05)], ids=["high", "medium"])
def test_variance_reduction_scales_with_correlation(correlation: float, minimum: float) -> None:
    rng = np.random.default_rng(42)
    pre = rng.normal(10, 3, 2000)
    post = correlation * pre + rng.normal(0, 3 * np.sqrt(1 - correlation**2) / correlation, 2000)
    r = cuped_adjust(_stat(post), _stat(post), _cov(pre, post), _cov(pre, post))
    assert r.variance_reduction_treatment > minimum


# --- TestCupedEdgeCases (3) ----------------------------------------------------------------------------------------


def test_mismatched_n_raises_error() -> None:
    with pytest.raises(StatsInputError, match="Treatment post n"):
        cuped_adjust(SampleMeanStatistic(100, 500.0, 3000.0), SampleMeanStatistic(100, 480.0, 2800.0),
                     CupedCovariate(SampleMeanStatistic(99, 490.0, 2500.0), 2450.0),
                     CupedCovariate(SampleMeanStatistic(100, 480.0, 2400.0), 2300.0))  # fmt: skip


def test_mismatched_types_raises_error() -> None:
    cov = CupedCovariate(SampleMeanStatistic(100, 480.0, 2400.0), 2300.0)
    with pytest.raises(StatsInputError, match="same type"):
        cuped_adjust(SampleMeanStatistic(100, 500.0, 3000.0), ProportionStatistic(100, 50), cov, cov)


def test_small_sample_size() -> None:
    rng = np.random.default_rng(42)
    pre = rng.normal(10, 3, 5)
    post = pre + rng.normal(1, 1, 5)
    r = cuped_adjust(_stat(post), _stat(post), _cov(pre, post), _cov(pre, post))
    assert r.theta is not None and isinstance(r.treatment_adjusted, SampleMeanStatistic)


# --- TestCupedIntegration (4) --------------------------------------------------------------------------------------


def _integration_data(n: int, effect: float, noise: float, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    pre = rng.normal(10, 3, n)
    post = pre + rng.normal(effect, noise, n)
    return _stat(post), _cov(pre, post)


def _pair(n: int, noise: float, effect: float):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(42)
    t, tc = _integration_data(n, effect, noise, rng)
    c, cc = _integration_data(n, 0, noise, rng)
    return t, c, tc, cc


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
def test_cuped_narrows_the_interval(method: str) -> None:
    t, c, tc, cc = _pair(1000, 1, 0.5)
    adjusted = cuped_adjust(t, c, tc, cc)

    def width(treatment, control) -> float:  # type: ignore[no-untyped-def]
        e = effect_between(treatment, control, relative=False)
        lo, hi = (frequentist_test(e, n_treatment=1000, n_control=1000).confidence_interval if method == "frequentist"
                  else bayesian_test(e).credible_interval)  # fmt: skip
        return hi - lo

    assert width(adjusted.treatment_adjusted, adjusted.control_adjusted) < width(t, c)


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
def test_cuped_produces_a_valid_result(method: str) -> None:
    t, c, tc, cc = _pair(500, 2, 1)
    adjusted = cuped_adjust(t, c, tc, cc)
    e = effect_between(adjusted.treatment_adjusted, adjusted.control_adjusted, relative=False)
    if method == "frequentist":
        r = frequentist_test(e, n_treatment=500, n_control=500)
        assert 0 <= r.p_value <= 1 and r.confidence_interval[0] < r.confidence_interval[1]
    else:
        b = bayesian_test(e)
        assert 0 <= b.chance_to_win <= 1 and b.credible_interval[0] < b.credible_interval[1]


# --- TestCupedReferenceData (12) -----------------------------------------------------------------------------------

POST5 = SampleMeanStatistic(5, 14, 48)
PRE5 = CupedCovariate(SampleMeanStatistic(5, 28.5, 520.3), 85.2)


def test_adjust_group_theta_zero() -> None:
    adjusted, reduction = cuped_adjust_arm(POST5, PRE5, 0.0)
    assert places(adjusted.mean, 2.8, 9) and places(adjusted.variance, 2.2, 9) and places(reduction, 0.0, 9)


def test_adjust_group_nonzero_theta() -> None:
    adjusted, _ = cuped_adjust_arm(POST5, PRE5, 0.31)
    assert places(adjusted.mean, 1.033, 5) and places(adjusted.variance, 9.960346, 4)


def test_covariance_computation() -> None:
    assert places(covariance(5, 14, 28.5, 85.2), 1.35, 9)


def test_adjust_group_single_observation() -> None:
    adjusted, _ = cuped_adjust_arm(SampleMeanStatistic(1, 8.0, 64.0),
                                   CupedCovariate(SampleMeanStatistic(1, 15.3, 15.3**2), 50.0), 0.4)  # fmt: skip
    assert places(adjusted.variance, 0.0, 9)


def test_theta_pooled_identical_groups() -> None:
    assert places(cuped_pair_theta(POST5, POST5, PRE5, PRE5), 0.015090122, 7)


CONTROL_POST = SampleMeanStatistic(2801, 280, 560)
TREATMENT_POST = SampleMeanStatistic(2800, 205, 510)
CONTROL_PRE = CupedCovariate(SampleMeanStatistic(2801, 195, 390), -18)
TREATMENT_PRE = CupedCovariate(SampleMeanStatistic(2800, 110, 380), -8)


def test_mean_metric_theta_and_adjusted_stats() -> None:
    r = cuped_adjust(TREATMENT_POST, CONTROL_POST, TREATMENT_PRE, CONTROL_PRE)
    for got, expected in ((r.control_unadjusted_mean, 0.099964299), (r.treatment_unadjusted_mean, 0.073214286),
                          (r.theta, -0.069566052), (r.control_adjusted.mean, 0.104807347),
                          (r.treatment_adjusted.mean, 0.075947238)):  # fmt: skip
        assert places(got, expected, 7)
    assert (
        r.control_adjusted.variance < CONTROL_POST.variance and r.treatment_adjusted.variance < TREATMENT_POST.variance
    )


def test_mean_metric_relative_effect_frequentist() -> None:
    r = cuped_adjust(TREATMENT_POST, CONTROL_POST, TREATMENT_PRE, CONTROL_PRE)
    e = effect_between(r.treatment_adjusted, r.control_adjusted, unadjusted_mean=r.control_unadjusted_mean)
    f = frequentist_test(e, n_treatment=2800, n_control=2801)
    assert places(f.point_estimate, -0.288704169, 5) and f.is_significant
    assert places(f.confidence_interval[0], -0.486775, 5) and places(f.confidence_interval[1], -0.090633, 5)


def test_mean_metric_relative_effect_bayesian() -> None:
    r = cuped_adjust(TREATMENT_POST, CONTROL_POST, TREATMENT_PRE, CONTROL_PRE)
    b = bayesian_test(effect_between(r.treatment_adjusted, r.control_adjusted,
                                     unadjusted_mean=r.control_unadjusted_mean))  # fmt: skip
    assert places(b.effect_size, -0.288704169, 4)
    assert places(b.credible_interval[0], -0.486732, 5) and places(b.credible_interval[1], -0.090676, 5)


def test_binomial_metric() -> None:
    r = cuped_adjust(ProportionStatistic(2800, 205), ProportionStatistic(2801, 280),
                     CupedCovariate(SampleMeanStatistic(2800, 110, 110), -8),
                     CupedCovariate(SampleMeanStatistic(2801, 195, 195), -18))  # fmt: skip
    assert isinstance(r.treatment_adjusted, SampleMeanStatistic) and isinstance(r.control_adjusted, SampleMeanStatistic)
    assert places(r.control_unadjusted_mean, 280 / 2801, 9) and places(r.treatment_unadjusted_mean, 205 / 2800, 9)
    assert r.variance_reduction_treatment > 0 and r.variance_reduction_control > 0
    e = effect_between(r.treatment_adjusted, r.control_adjusted, unadjusted_mean=r.control_unadjusted_mean)
    f = frequentist_test(e, n_treatment=2800, n_control=2801)
    assert f.is_significant and f.point_estimate < 0


@pytest.mark.parametrize(("target_post", "target_pre", "partner_post", "partner_pre", "expected"), [
    (CONTROL_POST, CONTROL_PRE, SampleMeanStatistic(3500, 420, 840),
     CupedCovariate(SampleMeanStatistic(3500, 280, 560), -25), 0.434365539),
    (TREATMENT_POST, TREATMENT_PRE, TREATMENT_POST, TREATMENT_PRE, 0.420353709),
    (SampleMeanStatistic(3500, 420, 840), CupedCovariate(SampleMeanStatistic(3500, 280, 560), -25),
     SampleMeanStatistic(3500, 420, 840), CupedCovariate(SampleMeanStatistic(3500, 280, 560), -25), 0.473119119),
], ids=["control_with_theta_from_treatment2", "treatment1_with_theta_from_treatment1",
        "treatment2_with_theta_from_treatment2"])  # fmt: skip
def test_three_armed_adjusted_stddev(target_post, target_pre, partner_post, partner_pre, expected) -> None:  # type: ignore[no-untyped-def]
    theta = cuped_pair_theta(partner_post, CONTROL_POST, partner_pre, CONTROL_PRE)
    adjusted, _ = cuped_adjust_arm(target_post, target_pre, theta)
    assert places(np.sqrt(adjusted.variance), expected, 5)


# --- experiment_results with CUPED, against independent restatements --------------------------------------------


def _unit_arm(key: str, y: np.ndarray, x: np.ndarray) -> ExperimentStats:
    covariates = {"covariate_sum": float(x.sum()), "covariate_sum_squares": float((x * x).sum()),
                  "covariate_sum_product": float((y * x).sum())}  # fmt: skip
    return ExperimentStats(key, y.size, float(y.sum()), float((y * y).sum()), **covariates)


def test_experiment_results_cuped_equals_a_numpy_restatement_of_posthogs_formulas() -> None:
    rng = np.random.default_rng(11)
    x_c, x_t = rng.gamma(2, 5, 3000), rng.gamma(2, 5, 2900)
    y_c, y_t = 0.8 * x_c + rng.gamma(2, 2, 3000), 0.8 * x_t + rng.gamma(2, 2, 2900) + 0.4
    config = {"method": "frequentist", "frequentist": {"difference_type": "ABSOLUTE"}}
    _, [r] = experiment_results("mean", _unit_arm("control", y_c, x_c), [_unit_arm("test", y_t, x_t)],
                                stats_config=config, cuped=True)  # fmt: skip
    # Restatement on the raw values: θ from the pooled pair, each arm's adjusted values y − θ·x.
    y, x = np.concatenate([y_c, y_t]), np.concatenate([x_c, x_t])
    theta = np.cov(y, x)[0, 1] / np.var(x, ddof=1)
    adj_c, adj_t = y_c - theta * x_c, y_t - theta * x_t
    welch = stats.ttest_ind(adj_t, adj_c, equal_var=False)
    assert r.cuped.theta == pytest.approx(theta, rel=1e-9)
    assert r.point_estimate == pytest.approx(adj_t.mean() - adj_c.mean(), rel=1e-9)
    assert r.p_value == pytest.approx(welch.pvalue, rel=1e-6)
    assert r.confidence_interval == pytest.approx(tuple(welch.confidence_interval(0.95)), rel=1e-7)
    # Narrower than without CUPED, by about √(1 − ρ²).
    _, [raw] = experiment_results("mean", _unit_arm("control", y_c, x_c), [_unit_arm("test", y_t, x_t)],
                                  stats_config=config, cuped=False)  # fmt: skip
    rho = np.corrcoef(y, x)[0, 1]
    ratio = (r.confidence_interval[1] - r.confidence_interval[0]) / (
        raw.confidence_interval[1] - raw.confidence_interval[0]
    )
    assert ratio == pytest.approx(np.sqrt(1 - rho**2), rel=0.05)


def test_experiment_results_cuped_funnel_with_a_binary_covariate() -> None:
    rng = np.random.default_rng(12)
    x_c, x_t = rng.binomial(1, 0.3, 4000), rng.binomial(1, 0.3, 4000)
    y_c = rng.binomial(1, np.where(x_c == 1, 0.5, 0.1))
    y_t = rng.binomial(1, np.where(x_t == 1, 0.55, 0.12))
    base, [r] = experiment_results("funnel", _unit_arm("control", y_c.astype(float), x_c.astype(float)),
                                   [_unit_arm("test", y_t.astype(float), x_t.astype(float))],
                                   stats_config={"cuped": {"enabled": True}})  # fmt: skip
    assert base.validation_failures == () and r.cuped is not None
    # The Bayesian path reads the adjusted proportion as a sample mean: relative effect over the raw control rate.
    y, x = np.concatenate([y_c, y_t]), np.concatenate([x_c, x_t])
    theta = np.cov(y, x)[0, 1] / np.var(x, ddof=1)
    assert r.cuped.theta == pytest.approx(theta, rel=1e-9)
    adj_t, adj_c = y_t.mean() - theta * x_t.mean(), y_c.mean() - theta * x_c.mean()
    assert r.point_estimate == pytest.approx((adj_t - adj_c) / y_c.mean(), rel=1e-9)
    assert r.stats.to_posthog()["covariate_sum_product"] == float((y_t * x_t).sum())


def test_three_arms_each_pair_has_its_own_theta() -> None:
    rng = np.random.default_rng(13)
    arms = {}
    for key, slope in (("control", 1.0), ("a", 1.0), ("b", 3.0)):
        x = rng.normal(10, 2, 2000)
        arms[key] = (slope * x + rng.normal(0, 1, 2000), x)
    stats_ = {k: _unit_arm(k, y, x) for k, (y, x) in arms.items()}
    _, results = experiment_results("mean", stats_["control"], [stats_["a"], stats_["b"]], cuped=True)
    for result, key in zip(results, ("a", "b"), strict=True):
        y = np.concatenate([arms["control"][0], arms[key][0]])
        x = np.concatenate([arms["control"][1], arms[key][1]])
        assert result.cuped.theta == pytest.approx(np.cov(y, x)[0, 1] / np.var(x, ddof=1), rel=1e-9)
    assert results[0].cuped.theta != pytest.approx(results[1].cuped.theta, rel=0.1)


def test_cuped_setting_resolution_and_ratio_refusal() -> None:
    rng = np.random.default_rng(14)
    x = rng.normal(5, 1, 500)
    arm = _unit_arm("control", 2 * x + rng.normal(0, 1, 500), x)
    test = _unit_arm("test", 2 * x + rng.normal(0, 1, 500), x)
    _, [on] = experiment_results("mean", arm, [test], stats_config={"cuped": {"enabled": True}})
    _, [off] = experiment_results("mean", arm, [test], stats_config={"cuped": {"enabled": False}})
    _, [threshold] = experiment_results("mean", arm, [test], stats_config={"cuped": {"enabled": True}}, threshold=True)
    assert on.cuped is not None and off.cuped is None and threshold.cuped is None
    # PostHog has no CUPED for ratio metrics: without hoglab's ratio covariates the ratio is left unadjusted.
    ratio = ExperimentStats("control", 500, 100.0, 300.0, 250.0, 400.0, 150.0, covariate_sum=1.0,
                            covariate_sum_squares=1.0, covariate_sum_product=1.0)  # fmt: skip
    _, [r] = experiment_results("ratio", ratio, [replace_key(ratio, "test")], cuped=True)
    assert r.cuped is None


def replace_key(s: ExperimentStats, key: str) -> ExperimentStats:
    from dataclasses import replace

    return replace(s, key=key)


@pytest.mark.parametrize(("difference_type", "variance", "calibrated"), [
    ("ABSOLUTE", "posthog", True), ("RELATIVE", "delta", True), ("RELATIVE", "posthog", False),
])  # fmt: skip
def test_cuped_aa_false_positive_rate(difference_type: str, variance: str, calibrated: bool) -> None:
    """A/A experiments whose covariate is the same metric before exposure (θ ≈ 1, θx̄ ≈ ȳ). The absolute test
    and the relative test with hoglab's delta-method variance keep α; PostHog's own relative variance, which
    drops most of the control's share when T_adj = ȳ_T − θx̄_T is small, does not (a finding about PostHog's
    formula, documented in docs/statistics.md §6.5)."""
    rng = np.random.default_rng(15)
    experiments, hits = 600, 0
    config = {"method": "frequentist", "frequentist": {"difference_type": difference_type}}
    for _ in range(experiments):
        x_c, x_t = rng.gamma(2, 5, 400), rng.gamma(2, 5, 400)
        y_c, y_t = x_c + rng.normal(0, 3, 400), x_t + rng.normal(0, 3, 400)
        _, [r] = experiment_results(
            "mean",
            _unit_arm("control", y_c, x_c),
            [_unit_arm("test", y_t, x_t)],
            stats_config=config,
            cuped=True,
            cuped_variance=variance,
        )  # type: ignore[arg-type]
        hits += bool(r.significant)
    band = 3.5 * np.sqrt(0.05 * 0.95 / experiments)
    if calibrated:
        assert abs(hits / experiments - 0.05) < band
    else:
        assert hits / experiments > 0.05 + band


def test_delta_cuped_variance_matches_hoglabs_own_cuped_lift() -> None:
    from hoglab.stats import SampleMean, cuped_effect, cuped_theta

    rng = np.random.default_rng(16)
    x_c, x_t = rng.gamma(2, 5, 2000), rng.gamma(2, 5, 2100)
    y_c, y_t = x_c + rng.normal(0, 3, 2000), x_t + rng.normal(0.3, 3, 2100)
    _, [r] = experiment_results("mean", _unit_arm("control", y_c, x_c), [_unit_arm("test", y_t, x_t)],
                                stats_config={"method": "frequentist"}, cuped=True, cuped_variance="delta")  # fmt: skip
    own_c, own_t = SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)
    own = cuped_effect(own_c, own_t, cuped_theta([own_c, own_t]))
    assert r.point_estimate == pytest.approx(own.lift, rel=1e-9)
    assert r.test.confidence_interval[1] - r.point_estimate == pytest.approx(
        own.lift_se * stats.t.ppf(0.975, r.test.degrees_of_freedom), rel=1e-6)  # fmt: skip
