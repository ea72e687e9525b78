"""Sample ratio mismatch against scipy's goodness-of-fit test, and its calibration."""

from __future__ import annotations

import html
import math

import numpy as np
import pytest
from scipy import stats

from hoglab.stats import StatsInputError, srm


@pytest.mark.parametrize(
    ("observed", "shares"),
    [
        ([5050, 4950], [0.5, 0.5]),
        ([821, 1000], [0.5, 0.5]),
        ([3300, 3350, 3350], [1, 1, 1]),
        ([2000, 7900], [0.2, 0.8]),
        ([5_000_000, 5_004_000], [0.5, 0.5]),
    ],
)
def test_matches_scipy_chisquare(observed: list[int], shares: list[float]) -> None:
    result = srm(observed, shares)
    expected = np.array(shares, dtype=float) / sum(shares) * sum(observed)
    ref = stats.chisquare(observed, f_exp=expected)
    assert result.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert result.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert result.dof == len(observed) - 1


def test_table() -> None:
    result = srm({"control": 821, "test": 1000}, {"control": 1, "test": 1})
    frame = result.to_frame()
    assert list(frame.columns) == [
        "variant",
        "observed",
        "expected_share",
        "observed_share",
        "expected_count",
    ]
    assert frame["expected_count"].tolist() == [910.5, 910.5]
    # counts are integers, the expectation a float; the test is one result, in attrs, equal to scipy's
    assert str(frame["observed"].dtype) == "Int64" and frame["observed"].tolist() == [821, 1000]
    ref = stats.chisquare([821, 1000])
    assert frame.attrs["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert frame.attrs["statistic"] == pytest.approx(ref.statistic, rel=1e-9) and frame.attrs["dof"] == 1
    fractional = srm({"a": 10.5, "b": 9.5}).to_frame()  # weighted units: kept as they are
    assert fractional["observed"].dtype == np.float64 and fractional["observed"].tolist() == [10.5, 9.5]
    assert frame["observed_share"].sum() == pytest.approx(1.0)
    assert result.mismatch and "mismatch" in result._repr_html_().lower()
    assert not srm({"a": 5050, "b": 4950}).mismatch


def test_zero_shares_and_empty_data() -> None:
    assert srm([100, 120, 0], [0.5, 0.5, 0.0]).dof == 1  # an arm planned at 0% with no one in it
    leak = srm([100, 120, 3], [0.5, 0.5, 0.0])
    assert leak.p_value == 0.0 and math.isinf(leak.statistic) and leak.mismatch
    assert srm([0, 0]).p_value == 1.0


def test_bad_input() -> None:
    for bad in (
        lambda: srm([1]),
        lambda: srm([-1, 2]),
        lambda: srm([1, 2], [0, 0]),
        lambda: srm([1, 2], [1]),
    ):
        with pytest.raises(StatsInputError):
            bad()
    with pytest.raises(StatsInputError):
        srm({"a": 1, "b": 2}, {"a": 1, "c": 1})


def test_false_alarm_rate_under_a_correct_split() -> None:
    rng = np.random.default_rng(30)
    sims, total, threshold = 4000, 10_000, 0.05
    control = rng.binomial(total, 0.5, size=sims)
    p = np.array([srm([c, total - c]).p_value for c in control])
    se = math.sqrt(threshold * (1 - threshold) / sims)
    assert abs((p < threshold).mean() - threshold) < 4 * se


def test_the_one_summary_in_each_form_against_scipy() -> None:
    # The words every view says (picker, report, SRM plot, results): numbers from scipy, not from srm() itself.
    ok, bad = srm({"control": 5050, "test": 4950}), srm({"control": 821, "test": 1000}, [0.5, 0.5])
    ref_ok, ref_bad = stats.chisquare([5050, 4950]), stats.chisquare([821, 1000])
    assert ok.summary() == (
        f"Traffic split as planned (50%/50%): SRM check p = {ref_ok.pvalue:.2g} (χ² = {ref_ok.statistic:.3g}, 1 dof)."
    )
    assert bad.summary() == (
        f"Sample ratio mismatch: p = {ref_bad.pvalue:.2g} < 0.001 (χ² = {ref_bad.statistic:.3g}, 1 dof). The traffic "
        "split differs from the plan (50%/50%): find out why before trusting the results."
    )
    assert ok.summary("line") == f"Traffic split: as planned (SRM χ² p = {ref_ok.pvalue:.3g})."
    assert bad.summary("line", counted="Exposures") == (
        "Exposures: control 821, test 1,000. Traffic split: MISMATCH, investigate before trusting the results "
        f"(SRM χ² p = {ref_bad.pvalue:.3g})."
    )
    stat = f"χ² = {ref_ok.statistic:.3g}, 1 dof"
    assert ok.summary("title") == f"Traffic split as designed: p = {ref_ok.pvalue:.2g} ({stat})"
    assert str(bad) == bad.summary("line") and html.escape(bad.summary()) in bad._repr_html_()


def test_a_comparison_shows_the_summary_of_each_mismatched_metric() -> None:
    from hoglab.stats import compare

    mismatched = compare({"control": (10_000, 1000), "test": (9_000, 900)})
    check = mismatched.srm["conversion"]
    assert check.mismatch and html.escape(check.summary()) in mismatched._repr_html_()
    assert [w.message for w in mismatched.rows[0].warnings if w.kind.value == "srm"] == [check.summary("title")]
