"""PostHog's own test cases for its current stats library and ``ExperimentQuery`` orchestration, reproduced.

Sources (facts: inputs and PostHog's assertions): ``products/experiments/stats/tests/`` ``test_frequentist.py``
(fixed and sequential t-tests, with golden values), ``test_bayesian.py``, ``test_statistics.py``,
``test_utils.py``; ``products/experiments/backend/hogql_queries/test/`` ``test_stats_config.py`` (settings,
insufficient data, baselines, sequential resolution) and the statistics parts of ``test_experiment_utils.py``
(aggregation across breakdowns, validation, statistic per metric). ``test_cuped.py`` is in
``tests/stats/posthog/metric/test_cuped.py``. docs/statistics.md §6.4 counts them.
"""

from __future__ import annotations

import math

import pytest

from hoglab.stats import StatsInputError
from hoglab.stats._frequentist.sequential import confidence_sequence, sequential_p_value, sequential_rho_squared
from hoglab.stats.posthog import (
    EffectEstimate,
    ExperimentStats,
    GaussianPrior,
    PostHogStatsError,
    ProportionStatistic,
    RatioStatistic,
    SampleMeanStatistic,
    TeamDefaults,
    baseline_variant_key,
    bayesian_ci_level,
    bayesian_interval_bounds,
    bayesian_test,
    continuous_verdict_v2,
    count_verdict_v2,
    effect_between,
    experiment_results,
    experiment_results_by_breakdown,
    frequentist_test,
    funnel_verdict_v2,
    gaussian_risk,
    resolve_stats_settings,
    split_baseline,
)
from hoglab.stats.posthog._metric.engine import statistic, validation_failures

from ..cases import places

MEAN_T, MEAN_C = SampleMeanStatistic(2461, 1922.7, 94698.29), SampleMeanStatistic(2507, 1196.87, 37377.9767)


def _freq(t, c, *, relative=True, sequential=False, tuning=5000.0, alpha=0.05):  # type: ignore[no-untyped-def]
    return frequentist_test(effect_between(t, c, relative=relative), n_treatment=t.n, n_control=c.n, alpha=alpha,
                            sequential=sequential, tuning=tuning)  # fmt: skip


# --- test_frequentist.py (15 cases) ---------------------------------------------------------------------------------

RATIO_T = RatioStatistic(2034, SampleMeanStatistic(2034, 99673.9364269569, 11298745.182728939),
                         SampleMeanStatistic(2034, 947, 947), 99673.9364269569)  # fmt: skip
RATIO_C = RatioStatistic(1966, SampleMeanStatistic(1966, 94605.79858780127, 10463129.505392816),
                         SampleMeanStatistic(1966, 936, 936), 94605.79858780127)  # fmt: skip


@pytest.mark.parametrize(("treatment", "control", "expected", "ci", "p_value", "stddev"), [
    (MEAN_T, MEAN_C, 0.63646, (-0.0875, 1.36048), 0.08487, 0.094233),
    (ProportionStatistic(1471, 62), ProportionStatistic(1529, 87), -0.25925, (-0.49475, -0.02376), 0.030960, 0.030650),
    (RATIO_T, RATIO_C, 0.041333, (0.01378609, 0.0689), 0.0032826, 0.00358537),
], ids=["sample_mean", "sample_proportion", "ratio_statistic"])  # fmt: skip
def test_frequentist_two_sided_ttest(treatment, control, expected, ci, p_value, stddev) -> None:  # type: ignore[no-untyped-def]
    r = _freq(treatment, control)
    assert places(r.point_estimate, expected, 4) and places(r.p_value, p_value, 4)
    assert places(r.confidence_interval[0], ci[0], 4) and places(r.confidence_interval[1], ci[1], 4)
    # PostHog's summary "stddev" is (high − low)/(2·1.96)².
    assert places((r.confidence_interval[1] - r.confidence_interval[0]) / (2 * 1.96) ** 2, stddev, 4)


def test_frequentist_sequential_rho_matches_formula() -> None:
    log_alpha = math.log(0.05)
    assert math.sqrt(sequential_rho_squared(0.05, 5000.0)) == pytest.approx(
        math.sqrt((-2 * log_alpha + math.log(-2 * log_alpha + 1)) / 5000.0), abs=1e-10)  # fmt: skip


@pytest.mark.parametrize(("alpha", "tuning"), [(0.0, 5000), (1.0, 5000), (0.05, 0), (0.05, -1)])
def test_frequentist_sequential_rho_rejects_invalid_arguments(alpha: float, tuning: float) -> None:
    with pytest.raises(StatsInputError):
        sequential_rho_squared(alpha, tuning)


