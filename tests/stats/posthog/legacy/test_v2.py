"""PostHog's v2 Bayesian statistics, deterministic, against seeded Monte Carlo of PostHog's own sampling
definitions (``funnels_statistics_v2.py``, ``trends_statistics_v2_count.py``, ``..._continuous.py``, the first
``trends_statistics_v2.py`` and ``experiment_trends_statistics.py``), with more draws than PostHog takes so the
reference's own error is small; and the exact Beta-Binomial loss against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import GammaPosterior, PostHogStatsError, StudentTPosterior
from hoglab.stats.posthog import (
    betabinomial_loss_against_best,
    continuous_posterior_v2,
    continuous_verdict_v2,
    count_verdict_v2,
    experiment_trends_verdict,
    funnel_verdict_v2,
    loss_against_best,
    trend_verdict_v2_early,
)

DRAWS = 400_000


def _pairwise(draws: np.ndarray) -> np.ndarray:
    """PostHog's v2 probabilities on draws: control ≥ max(tests), then each test > control."""
    return np.array([(draws[0] >= draws[1:].max(axis=0)).mean(), *((draws[i] > draws[0]).mean()
                                                                      for i in range(1, len(draws)))])  # fmt: skip


def _best_shares(draws: np.ndarray) -> np.ndarray:
    return (draws == draws.max(axis=0)).mean(axis=1)  # type: ignore[no-any-return]


def _mc_loss(draws: np.ndarray, target: int) -> tuple[float, float]:
    others = np.delete(draws, target, axis=0).max(axis=0)
    losses = np.maximum(0.0, others - draws[target])
    return float(losses.mean()), float(losses.std() / np.sqrt(losses.size))


def test_funnel_probabilities_are_posthogs_pairwise_beta_draws_without_the_noise() -> None:
    arms = {"control": (120, 880), "a": (150, 850), "b": (140, 860)}
    rng = np.random.default_rng(1)
    draws = np.array([rng.beta(1 + s, 1 + f, DRAWS) for s, f in arms.values()])
    verdict = funnel_verdict_v2(arms)
    assert list(verdict.probability.values()) == pytest.approx(_pairwise(draws), abs=4e-3)
    assert verdict.credible_intervals["a"] == pytest.approx(stats.beta.ppf([0.025, 0.975], 151, 851))


def test_funnel_loss_is_the_beta_binomial_predictive_against_the_best_of_the_others() -> None:
    arms = {"control": (400, 3600), "a": (455, 3545), "b": (450, 3550)}
    verdict = funnel_verdict_v2(arms)
    assert verdict.significance_code.value in ("significant", "high_loss")
    rng = np.random.default_rng(7)
    draws = np.array([stats.betabinom.rvs(s + f, 1 + s, 1 + f, size=DRAWS, random_state=rng) / (s + f)
                      for s, f in arms.values()])  # fmt: skip
    mean, se = _mc_loss(draws, 1)  # "a" has the highest observed rate
    assert verdict.expected_loss == pytest.approx(mean, abs=4 * se)
    # The predictive's spread exceeds the posterior's, so the Beta posterior's loss is smaller.
    beta_draws = np.array([rng.beta(1 + s, 1 + f, DRAWS) for s, f in arms.values()])
    assert _mc_loss(beta_draws, 1)[0] < verdict.expected_loss


def _enumerated_loss(successes: list[int], failures: list[int], target: int) -> float:
    n = [s + f for s, f in zip(successes, failures, strict=True)]
    pmf = [stats.betabinom.pmf(np.arange(m + 1), m, 1 + s, 1 + f) for m, s, f in zip(n, successes, failures,
                                                                                        strict=True)]  # fmt: skip
    total = 0.0
    for ks in itertools.product(*(range(m + 1) for m in n)):
        weight = np.prod([pmf[j][k] for j, k in enumerate(ks)])
        rates = [k / m for k, m in zip(ks, n, strict=True)]
        best = max(r for j, r in enumerate(rates) if j != target)
        total += weight * max(0.0, best - rates[target])
    return total


