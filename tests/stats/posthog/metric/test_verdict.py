"""hoglab's verdict on a metric experiment: calibrated under CUPED, one test for the table and the recommendation.

The A/A simulation runs through :func:`hoglab.stats.posthog.calibrated_results`, the statistics the frame, the
picker, the report and ``summary()`` read (``hoglab.frames.experiments``), with the covariate the same metric before
exposure and its correlation ρ drawn from 0.3 to 0.95 per experiment: hoglab's verdict keeps α where PostHog's
formula calls far more A/A experiments significant (docs/statistics.md §6.5; ``bench/bench_verdict_aa.py`` runs the
same with more experiments and daily looks).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import StatsInputError
from hoglab.stats.posthog import (
    ExperimentStats,
    calibrated_results,
    experiment_results,
    metric_recommendation,
    metric_test_name,
    verdict_difference,
)

EXPERIMENTS = 2000


def _arm(key: str, y: np.ndarray, x: np.ndarray) -> ExperimentStats:
    return ExperimentStats(key, y.size, float(y.sum()), float(y @ y), covariate_sum=float(x.sum()),
                           covariate_sum_squares=float(x @ x), covariate_sum_product=float(x @ y))  # fmt: skip


def _same_metric_before(rng: np.random.Generator, n: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Revenue after exposure (y) and the same revenue before it (x): skewed, mean 40, correlation ρ."""
    x = rng.gamma(2.0, 20.0, n)
    y = 40.0 + rho * (x - 40.0) + math.sqrt(1.0 - rho * rho) * 28.28 * rng.standard_normal(n)
    return y, x


def _band(rate: float, n: int) -> float:
    return 1.96 * math.sqrt(rate * (1 - rate) / n)


def test_aa_false_positive_rate_of_hoglabs_verdict_holds_alpha_where_posthogs_formula_does_not() -> None:
    rng = np.random.default_rng(34)
    hits = {"hoglab": 0, "posthog": 0, "hoglab sequential": 0, "posthog sequential": 0}
    fixed = {"method": "frequentist"}
    sequential = {"method": "frequentist", "frequentist": {"sequential_testing_enabled": True}}
    for _ in range(EXPERIMENTS):
        rho, n = rng.uniform(0.3, 0.95), int(rng.integers(1000, 4001))
        control = _arm("control", *_same_metric_before(rng, n, rho))
        test = _arm("test", *_same_metric_before(rng, n, rho))
        for name, config in (("", fixed), (" sequential", sequential)):
            [ours], [theirs] = calibrated_results("mean", control, [test], stats_config=config, cuped=True)
            hits["hoglab" + name] += bool(ours.significant)
            hits["posthog" + name] += bool(theirs.significant)
    rates = {k: v / EXPERIMENTS for k, v in hits.items()}
    said = ", ".join(f"{k} {v:.2%}" for k, v in rates.items())
    print(f"A/A, {EXPERIMENTS} experiments, CUPED ρ ~ U(0.3, 0.95): {said}")
    band = _band(0.05, EXPERIMENTS)
    assert abs(rates["hoglab"] - 0.05) <= band  # inside the 95% binomial band of 5%
    assert rates["posthog"] > 0.05 + 3 * band  # PostHog's formula: ~14%
    # One look with sequential testing on: an always-valid test is conservative at any single look, never above α.
    assert rates["hoglab sequential"] <= 0.05 + band
    assert rates["posthog sequential"] > rates["hoglab sequential"]


def _case() -> tuple[ExperimentStats, ExperimentStats]:
    rng = np.random.default_rng(7)
    y_c, x_c = _same_metric_before(rng, 3000, 0.8)
    y_t, x_t = _same_metric_before(rng, 3000, 0.8)
    return _arm("control", y_c, x_c), _arm("test", y_t * 1.03, x_t)


@pytest.mark.parametrize("sequential", [False, True])
@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
def test_the_recommendation_quotes_the_tables_interval(sequential: bool, method: str) -> None:
    control, test = _case()
    config = {"method": method, "frequentist": {"sequential_testing_enabled": sequential}}
    [table], _ = calibrated_results("mean", control, [test], stats_config=config, cuped=True)
    r = metric_recommendation("mean", control, [test], stats_config=config, cuped=True, mde=0.05, days_running=14)
    shown = table.confidence_interval or table.credible_interval
    assert shown is not None
    quoted = r.sequential_interval if method == "frequentist" and sequential else r.confidence_interval
    assert quoted == pytest.approx(shown, abs=1e-12)
    assert r.effect == pytest.approx(table.point_estimate, abs=1e-12)
    if method == "frequentist" and not sequential:
        assert r.p_value == pytest.approx(table.p_value, abs=1e-15)
    if method == "bayesian":  # the flat-prior posterior's two-sided normal test: p = 2 min(P, 1 - P)
        chance = table.chance_to_win
        assert chance is not None and r.p_value == pytest.approx(2 * min(chance, 1 - chance), abs=1e-15)
    assert r.test == metric_test_name("mean", config, cuped=True, sequential=False) and r.test in r.reason
    assert "CUPED with the delta-method variance" in r.test