def test_frequentist_sequential_halfwidth_wider_than_fixed_horizon() -> None:
    n = 5000  # per-unit variance 1, so SE = sqrt(1/n)
    lo, hi = confidence_sequence(0.0, math.sqrt(1.0 / n), n, alpha=0.05, tuning=5000)
    assert (hi - lo) / 2 > 1.96 * math.sqrt(1.0 / n)


def test_frequentist_sequential_p_value_clamps_to_one_with_small_n() -> None:
    assert sequential_p_value(0.01, 1.0, 10, alpha=0.05, tuning=5000) == 1.0


def test_frequentist_sequential_p_value_drops_with_strong_evidence() -> None:
    assert sequential_p_value(0.5, math.sqrt(0.0001), 10000, alpha=0.05, tuning=5000) < 0.05


def test_frequentist_sequential_ci_is_wider_than_fixed_horizon_ci() -> None:
    fixed, seq = _freq(MEAN_T, MEAN_C), _freq(MEAN_T, MEAN_C, sequential=True)
    assert seq.confidence_interval[1] - seq.confidence_interval[0] > (fixed.confidence_interval[1]
                                                                      - fixed.confidence_interval[0])  # fmt: skip
    assert places(seq.point_estimate, fixed.point_estimate, 6)
    assert seq.test_type == "sequential_two_sided"
    assert math.isnan(seq.degrees_of_freedom) and math.isnan(seq.test_statistic)


def test_frequentist_sequential_p_value_with_zero_effect_returns_one() -> None:
    r = _freq(ProportionStatistic(2000, 100), ProportionStatistic(2000, 100), relative=False, sequential=True)
    assert r.p_value == 1.0 and not r.is_significant


def test_frequentist_sequential_invalid_tuning_parameter_raises() -> None:
    with pytest.raises(StatsInputError):
        _freq(MEAN_T, MEAN_C, sequential=True, tuning=0)


@pytest.mark.parametrize(("treatment", "control", "tuning", "expected", "ci", "stddev", "p_value"), [
    (SampleMeanStatistic(3500, 2500.0, 135000.0), SampleMeanStatistic(3000, 1400.0, 52000.0), 1000, 0.53061,
     (-0.53230, 1.59353), 0.33368, 1.0),
    (ProportionStatistic(3500, 2600), ProportionStatistic(3050, 1450), 5000, 0.56256, (0.46064, 0.66448), 0.03354,
     0.0),
], ids=["sample_mean_tuning_1000", "proportion_default_tuning"])  # fmt: skip
def test_frequentist_sequential_golden_values(treatment, control, tuning, expected, ci, stddev, p_value) -> None:  # type: ignore[no-untyped-def]
    r = _freq(treatment, control, sequential=True, tuning=tuning)
    assert places(r.point_estimate, expected, 5) and places(r.p_value, p_value, 5)
    assert places(r.confidence_interval[0], ci[0], 5) and places(r.confidence_interval[1], ci[1], 5)
    assert places(effect_between(treatment, control).standard_error, stddev, 5)


def test_frequentist_sequential_interval_narrowest_near_true_sample_size() -> None:
    t, c = SampleMeanStatistic(3500, 2500.0, 135000.0), SampleMeanStatistic(3000, 1400.0, 52000.0)
    below, near_, above = (_freq(t, c, sequential=True, tuning=n).confidence_interval for n in (10, 6500, 10000))
    assert below[0] < near_[0] and below[1] > near_[1] and below[0] < above[0] and below[1] > above[1]
    assert above[0] < near_[0] and above[1] > near_[1]


# --- test_utils.py (1 case) -----------------------------------------------------------------------------------------


def test_utils_welch_satterthwaite_df() -> None:
    assert places(effect_between(MEAN_T, MEAN_C).degrees_of_freedom, 4105.070, 3)


# --- test_statistics.py (13 cases) ----------------------------------------------------------------------------------


def test_statistics_sample_mean_basic_calculations() -> None:
    s = SampleMeanStatistic(5, 15, 55)  # [1, 2, 3, 4, 5]
    assert s.mean == 3.0 and s.variance == 2.5 and abs(s.standard_error - math.sqrt(2.5 / 5)) < 1e-10


def test_statistics_sample_mean_single_observation() -> None:
    s = SampleMeanStatistic(1, 10, 100)
    assert (s.mean, s.variance, s.standard_error) == (10.0, 0.0, 0.0)


def test_statistics_sample_mean_zero_variance() -> None:
    s = SampleMeanStatistic(3, 15, 75)
    assert (s.mean, s.variance, s.standard_error) == (5.0, 0.0, 0.0)