@pytest.mark.parametrize(("successes", "failures", "target"), [
    ([3, 2], [1, 2], 0), ([3, 2, 5], [4, 2, 3], 1), ([7, 3, 2], [2, 6, 5], 2), ([4, 4], [4, 4], 0),
    ([1, 6, 2], [9, 3, 5], 0),
])  # fmt: skip
def test_betabinomial_loss_equals_enumeration(successes: list[int], failures: list[int], target: int) -> None:
    exact = _enumerated_loss(successes, failures, target)
    got = betabinomial_loss_against_best(np.array(successes, float), np.array(failures, float), target)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-15)


def test_count_probabilities_and_loss_match_monte_carlo() -> None:
    arms = {"control": (1000, 1000), "a": (1150, 1000), "b": (1120, 1000)}
    rng = np.random.default_rng(2)
    draws = np.array([rng.gamma(1 + c, 1 / (1 + n), DRAWS) for c, n in arms.values()])
    verdict = count_verdict_v2(arms)
    assert list(verdict.probability.values()) == pytest.approx(_pairwise(draws), abs=4e-3)
    posterior = GammaPosterior([1 + c for c, _ in arms.values()], [1 + n for _, n in arms.values()])
    mean, se = _mc_loss(draws, 1)
    assert loss_against_best(posterior, 1) == pytest.approx(mean, abs=4 * se)
    assert verdict.expected_loss == verdict.p_value == pytest.approx(mean, abs=4 * se)


def test_continuous_uses_the_student_t_posterior_of_the_log_mean() -> None:
    arms = {"control": (10.0, 400), "test": (11.5, 420)}
    posterior = continuous_posterior_v2(np.array([10.0, 11.5]), np.array([400.0, 420.0]))
    rng = np.random.default_rng(3)
    draws = np.array([posterior.loc[i] + posterior.scale[i] * rng.standard_t(posterior.df[i], DRAWS) for i in range(2)])
    verdict = continuous_verdict_v2(arms)
    assert list(verdict.probability.values()) == pytest.approx(_pairwise(draws), abs=4e-3)
    t = stats.t(df=posterior.df[1], loc=posterior.loc[1], scale=posterior.scale[1])
    assert verdict.credible_intervals["test"] == pytest.approx(tuple(np.exp(t.interval(0.95)) - 1e-10))
    assert verdict.significance_code.value in ("significant", "high_loss")
    mean, se = _mc_loss(np.exp(draws), 1)
    assert verdict.expected_loss == pytest.approx(mean, abs=4 * se)


def test_continuous_best_arm_is_the_largest_total() -> None:
    # PostHog's count field holds each arm's total: the arm with the larger total is "best" for the loss even
    # when its mean is lower (here 9.9 × 1500 > 10.5 × 1000).
    arms = {"control": (9.9, 1500), "test": (10.5, 1000), "other": (5.0, 1000)}
    verdict = continuous_verdict_v2(arms)
    posterior = continuous_posterior_v2(np.array([9.9, 10.5, 5.0]), np.array([1500.0, 1000.0, 1000.0]))
    if verdict.significance_code.value in ("significant", "high_loss"):
        assert verdict.expected_loss == pytest.approx(loss_against_best(posterior, 0, log_scale=True))


def test_first_v2_trend_rule_is_best_of_all_on_the_relative_exposure() -> None:
    rows = [("control", 1000, 1.0, 10000), ("test", 1200, 1.2, 12000), ("other", 1010, 1.0, 10000)]
    verdict = trend_verdict_v2_early(rows)
    rng = np.random.default_rng(4)
    draws = np.array([rng.gamma(1 + c, 1 / (1 + e), DRAWS) for _, c, e, _ in rows])
    assert list(verdict.probability.values()) == pytest.approx(_best_shares(draws), abs=4e-3)
    assert verdict.credible_intervals["test"] == pytest.approx(tuple(stats.gamma.ppf([0.025, 0.975], 1201,
                                                                                      scale=1 / 12001)))  # fmt: skip


def test_experiment_trends_rule_is_strictly_above_095() -> None:
    rows = [("control", 100, 1.0, 1000), ("test", 150, 1.0, 1000)]
    verdict = experiment_trends_verdict(rows)
    rng = np.random.default_rng(5)
    draws = np.array([rng.gamma(1 + c, 1 / (1 + e), DRAWS) for _, c, e, _ in rows])
    assert list(verdict.probability.values()) == pytest.approx(_best_shares(draws), abs=4e-3)
    assert verdict.p_value == pytest.approx(max(verdict.probability.values()))


