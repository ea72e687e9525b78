"""``segments``: per-segment effects and the interaction test equal statsmodels' OLS with robust errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.multitest import multipletests

from hoglab.stats import StatsInputError, segments

VARIANT = "C(variant, Treatment('control'))"


def _units(seed: int = 5, n: int = 3000, arms: tuple[str, ...] = ("control", "a", "b")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "variant": rng.choice(arms, n, p=[0.4] + [0.6 / (len(arms) - 1)] * (len(arms) - 1)),
        "device": rng.choice(["desktop", "mobile", "tablet"], n, p=[0.5, 0.35, 0.15]),
        "plan": rng.choice(["free", "pro"], n),
    })  # fmt: skip
    lift = {"control": 0.0, "a": 0.4, "b": 0.1}
    noise = rng.normal(0, 1, n) * np.where(frame["device"] == "mobile", 2.0, 1.0)  # heteroskedastic on purpose
    frame["value"] = 10 + noise + frame["variant"].map(lift).fillna(0.3) * (1 + (frame["device"] == "mobile"))
    frame["converted"] = (rng.random(n) < 0.2 + 0.05 * (frame["variant"] != "control")).astype(int)
    return frame


def _segment_contrast(names: list[str], variant: str, segment: str, baseline_segment: str) -> np.ndarray:
    vector = np.zeros(len(names))
    vector[names.index(f"{VARIANT}[T.{variant}]")] = 1.0
    if segment != baseline_segment:
        vector[names.index(f"{VARIANT}[T.{variant}]:C(device)[T.{segment}]")] = 1.0
    return vector


@pytest.mark.parametrize("cov_type", ["HC0", "HC1", "HC2", "HC3"])
def test_effects_and_interaction_equal_statsmodels_ols_robust(cov_type: str) -> None:
    units = _units()
    result = segments(units, by="device", metric="value", cov_type=cov_type, correction=None)  # type: ignore[arg-type]
    fit = smf.ols(f"value ~ {VARIANT} * C(device)", data=units).fit(cov_type=cov_type)
    names = list(fit.params.index)
    # The interaction test: a Wald test of every interaction coefficient, χ² (statsmodels' robust default).
    interaction = np.array([[1.0 if n == m else 0.0 for n in names] for m in names if ":" in m])
    wald = fit.wald_test(interaction, use_f=False, scalar=True)
    row = result.interactions.iloc[0]
    assert row["dof"] == interaction.shape[0] == 4
    assert row["statistic"] == pytest.approx(float(wald.statistic), rel=1e-9)
    assert row["p_value"] == pytest.approx(float(wald.pvalue), rel=1e-9, abs=1e-15)
    # Each segment's effect: a linear combination of the coefficients.
    for effect in result.effects.to_dict("records"):
        test = fit.t_test(_segment_contrast(names, effect["variant"], effect["segment"], "desktop"))
        low, high = test.conf_int(alpha=0.05)[0]
        assert effect["difference"] == pytest.approx(float(test.effect[0]), rel=1e-9, abs=1e-12)
        assert effect["difference_se"] == pytest.approx(float(test.sd[0, 0]), rel=1e-9)
        assert effect["p_value"] == pytest.approx(float(test.pvalue), rel=1e-8, abs=1e-15)
        assert (effect["difference_ci_low"], effect["difference_ci_high"]) == pytest.approx((low, high), rel=1e-9)


def test_hc2_segment_error_is_welch_and_lift_is_the_delta_method() -> None:
    units = _units(seed=9)
    effects = segments(units, by="plan", metric="value").effects
    for effect in effects.to_dict("records"):
        part = units[units["plan"] == effect["segment"]]
        t = part.loc[part["variant"] == effect["variant"], "value"]
        c = part.loc[part["variant"] == "control", "value"]
        v_t, v_c = t.var() / len(t), c.var() / len(c)
        assert effect["difference_se"] == pytest.approx(math.sqrt(v_t + v_c), rel=1e-9)
        lift_se = math.sqrt(v_t / c.mean() ** 2 + v_c * t.mean() ** 2 / c.mean() ** 4)
        assert effect["lift"] == pytest.approx(t.mean() / c.mean() - 1, rel=1e-9)
        assert effect["lift_ci_high"] - effect["lift"] == pytest.approx(1.959963984540054 * lift_se, rel=1e-9)


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_adjustment_covers_every_segment_and_metric(method: str) -> None:
    units = _units()
    result = segments(units, by=["device", "plan"], metric=["value", "converted"], correction=method)  # type: ignore[arg-type]
    effects = result.effects
    assert len(effects) == 2 * (3 + 2) * 2  # metrics × segments × non-control variants
    expected = multipletests(effects["p_value"], method={"holm": "holm", "bh": "fdr_bh"}[method])[1]
    np.testing.assert_allclose(effects["adjusted_p_value"], expected, rtol=1e-12)
    assert (effects["significant"] == (effects["adjusted_p_value"] < 0.05)).all()
    inter = multipletests(result.interactions["p_value"], method={"holm": "holm", "bh": "fdr_bh"}[method])[1]
    np.testing.assert_allclose(result.interactions["adjusted_p_value"], inter, rtol=1e-12)
    joined = result.to_frame()
    assert {"interaction_p_value", "interaction_adjusted_p_value"} <= set(joined.columns)
    assert len(joined) == len(effects)


def test_a_conversion_column_is_a_linear_probability_model() -> None:
    units = _units(seed=2)
    result = segments(units, by="plan", metric="converted", cov_type="HC1", correction=None)
    fit = smf.ols(f"converted ~ {VARIANT} * C(plan)", data=units).fit(cov_type="HC1")
    interaction = np.array([[1.0 if n == m else 0.0 for n in fit.params.index] for m in fit.params.index if ":" in m])
    assert result.interactions["p_value"].iloc[0] == pytest.approx(
        float(fit.wald_test(interaction, use_f=False, scalar=True).pvalue), rel=1e-9
    )


def test_covariate_adjusts_with_a_pooled_theta() -> None:
    rng = np.random.default_rng(4)
    units = _units(seed=4, arms=("control", "test"))
    units["pre"] = units["value"] * 0.5 + rng.normal(0, 1, len(units))
    theta = np.cov(units["value"], units["pre"])[0, 1] / units["pre"].var()
    adjusted = units.assign(value=units["value"] - theta * (units["pre"] - units["pre"].mean()))
    with_cov = segments(units, by="device", covariate="pre", correction=None)
    by_hand = segments(adjusted, by="device", correction=None)
    pd.testing.assert_frame_equal(with_cov.effects, by_hand.effects, rtol=1e-9)
    plain = segments(units, by="device", correction=None)
    assert (with_cov.effects["difference_se"] < plain.effects["difference_se"]).all()


def test_missing_property_values_are_a_segment_and_small_segments_stay_out_of_the_test() -> None:
    units = _units(seed=8, arms=("control", "test"))
    units.loc[units.index[:40], "device"] = None
    units.loc[(units["device"] == "tablet") & (units["variant"] == "test"), "device"] = "tablet-rare"
    units.loc[units[units["device"] == "tablet-rare"].index[1:], "device"] = "desktop"
    result = segments(units, by="device")
    effects = result.effects.set_index("segment")
    assert "(none)" in effects.index
    assert math.isnan(effects.loc["tablet-rare", "difference"])  # one test unit and no control unit
    assert math.isnan(effects.loc["tablet", "difference"])  # control units only
    assert effects.loc["tablet", "control_units"] > 0 and effects.loc["tablet-rare", "units"] == 1
    assert result.interactions["segments"].iloc[0] == 3  # desktop, mobile and (none) are in the model


def test_the_summary_and_html_read_the_interaction_first() -> None:
    units = _units(seed=11, arms=("control", "test"))
    units["value"] = np.random.default_rng(0).normal(size=len(units))  # no effect anywhere
    result = segments(units, by="plan")
    assert "no evidence that the effect differs" in result.summary()
    assert "<table" in result._repr_html_() and "HC2 robust errors" in result._repr_html_()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"by": "nope"}, "no property column 'nope'"),
        ({"by": "plan", "metric": "nope"}, "no column 'nope'"),
        ({"by": "plan", "control": "ctl"}, "no control variant 'ctl'"),
        ({"by": "plan", "cov_type": "HC9"}, "cov_type must be one of"),
        ({"by": "plan", "metric": "device"}, "is not numeric"),
        ({"by": []}, "by: expected a column name"),
        ({"by": "plan", "min_units": 1}, "min_units must be"),
    ],
)
def test_bad_input_is_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        segments(_units(n=200), **kwargs)  # type: ignore[arg-type]