@pytest.mark.parametrize("args", [(-1, 10, 100), (0, 10, 100), (5, 15, 40)])
def test_statistics_sample_mean_validation_errors(args: tuple[int, float, float]) -> None:
    with pytest.raises(StatsInputError):
        SampleMeanStatistic(*args)


def test_statistics_proportion_basic_calculations() -> None:
    s = ProportionStatistic(100, 25)
    assert s.proportion == 0.25 and s.variance == 0.25 * 0.75
    assert abs(s.standard_error - math.sqrt(0.25 * 0.75 / 100)) < 1e-10


def test_statistics_proportion_extreme_proportions() -> None:
    assert (ProportionStatistic(10, 10).proportion, ProportionStatistic(10, 10).variance) == (1.0, 0.0)
    assert (ProportionStatistic(10, 0).proportion, ProportionStatistic(10, 0).variance) == (0.0, 0.0)


@pytest.mark.parametrize("args", [(-1, 5), (10, -1), (10, 15)])
def test_statistics_proportion_validation_errors(args: tuple[int, int]) -> None:
    with pytest.raises(StatsInputError):
        ProportionStatistic(*args)


def test_statistics_ratio_basic_calculations() -> None:
    r = RatioStatistic(3, SampleMeanStatistic(3, 60, 1400), SampleMeanStatistic(3, 3, 3), 60)
    assert r.ratio == 20.0 and abs(r.covariance - (60 - 60 * 3 / 3) / 2) < 1e-10


def test_statistics_ratio_with_proportion_denominator() -> None:
    r = RatioStatistic(100, SampleMeanStatistic(100, 500, 5000), ProportionStatistic(100, 20), 100)
    assert r.ratio == 500 / 20


def test_statistics_ratio_validation_errors() -> None:
    numerator = SampleMeanStatistic(5, 25, 125)
    with pytest.raises(StatsInputError):
        RatioStatistic(5, numerator, SampleMeanStatistic(5, 0, 0), 0)
    with pytest.raises(StatsInputError):
        RatioStatistic(5, numerator, SampleMeanStatistic(3, 15, 75), 0)


def test_statistics_mean_extraction() -> None:
    assert SampleMeanStatistic(10, 50, 300).mean == 5.0 and ProportionStatistic(100, 25).proportion == 0.25


def test_statistics_variance_extraction() -> None:
    assert SampleMeanStatistic(10, 50, 300).variance >= 0 and ProportionStatistic(100, 25).variance >= 0


def test_statistics_standard_error_calculation() -> None:
    for s in (SampleMeanStatistic(10, 50, 300), ProportionStatistic(100, 25)):
        assert abs(s.standard_error - math.sqrt(s.variance / s.n)) < 1e-10


# --- test_bayesian.py (27 cases; the summary's prose fields are presentation, not statistics) ----------------------

T550, C500 = SampleMeanStatistic(100, 550, 3050), SampleMeanStatistic(100, 500, 2550)
P110, P100 = ProportionStatistic(1000, 110), ProportionStatistic(1000, 100)


def _point(mean: float, sd: float) -> EffectEstimate:
    return EffectEstimate(mean, sd * sd, math.nan, 0)


def test_bayesian_prior_validation_errors() -> None:
    for variance in (-1.0, 0.0):
        with pytest.raises(ValueError):
            GaussianPrior(variance=variance)


def test_bayesian_prior_string_representation() -> None:
    assert str(GaussianPrior()) == "Non-informative prior"
    assert "N(μ=0.050, σ²=0.010)" in str(GaussianPrior(mean=0.05, variance=0.01, proper=True))


def test_bayesian_default_config() -> None:
    settings, prior = resolve_stats_settings(None), GaussianPrior()
    assert (settings.ci_level, settings.relative, settings.method) == (0.95, True, "bayesian")
    assert (prior.mean, prior.variance, prior.proper) == (0.0, 1.0, False)
    assert bayesian_test(effect_between(T550, C500)).inverse is False


def test_bayesian_create_prior() -> None:
    prior = GaussianPrior(mean=0.05, variance=0.01, proper=True)
    assert (prior.mean, prior.variance, prior.proper) == (0.05, 0.01, True)


def test_bayesian_config_validation_errors() -> None:
    for level in (0.0, 1.0):
        with pytest.raises(StatsInputError):
            bayesian_test(effect_between(T550, C500), ci_level=level)
    with pytest.raises(StatsInputError):
        GaussianPrior(variance=0.0)


