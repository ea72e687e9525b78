"""Deterministic Bayesian quantities against closed forms and independent quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from hoglab.stats import (
    BetaPosterior,
    GammaPosterior,
    NormalPosterior,
    StatsInputError,
    chance_to_be_best,
    chance_to_beat,
    credible_intervals,
    difference_interval,
    expected_loss,
    lift_interval,
)


def beta_b_beats_a(a_a: int, b_a: int, a_b: int, b_b: int) -> float:
    """Closed form for integer α_B (Evan Miller, "Formulas for Bayesian A/B testing")."""
    i = np.arange(a_b)
    terms = (
        special.betaln(a_a + i, b_b + b_a)
        - np.log(b_b + i)
        - special.betaln(1 + i, b_b)
        - special.betaln(a_a, b_a)
    )
    return float(np.exp(terms).sum())


def gamma_b_beats_a(k_a: int, r_a: float, k_b: int, r_b: float) -> float:
    """Closed form for integer shape k_B (Evan Miller, count data)."""
    i = np.arange(k_b)
    log_terms = (
        i * np.log(r_b)
        + k_a * np.log(r_a)
        - (i + k_a) * np.log(r_a + r_b)
        - np.log(i + k_a)
        - special.betaln(i + 1, k_a)
    )
    return float(np.exp(log_terms).sum())


BETA_CASES = [
    (61, 441, 86, 416),
    (3, 30, 1, 40),
    (1, 101, 1, 101),
    (400, 9600, 460, 9540),
    (20, 2, 25, 1),
    (1, 1, 2, 1),
]


@pytest.mark.parametrize(("a_a", "b_a", "a_b", "b_b"), BETA_CASES)
def test_beta_chance_to_beat_matches_closed_form(a_a: int, b_a: int, a_b: int, b_b: int) -> None:
    got = chance_to_beat(BetaPosterior(np.array([a_a, a_b]), np.array([b_a, b_b])))[1]
    assert got == pytest.approx(beta_b_beats_a(a_a, b_a, a_b, b_b), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("k_a", "r_a", "k_b", "r_b"), [(121, 1000, 151, 1020), (1, 50, 4, 60), (30, 2.5, 25, 3.1)]
)
def test_gamma_chance_to_beat_matches_closed_form(k_a: int, r_a: float, k_b: int, r_b: float) -> None:
    got = chance_to_beat(GammaPosterior(np.array([k_a, k_b]), np.array([r_a, r_b])))[1]
    assert got == pytest.approx(gamma_b_beats_a(k_a, r_a, k_b, r_b), rel=1e-9)


def test_normal_loss_and_win_match_closed_form() -> None:
    post = NormalPosterior(np.array([1.0, 1.3, 0.7]), np.array([0.2, 0.3, 0.05]))
    diff_mean = post.mean - 1.0
    diff_sd = np.hypot(post.sd, 0.2)
    win = chance_to_beat(post)
    loss = expected_loss(post)
    for i in (1, 2):
        assert win[i] == pytest.approx(stats.norm.sf(0, diff_mean[i], diff_sd[i]), rel=1e-10)
        z = diff_mean[i] / diff_sd[i]  # E[max(0, -D)] for D ~ N(μ, σ²)
        closed = diff_sd[i] * stats.norm.pdf(z) - diff_mean[i] * stats.norm.sf(z)
        assert loss[i] == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chance_to_be_best_matches_adaptive_quadrature(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 8))
    a = rng.integers(1, 300, size=k) + 1.0
    b = rng.integers(1, 3000, size=k) + 1.0
    got = chance_to_be_best(BetaPosterior(a, b))
    for i in range(k):

        def f(x: float, i: int = i) -> float:
            others = [stats.beta.cdf(x, a[j], b[j]) for j in range(k) if j != i]
            return float(stats.beta.pdf(x, a[i], b[i]) * np.prod(others))

        lo, hi = stats.beta.ppf([1e-14, 1 - 1e-14], a[i], b[i])
        ref = integrate.quad(f, lo, hi, epsabs=1e-13, epsrel=1e-11, limit=400, points=[a[i] / (a[i] + b[i])])[
            0
        ]
        assert got[i] == pytest.approx(ref, abs=1e-9)
    assert got.sum() == pytest.approx(1.0, abs=1e-9)


def test_many_similar_arms_are_resolved() -> None:
    # Ten overlapping arms put panel edges close together everywhere; the grid must still
    # cover the whole support with fine panels (a regression: merging chained into one panel).
    a = np.array([28.0, 23.0, 32.0, 25.0, 22.0, 27.0, 31.0, 25.0, 32.0, 26.0])
    b = 52.0 - a
    got = chance_to_be_best(BetaPosterior(a, b))
    assert got.sum() == pytest.approx(1.0, abs=1e-9)
    for i in (0, 2, 8):

        def f(x: float, i: int = i) -> float:
            others = [stats.beta.cdf(x, a[j], b[j]) for j in range(10) if j != i]
            return float(stats.beta.pdf(x, a[i], b[i]) * np.prod(others))

        assert got[i] == pytest.approx(integrate.quad(f, 0, 1, epsabs=1e-13, limit=200)[0], abs=1e-9)


def test_identical_arms_are_equally_likely_best() -> None:
    for post in (
        BetaPosterior(np.full(5, 31.0), np.full(5, 270.0)),
        GammaPosterior(np.full(4, 80.0), np.full(4, 9.0)),
    ):
        np.testing.assert_allclose(chance_to_be_best(post), 1.0 / len(post), atol=1e-10)


@pytest.mark.parametrize(
    ("a_c", "b_c", "a_t", "b_t"), [(31, 270, 40, 262), (61, 441, 86, 416), (3, 40, 2, 41)]
)
def test_beta_expected_loss_matches_closed_form(a_c: int, b_c: int, a_t: int, b_t: int) -> None:
    # E[max(0, C − T)] = μ_C·P(C⁺ > T) − μ_T·P(C > T⁺), with C⁺ ~ Beta(α_C + 1, β_C) (Stucchio 2015,
    # "Bayesian A/B Testing at VWO", appendix), each probability from the closed form above.
    mu_c, mu_t = a_c / (a_c + b_c), a_t / (a_t + b_t)
    ref = mu_c * beta_b_beats_a(a_t, b_t, a_c + 1, b_c) - mu_t * beta_b_beats_a(a_t + 1, b_t, a_c, b_c)
    got = expected_loss(BetaPosterior(np.array([a_c, a_t], dtype=float), np.array([b_c, b_t], dtype=float)))[
        1
    ]
    assert got == pytest.approx(ref, rel=1e-8)


def test_credible_intervals_are_scipy_quantiles() -> None:
    post = BetaPosterior(np.array([61.0, 86.0]), np.array([441.0, 416.0]))
    np.testing.assert_allclose(
        credible_intervals(post),
        stats.beta.ppf([[0.025, 0.975]], post.alpha[:, None], post.beta[:, None]),
        rtol=1e-12,
    )
    gam = GammaPosterior(np.array([121.0]), np.array([1000.0]))
    np.testing.assert_allclose(
        credible_intervals(gam, 0.9)[0], stats.gamma.ppf([0.05, 0.95], 121, scale=1e-3), rtol=1e-12
    )


def _difference_cdf(post: BetaPosterior | GammaPosterior, frozen: list, d: float) -> float:
    """P(X_1 − X_0 ≤ d) by adaptive quadrature over the control."""
    c, t = frozen
    lo, hi = c.ppf([1e-15, 1 - 1e-15])
    return integrate.quad(lambda x: c.pdf(x) * t.cdf(x + d), lo, hi, epsabs=1e-13, epsrel=1e-12, limit=500)[0]


@pytest.mark.parametrize(
    ("post", "frozen"),
    [
        (
            BetaPosterior(np.array([61.0, 86.0]), np.array([441.0, 416.0])),
            [stats.beta(61, 441), stats.beta(86, 416)],
        ),
        (
            BetaPosterior(np.array([1.0, 3.0]), np.array([101.0, 99.0])),
            [stats.beta(1, 101), stats.beta(3, 99)],
        ),
        (
            BetaPosterior(np.array([1.0, 1.0]), np.array([101.0, 101.0])),
            [stats.beta(1, 101), stats.beta(1, 101)],
        ),
        (BetaPosterior(np.array([100.0, 9.0]), np.array([1.0, 1.0])), [stats.beta(100, 1), stats.beta(9, 1)]),
        (
            GammaPosterior(np.array([121.0, 151.0]), np.array([1000.0, 1020.0])),
            [stats.gamma(121, scale=1e-3), stats.gamma(151, scale=1 / 1020)],
        ),
    ],
)
def test_difference_interval_solves_the_cdf(post: BetaPosterior, frozen: list) -> None:
    lo, hi = difference_interval(post)[1]
    assert _difference_cdf(post, frozen, lo) == pytest.approx(0.025, abs=1e-8)
    assert _difference_cdf(post, frozen, hi) == pytest.approx(0.975, abs=1e-8)


def test_beta_lift_interval_solves_the_cdf() -> None:
    c, t = stats.beta(31, 270), stats.beta(40, 262)
    lo, hi = lift_interval(BetaPosterior(np.array([31.0, 40.0]), np.array([270.0, 262.0])))[1]

    def cdf(lift: float) -> float:  # P(T/C − 1 ≤ lift)
        return integrate.quad(lambda x: c.pdf(x) * t.cdf((1 + lift) * x), 0, 1, epsabs=1e-13, limit=400)[0]

    assert cdf(lo) == pytest.approx(0.025, abs=1e-8)
    assert cdf(hi) == pytest.approx(0.975, abs=1e-8)


def test_gamma_lift_interval_is_the_f_distribution() -> None:
    # (Y_t/k_t)/(Y_c/k_c) ~ F(2k_t, 2k_c) for Gamma(k, 1) variables Y.
    k_c, r_c, k_t, r_t = 121, 1000.0, 151, 1020.0
    lo, hi = lift_interval(
        GammaPosterior(np.array([k_c, k_t], dtype=float), np.array([r_c, r_t])), alpha=0.1
    )[1]
    scale = (k_t / r_t) / (k_c / r_c)
    ref = stats.f.ppf([0.05, 0.95], 2 * k_t, 2 * k_c) * scale - 1
    assert lo == pytest.approx(ref[0], rel=1e-9)
    assert hi == pytest.approx(ref[1], rel=1e-9)


def test_same_inputs_give_identical_outputs() -> None:
    def run() -> tuple[np.ndarray, ...]:
        post = BetaPosterior(np.array([61.0, 86.0, 70.0]), np.array([441.0, 416.0, 430.0]))
        return chance_to_be_best(post), expected_loss(post), difference_interval(post), lift_interval(post)

    first = run()
    for _ in range(3):
        for x, y in zip(first, run(), strict=True):
            np.testing.assert_array_equal(x, y)


def test_millions_of_exposures_stay_finite() -> None:
    n = 10_000_000
    post = BetaPosterior.from_counts(
        np.array([1_000_000, 1_001_500, 0]), np.array([n - 1_000_000, n - 1_001_500, n])
    )
    for value in (chance_to_be_best(post), chance_to_beat(post), expected_loss(post)):
        assert np.all(np.isfinite(value[~np.isnan(value)]))
    assert chance_to_be_best(post).sum() == pytest.approx(1.0, abs=1e-9)
    p = chance_to_beat(post.take([0, 1]))[1]
    ref = stats.norm.sf(0, post.mean[1] - post.mean[0], math.hypot(post.sd[0], post.sd[1]))
    assert p == pytest.approx(ref, abs=1e-3)  # the posterior is all but Normal at this size
    d = difference_interval(post)
    assert np.all(np.isfinite(d[1:]))
    gam = GammaPosterior(np.array([5e7, 5.002e7]), np.array([1e8, 1e8]))
    assert np.all(np.isfinite(lift_interval(gam)[1])) and np.isfinite(expected_loss(gam)[1])


def test_bad_posteriors() -> None:
    with pytest.raises(StatsInputError):
        BetaPosterior(np.array([0.0, 1.0]), np.array([1.0, 1.0]))
    with pytest.raises(StatsInputError):
        chance_to_beat(BetaPosterior(np.array([1.0]), np.array([1.0])))
    with pytest.raises(StatsInputError):
        NormalPosterior(np.array([1.0]), np.array([-1.0]))
