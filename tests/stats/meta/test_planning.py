"""Planning from a history's prior: every figure against numerical integration over the true effect."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from hoglab.stats import StatsInputError, meta_analysis, plan_from_history
from hoglab.stats._meta.planning import bivariate_upper


def _upper_by_quad(h: float, k: float, rho: float) -> float:
    """P(X > h, Y > k) = ∫_h^∞ φ(x)·P(Y > k | x) dx, Y | x ~ N(ρx, 1 − ρ²)."""
    root = math.sqrt(1 - rho * rho)
    return integrate.quad(lambda x: stats.norm.pdf(x) * stats.norm.sf((k - rho * x) / root), h, math.inf,
                          epsabs=1e-14, epsrel=1e-12)[0]  # fmt: skip


@pytest.mark.parametrize(
    ("h", "k", "rho"),
    [(0.3, -0.2, 0.6), (0.0, 0.5, 0.3), (0.5, 0.0, -0.4), (0.0, 0.0, 0.2), (-1.0, 2.0, 0.9), (0.0, -0.7, 0.5),
     (-0.4, 0.0, 0.5), (2.5, 3.0, 0.99), (-3.0, -2.0, -0.8), (1.0, 1.0, 0.0)],
)  # fmt: skip
def test_owens_t_orthant_probabilities_equal_quadrature(h: float, k: float, rho: float) -> None:
    assert bivariate_upper(h, k, rho)[0] == pytest.approx(_upper_by_quad(h, k, rho), abs=1e-12)


def _history(seed: int = 21) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rng.integers(5_000, 80_000, 40)
    n_c = (n * rng.uniform(0.9, 1.1, 40)).astype(int)
    se = np.sqrt(0.4 * (1 / n + 1 / n_c))  # a lift variance of 0.4 with one unit per arm
    return pd.DataFrame({"estimate": rng.normal(0.008, 0.015, 40) + rng.normal(0, se), "standard_error": se,
                         "units": n, "control_units": n_c})  # fmt: skip


def _by_quad(mu: float, sd: float, s: float, c: float) -> dict[str, float]:
    """The plan's figures for an experiment with standard error s and critical value c, by integrating over the
    true effect θ ~ N(mu, sd²) (and, for the read lift, over y ~ N(mu, sd² + s²))."""
    prior = stats.norm(mu, sd)

    def over_prior(f: Callable[[float], float], low: float = -math.inf, high: float = math.inf) -> float:
        return integrate.quad(lambda t: prior.pdf(t) * f(t), low, high, epsabs=1e-13, epsrel=1e-11, limit=200)[0]

    def win_given(t: float) -> float:
        return float(stats.norm.sf(c, t, s))

    def loss_given(t: float) -> float:
        return float(stats.norm.cdf(-c, t, s))

    win = over_prior(win_given)
    sd_y = math.sqrt(sd**2 + s**2)
    return {
        "chance_significant_win": win,
        "chance_significant_loss": over_prior(loss_given),
        "assurance": over_prior(win_given, 0, math.inf) + over_prior(loss_given, -math.inf, 0),
        "win_reads": integrate.quad(lambda y: y * stats.norm.pdf(y, mu, sd_y), c, math.inf, epsrel=1e-11)[0] / win,
        "win_worth": over_prior(lambda t: t * win_given(t)) / win,
    }


def test_each_planned_size_restates_the_integrals_over_the_prior() -> None:
    fit = meta_analysis(_history())
    plan = plan_from_history(fit, units=[2_000, 20_000, 200_000], alpha=0.1, power=0.9)
    mu, sd = fit.prior.mean, fit.prior.sd
    for row in plan.to_frame().to_dict("records"):
        s = math.sqrt(2 * 0.4 / row["units"])
        assert row["standard_error"] == pytest.approx(s, rel=1e-12)  # the history's noise per unit is exactly 0.4
        ref = _by_quad(mu, sd, s, stats.norm.ppf(0.95) * s)
        for name in ("chance_significant_win", "chance_significant_loss", "assurance"):
            assert row[name] == pytest.approx(ref[name], abs=1e-10), name
        assert row["wrong_sign"] == pytest.approx(ref["chance_significant_win"] + ref["chance_significant_loss"]
                                                  - ref["assurance"], abs=1e-10)  # fmt: skip
        # A significant win's average read and true lift: E[y | y > c] and E[θ | y > c].
        assert row["win_reads"] == pytest.approx(ref["win_reads"], rel=1e-8)
        assert row["win_worth"] == pytest.approx(ref["win_worth"], rel=1e-8)
        assert row["win_reads"] > row["win_worth"]  # the winner's curse at this size
        mde = (stats.norm.ppf(0.95) + stats.norm.ppf(0.9)) * s
        assert row["mde"] == pytest.approx(mde, rel=1e-12)
        assert row["share_detectable"] == pytest.approx(stats.norm.sf(mde, mu, sd) + stats.norm.cdf(-mde, mu, sd),
                                                        rel=1e-12)  # fmt: skip


def test_bigger_experiments_detect_more_and_overstate_less() -> None:
    frame = plan_from_history(_history(), units=[1_000, 10_000, 100_000, 1_000_000]).to_frame()
    assert frame["assurance"].is_monotonic_increasing and frame["mde"].is_monotonic_decreasing
    assert (frame["win_reads"] - frame["win_worth"]).is_monotonic_decreasing


def test_sizing_by_standard_error_needs_no_unit_columns() -> None:
    history = _history().drop(columns=["units", "control_units"])
    plan = plan_from_history(history, standard_error=[0.01, 0.005])
    assert plan.to_frame()["units"].isna().all()
    assert "SE 1.00%" in plan.summary() and "<table" in plan._repr_html_()
    with pytest.raises(StatsInputError, match="'units' and 'control_units'"):
        plan_from_history(history, units=10_000)
    with pytest.raises(StatsInputError, match="exactly one"):
        plan_from_history(history)
    with pytest.raises(StatsInputError, match="power"):
        plan_from_history(history, standard_error=0.01, power=1.0)
    with pytest.raises(StatsInputError, match="positive"):
        plan_from_history(history, standard_error=[0.01, -0.01])


def test_a_simulated_program_of_experiments_matches_the_plan() -> None:
    # Draw true lifts from the prior and estimates at the planned size: the shares agree within sampling error.
    fit = meta_analysis(_history())
    row = plan_from_history(fit, units=30_000).to_frame().iloc[0]
    rng = np.random.default_rng(9)
    theta = rng.normal(fit.prior.mean, fit.prior.sd, 400_000)
    y = theta + rng.normal(0, row["standard_error"], theta.size)
    c = stats.norm.ppf(0.975) * row["standard_error"]
    significant_right = ((y > c) & (theta > 0)) | ((y < -c) & (theta < 0))
    assert significant_right.mean() == pytest.approx(row["assurance"], abs=4 * math.sqrt(0.25 / theta.size))
    assert theta[y > c].mean() == pytest.approx(row["win_worth"], abs=5e-4)
