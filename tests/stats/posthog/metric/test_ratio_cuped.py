"""hoglab's CUPED for ratio metrics (an extension: PostHog has none), against a unit-level numpy restatement of the
delta method and seeded simulations: unbiased under A/A, less variance when the covariate correlates, intervals
that cover at their level."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import JointMoments, RatioCovariate, ratio_cuped
from hoglab.stats.posthog import ExperimentStats, experiment_results


def _arm(rng: np.random.Generator, n: int, lift: float = 0.0, noise: float = 3.0):  # type: ignore[no-untyped-def]
    """Sessions b and revenue a before exposure; after it, d sessions and y revenue that follow the same user's
    pre-period revenue per session (so the covariate ratio correlates with the metric)."""
    b = rng.poisson(3, n) + 1.0
    per_session = rng.gamma(4, 2.5, n)
    a = b * per_session
    d = b + rng.poisson(1, n)
    y = d * per_session * (1 + lift) + rng.normal(0, noise, n)
    return y, d, a, b


def _restated(t, c):  # type: ignore[no-untyped-def]
    """The estimator from unit values: linearised ratios (y − R·d)/d̄ and (a − X·b)/b̄, θ minimising Var(Δ)."""
    lin = []
    for y, d, a, b in (t, c):
        r, x = y.sum() / d.sum(), a.sum() / b.sum()
        lin.append((r, x, (y - r * d) / d.mean(), (a - x * b) / b.mean(), y.size))
    (rt, xt, lrt, lxt, nt), (rc, xc, lrc, lxc, nc) = lin
    cov = lambda u, v: np.cov(u, v)[0, 1]  # noqa: E731
    theta = (cov(lrt, lxt) / nt + cov(lrc, lxc) / nc) / (np.var(lxt, ddof=1) / nt + np.var(lxc, ddof=1) / nc)
    adj_t, adj_c = lrt - theta * lxt, lrc - theta * lxc
    difference = (rt - theta * (xt - xc)) - rc
    variance = np.var(adj_t, ddof=1) / nt + np.var(adj_c, ddof=1) / nc
    # Relative: L = (R_T − θ(X_T − X_C))/R_C − 1, linearised over the control's (R_C, X_C) as well.
    g_r, g_x = -(rt - theta * (xt - xc)) / rc**2, theta / rc
    rel_var = np.var(adj_t, ddof=1) / (nt * rc**2) + np.var(g_r * lrc + g_x * lxc, ddof=1) / nc
    return theta, difference, variance, difference / rc, rel_var


def test_ratio_cuped_equals_the_unit_level_restatement() -> None:
    rng = np.random.default_rng(21)
    t, c = _arm(rng, 3000, lift=0.03), _arm(rng, 3200)
    result = ratio_cuped(JointMoments.from_values(*t), JointMoments.from_values(*c))
    theta, difference, variance, lift, lift_variance = _restated(t, c)
    assert result.theta == pytest.approx(theta, rel=1e-9)
    assert result.absolute.estimate == pytest.approx(difference, rel=1e-9)
    assert result.absolute.variance == pytest.approx(variance, rel=1e-9)
    assert result.relative is not None
    assert result.relative.estimate == pytest.approx(lift, rel=1e-9)
    assert result.relative.variance == pytest.approx(lift_variance, rel=1e-9)
    # Without adjustment the per-arm variance is PostHog's ratio variance (Deng et al. eq. 3); the reduction is
    # 1 − Var(adjusted linearised values)/that.
    y, d = t[0], t[1]
    m, dm = y.mean(), d.mean()
    posthog = np.var(y, ddof=1) / dm**2 + m**2 * np.var(d, ddof=1) / dm**4 - 2 * m * np.cov(y, d)[0, 1] / dm**3
    assert result.variance_reduction_treatment == pytest.approx(1 - np.var(_lin_adj(t, theta), ddof=1) / posthog)


def _lin_adj(arm, theta):  # type: ignore[no-untyped-def]
    y, d, a, b = arm
    r, x = y.sum() / d.sum(), a.sum() / b.sum()
    return (y - r * d) / d.mean() - theta * (a - x * b) / b.mean()


def test_joint_moments_from_ratio_sums_equal_from_values() -> None:
    rng = np.random.default_rng(22)
    y, d, a, b = _arm(rng, 500)
    cov = RatioCovariate(a.sum(), (a * a).sum(), b.sum(), (b * b).sum(), (a * b).sum(), (y * a).sum(), (y * b).sum(),
                         (d * a).sum(), (d * b).sum())  # fmt: skip
    sums = JointMoments.from_ratio(500, y.sum(), (y * y).sum(), d.sum(), (d * d).sum(), (y * d).sum(), cov)
    direct = JointMoments.from_values(y, d, a, b)
    assert np.allclose(sums.covariance, direct.covariance, rtol=1e-10)
    assert np.allclose(sums.mean, direct.mean, rtol=1e-12)
    assert np.allclose(np.cov(np.vstack([y, d, a, b])), direct.covariance, rtol=1e-9)


def test_simulation_unbiased_under_aa_with_less_variance_and_honest_intervals() -> None:
    rng = np.random.default_rng(23)
    runs = 1500
    raw, adjusted, reported, covered_abs, covered_rel = [], [], [], 0, 0
    for _ in range(runs):
        t, c = _arm(rng, 400), _arm(rng, 400)
        result = ratio_cuped(JointMoments.from_values(*t), JointMoments.from_values(*c))
        raw.append(t[0].sum() / t[1].sum() - c[0].sum() / c[1].sum())
        adjusted.append(result.absolute.estimate)
        reported.append(result.absolute.standard_error)
        z = stats.norm.ppf(0.975)
        covered_abs += abs(result.absolute.estimate) <= z * result.absolute.standard_error
        assert result.relative is not None
        covered_rel += abs(result.relative.estimate) <= z * result.relative.standard_error
    adjusted_ = np.array(adjusted)
    assert abs(adjusted_.mean()) < 4 * adjusted_.std() / np.sqrt(runs)  # unbiased under A/A
    assert adjusted_.std() < 0.7 * np.std(raw)  # the covariate correlates: much less variance
    assert np.mean(reported) == pytest.approx(adjusted_.std(), rel=0.06)  # the reported SE is the real spread
    band = 3.5 * np.sqrt(0.95 * 0.05 / runs)
    assert abs(covered_abs / runs - 0.95) < band and abs(covered_rel / runs - 0.95) < band


def test_simulation_covers_a_true_lift() -> None:
    rng = np.random.default_rng(24)
    runs, lift, covered = 1000, 0.05, 0
    for _ in range(runs):
        t, c = _arm(rng, 500, lift=lift), _arm(rng, 500)
        rel = ratio_cuped(JointMoments.from_values(*t), JointMoments.from_values(*c)).relative
        assert rel is not None
        # The true relative lift of revenue per session is 5% (both arms draw from the same population).
        covered += abs(rel.estimate - lift) <= stats.norm.ppf(0.975) * rel.standard_error
    assert abs(covered / runs - 0.95) < 3.5 * np.sqrt(0.95 * 0.05 / runs)


def _stats(key: str, arm) -> ExperimentStats:  # type: ignore[no-untyped-def]
    y, d, a, b = arm
    cov = RatioCovariate(a.sum(), (a * a).sum(), b.sum(), (b * b).sum(), (a * b).sum(), (y * a).sum(), (y * b).sum(),
                         (d * a).sum(), (d * b).sum())  # fmt: skip
    return ExperimentStats(key, y.size, y.sum(), (y * y).sum(), d.sum(), (d * d).sum(), (y * d).sum(),
                           ratio_covariate=cov)  # fmt: skip


def test_experiment_results_adjusts_a_ratio_only_with_hoglabs_covariates() -> None:
    rng = np.random.default_rng(25)
    control, test = _stats("control", _arm(rng, 3000)), _stats("test", _arm(rng, 3000, lift=0.04))
    config = {"method": "frequentist"}
    _, [adjusted] = experiment_results("ratio", control, [test], stats_config=config, cuped=True)
    _, [plain] = experiment_results("ratio", control, [test], stats_config=config, cuped=False)
    assert adjusted.cuped is not None and plain.cuped is None
    width = lambda r: r.confidence_interval[1] - r.confidence_interval[0]  # noqa: E731
    assert width(adjusted) < 0.7 * width(plain)
    assert "ratio_covariate" not in adjusted.to_posthog()  # PostHog's answer shape is unchanged
