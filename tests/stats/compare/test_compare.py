"""compare/compare_many: inputs, the tidy frame, typed warnings, display and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hoglab.stats import (
    BetaPosterior,
    Comparison,
    Count,
    GammaPosterior,
    Proportion,
    Ratio,
    SampleMean,
    StatsInputError,
    Verdict,
    WarningKind,
    adjust_pvalues,
    chance_to_be_best,
    chance_to_beat,
    compare,
    compare_many,
    difference_interval,
    expected_loss,
    lift_interval,
    newcombe_interval,
    poisson_rate_ratio_interval,
    poisson_rate_test,
    risk_ratio_interval,
    two_proportion_ztest,
    welch_ttest,
)

CONVERSION = {"control": Proportion(5000, 500), "a": Proportion(5100, 580), "b": Proportion(4950, 470)}


def test_input_forms_give_the_same_result() -> None:
    reference = compare(CONVERSION).to_frame()
    tuples = {k: (v.n, v.successes) for k, v in CONVERSION.items()}
    dicts = {k: {"n": v.n, "successes": v.successes} for k, v in CONVERSION.items()}
    frame = pd.DataFrame([{"variant": k, "n": v.n, "successes": v.successes} for k, v in CONVERSION.items()])
    indexed = frame.set_index("variant")
    posthog = pd.DataFrame(
        [{"key": k, "success_count": v.successes, "failure_count": v.failures} for k, v in CONVERSION.items()]
    )
    for data in (tuples, dicts, frame, indexed, posthog):
        pd.testing.assert_frame_equal(compare(data).to_frame(), reference)
    pd.testing.assert_frame_equal(frame.pipe(compare).to_frame(), reference)


def test_frequentist_conversion_rows_use_the_documented_tests() -> None:
    result = compare(CONVERSION)
    assert isinstance(result, Comparison) and [r.variant for r in result.rows] == ["a", "b"]
    c = CONVERSION["control"]
    for row in result.rows:
        t = CONVERSION[row.variant]
        assert row.p_value == two_proportion_ztest(c, t).p_value
        assert row.difference_ci == newcombe_interval(c, t)
        lo, hi = risk_ratio_interval(c, t)
        assert row.lift_ci == pytest.approx((lo - 1, hi - 1), rel=1e-12)
        assert row.estimate == t.rate and row.control_estimate == c.rate
        assert row.lift == pytest.approx(t.rate / c.rate - 1, rel=1e-12)
    assert result.row("a").verdict is Verdict.HIGHER


def test_count_mean_and_ratio_rows() -> None:
    counts = compare({"control": (1200, 1000), "test": (1330, 1000)}, metric="count").rows[0]
    assert counts.p_value == poisson_rate_test(Count(1200, 1000), Count(1330, 1000)).p_value
    lo, hi = poisson_rate_ratio_interval(Count(1200, 1000), Count(1330, 1000))
    assert counts.lift_ci == pytest.approx((lo - 1, hi - 1), rel=1e-12)

    rng = np.random.default_rng(70)
    x, y = rng.exponential(2.0, 800), rng.exponential(2.3, 820)
    means = compare({"control": SampleMean.from_values(x), "test": SampleMean.from_values(y)}).rows[0]
    assert means.p_value == pytest.approx(
        welch_ttest(SampleMean.from_values(x), SampleMean.from_values(y)).p_value
    )

    d_c, d_t = rng.poisson(2, 900) + 1.0, rng.poisson(2, 900) + 1.0
    m_c, m_t = d_c * rng.gamma(4.0, 0.25, 900), d_t * rng.gamma(4.0, 0.275, 900)
    ratio = compare({"control": Ratio.from_values(m_c, d_c), "test": Ratio.from_values(m_t, d_t)}).rows[0]
    assert ratio.kind == "ratio" and ratio.estimate == pytest.approx(m_t.sum() / d_t.sum())
    assert 0 < ratio.p_value < 1 and ratio.lift_ci[0] < ratio.lift < ratio.lift_ci[1]


def test_bayesian_rows_are_the_posterior_quantities() -> None:
    result = compare(CONVERSION, method="bayesian")
    post = BetaPosterior.from_counts(
        [p.successes for p in CONVERSION.values()], [p.failures for p in CONVERSION.values()]
    )
    win, best, loss = chance_to_beat(post), chance_to_be_best(post), expected_loss(post)
    diff, lift = difference_interval(post), lift_interval(post)
    for i, row in enumerate(result.rows, start=1):
        assert row.chance_to_win == pytest.approx(win[i], rel=1e-12)
        assert row.chance_to_be_best == pytest.approx(best[i], rel=1e-12)
        assert row.expected_loss == pytest.approx(loss[i], rel=1e-12)
        assert row.difference_ci == pytest.approx(tuple(diff[i]), rel=1e-12)
        assert row.lift_ci == pytest.approx(tuple(lift[i]), rel=1e-12)
        assert math.isnan(row.p_value)
    arms = result.arms_frame()
    assert arms["chance_to_be_best"].sum() == pytest.approx(1.0, abs=1e-9)
    counts = compare({"control": (120, 1000), "test": (150, 1020)}, metric="count", method="bayesian").rows[0]
    gam = GammaPosterior(np.array([121.0, 151.0]), np.array([1000.0, 1020.0]))
    assert counts.chance_to_win == pytest.approx(chance_to_beat(gam)[1], rel=1e-12)


def test_several_metrics_share_one_correction() -> None:
    long = pd.DataFrame(
        [
            {"metric": "signup", "variant": "control", "n": 5000, "successes": 500},
            {"metric": "signup", "variant": "test", "n": 5000, "successes": 560},
            {
                "metric": "revenue",
                "variant": "control",
                "n": 5000,
                "sum": 51_000.0,
                "sum_squares": 2_100_000.0,
            },
            {"metric": "revenue", "variant": "test", "n": 5000, "sum": 53_500.0, "sum_squares": 2_250_000.0},
            {"metric": "pageviews", "variant": "control", "count": 21_000, "exposure": 5000},
            {"metric": "pageviews", "variant": "test", "count": 21_500, "exposure": 5000},
        ]
    )
    result = compare(long, correction="holm")
    frame = result.to_frame()
    assert frame["metric"].tolist() == ["signup", "revenue", "pageviews"]
    assert frame["kind"].tolist() == ["conversion", "mean", "count"]
    np.testing.assert_allclose(frame["adjusted_p_value"], adjust_pvalues(frame["p_value"], "holm"))
    many = compare_many(
        {
            "signup": {"control": (5000, 500), "test": (5000, 560)},
            "pageviews": {"control": (21_000, 5000), "test": (21_500, 5000)},
        },
        kinds={"pageviews": "count"},
        correction="bh",
    ).to_frame()
    np.testing.assert_allclose(many["adjusted_p_value"], adjust_pvalues(many["p_value"], "bh"))
    # Fewer than α after correction is what the verdict reads.
    for _, row in many.iterrows():
        assert (row["verdict"] != "inconclusive") == (row["adjusted_p_value"] < 0.05)


def test_warnings_are_typed() -> None:
    small = compare({"control": (50, 2), "test": (60, 9)}).rows[0]
    assert small.has_warning(WarningKind.LOW_EXPOSURE) and small.has_warning(WarningKind.FEW_EVENTS)
    assert all(w.metric == "conversion" and w.variant == "test" for w in small.warnings)

    zero = compare({"control": (1000, 0), "test": (1000, 0)}).rows[0]
    assert zero.has_warning(WarningKind.ZERO_VARIANCE) and zero.has_warning(WarningKind.ZERO_BASELINE)
    assert zero.p_value == 1.0 and math.isnan(zero.lift) and zero.difference == 0.0

    baseline = compare({"control": (1000, 0), "test": (1000, 7)}).rows[0]
    assert baseline.has_warning(WarningKind.ZERO_BASELINE) and math.isnan(baseline.lift)
    assert all(math.isfinite(x) for x in baseline.difference_ci)

    clean = compare({"control": (10_000, 1000), "test": (10_000, 1100)})
    assert clean.rows[0].warnings == () and clean.to_frame()["warnings"][0] == ()

    mismatch = compare({"control": (10_000, 1000), "test": (9_000, 900)})
    assert mismatch.rows[0].has_warning(WarningKind.SRM) and mismatch.srm["conversion"].mismatch
    planned = compare(
        {"control": (10_000, 1000), "test": (9_000, 900)}, expected_split={"control": 10, "test": 9}
    )
    assert not planned.rows[0].has_warning(WarningKind.SRM)
    assert WarningKind.SRM in mismatch.to_frame()["warnings"][0]


def test_edge_cases_stay_finite() -> None:
    full = compare({"control": (500, 500), "test": (500, 499)}, method="bayesian").rows[0]
    assert all(math.isfinite(x) for x in (full.chance_to_win, full.expected_loss, *full.difference_ci))
    n = 10_000_000
    big = {"control": (n, 1_000_000), "test": (n, 1_003_000)}
    for method in ("frequentist", "bayesian", "sequential"):
        row = compare(big, method=method).rows[0]  # type: ignore[arg-type]
        values = [row.difference, *row.difference_ci, row.lift, *row.lift_ci]
        values += [row.chance_to_win] if method == "bayesian" else [row.p_value]
        assert all(math.isfinite(v) for v in values), (method, row)
    counts = compare({"control": (5e7, n), "test": (5.002e7, n)}, metric="count", method="bayesian").rows[0]
    assert math.isfinite(counts.chance_to_win) and all(map(math.isfinite, counts.lift_ci))
    means = {
        "control": SampleMean(n, 1.0e8, 1.2e9),
        "test": SampleMean(n, 1.001e8, 1.202e9),
    }
    for method in ("frequentist", "bayesian", "sequential"):
        row = compare(means, method=method).rows[0]  # type: ignore[arg-type]
        assert all(math.isfinite(v) for v in (row.difference, *row.difference_ci, *row.lift_ci))


def test_bayesian_results_are_deterministic() -> None:
    first = compare(CONVERSION, method="bayesian").to_frame()
    for _ in range(3):
        pd.testing.assert_frame_equal(compare(CONVERSION, method="bayesian").to_frame(), first)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: compare({"control": (10, 1)}), "at least one other variant"),
        (lambda: compare({"a": (10, 1), "b": (10, 2)}), "no control variant"),
        (lambda: compare({"control": (10, 1), "test": Count(1, 2)}), "same kind"),
        (lambda: compare({"control": (10, 1), "test": (10, 2)}, metric="mean"), "cannot read"),
        (lambda: compare({"control": (0, 0), "test": (10, 2)}), "no exposed units"),
        (lambda: compare(CONVERSION, method="magic"), "method"),  # type: ignore[arg-type]
        (lambda: compare(CONVERSION, correction="sidak"), "correction"),  # type: ignore[arg-type]
        (lambda: compare(CONVERSION, method="bayesian", correction="holm"), "Bayesian"),
        (lambda: compare(CONVERSION, alpha=0.0), "alpha"),
        (lambda: compare([1, 2, 3]), "mapping"),
        (lambda: compare(pd.DataFrame({"variant": ["control", "t"], "foo": [1, 2]})), "cannot tell"),
        (
            lambda: compare(
                pd.DataFrame({"variant": ["control", "control"], "n": [1, 2], "successes": [0, 1]})
            ),
            "once",
        ),
        (lambda: compare(CONVERSION, expected_split={"control": 1}), "no share"),
    ],
)
def test_bad_input_raises_typed_errors(call: object, match: str) -> None:
    with pytest.raises(StatsInputError, match=match):
        call()  # type: ignore[operator]


def test_display() -> None:
    result = compare({"control": (1000, 100), "<script>": (1000, 130)}, method="bayesian")
    html = result._repr_html_()
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert "higher" in html and "chance to win" in html and "credible" in html
    text = str(compare(CONVERSION, correction="holm"))
    assert "holm" in text and "a lift" in text
    with pytest.raises(StatsInputError):
        result.row("nope")
    srm_html = compare({"control": (10_000, 1000), "test": (9_000, 900)})._repr_html_()
    assert "Sample ratio mismatch" in srm_html