def test_the_decisions_follow_posthogs_order() -> None:
    assert count_verdict_v2({"control": (50, 99), "test": (90, 100)}).significance_code.value == "not_enough_exposure"
    close = count_verdict_v2({"control": (100, 1000), "test": (101, 1000)})
    assert close.significance_code.value == "low_win_probability"
    # A clear winner whose rate is very uncertain in absolute units: the loss step refuses it.
    high = count_verdict_v2({"control": (5000, 100), "test": (5150, 100)})
    assert high.significance_code.value == "high_loss" and high.expected_loss >= 0.01
    # The gate is pairwise: with many similar arms, P(best of all) stays low while P(beats control) passes 0.9.
    many = {"control": (1000, 10000), **{f"t{i}": (1090 + i, 10000) for i in range(5)}}
    verdict = count_verdict_v2(many)
    rng = np.random.default_rng(6)
    draws = np.array([rng.gamma(1 + c, 1 / (1 + n), DRAWS) for c, n in many.values()])
    assert _best_shares(draws).max() < 0.9 <= max(verdict.probability.values())
    assert verdict.significance_code.value != "low_win_probability"
    with pytest.raises(PostHogStatsError) as info:
        count_verdict_v2({"control": (1, 1)})
    assert info.value.code == "no_data"
    with pytest.raises(PostHogStatsError) as info:
        funnel_verdict_v2({"control": (1, 1), **{f"t{i}": (1, 1) for i in range(10)}})
    assert info.value.code == "too_much_data"


def test_interval_bounds_follow_the_ci_level() -> None:
    arms = {"control": (100, 900), "test": (150, 850)}
    narrow = funnel_verdict_v2(arms, bounds=(0.05, 0.95)).credible_intervals["test"]
    assert narrow == pytest.approx(tuple(stats.beta.ppf([0.05, 0.95], 151, 851)))
    with pytest.raises(ValueError, match="bounds"):
        funnel_verdict_v2(arms, bounds=(0.9, 0.1))


def test_student_t_posterior_matches_scipy() -> None:
    post = StudentTPosterior([0.3, -1.0], [0.5, 2.0], [7.0, 31.0])
    x = np.linspace(-5, 5, 11)[None, :]
    for i, (loc, scale, df) in enumerate([(0.3, 0.5, 7.0), (-1.0, 2.0, 31.0)]):
        t = stats.t(df=df, loc=loc, scale=scale)
        assert post.cdf(x)[i] == pytest.approx(t.cdf(x[0]), rel=1e-10)
        assert post.pdf(x)[i] == pytest.approx(t.pdf(x[0]), rel=1e-10)
        partial = [t.expect(lambda v, c=c: max(v - c, 0.0)) for c in x[0]]
        assert post.upper_partial(x)[i] == pytest.approx(partial, rel=1e-6, abs=1e-10)


@pytest.mark.parametrize(("arms", "target"), [(((0, 2000), (3, 1997)), 1), (((200, 1800), (230, 1770)), 0),
                                              (((1, 900), (0, 1500)), 0), (((500, 1500), (520, 1480)), 1)])  # fmt: skip
def test_betabinomial_loss_equals_the_double_sum_on_whole_supports(arms, target) -> None:  # type: ignore[no-untyped-def]
    # Two arms: E[(R_o − R_t)⁺] = Σ_k Σ_m p_t(k)·p_o(m)·max(0, m/n_o − k/n_t) over the whole supports; hoglab sums
    # each law over mean ± 12 sd only (or its whole support when skewed).
    (s_t, f_t), (s_o, f_o) = arms[target], arms[1 - target]
    n_t, n_o = s_t + f_t, s_o + f_o
    p_t = stats.betabinom.pmf(np.arange(n_t + 1), n_t, 1 + s_t, 1 + f_t)
    p_o = stats.betabinom.pmf(np.arange(n_o + 1), n_o, 1 + s_o, 1 + f_o)
    gap = np.maximum(0.0, np.arange(n_o + 1)[None, :] / n_o - np.arange(n_t + 1)[:, None] / n_t)
    exact = float(p_t @ gap @ p_o)
    s, f = np.array([a[0] for a in arms], float), np.array([a[1] for a in arms], float)
    assert betabinomial_loss_against_best(s, f, target) == pytest.approx(exact, rel=1e-9, abs=1e-15)