def test_bayesian_effect_size_calculation_absolute() -> None:
    e = effect_between(T550, C500, relative=False)
    expected = (3050 - 550**2 / 100) / 99 / 100 + (2550 - 500**2 / 100) / 99 / 100
    assert abs(e.estimate - 0.5) < 1e-10 and abs(e.variance - expected) < 1e-6


def test_bayesian_effect_size_calculation_relative() -> None:
    e = effect_between(P110, P100)
    assert abs(e.estimate - 0.1) < 1e-10 and e.variance > 0


def test_bayesian_posterior_calculation() -> None:
    flat = bayesian_test(_point(0.1, 0.1))
    assert abs(flat.effect_size - 0.1) < 1e-10 and abs(flat.posterior_variance - 0.01) < 1e-10
    informed = bayesian_test(_point(0.1, 0.1), prior=GaussianPrior(mean=0.05, variance=0.02, proper=True))
    assert 0.05 < informed.effect_size < 0.1 and informed.posterior_variance < min(0.02, 0.01)


def test_bayesian_chance_to_win() -> None:
    assert bayesian_test(_point(0.1, 0.01)).chance_to_win > 0.99
    assert bayesian_test(_point(-0.1, 0.01)).chance_to_win < 0.01
    assert bayesian_test(_point(-0.1, 0.01), inverse=True).chance_to_win > 0.99


def test_bayesian_credible_interval() -> None:
    lo, hi = bayesian_test(_point(0.1, 0.05)).credible_interval
    lo99, hi99 = bayesian_test(_point(0.1, 0.05), ci_level=0.99).credible_interval
    assert lo < 0.1 < hi and hi - lo > 0.15 and hi99 - lo99 > hi - lo


def test_bayesian_risk_calculation() -> None:
    risk_control, risk_treatment = gaussian_risk(0.05, 0.02)
    assert risk_control > risk_treatment and risk_control > 0 and risk_treatment >= 0


def test_bayesian_gaussian_test_basic_execution() -> None:
    r = bayesian_test(effect_between(T550, C500))
    assert 0 <= r.chance_to_win <= 1 and r.credible_interval[0] < r.credible_interval[1] and r.ci_level == 0.95


def test_bayesian_gaussian_test_proportions() -> None:
    r = bayesian_test(effect_between(P110, P100))
    assert r.effect_size > 0 and r.chance_to_win > 0.5


@pytest.mark.parametrize("case", ["gaussian_test_invalid_inputs", "edge_mismatched_statistic_types"])
def test_bayesian_mismatched_types(case: str) -> None:
    with pytest.raises(StatsInputError):
        effect_between(T550, ProportionStatistic(100, 50))


def test_bayesian_method_basic_usage() -> None:
    r = bayesian_test(effect_between(T550, C500))
    assert r.effect_size > 0 and r.chance_to_win > 0.5


def test_bayesian_method_with_informative_prior() -> None:
    r = bayesian_test(effect_between(T550, C500), prior=GaussianPrior(0.05, 0.01, proper=True))
    assert r.prior.proper and r.prior.mean == 0.05 and r.prior.variance == 0.01


def test_bayesian_method_summary_fields() -> None:
    r = bayesian_test(effect_between(P110, P100))
    assert r.preferred_variation == "treatment" and r.confidence_in_decision == max(r.chance_to_win,
                                                                                    1 - r.chance_to_win)  # fmt: skip
    assert r.risk_control >= 0 and r.risk_treatment >= 0


def test_bayesian_method_create_simple_config() -> None:
    settings = resolve_stats_settings({"bayesian": {"ci_level": 0.99, "difference_type": "ABSOLUTE"}})
    prior = GaussianPrior(mean=0.1, proper=True)
    assert (settings.ci_level, settings.relative, prior.mean, prior.proper) == (0.99, False, 0.1, True)


def test_bayesian_method_realistic_example() -> None:
    r = bayesian_test(effect_between(MEAN_T, MEAN_C))
    assert places(r.effect_size, 0.63646, 4) and places(r.chance_to_win, 0.95759, 4)
    assert places(r.credible_interval[0], -0.0873, 4) and places(r.credible_interval[1], 1.36026, 4)


def test_bayesian_convenience_run_with_prior() -> None:
    r = bayesian_test(effect_between(P110, P100), prior=GaussianPrior(0.05, 0.01, proper=True))
    assert r.chance_to_win > 0.5


def test_bayesian_edge_zero_control_mean_relative() -> None:
    with pytest.raises(StatsInputError):
        effect_between(SampleMeanStatistic(100, 100, 100), SampleMeanStatistic(100, 0, 0))


def test_bayesian_edge_very_small_variances() -> None:
    r = bayesian_test(
        effect_between(SampleMeanStatistic(1000, 10000, 100001), SampleMeanStatistic(1000, 9999, 99990.001))
    )
    assert r.posterior_variance > 0


