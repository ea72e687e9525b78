"""meta_analysis: the history frame in, shrunken estimates, win rates and the winner's curse against restatements."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from hoglab.stats import MetaAnalysis, StatsInputError, meta_analysis, prior_from_history


def _history(seed: int = 11, k: int = 30, tau: float = 0.02) -> pd.DataFrame:
    """A history frame as ``client.experiments.history`` shapes it: one row per experiment × arm, the control's
    row without a lift."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.005, tau, k)
    units = rng.integers(4_000, 60_000, k)
    se = np.sqrt(0.6 * 2 / units)
    lift = truth + rng.normal(0, se)
    significant = lift / se > 1.96
    tests = pd.DataFrame({
        "experiment_id": np.arange(k) + 100, "experiment": [f"exp {i}" for i in range(k)], "metric": "revenue",
        "variant": "test", "estimate": lift, "standard_error": se, "units": units, "control_units": units,
        "start_date": pd.Timestamp("2026-01-05") + pd.to_timedelta(7 * np.arange(k), unit="D"),
        "decision": np.where(significant, "ship", "stop"), "shipped": significant,
    })  # fmt: skip
    controls = tests.assign(variant="control", estimate=np.nan, standard_error=np.nan, decision=None, shipped=None)
    return pd.concat([tests, controls]).sort_values(["experiment_id", "variant"]).reset_index(drop=True)


def test_a_history_frame_feeds_directly_and_keeps_its_columns() -> None:
    history = _history()
    fit = meta_analysis(history)
    assert fit.experiments == 30 and fit.left_out == 30  # the control rows
    assert fit.metric == "revenue"
    frame = fit.to_frame()
    assert list(frame.columns[: history.shape[1]]) == list(history.columns)
    assert (frame["variant"] == "test").all()
    assert frame["experiment_id"].tolist() == list(range(100, 130))
    assert fit.winners_curse is not None
    assert fit.winners_curse.shipped == int(history["shipped"].fillna(False).astype(bool).sum())
    assert math.isfinite(fit.unit_variance) and fit.unit_variance == pytest.approx(0.6, rel=1e-12)


def test_arrays_give_the_same_fit_as_the_frame() -> None:
    history = _history().dropna(subset=["estimate"])
    by_frame = meta_analysis(history)
    by_arrays = meta_analysis(history["estimate"].to_numpy(), standard_error=history["standard_error"].to_numpy(),
                              shipped=history["shipped"].to_numpy())  # fmt: skip
    for name in ("mean", "mean_se", "tau2", "q", "win_rate", "naive_win_rate", "expected_winners"):
        assert getattr(by_arrays, name) == getattr(by_frame, name), name
    pd.testing.assert_frame_equal(by_arrays.to_frame()[["shrunken", "shrunken_ci_low"]],
                                  by_frame.to_frame()[["shrunken", "shrunken_ci_low"]])  # fmt: skip


def test_several_metrics_must_be_narrowed_to_one() -> None:
    history = pd.concat([_history(), _history(seed=12).assign(metric="conversion")], ignore_index=True)
    with pytest.raises(StatsInputError, match="several metrics"):
        meta_analysis(history)
    assert meta_analysis(history, metric="conversion").metric == "conversion"
    with pytest.raises(StatsInputError, match="no rows of metric"):
        meta_analysis(history, metric="latency")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h.assign(standard_error=-h["standard_error"]), "positive"),
        (lambda h: h.drop(columns=["standard_error"]), "no standard error column"),
        (lambda h: h.assign(shipped="yes"), "true/false"),
        (lambda h: h.head(1), "at least 2"),
        (lambda h: h.assign(estimate=np.inf), "finite"),
    ],
)
def test_bad_histories_are_refused(change: object, message: str) -> None:
    history = _history().dropna(subset=["estimate"]).reset_index(drop=True)
    with pytest.raises(StatsInputError, match=message):
        meta_analysis(change(history))  # type: ignore[operator]


def test_the_standard_error_column_may_be_called_se_and_arrays_need_theirs() -> None:
    history = _history().rename(columns={"standard_error": "se"})
    assert meta_analysis(history).experiments == 30
    with pytest.raises(StatsInputError, match="standard errors"):
        meta_analysis([0.1, 0.2, 0.3])
    with pytest.raises(StatsInputError, match="3 estimates but 2"):
        meta_analysis([0.1, 0.2, 0.3], standard_error=[0.1, 0.1])


