"""PostHog's current experiment statistics (``ExperimentQuery``), against PostHog's own test numbers
(``products/experiments/stats/tests/test_frequentist.py`` and ``test_bayesian.py``), scipy's closed forms, the
validation rules and PostHog's published answer shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import StatsInputError
from hoglab.stats.posthog import (
    ExperimentStats,
    PostHogStatsError,
    experiment_results,
    experiment_results_by_breakdown,
    split_baseline,
)
from posthog_openapi import assert_valid

FREQUENTIST = {"method": "frequentist"}


def mean_stats(key: str, n: int, total: float, squares: float) -> ExperimentStats:
    return ExperimentStats(key, n, total, squares)


# PostHog's fixtures: (metric, control, test, method) -> (estimate interval, p-value or chance to win)
MEAN_C = mean_stats("control", 2507, 1196.87, 37377.9767)
MEAN_T = mean_stats("test", 2461, 1922.7, 94698.29)
PROP_C = ExperimentStats("control", 1529, 87, 87)
PROP_T = ExperimentStats("test", 1471, 62, 62)
RATIO_C = ExperimentStats("control", 1966, 94605.79858780127, 10463129.505392816, 936, 936, 94605.79858780127)
RATIO_T = ExperimentStats("test", 2034, 99673.9364269569, 11298745.182728939, 947, 947, 99673.9364269569)


@pytest.mark.parametrize(
    ("metric", "control", "test", "p_value", "interval"),
    [
        ("mean", MEAN_C, MEAN_T, 0.08487, (-0.0875, 1.36048)),
        ("funnel", PROP_C, PROP_T, 0.030960, (-0.49475, -0.02376)),
        ("ratio", RATIO_C, RATIO_T, 0.0032826, (0.01378609, 0.0689)),
    ],
)
def test_frequentist_reproduces_posthogs_own_test_numbers(metric, control, test, p_value, interval) -> None:
    _, [result] = experiment_results(metric, control, [test], stats_config=FREQUENTIST)
    assert result.p_value == pytest.approx(p_value, abs=5e-5)
    assert result.confidence_interval == pytest.approx(interval, abs=5e-5)
    assert result.significant is (p_value < 0.05)


def test_bayesian_reproduces_posthogs_own_test_numbers() -> None:
    _, [result] = experiment_results("mean", MEAN_C, [MEAN_T])
    assert result.chance_to_win == pytest.approx(0.95759, abs=5e-5)
    assert result.credible_interval == pytest.approx((-0.0873, 1.36026), abs=5e-5)
    assert result.significant is True  # 0.9576 > 0.95: PostHog's is_decisive


def test_the_absolute_frequentist_test_is_welchs_t_test() -> None:
    config = {"method": "frequentist", "frequentist": {"difference_type": "ABSOLUTE"}}
    _, [result] = experiment_results("mean", MEAN_C, [MEAN_T], stats_config=config)
    sd = [math.sqrt((s.sum_squares - s.sum**2 / s.number_of_samples) / (s.number_of_samples - 1))
          for s in (MEAN_T, MEAN_C)]  # fmt: skip
    welch = stats.ttest_ind_from_stats(
        MEAN_T.sum / MEAN_T.number_of_samples, sd[0], MEAN_T.number_of_samples,
        MEAN_C.sum / MEAN_C.number_of_samples, sd[1], MEAN_C.number_of_samples, equal_var=False,
    )  # fmt: skip
    assert result.p_value == pytest.approx(welch.pvalue, rel=1e-9)


def test_the_proportion_test_is_unpooled() -> None:
    # PostHog's proportion variance is p(1 − p) per arm (no pooling, no n − 1): Welch's t on those numbers.
    config = {"method": "frequentist", "frequentist": {"difference_type": "ABSOLUTE"}}
    _, [result] = experiment_results("funnel", PROP_C, [PROP_T], stats_config=config)
    p = [s.sum / s.number_of_samples for s in (PROP_T, PROP_C)]
    n = [PROP_T.number_of_samples, PROP_C.number_of_samples]
    welch = stats.ttest_ind_from_stats(p[0], math.sqrt(p[0] * (1 - p[0])), n[0], p[1], math.sqrt(p[1] * (1 - p[1])),
                                       n[1], equal_var=False)  # fmt: skip
    assert result.p_value == pytest.approx(welch.pvalue, rel=1e-9)


def test_the_bayesian_chance_to_win_is_the_flat_prior_normal_posterior() -> None:
    # With a flat prior the posterior is N(effect, V): the chance to win is the one-sided z-test's complement.
    config = {"bayesian": {"difference_type": "ABSOLUTE"}}
    _, [result] = experiment_results("mean", MEAN_C, [MEAN_T], stats_config=config)
    lo, hi = result.credible_interval
    effect, sd = (lo + hi) / 2, (hi - lo) / (2 * stats.norm.ppf(0.975))
    assert result.chance_to_win == pytest.approx(stats.norm.sf(0, effect, sd), rel=1e-12)
    _, [down] = experiment_results("mean", MEAN_C, [MEAN_T], stats_config=config, goal="decrease")
    assert down.chance_to_win == pytest.approx(1 - result.chance_to_win, abs=1e-12)


def test_validation_failures_as_posthog_and_no_test_fields_then() -> None:
    small = ExperimentStats("test", 49, 10, 10)
    base, [result] = experiment_results("funnel", ExperimentStats("control", 100, 0, 0), [small])
    assert base.validation_failures == ("not-enough-metric-data", "baseline-mean-is-zero")
    assert result.validation_failures == ("not-enough-exposures",)
    assert result.chance_to_win is None and result.significant is None
    _, [fine_but_no_baseline] = experiment_results("funnel", ExperimentStats("control", 100, 0, 0), [PROP_T])
    assert fine_but_no_baseline.validation_failures == () and fine_but_no_baseline.chance_to_win is None


def test_bad_input_is_a_value_error_naming_the_variant() -> None:
    with pytest.raises(StatsInputError, match="'test'"):
        experiment_results("mean", MEAN_C, [ExperimentStats("test", 100, float("nan"), 1.0)])
    with pytest.raises(StatsInputError, match="metric_type"):
        experiment_results("median", MEAN_C, [MEAN_T])  # type: ignore[arg-type]


def test_answers_have_posthogs_published_shapes() -> None:
    for config, component in ((FREQUENTIST, "ExperimentVariantResultFrequentist"),
                              (None, "ExperimentVariantResultBayesian")):  # fmt: skip
        base, results = experiment_results("ratio", RATIO_C, [RATIO_T], stats_config=config)
        assert_valid(base.to_posthog(baseline=True), "ExperimentStatsBaseValidated", drop=())
        assert_valid(results[0].to_posthog(), component, drop=())
    funnel = ExperimentStats("test", 1471, 62, 62, step_counts=(1471, 300, 62))
    _, [with_steps] = experiment_results("funnel", PROP_C, [funnel])
    assert_valid(with_steps.to_posthog(), "ExperimentVariantResultBayesian", drop=())
    assert with_steps.to_posthog()["step_counts"] == [1471, 300, 62]


def test_relative_intervals_cover_the_true_lift_at_their_level() -> None:
    # Simulation: 1,000 experiments with a true +10% lift on a conversion of 20%; the 95% interval of the
    # relative effect should contain 0.10 about 95% of the time (binomial band ±3 sd).
    rng = np.random.default_rng(7)
    n, trials = 4000, 1000
    control, test = rng.binomial(n, 0.20, trials), rng.binomial(n, 0.22, trials)
    covered = 0
    for c, t in zip(control, test, strict=True):
        _, [r] = experiment_results("funnel", ExperimentStats("control", n, int(c), int(c)),
                                    [ExperimentStats("test", n, int(t), int(t))], stats_config=FREQUENTIST)  # fmt: skip
        covered += r.confidence_interval[0] <= 0.10 <= r.confidence_interval[1]
    assert abs(covered / trials - 0.95) < 3 * math.sqrt(0.95 * 0.05 / trials)


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
@pytest.mark.parametrize("metric_type", ["mean", "ratio"])
def test_values_too_large_for_the_formulas_answer_without_a_test_instead_of_overflowing(method, metric_type) -> None:
    # Each person's value near 1e100 (a property sent in the wrong unit): the sums are finite, the delta method's
    # fourth powers are not.
    big = 1e100

    def stats(key: str, scale: float) -> ExperimentStats:
        ratio = {"denominator_sum": 100 * big, "denominator_sum_squares": 100 * big * big * 1.2,
                 "numerator_denominator_sum_product": 100 * big * big * scale} if metric_type == "ratio" else {}
        return ExperimentStats(key, 100, 100 * big * scale, 100 * big * big * scale * scale * 1.3, **ratio)

    base, [result] = experiment_results(metric_type, stats("control", 1.0), [stats("test", 1.2)],
                                        stats_config={"method": method})  # fmt: skip
    assert base.validation_failures == () and result.stats.sum == 120 * big
    assert result.p_value is None and result.chance_to_win is None and result.significant is None


# --- baselines (holdouts), breakdowns, retention, thresholds, answer fields -----------------------------------------


def test_any_arm_can_be_the_baseline_a_holdout_too() -> None:
    # PostHog's holdout arm is a variant "holdout-<id>"; against it, each variant's absolute effect is Welch's test.
    arms = [ExperimentStats("control", 2000, 4100.0, 21000.0), ExperimentStats("test", 2000, 4400.0, 23500.0),
            ExperimentStats("holdout-7", 800, 1500.0, 7600.0)]  # fmt: skip
    holdout, others = split_baseline(arms, "holdout-7")
    config = {"method": "frequentist", "frequentist": {"difference_type": "ABSOLUTE"}}
    base, results = experiment_results("mean", holdout, others, stats_config=config)
    assert base.stats.key == "holdout-7" and [r.stats.key for r in results] == ["control", "test"]

    def moments(s: ExperimentStats) -> tuple[float, float, int]:
        n = s.number_of_samples
        return s.sum / n, math.sqrt((s.sum_squares - s.sum**2 / n) / (n - 1)), n

    for r in results:
        welch = stats.ttest_ind_from_stats(*moments(r.stats), *moments(holdout), equal_var=False)
        assert r.p_value == pytest.approx(welch.pvalue, rel=1e-9)


def test_breakdowns_give_the_same_statistics_per_value_and_overall() -> None:
    rows = [
        (("Chrome",), ExperimentStats("control", 900, 90, 90)), (("Chrome",), ExperimentStats("test", 880, 118, 118)),
        (("Safari",), ExperimentStats("control", 400, 52, 52)), (("Safari",), ExperimentStats("test", 420, 60, 60)),
        (("Edge",), ExperimentStats("control", 60, 6, 6)),
    ]  # fmt: skip
    result = experiment_results_by_breakdown("funnel", rows, baseline_key="control", stats_config=FREQUENTIST)
    for value, (base, [test]) in result.by_breakdown.items():
        cell = {s.key: s for v, s in rows if v == value}
        expected_base, [expected] = experiment_results("funnel", cell["control"],
                                                       [cell.get("test", ExperimentStats("test", 0, 0, 0))],
                                                       stats_config=FREQUENTIST)  # fmt: skip
        assert (base, test) == (expected_base, expected)
    # A value without a test row: zero units there.
    edge = result.by_breakdown[("Edge",)][1][0]
    assert edge.validation_failures == ("not-enough-exposures", "not-enough-metric-data")
    totals = {"control": rows[0][1] + rows[2][1] + rows[4][1], "test": rows[1][1] + rows[3][1]}
    assert result.overall == experiment_results("funnel", totals["control"], [totals["test"]], stats_config=FREQUENTIST)
    with pytest.raises(PostHogStatsError) as info:
        experiment_results_by_breakdown("funnel", rows, baseline_key="holdout-1")
    assert info.value.code == "no_data"


def test_retention_is_a_ratio_of_completions_to_starts() -> None:
    control = ExperimentStats("control", 1000, 300.0, 300.0, 1000.0, 1000.0, 300.0)
    test = ExperimentStats("test", 1000, 360.0, 360.0, 1000.0, 1000.0, 360.0)
    _, [retention] = experiment_results("retention", control, [test], stats_config=FREQUENTIST)
    _, [ratio] = experiment_results("ratio", control, [test], stats_config=FREQUENTIST)
    assert retention.p_value == ratio.p_value and retention.confidence_interval == ratio.confidence_interval
    few = ExperimentStats("test", 1000, 4.0, 4.0, 1000.0, 1000.0, 4.0)
    assert experiment_results("retention", control, [few])[1][0].validation_failures == ("not-enough-metric-data",)
    assert experiment_results("ratio", control, [few])[1][0].validation_failures == ()


def test_a_thresholded_mean_is_a_proportion_without_the_funnel_minimum() -> None:
    control, test = ExperimentStats("control", 500, 40.0, 40.0), ExperimentStats("test", 500, 3.0, 3.0)
    _, [r] = experiment_results("mean", control, [test], stats_config=FREQUENTIST, threshold=True)
    assert r.validation_failures == ()  # a mean metric: no "not-enough-metric-data"
    p = [3 / 500, 40 / 500]
    welch_var = p[0] * (1 - p[0]) / 500 + p[1] * (1 - p[1]) / 500  # proportion variances, not sample variances
    delta_var = p[0] * (1 - p[0]) / (500 * p[1] ** 2) + p[0] ** 2 * p[1] * (1 - p[1]) / (500 * p[1] ** 4)
    assert r.point_estimate == pytest.approx(p[0] / p[1] - 1) and welch_var > 0
    half = r.confidence_interval[1] - r.point_estimate
    assert half / math.sqrt(delta_var) == pytest.approx(stats.t.ppf(0.975, r.test.degrees_of_freedom), rel=1e-9)


def test_posthog_json_round_trip_with_cuped_fields_and_the_old_name() -> None:
    body = {"key": "test", "number_of_samples": 100, "sum": 250.5, "sum_squares": 750.25, "covariate_sum": 90.0,
            "covariate_sum_squares": 270.0, "main_covariate_sum_product": 220.0, "validation_failures": []}  # fmt: skip
    s = ExperimentStats.from_posthog(body)
    assert s.covariate_sum_product == 220.0 and s.has_covariate()
    assert s.to_posthog()["covariate_sum_product"] == 220.0
    assert ExperimentStats.from_posthog(s.to_posthog()) == s
    with pytest.raises(StatsInputError):
        ExperimentStats.from_posthog({"key": "x"})
    with pytest.raises(StatsInputError):
        _ = ExperimentStats("a", 1, 1, 1) + ExperimentStats("b", 1, 1, 1)


def test_results_carry_the_cuped_adjustment_and_the_whole_test() -> None:
    base = ExperimentStats("control", 2801, 280, 560, covariate_sum=195, covariate_sum_squares=390,
                           covariate_sum_product=-18)  # fmt: skip
    test = ExperimentStats("test", 2800, 205, 510, covariate_sum=110, covariate_sum_squares=380,
                           covariate_sum_product=-8)  # fmt: skip
    b, [r] = experiment_results("mean", base, [test], cuped=True)
    assert r.cuped is not None and r.cuped.control_unadjusted_mean == pytest.approx(280 / 2801)
    assert r.test is not None and r.test.chance_to_win == r.chance_to_win
    assert b.to_posthog(baseline=True)["covariate_sum"] == 195
    with pytest.raises(StatsInputError, match="cuped_variance"):
        experiment_results("mean", base, [test], cuped_variance="exact")  # type: ignore[arg-type]