def test_bayesian_edge_extreme_sample_sizes() -> None:
    r = bayesian_test(effect_between(SampleMeanStatistic(2, 3, 5), SampleMeanStatistic(2, 2, 2)))
    assert r.posterior_variance > 0 and 0.1 < r.chance_to_win < 0.9


def test_bayesian_numerical_large_numbers() -> None:
    r = bayesian_test(effect_between(SampleMeanStatistic(10**6, 10_500_000, 110_250_001),
                                     SampleMeanStatistic(10**6, 10_000_000, 100_000_001)))  # fmt: skip
    assert math.isfinite(r.effect_size) and math.isfinite(r.posterior_variance) and 0 <= r.chance_to_win <= 1


def test_bayesian_numerical_small_differences() -> None:
    r = bayesian_test(effect_between(SampleMeanStatistic(10000, 10001, 10002.0002),
                                     SampleMeanStatistic(10000, 10000, 10000.0001)))  # fmt: skip
    assert math.isfinite(r.effect_size) and r.effect_size > 0


def test_bayesian_numerical_precision_loss_protection() -> None:
    r = bayesian_test(effect_between(ProportionStatistic(1000, 10), ProportionStatistic(1000, 5), relative=False))
    assert math.isfinite(r.effect_size) and r.posterior_variance > 0


# --- test_stats_config.py (64 statistics cases; its two cache-payload cases are the service's) -------------------

CONTROL = ExperimentStats("control", 1000, 100.0, 10500.0)
TEST = ExperimentStats("test", 1000, 120.0, 14500.0)


def _result(stats_config, method="frequentist", **options):  # type: ignore[no-untyped-def]
    config = stats_config
    if isinstance(config, dict) and "method" not in config and method == "frequentist":
        config = {**config, "method": "frequentist"}
    elif config is None and method == "frequentist":
        config = {"method": "frequentist"}
    return experiment_results("mean", CONTROL, [TEST], stats_config=config, **options)


@pytest.mark.parametrize("stats_config", [None, {}, {"frequentist": {}}], ids=["none", "empty", "frequentist_empty"])
def test_stats_config_frequentist_defaults(stats_config) -> None:  # type: ignore[no-untyped-def]
    base, [r] = _result(stats_config)
    assert base.stats.key == "control" and len(r.confidence_interval) == 2


@pytest.mark.parametrize("stats_config", [None, {}, {"bayesian": {}}], ids=["none", "empty", "bayesian_empty"])
def test_stats_config_bayesian_defaults(stats_config) -> None:  # type: ignore[no-untyped-def]
    base, [r] = _result(stats_config, method="bayesian")
    assert base.stats.key == "control" and len(r.credible_interval) == 2 and r.chance_to_win is not None


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
@pytest.mark.parametrize("difference_type", ["INVALID", 123])
def test_stats_config_invalid_enum_values_fall_back(method: str, difference_type: object) -> None:
    _, [r] = _result({method: {"difference_type": difference_type}}, method=method)
    _, [default] = _result({}, method=method)
    assert r.point_estimate == default.point_estimate  # RELATIVE


def test_stats_config_bayesian_ci_level_affects_interval_width() -> None:
    control, test = ExperimentStats("control", 1000, 1000.0, 105000.0), ExperimentStats("test", 1000, 1200.0, 145000.0)
    width = {}
    for level in (0.90, 0.99):
        _, [r] = experiment_results("mean", control, [test], stats_config={"bayesian": {"ci_level": level}})
        width[level] = r.credible_interval[1] - r.credible_interval[0]
    assert width[0.99] > width[0.90]


def test_stats_config_legacy_funnel_ci_level_affects_interval_width() -> None:
    arms = {"control": (100, 900), "test": (150, 850)}
    w = {level: funnel_verdict_v2(arms, bounds=bayesian_interval_bounds({"bayesian": {"ci_level": level}}))
         .credible_intervals["test"] for level in (0.90, 0.99)}  # fmt: skip
    assert w[0.99][1] - w[0.99][0] > w[0.90][1] - w[0.90][0]


def test_stats_config_legacy_trends_ci_level_affects_interval_width() -> None:
    for verdict, arms in ((count_verdict_v2, {"control": (100, 1000), "test": (150, 1000)}),
                          (continuous_verdict_v2, {"control": (0.1, 1000), "test": (0.15, 1000)})):  # fmt: skip
        w = {level: verdict(arms, bounds=bayesian_interval_bounds({"bayesian": {"ci_level": level}}))
             .credible_intervals["test"] for level in (0.90, 0.99)}  # type: ignore[operator]  # fmt: skip
        assert w[0.99][1] - w[0.99][0] > w[0.90][1] - w[0.90][0]


