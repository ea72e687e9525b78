"""The heterogeneous-effect scan: Welch's test of segment vs rest, and its false discovery rate in simulations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from hoglab.stats import StatsInputError, heterogeneity_scan

DEVICES, DEVICE_SHARES = ["desktop", "mobile", "tablet"], [0.5, 0.35, 0.15]
COUNTRIES = ["de", "fr", "it", "uk", "us"]


def _experiment(rng: np.random.Generator, n: int, planted: float = 0.0) -> pd.DataFrame:
    """Two arms, a homogeneous +0.1 effect, and ``planted`` more for mobile users."""
    treated = rng.random(n) < 0.5
    # Categories as codes (fast to draw for hundreds of experiments), named on the way out.
    device = np.searchsorted(np.cumsum(DEVICE_SHARES), rng.random(n) * 0.999999)
    country = rng.integers(0, len(COUNTRIES), n)
    value = rng.normal(0, 1, n) + 0.1 * treated + planted * (treated & (device == 1))
    return pd.DataFrame({
        "variant": pd.Categorical.from_codes(treated.astype(int), ["control", "test"]),
        "device": pd.Categorical.from_codes(device, DEVICES),
        "country": pd.Categorical.from_codes(country, COUNTRIES),
        "value": value,
    })  # fmt: skip


def test_each_row_is_welchs_test_of_the_segment_effect_against_the_rest() -> None:
    units = _experiment(np.random.default_rng(1), 4000, planted=0.2)
    scan = heterogeneity_scan(units, by=["device", "country"], min_units=50)
    for row in scan.results.to_dict("records"):
        inside = units[row["property"]] == row["segment"]

        def effect(part: pd.DataFrame) -> tuple[float, float, float]:
            t, c = part.loc[part["variant"] == "test", "value"], part.loc[part["variant"] == "control", "value"]
            return t.mean() - c.mean(), t.var() / len(t) + c.var() / len(c), min(len(t), len(c))

        te_s, v_s, n_s = effect(units[inside])
        te_r, v_r, n_r = effect(units[~inside])
        dof = (v_s + v_r) ** 2 / (v_s**2 / (n_s - 1) + v_r**2 / (n_r - 1))
        t = (te_s - te_r) / math.sqrt(v_s + v_r)
        assert row["segment_effect"] == pytest.approx(te_s, abs=1e-12)
        assert row["rest_effect"] == pytest.approx(te_r, abs=1e-12)
        assert row["dof"] == pytest.approx(dof, rel=1e-9)
        assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(t), dof), rel=1e-8)
    np.testing.assert_allclose(scan.results["q_value"], multipletests(scan.results["p_value"], method="fdr_bh")[1])
    assert scan.tested == len(scan.results) == 3 + 5


def test_without_a_segment_effect_the_false_discovery_rate_stays_at_q() -> None:
    # Every discovery is false here, so the false discovery proportion is 1 when anything is found: the FDR is
    # the chance of any discovery. 250 experiments; the bound is q plus three binomial standard errors.
    rng = np.random.default_rng(2026)
    q, runs = 0.10, 250
    found = [heterogeneity_scan(_experiment(rng, 2000), by=["device", "country"], q=q).discoveries.shape[0] > 0
             for _ in range(runs)]  # fmt: skip
    fdr = float(np.mean(found))
    assert fdr <= q + 3 * math.sqrt(q * (1 - q) / runs)
    assert fdr > 0.02  # the scan is not trivially conservative


def test_a_planted_segment_effect_is_found_and_unrelated_segments_keep_the_rate() -> None:
    # Mobile users get +0.3 more. Country is independent of device, so every country segment's effect equals its
    # rest's: discoveries there are false. (Desktop and tablet do differ from a rest that includes mobile.)
    rng = np.random.default_rng(7)
    q, runs = 0.10, 100
    hits, proportions = 0, []
    for _ in range(runs):
        scan = heterogeneity_scan(_experiment(rng, 4000, planted=0.3), by=["device", "country"], q=q)
        found = scan.discoveries
        hits += bool(((found["property"] == "device") & (found["segment"] == "mobile")).any())
        proportions.append(float((found["property"] == "country").sum() / max(len(found), 1)))
    assert hits / runs >= 0.9
    assert float(np.mean(proportions)) <= q + 3 * math.sqrt(q * (1 - q) / runs)


def test_small_segments_are_not_tested_and_the_summary_names_discoveries() -> None:
    units = _experiment(np.random.default_rng(3), 6000, planted=0.4)
    scan = heterogeneity_scan(units, by="device", min_units=500)
    tablet = scan.results.set_index("segment").loc["tablet"]
    assert math.isnan(tablet["p_value"]) and not tablet["discovery"]  # ~450 units per arm
    assert "device = mobile" in scan.summary()
    assert "<table" in scan._repr_html_()


@pytest.mark.parametrize(("kwargs", "message"), [({"q": 0}, "q must be"), ({"min_units": 1}, "min_units must be")])
def test_bad_settings_are_named(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        heterogeneity_scan(_experiment(np.random.default_rng(0), 100), by="device", **kwargs)  # type: ignore[arg-type]
