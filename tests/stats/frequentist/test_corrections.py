"""Holm, Benjamini–Hochberg and Bonferroni against statsmodels' multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from hoglab.stats import StatsInputError, adjust_pvalues


@pytest.mark.parametrize(
    ("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")]
)
@pytest.mark.parametrize("seed", range(5))
def test_matches_statsmodels(ours: str, theirs: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(size=20), rng.uniform(0, 0.01, size=5), [0.02, 0.02, 1.0]])
    rng.shuffle(p)
    np.testing.assert_allclose(adjust_pvalues(p, ours), multipletests(p, method=theirs)[1], rtol=1e-12)  # type: ignore[arg-type]


def test_textbook_example() -> None:
    np.testing.assert_allclose(adjust_pvalues([0.01, 0.02, 0.03, 0.5], "holm"), [0.04, 0.06, 0.06, 0.5])


def test_nan_is_left_out_of_the_family() -> None:
    out = adjust_pvalues([0.01, np.nan, 0.04], "bonferroni")
    assert out[0] == pytest.approx(0.02) and np.isnan(out[1]) and out[2] == pytest.approx(0.08)


def test_bad_input() -> None:
    with pytest.raises(StatsInputError):
        adjust_pvalues([0.1, 1.2])
    with pytest.raises(StatsInputError):
        adjust_pvalues([0.1], "sidak")  # type: ignore[arg-type]


def test_family_wise_error_is_controlled() -> None:
    rng = np.random.default_rng(31)
    sims, m, alpha = 20_000, 10, 0.05
    p = rng.uniform(size=(sims, m))  # every null true
    raw = (p < alpha).any(axis=1).mean()
    holm = np.array([(adjust_pvalues(row, "holm") < alpha).any() for row in p[:5000]]).mean()
    assert raw > 0.35  # uncorrected: 1 − 0.95¹⁰ ≈ 0.40
    assert holm < alpha + 4 * np.sqrt(alpha * (1 - alpha) / 5000)
