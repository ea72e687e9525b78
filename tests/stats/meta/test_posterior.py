"""Each experiment's posterior mixed over τ: the quadrature against adaptive quadrature (scipy.integrate.quad)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from hoglab.stats._meta.posterior import posteriors, tau_posterior
from hoglab.stats._meta.tau import tau2_estimate


def _restricted_matrices(y: np.ndarray, v: np.ndarray, tau: float) -> float:
    """log L_R(τ) as the general restricted likelihood (Harville 1977) with matrices:
    −½ log|Σ| − ½ log|XᵀΣ⁻¹X| − ½ (y − Xβ̂)ᵀΣ⁻¹(y − Xβ̂), Σ = diag(v + τ²), X = 1."""
    sigma = np.diag(v + tau * tau)
    inverse = np.linalg.inv(sigma)
    x = np.ones((y.size, 1))
    information = x.T @ inverse @ x
    beta = np.linalg.solve(information, x.T @ inverse @ y)
    r = y - x @ beta
    return float(-0.5 * np.linalg.slogdet(sigma)[1] - 0.5 * np.linalg.slogdet(information)[1] - 0.5 * r @ inverse @ r)


def _restricted(y: np.ndarray, v: np.ndarray, tau: float) -> float:
    """The same for a diagonal Σ, fast enough for adaptive quadrature."""
    w = 1 / (v + tau * tau)
    r = y - w @ y / w.sum()
    return float(0.5 * np.log(w).sum() - 0.5 * math.log(w.sum()) - 0.5 * w @ (r * r))


def test_the_diagonal_restricted_likelihood_is_the_general_one() -> None:
    rng = np.random.default_rng(3)
    se = rng.uniform(0.005, 0.03, 7)
    y, v = rng.normal(0, 0.02, 7), se * se
    for tau in (0.0, 0.01, 0.1):
        assert _restricted(y, v, tau) == pytest.approx(_restricted_matrices(y, v, tau), rel=1e-12)


def _by_quad(y: np.ndarray, v: np.ndarray, i: int, point: float) -> tuple[float, float]:
    """E[θ_i | y] and P(θ_i ≤ point | y) by adaptive quadrature over τ (flat prior on τ², so p(τ) ∝ τ·L_R),
    from the definitions."""
    tau_hat, scale = math.sqrt(tau2_estimate(y, v, "reml")), math.sqrt(float(np.median(v)))
    top = _restricted(y, v, max(tau_hat, scale))

    def density(tau: float) -> float:
        return tau * math.exp(_restricted(y, v, tau) - top)

    def conditional(tau: float) -> tuple[float, float]:
        w = 1 / (v + tau * tau)
        mu, mu_var = float(w @ y / w.sum()), float(1 / w.sum())
        b = v[i] / (v[i] + tau * tau)
        return b * mu + (1 - b) * y[i], math.sqrt((1 - b) * v[i] + b * b * mu_var)

    def mean(tau: float) -> float:
        return density(tau) * conditional(tau)[0]

    def cdf(tau: float) -> float:
        m, s = conditional(tau)
        return density(tau) * float(stats.norm.cdf(point, m, s))

    cuts = sorted({0.0, tau_hat, scale / 2, scale, 2 * scale, 10 * scale})
    total = [0.0, 0.0, 0.0]
    for low, high in zip(cuts, [*cuts[1:], math.inf], strict=True):
        if high > low:
            for j, f in enumerate((density, mean, cdf)):
                total[j] += integrate.quad(f, low, high, epsabs=0, epsrel=1e-12, limit=500)[0]
    return total[1] / total[0], total[2] / total[0]


@pytest.mark.parametrize("k", [4, 5, 12, 40, 300])
@pytest.mark.parametrize("tau", [0.0, 0.008, 0.04])
def test_the_mixture_over_tau_equals_adaptive_quadrature(k: int, tau: float) -> None:
    rng = np.random.default_rng(1000 * k + int(tau * 1000))
    se = rng.uniform(0.005, 0.03, k)
    y = rng.normal(0.01, tau, k) + rng.normal(0, se)
    v = se * se
    post = posteriors(y, v, tau_posterior(y, v))
    for i in (0, k - 1):
        low, high = (float(end[i]) for end in post.quantiles(0.025, 0.975))
        mean, below_low = _by_quad(y, v, i, low)
        assert post.mean[i] == pytest.approx(mean, rel=1e-9, abs=1e-12)
        assert below_low == pytest.approx(0.025, abs=1e-9)
        assert _by_quad(y, v, i, high)[1] == pytest.approx(0.975, abs=1e-9)