@pytest.mark.parametrize(("stats_config", "expected"), [
    ({"bayesian": {"ci_level": 0.90}}, 0.90), ({"bayesian": {"ci_level": 0.925}}, 0.925),
    ({"bayesian": {"ci_level": 0.99}}, 0.99), ({"bayesian": {"ci_level": "0.925"}}, 0.925),
])  # fmt: skip
def test_stats_config_ci_level_accepts_valid_open_interval_values(stats_config, expected) -> None:  # type: ignore[no-untyped-def]
    assert bayesian_ci_level(stats_config) == pytest.approx(expected)


@pytest.mark.parametrize("stats_config", [
    {"bayesian": {"ci_level": 0}}, {"bayesian": {"ci_level": 1}}, {"bayesian": {"ci_level": -0.1}},
    {"bayesian": {"ci_level": 1.5}}, {"bayesian": {"ci_level": None}}, {"bayesian": {"ci_level": math.nan}},
    {"bayesian": {"ci_level": math.inf}}, {"bayesian": {"ci_level": -math.inf}},
    {"bayesian": {"ci_level": 0.9999999999999999}}, {"bayesian": {"ci_level": "not-a-number"}}, {"bayesian": None},
    {"bayesian": []}, {"bayesian": "bad"}, {"bayesian": 123}, [],
])  # fmt: skip
def test_stats_config_ci_level_invalid_values_use_default(stats_config) -> None:  # type: ignore[no-untyped-def]
    assert bayesian_ci_level(stats_config) == 0.95


def test_stats_config_interval_bounds_use_fractional_ci_level() -> None:
    lower, upper = bayesian_interval_bounds({"bayesian": {"ci_level": 0.925}})
    assert lower == pytest.approx(0.0375) and upper == pytest.approx(0.9625)


@pytest.mark.parametrize("stats_config", [
    {"bayesian": {"ci_level": 0}}, {"bayesian": {"ci_level": 1}}, {"bayesian": {"ci_level": 1.5}},
    {"bayesian": {"ci_level": 0.9999999999999999}}, {"bayesian": []},
])  # fmt: skip
def test_stats_config_interval_bounds_invalid_values_use_default(stats_config) -> None:  # type: ignore[no-untyped-def]
    lower, upper = bayesian_interval_bounds(stats_config)
    assert lower == pytest.approx(0.025) and upper == pytest.approx(0.975)


@pytest.mark.parametrize("stats_config", [{"bayesian": None}, {"bayesian": []}, {"bayesian": "bad"},
                                          {"bayesian": 123}])  # fmt: skip
def test_stats_config_malformed_nested_config_falls_back(stats_config) -> None:  # type: ignore[no-untyped-def]
    _, [r] = experiment_results("mean", CONTROL, [TEST], stats_config=stats_config)
    assert len(r.credible_interval) == 2


def test_stats_config_alpha_out_of_range_uses_default() -> None:
    _, [high] = _result({"frequentist": {"alpha": 5.0}})
    _, [negative] = _result({"frequentist": {"alpha": -0.5}})
    assert high.confidence_interval == negative.confidence_interval


def test_stats_config_ci_level_out_of_range_uses_default() -> None:
    _, [r] = experiment_results("mean", CONTROL, [TEST], stats_config={"bayesian": {"ci_level": 1.5}})
    assert r.credible_interval is not None


INSUFFICIENT = {
    "very_small_sample": {"control": (1, 0.5, 0.25), "test": (1, 0.3, 0.09)},
    "zero_baseline_sum": {"control": (100, 0.0, 0.0), "test": (100, 50.0, 2600.0)},
    "zero_variance": {"control": (100, 100.0, 100.0), "test": (100, 100.0, 100.0)},
}


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
@pytest.mark.parametrize("name", list(INSUFFICIENT))
def test_stats_config_insufficient_data_returns_raw_values_without_stats(name: str, method: str) -> None:
    data = INSUFFICIENT[name]
    control, test = (ExperimentStats(k, *data[k]) for k in ("control", "test"))
    base, [r] = experiment_results("mean", control, [test], stats_config={"method": method})
    assert base.stats == control and r.stats == test
    assert (r.p_value, r.confidence_interval, r.chance_to_win, r.credible_interval, r.significant) == (None,) * 5


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
def test_stats_config_sufficient_data_returns_stats(method: str) -> None:
    _, [r] = _result({"method": method}, method=method)
    assert r.significant is not None
    assert (
        (r.p_value, r.confidence_interval) != (None, None) if method == "frequentist" else r.chance_to_win is not None
    )


