"""PostHog's v2 Bayesian statistics, deterministic, against seeded Monte Carlo of PostHog's own sampling
definitions (``funnels_statistics_v2.py``, ``trends_statistics_v2_count.py``, ``..._continuous.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import PostHogStatsError, StudentTPosterior
from hoglab.stats.posthog import (
    continuous_posterior_v2,
    continuous_verdict_v2,
    count_verdict_v2,
    funnel_verdict_v2,
    loss_against_best,
)

DRAWS = 400_000


def _best_shares(samples: np.ndarray) -> np.ndarray:
    return (samples == samples.max(axis=0)).mean(axis=1)  # type: ignore[no-any-return]


def test_funnel_probabilities_are_posthogs_beta_draws_without_the_noise() -> None:
    arms = {"control": (120, 880), "a": (150, 850), "b": (140, 860)}
    rng = np.random.default_rng(1)
    draws = np.array([rng.beta(1 + s, 1 + f, DRAWS) for s, f in arms.values()])
    verdict = funnel_verdict_v2(arms)
    expected = _best_shares(draws)
    assert list(verdict.probability.values()) == pytest.approx(expected, abs=4e-3)
    assert verdict.credible_intervals["a"] == pytest.approx(stats.beta.ppf([0.025, 0.975], 151, 851))
    assert verdict.significance_code.value == ("significant" if expected.max() >= 0.9 else "low_win_probability")


def test_count_loss_is_against_the_best_of_the_others() -> None:
    arms = {"control": (1000, 1000), "a": (1150, 1000), "b": (1120, 1000)}
    rng = np.random.default_rng(2)
    draws = np.array([rng.gamma(1 + c, 1 / (1 + n), DRAWS) for c, n in arms.values()])
    verdict = count_verdict_v2(arms)
    assert list(verdict.probability.values()) == pytest.approx(_best_shares(draws), abs=4e-3)
    monte_carlo = np.maximum(0, np.maximum(draws[0], draws[2]) - draws[1]).mean()
    assert verdict.significance_code.value in ("significant", "high_loss", "low_win_probability")
    assert loss_against_best(_gamma(arms), 1) == pytest.approx(monte_carlo, rel=0.02)


def _gamma(arms):  # type: ignore[no-untyped-def]
    from hoglab.stats import GammaPosterior

    return GammaPosterior([1 + c for c, _ in arms.values()], [1 + n for _, n in arms.values()])


def test_continuous_uses_the_student_t_posterior_of_the_log_mean() -> None:
    arms = {"control": (10.0, 400), "test": (11.5, 420)}
    posterior = continuous_posterior_v2(np.array([10.0, 11.5]), np.array([400.0, 420.0]))
    rng = np.random.default_rng(3)
    draws = np.array([posterior.loc[i] + posterior.scale[i] * rng.standard_t(posterior.df[i], DRAWS) for i in range(2)])
    verdict = continuous_verdict_v2(arms)
    assert list(verdict.probability.values()) == pytest.approx(_best_shares(draws), abs=4e-3)
    t = stats.t(df=posterior.df[1], loc=posterior.loc[1], scale=posterior.scale[1])
    assert verdict.credible_intervals["test"] == pytest.approx(tuple(np.exp(t.interval(0.95)) - 1e-10))
    if verdict.significance_code.value in ("significant", "high_loss"):
        monte_carlo = np.maximum(0, np.exp(draws[0]) - np.exp(draws[1])).mean()
        assert verdict.expected_loss == pytest.approx(monte_carlo, rel=0.03)


def test_the_decisions_follow_posthogs_order() -> None:
    assert count_verdict_v2({"control": (50, 99), "test": (90, 100)}).significance_code.value == "not_enough_exposure"
    close = count_verdict_v2({"control": (100, 1000), "test": (101, 1000)})
    assert close.significance_code.value == "low_win_probability"
    # A clear winner whose rate is very uncertain in absolute units: the loss step refuses it.
    high = count_verdict_v2({"control": (5000, 100), "test": (5150, 100)})
    assert high.significance_code.value == "high_loss" and high.expected_loss >= 0.01
    with pytest.raises(PostHogStatsError) as info:
        count_verdict_v2({"control": (1, 1)})
    assert info.value.code == "no_data"
    with pytest.raises(PostHogStatsError) as info:
        funnel_verdict_v2({"control": (1, 1), **{f"t{i}": (1, 1) for i in range(10)}})
    assert info.value.code == "too_much_data"


def test_student_t_posterior_matches_scipy() -> None:
    post = StudentTPosterior([0.3, -1.0], [0.5, 2.0], [7.0, 31.0])
    x = np.linspace(-5, 5, 11)[None, :]
    for i, (loc, scale, df) in enumerate([(0.3, 0.5, 7.0), (-1.0, 2.0, 31.0)]):
        t = stats.t(df=df, loc=loc, scale=scale)
        assert post.cdf(x)[i] == pytest.approx(t.cdf(x[0]), rel=1e-10)
        assert post.pdf(x)[i] == pytest.approx(t.pdf(x[0]), rel=1e-10)
        partial = [t.expect(lambda v, c=c: max(v - c, 0.0)) for c in x[0]]
        assert post.upper_partial(x)[i] == pytest.approx(partial, rel=1e-6, abs=1e-10)