def test_empirical_bayes_estimates_restate_metafors_blup_on_statsmodels_fit() -> None:
    # metafor's blup(): pred = B·μ̂ + (1 − B)·y, se = √((1 − B)v + B²·Var(μ̂)), B = v/(v + τ²); with statsmodels'
    # DerSimonian–Laird τ², μ̂ and Var(μ̂) as the fit.
    history = _history(seed=5).dropna(subset=["estimate"])
    y, se = history["estimate"].to_numpy(), history["standard_error"].to_numpy()
    v = se**2
    ref = combine_effects(y, v, method_re="dl")
    fit = meta_analysis(history, method="dl", shrinkage="empirical")
    frame = fit.to_frame()
    b = v / (v + ref.tau2)
    pred = b * ref.mean_effect_re + (1 - b) * y
    pred_se = np.sqrt((1 - b) * v + b**2 * ref.var_eff_w_re)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(frame["shrinkage"], b, rtol=1e-9)
    np.testing.assert_allclose(frame["shrunken"], pred, rtol=1e-9)
    np.testing.assert_allclose(frame["shrunken_se"], pred_se, rtol=1e-9)
    np.testing.assert_allclose(frame["shrunken_ci_low"], pred - z * pred_se, rtol=1e-9)
    np.testing.assert_allclose(frame["shrunken_ci_high"], pred + z * pred_se, rtol=1e-9)
    np.testing.assert_allclose(frame["chance_positive"], stats.norm.sf(0, pred, pred_se), rtol=1e-9)
    np.testing.assert_allclose(frame["weight"], ref.weights_rel_re, rtol=1e-9)
    np.testing.assert_allclose(frame["p_value"], 2 * stats.norm.sf(np.abs(y) / se), rtol=1e-9)
    # The win rates: the fitted distribution's share above 0, the naive share of significant wins.
    assert fit.win_rate == pytest.approx(stats.norm.sf(0, ref.mean_effect_re, math.sqrt(ref.tau2)), rel=1e-9)
    assert fit.naive_win_rate == np.mean(y / se > z)
    assert fit.expected_winners == pytest.approx(stats.norm.sf(0, pred, pred_se).sum(), rel=1e-9)
    # The prior for a new experiment: N(μ̂, τ̂² + Var(μ̂)).
    assert fit.prior.mean == pytest.approx(ref.mean_effect_re, rel=1e-9)
    assert fit.prior.variance == pytest.approx(ref.tau2 + ref.var_eff_w_re, rel=1e-9)
    # The prediction interval of a new true effect: μ̂ ± t_{k−2}·√(τ² + Var(μ̂)) (Higgins et al. 2009).
    half = stats.t.ppf(0.975, y.size - 2) * math.sqrt(ref.tau2 + ref.var_eff_w_re)
    assert fit.prediction_interval == pytest.approx((ref.mean_effect_re - half, ref.mean_effect_re + half), rel=1e-9)


def test_the_winners_curse_restates_the_shipped_experiments_posterior() -> None:
    history = _history(seed=6).dropna(subset=["estimate"]).reset_index(drop=True)
    fit = meta_analysis(history, shrinkage="empirical")
    frame = fit.to_frame()
    shipped = frame["shipped"].astype(bool).to_numpy()
    assert fit.winners_curse is not None and shipped.sum() >= 3
    curse = fit.winners_curse
    v, b = frame["standard_error"].to_numpy() ** 2, frame["shrinkage"].to_numpy()
    assert curse.observed_total == pytest.approx(frame["estimate"][shipped].sum(), rel=1e-12)
    assert curse.expected_total == pytest.approx(frame["shrunken"][shipped].sum(), rel=1e-12)
    variance = ((1 - b) * v)[shipped].sum() + b[shipped].sum() ** 2 * fit.model_se**2
    assert curse.expected_total_se == pytest.approx(math.sqrt(variance), rel=1e-9)
    assert curse.expected_mean == pytest.approx(curse.expected_total / shipped.sum(), rel=1e-12)
    assert curse.overstatement > 0 and 0 < curse.kept_share < 1  # wins read high
    # The same variance by simulation of the posterior: μ ~ N(μ̂, Var μ̂), then θ_i | μ independent.
    rng = np.random.default_rng(0)
    mu = rng.normal(fit.mean, fit.model_se, 200_000)
    y = frame["estimate"].to_numpy()[shipped]
    theta = b[shipped] * mu[:, None] + (1 - b[shipped]) * y + rng.normal(0, np.sqrt((1 - b) * v)[shipped],
                                                                         (mu.size, shipped.sum()))  # fmt: skip
    total = theta.sum(axis=1)
    assert total.mean() == pytest.approx(curse.expected_total, abs=4 * total.std() / math.sqrt(total.size))
    assert total.std() == pytest.approx(curse.expected_total_se, rel=0.01)