def test_the_delta_variance_is_a_restatement_from_unit_data() -> None:
    rng = np.random.default_rng(11)
    y_c, x_c = _same_metric_before(rng, 2500, 0.9)
    y_t, x_t = _same_metric_before(rng, 2600, 0.9)
    [r], [p] = calibrated_results("mean", _arm("control", y_c, x_c), [_arm("test", y_t, x_t)],
                                  stats_config={"method": "frequentist"}, cuped=True)  # fmt: skip
    # numpy: θ on the pair pooled, adjusted means and variances, the lift over the control's raw mean, and the
    # delta method's variance of (T_adj − C_adj)/ȳ_C over the control's (ȳ, x̄).
    y, x = np.r_[y_c, y_t], np.r_[x_c, x_t]
    theta = np.cov(y, x, ddof=1)[0, 1] / np.var(x, ddof=1)
    adj_c, adj_t = y_c - theta * x_c, y_t - theta * x_t
    mean_c, lift = y_c.mean(), (adj_t.mean() - adj_c.mean()) / y_c.mean()
    cov_c = np.cov(np.vstack([y_c, x_c]), ddof=1)
    g = np.array([-adj_t.mean() / mean_c**2 - theta * x_c.mean() / mean_c**2, theta / mean_c])
    variance = adj_t.var(ddof=1) / (y_t.size * mean_c**2) + g @ cov_c @ g / y_c.size
    vt, vc = adj_t.var(ddof=1) / y_t.size, adj_c.var(ddof=1) / y_c.size
    nu = (vt + vc) ** 2 / (vt**2 / (y_t.size - 1) + vc**2 / (y_c.size - 1))
    half = stats.t.ppf(0.975, nu) * math.sqrt(variance)
    assert r.point_estimate == pytest.approx(lift, rel=1e-9)
    assert r.confidence_interval == pytest.approx((lift - half, lift + half), rel=1e-9)
    assert r.p_value == pytest.approx(2 * stats.t.sf(abs(lift) / math.sqrt(variance), nu), rel=1e-9)
    assert p.point_estimate == pytest.approx(lift, rel=1e-9)  # PostHog's formula: the same effect, a narrower interval
    assert p.confidence_interval[1] - p.confidence_interval[0] < r.confidence_interval[1] - r.confidence_interval[0]


def test_without_cuped_hoglab_and_posthog_agree() -> None:
    control = ExperimentStats("control", 1000, 120, 120)
    test = ExperimentStats("test", 1000, 150, 150)
    [ours], [theirs] = calibrated_results("funnel", control, [test], stats_config={"method": "frequentist"})
    assert ours == theirs
    [served] = experiment_results("funnel", control, [test], stats_config={"method": "frequentist"})[1]
    assert ours == served


def test_the_extension_serves_the_calibrated_variance() -> None:
    control, test = _case()
    config = {"method": "frequentist", "cuped": {"enabled": True, "variance": "delta"}}
    [served] = experiment_results("mean", control, [test], stats_config=config)[1]
    [ours], [theirs] = calibrated_results("mean", control, [test], stats_config=config, cuped=True)
    assert served == ours and served != theirs
    [default] = experiment_results("mean", control, [test], stats_config={"cuped": {"enabled": True},
                                                                          "method": "frequentist"})[1]  # fmt: skip
    assert default == theirs  # PostHog's figures unless asked


def test_verdict_difference_is_one_line_only_when_they_differ() -> None:
    assert verdict_difference(False, True) == "PostHog's formula: significant; hoglab: not yet"
    assert verdict_difference(True, False) == "PostHog's formula: not yet; hoglab: significant"
    assert verdict_difference(True, True) is None and verdict_difference(None, True) is None


def test_a_metric_nobody_could_test_is_refused() -> None:
    control, test = ExperimentStats("control", 10, 1, 1), ExperimentStats("test", 10, 2, 2)
    with pytest.raises(StatsInputError, match="no variant"):
        metric_recommendation("funnel", control, [test], stats_config={"method": "frequentist"})