@pytest.mark.parametrize(("baseline_key", "expected", "others"), [("control", "control", ["test"]),
                                                                  ("test", "test", ["control"])])  # fmt: skip
def test_stats_config_split_baseline_and_test_variants(baseline_key: str, expected: str, others: list[str]) -> None:
    baseline, rest = split_baseline([CONTROL, TEST], baseline_key)
    assert baseline.key == expected and [s.key for s in rest] == others


def test_stats_config_split_baseline_missing_key_raises() -> None:
    with pytest.raises(PostHogStatsError, match="No exposures") as info:
        split_baseline([CONTROL, TEST], "nonexistent")
    assert info.value.code == "no_data"


@pytest.mark.parametrize(("stats_config", "keys", "expected"), [
    (None, ["control", "test"], "control"), ({}, ["control", "test"], "control"),
    ({"baseline_variant_key": "test"}, ["control", "test"], "test"), (None, ["variant_a", "variant_b"], "variant_a"),
    (None, ["test", "control"], "control"),
])  # fmt: skip
def test_stats_config_baseline_from_stats_config(stats_config, keys, expected) -> None:  # type: ignore[no-untyped-def]
    assert baseline_variant_key(stats_config, keys) == expected


def _ci(stats_config=None, team_enabled=False):  # type: ignore[no-untyped-def]
    control, test = ExperimentStats("control", 1000, 1000.0, 105000.0), ExperimentStats("test", 1000, 1200.0, 145000.0)
    config = {"method": "frequentist", **(stats_config or {})}
    _, [r] = experiment_results("mean", control, [test], stats_config=config,
                                team=TeamDefaults(sequential_testing_enabled=team_enabled))  # fmt: skip
    return r.confidence_interval


@pytest.mark.parametrize(("stats_config", "team_enabled", "sequential"), [
    ({"frequentist": {"sequential_testing_enabled": True}}, False, True),
    (None, True, True),
    ({"frequentist": {"sequential_testing_enabled": False}}, True, False),
], ids=["experiment_enables", "team_default_enables_when_unset",
        "experiment_false_overrides_team_default"])  # fmt: skip
def test_stats_config_sequential_resolution(stats_config, team_enabled, sequential) -> None:  # type: ignore[no-untyped-def]
    default, resolved = _ci(), _ci(stats_config, team_enabled)
    if sequential:
        assert resolved[1] - resolved[0] > default[1] - default[0]
    else:
        assert resolved == default


def test_stats_config_invalid_tuning_parameter_falls_back_to_default() -> None:
    ci = _ci({"frequentist": {"sequential_testing_enabled": True, "sequential_tuning_parameter": "not-a-number"}})
    assert len(ci) == 2 and ci == _ci({"frequentist": {"sequential_testing_enabled": True}})


# --- test_experiment_utils.py, statistics parts (17 cases; row parsing and SQL debugging are the service's) -------


def _agg(rows):  # type: ignore[no-untyped-def]
    keys = list(dict.fromkeys(s.key for _, s in rows))
    if not rows:
        return {}
    result = experiment_results_by_breakdown("mean", rows, baseline_key=keys[0])
    return {r.stats.key: r.stats for r in (result.overall[0], *result.overall[1])}


def test_utils_aggregate_mean_metrics_multiple_breakdowns() -> None:
    rows = [(("Chrome",), ExperimentStats("control", 100, 250.0, 750.0)),
            (("Chrome",), ExperimentStats("test", 120, 300.0, 900.0)),
            (("Safari",), ExperimentStats("control", 80, 200.0, 600.0)),
            (("Safari",), ExperimentStats("test", 90, 220.0, 700.0))]  # fmt: skip
    agg = _agg(rows)
    assert len(agg) == 2
    assert (agg["control"].number_of_samples, agg["control"].sum, agg["control"].sum_squares) == (180, 450.0, 1350.0)
    assert (agg["test"].number_of_samples, agg["test"].sum, agg["test"].sum_squares) == (210, 520.0, 1600.0)


def test_utils_aggregate_funnel_step_counts() -> None:
    a = ExperimentStats("control", 100, 80.0, 80.0, step_counts=(100, 85, 80))
    b = ExperimentStats("control", 80, 60.0, 60.0, step_counts=(80, 70, 60))
    total = a + b
    assert (total.number_of_samples, total.sum, total.step_counts) == (180, 140.0, (180, 155, 140))


