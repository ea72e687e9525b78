"""The random-effects fit against statsmodels' combine_effects, R metafor's published numbers, and REML's definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from statsmodels.stats.meta_analysis import combine_effects

from hoglab.stats import meta_analysis
from hoglab.stats._meta.tau import generalised_q, q_profile_interval, tau2_estimate

# BCG vaccine trials (Colditz et al. 1994, JAMA 271:698; metafor's dat.bcg): vaccinated TB+, TB−, control TB+, TB−.
BCG = np.array([
    [4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619], [33, 5036, 47, 5761],
    [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892], [29, 7470, 45, 7232],
    [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338], [27, 16886, 29, 17825],
], dtype=float)  # fmt: skip


def _bcg() -> tuple[np.ndarray, np.ndarray]:
    """Log risk ratios and their variances (metafor's escalc(measure="RR"))."""
    tp, tn, cp, cn = BCG.T
    return np.log(tp / (tp + tn) / (cp / (cp + cn))), 1 / tp - 1 / (tp + tn) + 1 / cp - 1 / (cp + cn)


def _histories() -> list[tuple[np.ndarray, np.ndarray]]:
    """Generated histories of lifts with enough spread that Q > k − 1 (statsmodels leaves DL's τ² untruncated)."""
    out = []
    for seed, k, tau in [(1, 8, 0.04), (2, 25, 0.015), (3, 40, 0.03), (4, 120, 0.01)]:
        rng = np.random.default_rng(seed)
        se = rng.uniform(0.004, 0.03, k)
        y = rng.normal(0.01, tau, k) + rng.normal(0, se)
        assert generalised_q(y, se * se, 0.0) > k - 1
        out.append((y, se))
    return out


@pytest.mark.parametrize("history", _histories())
@pytest.mark.parametrize(("method", "statsmodels_method"), [("dl", "dl"), ("pm", "pm")])
def test_the_fit_equals_statsmodels_combine_effects(history: tuple[np.ndarray, np.ndarray], method: str,
                                                    statsmodels_method: str) -> None:  # fmt: skip
    y, se = history
    v = se * se
    # statsmodels' Paule–Mandel stops at |Q − (k − 1)| < atol (default 1e-5). 1e-8 puts its τ² within ~1e-11 of
    # the root (its Newton steps converge quadratically); much tighter fails: at Q's rounding (3e-14 for 120
    # experiments) its iteration reads a Q a few ulps under k − 1 as "τ² = 0" and returns 0.
    kwds = {"atol": 1e-8, "maxiter": 500} if method == "pm" else {}
    ref = combine_effects(y, v, method_re=statsmodels_method, **kwds)
    fit = meta_analysis(y, standard_error=se, method=method, shrinkage="empirical")
    assert fit.tau2 == pytest.approx(ref.tau2, rel=1e-9, abs=1e-15)
    assert fit.mean == pytest.approx(ref.mean_effect_re, rel=1e-9, abs=1e-15)
    assert fit.mean_se == pytest.approx(ref.sd_eff_w_re, rel=1e-9)
    _, ci_re, _, ci_hksj = ref.conf_int(alpha=0.05, use_t=False)
    np.testing.assert_allclose(fit.mean_ci, ci_re, rtol=1e-9, atol=1e-15)
    assert fit.fixed_mean == pytest.approx(ref.mean_effect_fe, rel=1e-9)
    assert fit.fixed_se == pytest.approx(ref.sd_eff_w_fe, rel=1e-9)
    assert fit.q == pytest.approx(ref.q, rel=1e-9)
    assert fit.q_p_value == pytest.approx(ref.test_homogeneity().pvalue, rel=1e-9, abs=1e-300)
    assert fit.i2 == pytest.approx(ref.i2, rel=1e-9)  # Q > k − 1 here, where statsmodels' I² is not truncated
    assert fit.h2 == pytest.approx(ref.h2, rel=1e-9)
    # Hartung–Knapp–Sidik–Jonkman: statsmodels' estimated-scale ("wls") interval with t_{k−1}.
    hksj = meta_analysis(y, standard_error=se, method=method, interval="hksj", shrinkage="empirical")
    _, _, _, ci_hksj = ref.conf_int(alpha=0.05, use_t=True)
    np.testing.assert_allclose(hksj.mean_ci, ci_hksj, rtol=1e-9, atol=1e-15)
    assert hksj.mean_se == pytest.approx(ref.sd_eff_w_re_hksj, rel=1e-9)


def test_paule_mandel_and_dl_equal_metafors_numbers_on_kackers_example() -> None:
    # Kacker 2004, computed with R metafor rma(method="PM"/"DL", control=list(tol=1e-9)), as statsmodels'
    # results_meta.py records them.
    y = np.array([61.0, 61.4, 62.21, 62.3, 62.34, 62.6, 62.7, 62.84, 65.9])
    v = np.array([0.2025, 1.2100, 0.0900, 0.2025, 0.3844, 0.5625, 0.0676, 0.0225, 1.8225])
    pm = meta_analysis(y, standard_error=np.sqrt(v), method="pm", shrinkage="empirical")
    assert pm.tau2 == pytest.approx(0.705395309224248, rel=1e-8)
    assert pm.mean == pytest.approx(62.4076199113286, rel=1e-10)
    assert pm.mean_se == pytest.approx(0.338030602684471, rel=1e-8)
    dl = meta_analysis(y, standard_error=np.sqrt(v), method="dl", shrinkage="empirical")
    assert dl.tau2 == pytest.approx(0.288049246973751, rel=1e-10)
    assert dl.mean_ci == pytest.approx((61.9084781058787, 62.8717991030221), rel=1e-12)
    assert dl.q == pytest.approx(24.801897741835, rel=1e-10)
    assert dl.i2 == pytest.approx(0.67744403741711, rel=1e-10)


def test_reml_equals_metafors_published_bcg_fit() -> None:
    # Viechtbauer 2010, "Conducting meta-analyses in R with the metafor package", J. Stat. Softw. 36(3), §4 (the
    # BCG example, REML): τ² = 0.3132, μ = −0.7145 (SE 0.1798, CI −1.0669 to −0.3622), Q(12) = 152.2330; its
    # confint(): τ² in [0.1197, 1.1115]. DerSimonian–Laird: τ² = 0.3088, μ = −0.7141 (SE 0.1787).
    y, v = _bcg()
    fit = meta_analysis(y, standard_error=np.sqrt(v), shrinkage="empirical")
    assert round(fit.tau2, 4) == 0.3132
    assert (round(fit.mean, 4), round(fit.mean_se, 4)) == (-0.7145, 0.1798)
    assert tuple(round(x, 4) for x in fit.mean_ci) == (-1.0669, -0.3622)
    assert round(fit.q, 4) == 152.2330
    assert tuple(round(x, 4) for x in fit.tau2_ci) == (0.1197, 1.1115)
    dl = meta_analysis(y, standard_error=np.sqrt(v), method="dl", shrinkage="empirical")
    assert (round(dl.tau2, 4), round(dl.mean, 4), round(dl.mean_se, 4)) == (0.3088, -0.7141, 0.1787)


def _restricted_loglik(y: np.ndarray, v: np.ndarray, tau2: float) -> float:
    """The general restricted log-likelihood with matrices (Harville 1977)."""
    sigma = np.diag(v + tau2)
    inverse = np.linalg.inv(sigma)
    x = np.ones((y.size, 1))
    information = x.T @ inverse @ x
    r = y - x @ np.linalg.solve(information, x.T @ inverse @ y)
    return float(-0.5 * np.linalg.slogdet(sigma)[1] - 0.5 * np.linalg.slogdet(information)[1] - 0.5 * r @ inverse @ r)


@pytest.mark.parametrize("history", _histories()[:3])
def test_reml_maximises_the_restricted_likelihood(history: tuple[np.ndarray, np.ndarray]) -> None:
    y, se = history
    v = se * se
    ours = tau2_estimate(y, v, "reml")
    found = optimize.minimize_scalar(lambda t: -_restricted_loglik(y, v, t), bounds=(0.0, 0.01), method="bounded",
                                     options={"xatol": 1e-14})  # fmt: skip
    # The optimiser's τ² is good to ~1e-8 (a flat maximum); the likelihood at ours is at least as high.
    assert ours == pytest.approx(found.x, rel=1e-5)
    assert _restricted_loglik(y, v, ours) >= _restricted_loglik(y, v, found.x) - 1e-12


def test_tau2_is_zero_when_the_experiments_agree_more_than_their_noise() -> None:
    y, v = np.array([0.01, 0.012, 0.009, 0.011]), np.full(4, 0.01**2)
    for method in ("dl", "pm", "reml"):
        assert tau2_estimate(y, v, method) == 0.0  # type: ignore[arg-type]
    assert q_profile_interval(y, v, 0.05) == (0.0, 0.0)
    fit = meta_analysis(y, standard_error=np.sqrt(v), shrinkage="empirical")
    assert fit.i2 == 0.0 and fit.mean == pytest.approx(np.mean(y))
    assert fit.win_rate == 1.0  # τ = 0: every true effect is the (positive) mean


def test_q_profile_interval_ends_where_the_generalised_q_meets_its_chi_square_quantiles() -> None:
    from scipy import stats

    y, se = _histories()[2]
    v = se * se
    low, high = q_profile_interval(y, v, 0.05)
    assert generalised_q(y, v, low) == pytest.approx(stats.chi2.ppf(0.975, y.size - 1), rel=1e-12)
    assert generalised_q(y, v, high) == pytest.approx(stats.chi2.ppf(0.025, y.size - 1), rel=1e-12)
    assert low < tau2_estimate(y, v, "pm") < high


def test_scale_equivariance() -> None:
    # Lifts in percent points instead of fractions: τ² scales by 100², every estimator.
    y, se = _histories()[1]
    for method in ("dl", "pm", "reml"):
        small = tau2_estimate(y, se * se, method)  # type: ignore[arg-type]
        large = tau2_estimate(100 * y, (100 * se) ** 2, method)  # type: ignore[arg-type]
        assert large == pytest.approx(1e4 * small, rel=1e-12)
        assert math.isfinite(small)