def test_hierarchical_totals_of_one_experiment_are_its_posterior() -> None:
    history = _history(seed=7).dropna(subset=["estimate"]).reset_index(drop=True)
    only = np.zeros(len(history), dtype=bool)
    only[3] = True
    fit = meta_analysis(history.assign(shipped=only))
    row = fit.to_frame().iloc[3]
    assert fit.winners_curse is not None
    assert fit.winners_curse.expected_total == pytest.approx(row["shrunken"], rel=1e-12)
    assert fit.winners_curse.expected_total_se == pytest.approx(row["shrunken_se"], rel=1e-9)


def test_hierarchical_intervals_are_wider_than_the_plugged_in_ones() -> None:
    # Integrating over τ adds its uncertainty; the point fit (τ̂, μ̂) is the same.
    history = _history(seed=8, k=12, tau=0.01)
    empirical = meta_analysis(history, shrinkage="empirical")
    hierarchical = meta_analysis(history)
    assert hierarchical.tau2 == empirical.tau2 and hierarchical.mean == empirical.mean
    width = lambda f: (f["shrunken_ci_high"] - f["shrunken_ci_low"]).to_numpy()  # noqa: E731
    assert np.all(width(hierarchical.to_frame()) > width(empirical.to_frame()))
    with pytest.raises(StatsInputError, match="at least 4"):
        meta_analysis([0.01, 0.02, 0.0], standard_error=[0.01, 0.01, 0.01])
    assert meta_analysis([0.01, 0.02], standard_error=[0.01, 0.01], shrinkage="empirical").experiments == 2


def test_every_estimator_and_option_is_checked() -> None:
    history = _history()
    for bad in ({"method": "ml"}, {"interval": "t"}, {"shrinkage": "james-stein"}, {"alpha": 1.5}):
        with pytest.raises(StatsInputError):
            meta_analysis(history, **bad)  # type: ignore[arg-type]
    fits = {m: meta_analysis(history, method=m, shrinkage="empirical") for m in ("reml", "dl", "pm")}
    assert len({round(f.tau2, 12) for f in fits.values()}) == 3


def test_summary_and_html_say_what_was_fitted() -> None:
    fit = meta_analysis(_history())
    text = fit.summary()
    assert text.startswith("Meta-analysis of revenue over 30 experiments (REML): true lifts ~ N(")
    assert "Win rate corrected for noise" in text and "Winner's curse" in text and "30 rows without an estimate" in text
    assert str(fit) == text
    page = fit._repr_html_()
    assert "<table" in page and "shrunken" in page and "Winner&#x27;s curse" in page
    table = fit.statistics()
    assert table["quantity"].tolist()[0] == "mean lift" and table["value"].iloc[0] == fit.mean
    assert isinstance(fit, MetaAnalysis)


def test_the_prior_from_a_history_and_from_its_fit_is_one_prior() -> None:
    history = _history()
    fit = meta_analysis(history)
    assert prior_from_history(history) == fit.prior == prior_from_history(fit)
    with pytest.raises(StatsInputError, match="no fitting arguments"):
        prior_from_history(fit, method="dl")
    posterior = fit.prior.update(0.03, 0.01)
    precision = 1 / fit.prior.variance + 1 / 0.01**2
    assert posterior.mean == pytest.approx((fit.prior.mean / fit.prior.variance + 0.03 / 0.01**2) / precision)
    assert posterior.sd == pytest.approx(1 / math.sqrt(precision))
    assert posterior.chance_to_win == pytest.approx(stats.norm.sf(0, posterior.mean, posterior.sd))
    assert posterior.interval(0.9) == pytest.approx(stats.norm.interval(0.9, posterior.mean, posterior.sd))
    assert fit.prior.interval() == pytest.approx(stats.norm.interval(0.95, fit.prior.mean, fit.prior.sd))
    assert "after the history's prior" in posterior.summary() and "Prior for a new experiment" in str(fit.prior)