def test_utils_aggregate_ratio_denominator_fields() -> None:
    total = ExperimentStats("control", 100, 50.0, 75.0, 200.0, 500.0, 120.0) + ExperimentStats(
        "control", 80, 40.0, 60.0, 150.0, 400.0, 90.0)  # fmt: skip
    assert (total.number_of_samples, total.sum, total.sum_squares, total.denominator_sum, total.denominator_sum_squares,
            total.numerator_denominator_sum_product) == (180, 90.0, 135.0, 350.0, 900.0, 210.0)  # fmt: skip


def test_utils_aggregate_multiple_variants_multiple_breakdowns() -> None:
    rows = [((b,), ExperimentStats(k, n, s, 0.0 + s * s)) for b, k, n, s in [
        ("Chrome", "control", 100, 250.0), ("Chrome", "test", 120, 300.0), ("Chrome", "test-2", 110, 280.0),
        ("Safari", "control", 80, 200.0), ("Safari", "test", 90, 220.0), ("Safari", "test-2", 85, 210.0)]]  # fmt: skip
    agg = _agg(rows)
    assert {k: (v.number_of_samples, v.sum) for k, v in agg.items()} == {
        "control": (180, 450.0), "test": (210, 520.0), "test-2": (195, 490.0)}  # fmt: skip


def test_utils_single_breakdown_no_aggregation_needed() -> None:
    agg = _agg([(("Chrome",), ExperimentStats("control", 100, 250.0, 750.0)),
                (("Chrome",), ExperimentStats("test", 120, 300.0, 900.0))])  # fmt: skip
    assert len(agg) == 2 and (agg["control"].number_of_samples, agg["control"].sum) == (100, 250.0)


def test_utils_empty_variants_list() -> None:
    assert _agg([]) == {}
    with pytest.raises(PostHogStatsError):
        experiment_results_by_breakdown("mean", [], baseline_key="control")


def test_utils_none_breakdown_values() -> None:
    result = experiment_results_by_breakdown("mean", [(None, ExperimentStats("control", 100, 250.0, 750.0)),
                                                      (None, ExperimentStats("test", 120, 300.0, 900.0))],
                                             baseline_key="control")  # fmt: skip
    assert result.overall[0].stats.number_of_samples == 100 and result.by_breakdown == {}


def test_utils_preserves_variant_key_grouping() -> None:
    total = sum(
        (ExperimentStats("control", 50, 100.0, 200.0) for _ in range(2)), ExperimentStats("control", 50, 100.0, 200.0)
    )
    assert (total.number_of_samples, total.sum) == (150, 300.0)


def test_utils_aggregate_multiple_breakdown_dimensions() -> None:
    rows = [(dims, ExperimentStats("control", n, s, 2 * s)) for dims, n, s in [
        (("MacOS", "Chrome"), 50, 100.0), (("MacOS", "Safari"), 40, 80.0), (("Windows", "Chrome"), 60, 120.0),
        (("Windows", "Firefox"), 30, 60.0)]]  # fmt: skip
    result = experiment_results_by_breakdown("mean", rows, baseline_key="control")
    base = result.overall[0].stats
    assert (base.number_of_samples, base.sum, base.sum_squares) == (180, 360.0, 720.0)
    assert set(result.by_breakdown) == {("MacOS", "Chrome"), ("MacOS", "Safari"), ("Windows", "Chrome"),
                                        ("Windows", "Firefox")}  # fmt: skip


@pytest.mark.parametrize(("metric", "n", "total", "failure", "present"), [
    ("retention", 100, 4, "not-enough-metric-data", True), ("retention", 100, 5, "not-enough-metric-data", False),
    ("funnel", 100, 3, "not-enough-metric-data", True), ("mean", 100, 2.5, "not-enough-metric-data", False),
    ("retention", 30, 20, "not-enough-exposures", True),
])  # fmt: skip
def test_utils_validate_variant_result(metric, n, total, failure, present) -> None:  # type: ignore[no-untyped-def]
    failures = validation_failures(metric, ExperimentStats("test", n, total, total), baseline=False)
    assert (failure in failures) is present


def test_utils_mean_without_threshold_maps_to_sample_mean() -> None:
    s = statistic("mean", ExperimentStats("test", 10, 60, 400))
    assert isinstance(s, SampleMeanStatistic) and (s.sum, s.sum_squares) == (60, 400)


@pytest.mark.parametrize("total", [4, 4.0])
def test_utils_mean_with_threshold_maps_to_an_integer_proportion(total: float) -> None:
    s = statistic("mean", ExperimentStats("test", 10, total, total), threshold=True)
    assert isinstance(s, ProportionStatistic) and s.n == 10 and s.sum == 4 and isinstance(s.sum, int)
