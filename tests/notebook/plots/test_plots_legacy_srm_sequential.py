"""``plots/legacy.py`` (forest, posteriors), the SRM plot and the cumulative effect, against independent math.

Intervals are recomputed with statsmodels, scipy or the published formulas rather than read back from
``hoglab.stats``, so a plot that draws the wrong quantity, or a wrong quantity from the statistics, fails here.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.ticker import PercentFormatter
from scipy import stats as sps
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

import hoglab.stats as hs
from hoglab.client import ExperimentResult
from hoglab.notebook import cumulative_effect, plot_cumulative_effect, plot_experiment, plot_srm
from hoglab.notebook.plots.common import CONTROL_COLOUR, HIGHER_COLOUR, INCONCLUSIVE_COLOUR, LOWER_COLOUR

# The answer of GET /api/projects/:id/experiments/:id/results/ for a funnel metric (PostHog's shape).
FUNNEL_RESULT: dict[str, Any] = {
    "result": {
        "probability": {"control": 0.0125, "test": 0.9875},
        "significant": True,
        "significance_code": "significant",
        "expected_loss": 0.0001,
        "variants": [
            {"key": "test", "success_count": 85, "failure_count": 415},
            {"key": "control", "success_count": 60, "failure_count": 440},
        ],
        "credible_intervals": {"control": [0.094, 0.151], "test": [0.139, 0.204]},
        "insight": [[{"count": 500}]],
    },
    "last_refresh": "2025-06-01T12:00:00Z",
    "is_cached": False,
}
# ...and for a trend (count) metric: counts over exposures, exposure relative to the control.
TREND_RESULT: dict[str, Any] = {
    "result": {
        "probability": {"control": 0.0484, "test": 0.9516},
        "significant": False,
        "significance_code": "high_p_value",
        "p_value": 0.1089,
        "variants": [
            {"key": "control", "count": 120, "exposure": 1.0, "absolute_exposure": 1000},
            {"key": "test", "count": 150, "exposure": 1.02, "absolute_exposure": 1020},
        ],
        "credible_intervals": {"control": [0.1, 0.14], "test": [0.12, 0.17]},
    }
}


def _by_gid(ax: plt.Axes) -> dict[str, Any]:
    return {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}


# ------------------------------------------------------------------------------------------------ forest plot


def test_forest_intervals_are_the_katz_lift_intervals_with_significant_rows_highlighted() -> None:
    comparison = hs.compare({"control": (5000, 500), "a": (5000, 600), "b": (5000, 510)})
    ax = plot_experiment(comparison)
    lines = _by_gid(ax)
    for variant, successes in (("a", 600), ("b", 510)):
        low, high = confint_proportions_2indep(successes, 5000, 500, 5000, method="log", compare="ratio")
        interval = lines[f"interval:conversion:{variant}"]
        np.testing.assert_allclose(interval.get_xdata(), [low - 1, high - 1], rtol=1e-12)
        assert lines[f"estimate:conversion:{variant}"].get_xdata()[0] == pytest.approx(successes / 500 - 1)
    significant, inconclusive = lines["estimate:conversion:a"], lines["estimate:conversion:b"]
    assert to_hex(significant.get_color()) == HIGHER_COLOUR.lower() == to_hex(significant.get_markerfacecolor())
    assert to_hex(inconclusive.get_color()) == INCONCLUSIVE_COLOUR.lower()
    assert to_hex(inconclusive.get_markerfacecolor()) == "#ffffff"  # hollow: not significant
    assert list(lines["zero"].get_xdata()) == [0.0, 0.0]
    assert isinstance(ax.xaxis.get_major_formatter(), PercentFormatter)
    assert ax.get_xlabel().startswith("lift against control")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"] and ax.yaxis_inverted()
    p_a = proportions_ztest([600, 500], [5000, 5000])[1]
    assert ax.texts[0].get_text() == f"+20.0% [{low_a(comparison):+.1%}, {high_a(comparison):+.1%}]  p = {p_a:.2g}"
    assert ax.texts[0].get_fontweight() == "bold" and ax.texts[1].get_fontweight() == "normal"
    assert ax.get_title() == "Lift against control, 95% confidence intervals"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["higher", "inconclusive"]


def low_a(c: hs.Comparison) -> float:
    return c.row("a").lift_ci[0]


def high_a(c: hs.Comparison) -> float:
    return c.row("a").lift_ci[1]


def test_forest_on_the_difference_uses_newcombe_intervals_in_percentage_points() -> None:
    comparison = hs.compare({"control": (5000, 500), "test": (5000, 430)})
    ax = plot_experiment(comparison, relative=False)
    interval = _by_gid(ax)["interval:conversion:test"]
    low, high = confint_proportions_2indep(430, 5000, 500, 5000, method="newcomb", compare="diff")
    np.testing.assert_allclose(interval.get_xdata(), [low, high], rtol=1e-9)
    assert to_hex(interval.get_color()) == LOWER_COLOUR.lower()  # significantly lower
    assert "percentage points" in ax.get_xlabel()
    assert ax.get_title() == "Difference from control, 95% confidence intervals"
    assert ax.xaxis.get_major_formatter()(0.02, 0) == "+2 pp"
    assert ax.texts[0].get_text().startswith("-1.40 pp [")
    assert ax.get_legend() is None  # one verdict: the colour needs no key
    # A Comparison computed on the difference is drawn on the difference unless told otherwise.
    absolute = hs.compare({"control": (5000, 500), "test": (5000, 430)}, relative=False)
    assert "percentage points" in plot_experiment(absolute).get_xlabel()
    assert plot_experiment(absolute, relative=True).get_xlabel().startswith("lift")


def test_client_result_is_compared_the_bayesian_way() -> None:
    result = ExperimentResult(4, FUNNEL_RESULT)
    ax = plot_experiment(result)
    assert ax.get_title().splitlines() == ["Experiment 4: significant", "lift against control, 95% credible intervals"]
    interval = _by_gid(ax)["interval:primary:test"].get_xdata()
    # Monte Carlo of the same posteriors, Beta(1 + s, 1 + f): quantiles of the lift within sampling error.
    rng = np.random.default_rng(7)
    control, test = rng.beta(61, 441, 400_000), rng.beta(86, 416, 400_000)
    lift = test / control - 1
    np.testing.assert_allclose(interval, np.quantile(lift, [0.025, 0.975]), atol=0.01)
    shown = ax.texts[0].get_text()
    assert shown.startswith(f"{0.85 / 0.6 - 1:+.1%} [")  # the observed lift, 85/500 against 60/500
    assert float(shown.split("P(win) ")[1].rstrip("%")) / 100 == pytest.approx(np.mean(test > control), abs=0.002)
    # The raw JSON answer plots the same.
    same = plot_experiment(FUNNEL_RESULT)
    np.testing.assert_array_equal(_by_gid(same)["interval:primary:test"].get_xdata(), interval)
    assert same.get_title().startswith("Experiment: significant")


def test_several_metrics_are_labelled_and_adjusted_p_values_shown() -> None:
    comparison = hs.compare_many(
        {
            "signup": {"control": hs.Proportion(5000, 500), "test": hs.Proportion(5000, 560)},
            "pageviews": {"control": hs.Count(21000, 5000), "test": hs.Count(21500, 5000)},
        },
        correction="holm",
    )
    ax = plot_experiment(comparison)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["signup: test", "pageviews: test"]
    adjusted = comparison.to_frame()["adjusted_p_value"].tolist()
    assert [t.get_text().split("p_adj = ")[1] for t in ax.texts] == [f"{p:.2g}" for p in adjusted]
    assert "holm-adjusted" in ax.get_title()
    only = plot_experiment(comparison, metric="pageviews")
    assert [t.get_text() for t in only.get_yticklabels()] == ["test"]


def test_srm_and_undefined_lifts_are_flagged_on_their_rows() -> None:
    ax = plot_experiment(hs.compare({"control": (5000, 500), "test": (4000, 400)}))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["test [SRM]"]
    ax = plot_experiment(hs.compare({"control": (1000, 0), "test": (1000, 5)}))
    assert "interval:conversion:test" not in _by_gid(ax)
    assert ax.texts[0].get_text() == "lift undefined (control is 0)"


def test_raw_statistics_are_compared_frequentist_unless_told() -> None:
    frame = pd.DataFrame({"variant": ["control", "test"], "n": [1000, 1000], "successes": [100, 130]})
    ax = plot_experiment(frame)
    expected = hs.compare(frame).row("test").lift_ci
    assert _by_gid(ax)["interval:conversion:test"].get_xdata().tolist() == list(expected)
    ax = plot_experiment(frame, method="sequential")
    assert "always-valid" in ax.get_title()


def test_experiment_plot_draws_into_the_given_axes() -> None:
    fig, (left, right) = plt.subplots(1, 2)
    comparison = hs.compare({"control": (1000, 100), "test": (1000, 130)})
    assert plot_experiment(comparison, ax=right) is right
    assert plot_experiment(comparison, ax=left, kind="posteriors") is left
    assert len(right.get_lines()) == 3 and len(left.get_lines()) == 2 and len(fig.axes) == 2


def test_bad_experiment_input_raises_clearly() -> None:
    comparison = hs.compare({"control": (1000, 100), "test": (1000, 130)})
    with pytest.raises(ValueError, match="kind must be"):
        plot_experiment(comparison, kind="forest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method and alpha apply"):
        plot_experiment(comparison, method="bayesian")
    with pytest.raises(ValueError, match=r"no metric 'revenue'.*'conversion'"):
        plot_experiment(comparison, metric="revenue")
    values_only = ExperimentResult(4, {"result": {"result": {"control": 0.1, "test": 0.2}, "variants": []}})
    with pytest.raises(ValueError, match="no counts"):
        plot_experiment(values_only)
    with pytest.raises(TypeError, match="Comparison"):
        plot_experiment(42)
    with pytest.raises(ValueError, match="control"):  # StatsInputError is a ValueError
        plot_experiment({"a": (1000, 100), "b": (1000, 130)})


# ------------------------------------------------------------------------------------------------- posteriors


def test_conversion_posteriors_are_beta_densities_control_grey() -> None:
    comparison = hs.compare({"control": (5000, 500), "a": (5000, 560)}, method="bayesian")
    ax = plot_experiment(comparison, kind="posteriors")
    lines = _by_gid(ax)
    for variant, successes in (("control", 500), ("a", 560)):
        line = lines[f"posterior:{variant}"]
        x = line.get_xdata()
        np.testing.assert_allclose(line.get_ydata(), sps.beta.pdf(x, 1 + successes, 1 + 5000 - successes), rtol=1e-8)
    assert to_hex(lines["posterior:control"].get_color()) == CONTROL_COLOUR.lower()
    best = {a.variant: a.chance_to_be_best for a in comparison.arms}
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"control (P(best) {best['control']:.1%})", f"a (P(best) {best['a']:.1%})"]
    assert ax.get_xlabel() == "conversion rate" and ax.get_ylabel() == "probability density"
    assert isinstance(ax.xaxis.get_major_formatter(), PercentFormatter)
    assert len(ax.collections) == 2  # a shaded area under each density


def test_trend_result_posteriors_are_posthogs_gamma_densities() -> None:
    ax = plot_experiment(ExperimentResult(9, TREND_RESULT), kind="posteriors")
    lines = _by_gid(ax)
    for variant, count, exposure in (("control", 120, 1000), ("test", 150, 1020)):
        line = lines[f"posterior:{variant}"]
        expected = sps.gamma.pdf(line.get_xdata(), count + 1, scale=1 / exposure)
        np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-8)
    # The legend shows the server's own probabilities.
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["control (P(best) 4.8%)", "test (P(best) 95.2%)"]
    assert ax.get_xlabel() == "events per exposed unit"
    assert ax.get_title().startswith("Experiment 9: high_p_value")


@pytest.mark.parametrize("method", ["frequentist", "bayesian"])
def test_mean_posteriors_are_normal_with_the_standard_error(method: str) -> None:
    rng = np.random.default_rng(3)
    values = {"control": rng.normal(10, 3, 400), "test": rng.normal(10.5, 3, 300)}
    comparison = hs.compare({k: hs.SampleMean.from_values(v) for k, v in values.items()}, method=method, name="revenue")
    ax = plot_experiment(comparison, kind="posteriors")
    for variant, x in values.items():
        line = _by_gid(ax)[f"posterior:{variant}"]
        se = x.std(ddof=1) / math.sqrt(x.size)
        np.testing.assert_allclose(line.get_ydata(), sps.norm.pdf(line.get_xdata(), x.mean(), se), rtol=1e-7)
    assert ax.get_xlabel() == "mean of revenue"


def test_posteriors_need_one_metric() -> None:
    comparison = hs.compare_many(
        {
            "signup": {"control": (5000, 500), "test": (5000, 560)},
            "activation": {"control": (5000, 50), "test": (5000, 60)},
        }
    )
    with pytest.raises(ValueError, match=r"one metric at a time.*\['signup', 'activation'\]"):
        plot_experiment(comparison, kind="posteriors")
    ax = plot_experiment(comparison, kind="posteriors", metric="activation")
    line = _by_gid(ax)["posterior:test"]
    np.testing.assert_allclose(line.get_ydata(), sps.beta.pdf(line.get_xdata(), 61, 4941), rtol=1e-8)


# -------------------------------------------------------------------------------------------------------- SRM


def test_srm_bars_are_observed_and_expected_shares_with_the_p_value_in_the_title() -> None:
    ax = plot_srm({"control": 5300, "test": 4700})
    observed, expected = ax.containers
    assert [float(p.get_height()) for p in observed] == [0.53, 0.47]
    assert [float(p.get_height()) for p in expected] == [0.5, 0.5]
    assert all(p.get_linestyle() == "--" and p.get_facecolor()[3] == 0 for p in expected)  # dashed outlines
    p_value = sps.chisquare([5300, 4700]).pvalue
    assert ax.get_title().startswith(f"Sample ratio mismatch: p = {p_value:.2g} < 0.001")
    assert to_hex(ax.title.get_color()) == LOWER_COLOUR.lower()
    assert to_hex(observed[0].get_facecolor()) == CONTROL_COLOUR.lower()
    assert [t.get_text() for t in ax.texts[:2]] == ["53.0%\n5,300", "47.0%\n4,700"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["control", "test"]
    assert isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
    # No legend over the bars (the axis label is the key); every bar's label inside the axes, under the title.
    assert ax.get_legend() is None and ax.get_xlabel() == "filled: observed · dashed: expected"
    ax.figure.draw_without_rendering()
    frame = ax.get_window_extent()
    for text in ax.texts:
        box = text.get_window_extent()
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1 and frame.x0 <= box.x0 and box.x1 <= frame.x1, text
    assert ax.get_title().splitlines()[1] == f"(χ² = {sps.chisquare([5300, 4700]).statistic:.3g}, 1 dof)"


def test_srm_takes_shares_series_results_comparisons_and_client_results() -> None:
    ax = plot_srm([610, 390], expected_shares=[0.6, 0.4])
    assert [float(p.get_height()) for p in ax.containers[1]] == [0.6, 0.4]
    p_value = sps.chisquare([610, 390], [600, 400]).pvalue
    assert ax.get_title().startswith(f"Traffic split as designed: p = {p_value:.2g}")
    assert to_hex(ax.title.get_color()) == "#000000"
    series = plot_srm(pd.Series({"control": 480, "test": 520}))
    assert [t.get_text() for t in series.get_xticklabels()] == ["control", "test"]
    result = hs.srm({"control": 480, "test": 520})
    assert plot_srm(result).get_title() == series.get_title()
    comparison = hs.compare({"control": (480, 50), "test": (520, 60)})
    assert plot_srm(comparison).get_title() == series.get_title()
    client = plot_srm(ExperimentResult(4, FUNNEL_RESULT))  # 500 exposed in each arm
    assert [float(p.get_height()) for p in client.containers[0]] == [0.5, 0.5]
    assert "p = 1" in client.get_title()


def test_srm_draws_into_the_given_axes_and_refuses_bad_input() -> None:
    fig, (left, right) = plt.subplots(1, 2)
    assert plot_srm({"control": 10, "test": 12}, ax=left) is left and not right.containers
    with pytest.raises(ValueError, match="already computed"):
        plot_srm(hs.srm([5, 5]), expected_shares=[0.5, 0.5])
    with pytest.raises(ValueError, match="no SRM check"):
        plot_srm(hs.compare({"control": (100, 5), "test": (100, 6)}, check_srm=False))
    with pytest.raises(TypeError, match="SRMResult"):
        plot_srm(3.5)
    with pytest.raises(ValueError, match="one share per variant"):
        plot_srm([5, 5, 5], expected_shares=[0.5, 0.5])
    assert len(fig.axes) == 2


# ------------------------------------------------------------------------------------------ cumulative effect

LA = "America/Los_Angeles"


def _daily(control: list[int], test: list[int], n: int = 1000, tz: str | None = LA) -> pd.DataFrame:
    dates = pd.date_range("2025-06-01", periods=len(control), tz=tz)
    rows = [(d, "control", n, c) for d, c in zip(dates, control, strict=True)]
    rows += [(d, "test", n, t) for d, t in zip(dates, test, strict=True)]
    return pd.DataFrame(rows, columns=["date", "variant", "n", "successes"])


def _expected(
    sc: float, nc: float, st: float, nt: float, alpha: float = 0.05, tuning: float = 5000.0
) -> dict[str, Any]:
    """Lift, its always-valid interval (Waudby-Smith et al. 2024, eq. 9) and the Katz fixed-horizon interval."""
    pc, pt = sc / nc, st / nt
    lift = pt / pc - 1
    se = math.sqrt(pt * (1 - pt) / nt / pc**2 + pc * (1 - pc) / nc * pt**2 / pc**4)  # delta method
    total = nc + nt
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / tuning
    a = total * rho2 + 1
    half = se * math.sqrt(total) * math.sqrt(2 * a / (total**2 * rho2) * math.log(math.sqrt(a) / alpha))
    low, high = confint_proportions_2indep(st, nt, sc, nc, method="log", compare="ratio", alpha=alpha)
    return {"estimate": lift, "sequential": (lift - half, lift + half), "naive": (low - 1, high - 1)}


def test_cumulative_effect_matches_the_confidence_sequence_formula() -> None:
    control, test = [100, 110, 90], [120, 115, 130]
    effects = cumulative_effect(_daily(control, test))
    assert effects.columns.tolist()[:5] == ["date", "variant", "units", "control_units", "estimate"]
    assert effects["units"].tolist() == [1000.0, 2000.0, 3000.0]
    for k, row in enumerate(effects.itertuples()):
        e = _expected(sum(control[: k + 1]), 1000 * (k + 1), sum(test[: k + 1]), 1000 * (k + 1))
        assert row.estimate == pytest.approx(e["estimate"], rel=1e-12)
        assert (row.sequential_low, row.sequential_high) == pytest.approx(e["sequential"], rel=1e-9)
        assert (row.naive_low, row.naive_high) == pytest.approx(e["naive"], rel=1e-9)
        # The point of the plot: the always-valid interval is wider than the fixed-horizon one.
        assert row.sequential_low < row.naive_low and row.sequential_high > row.naive_high
    tuned = cumulative_effect(_daily(control, test), tuning=2000, alpha=0.1)
    e = _expected(sum(control), 3000, sum(test), 3000, alpha=0.1, tuning=2000)
    assert tuple(tuned.iloc[-1][["sequential_low", "sequential_high"]]) == pytest.approx(e["sequential"], rel=1e-9)


def test_cumulative_plot_draws_the_frame_on_local_days() -> None:
    daily = _daily([100, 110, 90, 95], [120, 115, 130, 125])
    effects = cumulative_effect(daily)
    ax = plot_cumulative_effect(daily)
    lines = _by_gid(ax)
    for column in ("estimate", "sequential_low", "sequential_high", "naive_low", "naive_high"):
        np.testing.assert_array_equal(lines[f"{column}:test"].get_ydata(), effects[column].to_numpy())
    assert lines["naive_low:test"].get_linestyle() == ":"
    days = mdates.num2date(lines["estimate:test"].get_xdata(orig=False), tz=LA)
    assert [(d.day, d.hour) for d in days] == [(1, 0), (2, 0), (3, 0), (4, 0)]
    band = next(c for c in ax.collections if c.get_gid() == "sequential:test")
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(effects["sequential_low"].min()) and ys.max() == pytest.approx(
        effects["sequential_high"].max()
    )
    assert list(lines["zero"].get_ydata()) == [0.0, 0.0]
    assert isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    assert ax.get_xlabel() == f"date ({LA})" and ax.get_ylabel() == "cumulative lift against control"
    assert ax.get_title() == "Cumulative lift against control, 95% always-valid bounds"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["test", "always-valid 95% bounds", "fixed-horizon 95% CI (invalid when peeking)"]


def test_cumulative_options_difference_no_naive_and_given_axes() -> None:
    daily = _daily([100, 110], [120, 115], tz=None)
    fig, (left, right) = plt.subplots(1, 2)
    ax = plot_cumulative_effect(daily, ax=right, relative=False, naive=False, alpha=0.1)
    assert ax is right and not left.get_lines() and len(fig.axes) == 2
    gids = set(_by_gid(ax))
    assert not any(g.startswith("naive") for g in gids)
    assert _by_gid(ax)["estimate:test"].get_ydata().tolist() == pytest.approx([0.02, (235 - 210) / 2000])
    assert not isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
    assert ax.get_ylabel() == "cumulative difference from control" and "90%" in ax.get_title()
    assert ax.get_xlabel() == "date"


def test_running_totals_late_arms_and_several_rows_per_day() -> None:
    daily = _daily([100, 110, 90], [120, 115, 130])
    totals = daily.copy()
    totals[["n", "successes"]] = totals.groupby("variant")[["n", "successes"]].cumsum()
    pd.testing.assert_frame_equal(cumulative_effect(totals, cumulative=True), cumulative_effect(daily))
    late = daily[~((daily["variant"] == "test") & (daily["date"] == daily["date"].min()))]
    assert cumulative_effect(late)["date"].dt.day.tolist() == [2, 3]  # nothing to compare before test starts
    # Hourly rows (two per day and variant) add up to the day.
    first = daily.assign(n=500, successes=daily["successes"] // 2)
    second = daily.assign(n=500, successes=daily["successes"] - daily["successes"] // 2)
    pd.testing.assert_frame_equal(cumulative_effect(pd.concat([first, second])), cumulative_effect(daily))


def test_mean_and_count_shapes() -> None:
    dates = pd.to_datetime(["2025-06-01", "2025-06-01", "2025-06-02", "2025-06-02"])
    means = pd.DataFrame(
        {
            "date": dates,
            "variant": ["control", "test"] * 2,
            "n": [100, 100, 100, 100],
            "sum": [1000.0, 1100.0, 1000.0, 1050.0],
            "sum_squares": [11000.0, 13000.0, 11000.0, 12000.0],
        }
    )
    assert cumulative_effect(means)["estimate"].tolist() == pytest.approx([0.1, 0.075])
    counts = pd.DataFrame(
        {"date": dates, "variant": ["control", "test"] * 2, "count": [50, 60, 50, 40], "exposure": [100, 100, 100, 100]}
    )
    assert cumulative_effect(counts)["estimate"].tolist() == pytest.approx([0.2, 0.0])


def test_bad_daily_frames_raise_naming_the_problem() -> None:
    daily = _daily([100], [120])
    with pytest.raises(ValueError, match=r"n, successes \(conversion\).*it has \['date', 'variant', 'n'\]"):
        cumulative_effect(daily[["date", "variant", "n"]])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['variant'\]"):
        cumulative_effect(daily.drop(columns="variant"))
    with pytest.raises(ValueError, match="no control variant 'baseline'"):
        cumulative_effect(daily, control="baseline")
    with pytest.raises(ValueError, match="only"):
        cumulative_effect(daily[daily["variant"] == "control"])
    with pytest.raises(ValueError, match="empty"):
        plot_cumulative_effect(daily.iloc[0:0])
    with pytest.raises(ValueError, match="no date"):
        plot_cumulative_effect(daily.assign(n=np.where(daily["variant"] == "test", 0, 1000), successes=0))
    with pytest.raises(ValueError, match="running totals"):
        cumulative_effect(pd.concat([daily, daily]), cumulative=True)
