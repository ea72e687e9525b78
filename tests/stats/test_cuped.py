"""CUPED: pooled θ, equivalence with Welch on adjusted raw data, variance reduction, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import SampleMean, StatsInputError, compare, cuped_effect, cuped_theta, welch_ttest
from hoglab.stats._frequentist.means import effect_from_arms, mean_arm, t_interval


def _experiment(rng: np.random.Generator, n: int, effect: float) -> tuple[np.ndarray, ...]:
    pre_c, pre_t = rng.gamma(2.0, 5.0, n), rng.gamma(2.0, 5.0, n)
    post_c = 0.8 * pre_c + rng.normal(0, 4, n) + 5
    post_t = 0.8 * pre_t + rng.normal(0, 4, n) + 5 + effect
    return post_c, pre_c, post_t, pre_t


def test_theta_is_the_pooled_regression_slope() -> None:
    rng = np.random.default_rng(50)
    y_c, x_c, y_t, x_t = _experiment(rng, 3000, 1.0)
    theta = cuped_theta([SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)])
    y, x = np.concatenate([y_c, y_t]), np.concatenate([x_c, x_t])
    assert theta == pytest.approx(np.cov(y, x)[0, 1] / x.var(ddof=1), rel=1e-10)


def test_adjusted_effect_is_welch_on_adjusted_values() -> None:
    rng = np.random.default_rng(51)
    y_c, x_c, y_t, x_t = _experiment(rng, 2000, 0.5)
    c, t = SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)
    theta = cuped_theta([c, t])
    x_bar = np.concatenate([x_c, x_t]).mean()
    adj_c, adj_t = y_c - theta * (x_c - x_bar), y_t - theta * (x_t - x_bar)
    ref = stats.ttest_ind(adj_t, adj_c, equal_var=False)
    effect = cuped_effect(c, t, theta)
    assert effect.difference == pytest.approx(adj_t.mean() - adj_c.mean(), rel=1e-9)
    assert effect.difference / effect.difference_se == pytest.approx(ref.statistic, rel=1e-9)
    assert effect.dof == pytest.approx(ref.df, rel=1e-9)
    row = compare({"control": c, "test": t}).rows[0]
    assert row.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert row.difference_ci == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_lift_se_matches_a_numerical_delta_method() -> None:
    from statsmodels.stats._delta_method import NonlinearDeltaCov

    rng = np.random.default_rng(52)
    y_c, x_c, y_t, x_t = _experiment(rng, 2000, 0.5)
    c, t = SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)
    theta = cuped_theta([c, t])
    effect = cuped_effect(c, t, theta)
    # Parameters (ȳ_T, x̄_T, ȳ_C, x̄_C) with θ fixed; arms independent.
    params = np.array([y_t.mean(), x_t.mean(), y_c.mean(), x_c.mean()])
    cov = np.zeros((4, 4))
    cov[:2, :2] = np.cov(y_t, x_t) / y_t.size
    cov[2:, 2:] = np.cov(y_c, x_c) / y_c.size

    def lift(p: np.ndarray) -> np.ndarray:
        return np.array([(p[0] - theta * p[1] - p[2] + theta * p[3]) / p[2]])

    ref = NonlinearDeltaCov(lift, params, cov)
    assert effect.lift == pytest.approx(float(lift(params)[0]), rel=1e-12)
    assert effect.lift_se == pytest.approx(float(np.sqrt(ref.cov()[0, 0])), rel=1e-6)


def test_variance_reduction_and_calibration() -> None:
    rng = np.random.default_rng(53)
    sims, n, alpha = 1500, 500, 0.05
    plain_hits, cuped_hits, se_ratio = [], [], []
    for _ in range(sims):
        y_c, x_c, y_t, x_t = _experiment(rng, n, 0.0)
        c, t = SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)
        adjusted = cuped_effect(c, t, cuped_theta([c, t]))
        plain = effect_from_arms(mean_arm(SampleMean.from_values(y_c)), mean_arm(SampleMean.from_values(y_t)))
        lo, hi = t_interval(adjusted.difference, adjusted.difference_se, adjusted.dof, alpha)
        cuped_hits.append(not lo <= 0.0 <= hi)
        plain_hits.append(
            welch_ttest(SampleMean.from_values(y_c), SampleMean.from_values(y_t)).p_value < alpha
        )
        se_ratio.append(adjusted.difference_se / plain.difference_se)
    se = np.sqrt(alpha * (1 - alpha) / sims)
    assert abs(np.mean(cuped_hits) - alpha) < 4 * se
    assert abs(np.mean(plain_hits) - alpha) < 4 * se
    # corr(post, pre)² = 0.64·50/(0.64·50 + 16) ≈ 0.67, so the SE shrinks to about sqrt(0.33) ≈ 0.58.
    assert np.median(se_ratio) == pytest.approx(np.sqrt(1 - 32 / 48), abs=0.03)


def test_cuped_needs_the_covariate_everywhere() -> None:
    with pytest.raises(StatsInputError):
        cuped_theta([SampleMean(10, 5.0, 5.0)])
    with_pre = SampleMean.from_values([1.0, 2.0, 3.0], pre=[1.0, 1.0, 2.0])
    with pytest.raises(StatsInputError):
        compare({"control": with_pre, "test": SampleMean(3, 6.0, 14.0)}, cuped=True, check_srm=False)
    # Without cuped=True a missing covariate just means no adjustment.
    assert (
        compare({"control": with_pre, "test": SampleMean(3, 6.0, 14.0)}, check_srm=False).rows[0].p_value > 0
    )
    # A constant covariate carries no information: θ = 0.
    assert cuped_theta([SampleMean.from_values([1.0, 2.0], pre=[3.0, 3.0])]) == 0.0


@pytest.mark.parametrize("method", ["frequentist", "bayesian", "sequential"])
def test_compare_reports_adjusted_means_consistently(method: str) -> None:
    rng = np.random.default_rng(54)
    y_c, x_c, y_t, x_t = _experiment(rng, 3000, 0.7)
    c, t = SampleMean.from_values(y_c, pre=x_c), SampleMean.from_values(y_t, pre=x_t)
    result = compare({"control": c, "test": t}, method=method)  # type: ignore[arg-type]
    row = result.rows[0]
    theta = cuped_theta([c, t])
    x_bar = np.concatenate([x_c, x_t]).mean()
    assert row.estimate == pytest.approx(y_t.mean() - theta * (x_t.mean() - x_bar), rel=1e-12)
    assert row.control_estimate == pytest.approx(y_c.mean() - theta * (x_c.mean() - x_bar), rel=1e-12)
    assert row.difference == pytest.approx(row.estimate - row.control_estimate, rel=1e-9)
    assert row.lift == pytest.approx(row.difference / y_c.mean(), rel=1e-12)
    for arm in result.arms:
        assert arm.ci[0] < arm.estimate < arm.ci[1]
        assert arm.estimate == pytest.approx((arm.ci[0] + arm.ci[1]) / 2, rel=1e-9)
