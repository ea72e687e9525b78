"""Segments: the effect in each slice of the units, and whether the effect differs between slices at all.

For a property with segments s and variants v (control c), each unit's value is modelled with one mean per
(segment, variant) cell, the saturated OLS ``value ~ C(variant) * C(segment)``. Its coefficients are differences
of cell means, and its heteroskedasticity-robust (HC) covariance is diagonal in the cell means, so everything
below comes from per-cell sufficient statistics (n, mean, variance) with no regression fitted:

    Var_HC(ȳ_vs):  HC0 (n−1)s²/n²   HC1 HC0·N/(N−K)   HC2 s²/n   HC3 s²/(n−1)     (leverage 1/n in a cell)

(White 1980, *Econometrica* 48:817; MacKinnon & White 1985, *J. Econometrics* 29:305, HC1–HC3; N units and K
cells in the model.) HC2 makes the per-segment standard error exactly Welch's, √(s²_v/n_v + s²_c/n_c).

* **Effect per segment**: Δ_vs = ȳ_vs − ȳ_cs with a normal interval (statsmodels' reference distribution for
  robust covariances), and the lift Δ_vs/ȳ_cs by the delta method (Deng, Knoblich & Lu 2018, §3).
* **Interaction (heterogeneity) test** per property: H0 "the effect is the same in every segment", i.e. every
  interaction coefficient is 0. With I = RΔ the (k−1)(S−1) contrasts Δ_vs − Δ_v,s₀ and V their robust
  covariance, the Wald statistic W = Iᵀ(RVRᵀ)⁻¹I is χ² with (k−1)(S−1) degrees of freedom, the test
  statsmodels' ``wald_test`` of the interaction terms runs (for two variants it is Cochran's Q of the
  per-segment effects, Cochran 1954, *Biometrics* 10:101).
* **Multiple comparisons**: Holm or Benjamini–Hochberg over every (metric, property, segment, variant) effect,
  and separately over the interaction tests (§8 of ``docs/statistics.md``).

Read the interaction test first: with no evidence that the effect differs, "significant on mobile, not on
desktop" is the usual multiple-slicing illusion and the overall effect is the one to report.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._distributions import chi2_sf, difference_p_value, z_quantile
from .._errors import StatsInputError
from .._frequentist.corrections import adjust_pvalues
from .._options import Correction, check_alpha
from .frame import Cells, Floats, UnitsFrame, as_names, cells, check_units

__all__ = ["EFFECT_COLUMNS", "INTERACTION_COLUMNS", "CovType", "SegmentEffects", "robust_cell_variance", "segments"]

CovType = Literal["HC0", "HC1", "HC2", "HC3"]
COV_TYPES: tuple[CovType, ...] = ("HC0", "HC1", "HC2", "HC3")

EFFECT_COLUMNS = [
    "metric", "property", "segment", "variant", "control", "units", "control_units", "estimate",
    "control_estimate", "difference", "difference_se", "difference_ci_low", "difference_ci_high", "lift",
    "lift_ci_low", "lift_ci_high", "p_value", "adjusted_p_value", "significant",
]  # fmt: skip
INTERACTION_COLUMNS = ["metric", "property", "segments", "statistic", "dof", "p_value", "adjusted_p_value",
                       "heterogeneous"]  # fmt: skip


def robust_cell_variance(c: Cells, cov_type: CovType, parameters: float) -> Floats:
    """Var_HC of every cell mean (NaN for cells with fewer than 2 units); ``parameters`` is K for HC1."""
    n, var = c.n, c.var
    with np.errstate(invalid="ignore", divide="ignore"):
        if cov_type == "HC2":
            out = var / n
        elif cov_type == "HC3":
            out = var / (n - 1.0)
        else:
            out = (n - 1.0) * var / (n * n)
            if cov_type == "HC1":
                total = float(n[np.isfinite(var)].sum())
                out = out * (total / (total - parameters) if total > parameters else math.nan)
    return np.where(n > 1, out, math.nan)


def _wald(mean: Floats, variance: Floats) -> tuple[float, int]:
    """Wald χ² of "every interaction is 0" from cell means and their variances, shaped (segments, variants)."""
    segments, variants = mean.shape
    dof = (variants - 1) * (segments - 1)
    if dof == 0:
        return math.nan, 0
    # I_vs = (μ_vs − μ_cs) − (μ_v0 − μ_c0), for v ≥ 1 and s ≥ 1, as rows of R over vec(μ) (segment-major).
    r = np.zeros((dof, segments * variants))
    row = 0
    for v in range(1, variants):
        for s in range(1, segments):
            r[row, s * variants + v] += 1.0
            r[row, s * variants] -= 1.0
            r[row, v] -= 1.0
            r[row, 0] += 1.0
            row += 1
    contrast = r @ mean.ravel()
    covariance = (r * variance.ravel()) @ r.T
    try:
        statistic = float(contrast @ np.linalg.solve(covariance, contrast))
    except np.linalg.LinAlgError:
        return math.nan, dof
    return statistic, dof


@dataclass(frozen=True)
class SegmentEffects:
    """The result of :func:`segments`: ``effects`` (a row per metric, property, segment and non-control
    variant) and ``interactions`` (a row per metric and property: the heterogeneity test).

    ``to_frame()`` joins the two: each effect row with its property's interaction p-value.
    """

    effects: pd.DataFrame
    interactions: pd.DataFrame
    control: str
    alpha: float
    correction: Correction | None
    cov_type: CovType

    def to_frame(self) -> pd.DataFrame:
        """The effects with ``interaction_p_value`` and ``interaction_adjusted_p_value`` of their property."""
        test = self.interactions[["metric", "property", "p_value", "adjusted_p_value"]].rename(
            columns={"p_value": "interaction_p_value", "adjusted_p_value": "interaction_adjusted_p_value"}
        )
        return self.effects.merge(test, on=["metric", "property"], how="left")

    def summary(self) -> str:
        """One sentence per (metric, property): does the effect differ between its segments?"""
        lines = []
        for r in self.interactions.to_dict("records"):
            p = r["adjusted_p_value"] if self.correction else r["p_value"]
            label = "adjusted p" if self.correction else "p"
            if not math.isfinite(p):
                lines.append(f"{r['metric']} by {r['property']}: no interaction test (fewer than two segments "
                             "with units in every variant).")  # fmt: skip
                continue
            stat = f"interaction {label} = {p:.3g}; Wald χ² = {r['statistic']:.3g}, {r['dof']} dof"
            if r["heterogeneous"]:
                text = f"the effect differs between segments ({stat})."
            else:
                text = (f"no evidence that the effect differs between segments ({stat}): report the overall "
                        "effect, not the per-segment ones.")  # fmt: skip
            lines.append(f"{r['metric']} by {r['property']}: {text}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [f"<p>{esc(line)}</p>" for line in self.summary().splitlines()]
        shown = self.effects.copy()
        for column in ("lift", "lift_ci_low", "lift_ci_high"):
            shown[column] = shown[column].map(lambda x: "–" if not math.isfinite(x) else f"{x:+.2%}")
        table = shown.drop(columns=["control", "difference_se"]).to_html(
            index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0
        )
        level = f"{1 - self.alpha:.0%}"
        note = f"{level} confidence intervals, {self.cov_type} robust errors" + (
            f", {self.correction} adjustment across segments and metrics" if self.correction else ""
        )
        return f"<div>{''.join(parts)}<p><small>{esc(note)}</small></p>{table}</div>"


def segments(
    units: pd.DataFrame,
    by: str | Sequence[str],
    metric: str | Sequence[str] = "value",
    *,
    control: str = "control",
    covariate: str | None = None,
    alpha: float = 0.05,
    correction: Correction | None = "holm",
    cov_type: CovType = "HC2",
    min_units: int = 2,
    variant_column: str = "variant",
) -> SegmentEffects:
    """The effect of every variant in every segment of each property ``by``, and a heterogeneity test per
    property, on a units frame (one row per exposed unit).

    Parameters
    ----------
    units
        One row per unit: ``variant_column``, the numeric ``metric`` column(s), the property columns ``by``
        (a missing property value is its own segment, ``"(none)"``) and optionally ``covariate``.
    metric
        The value column(s) to analyse (a 0/1 column is a conversion: a linear probability model).
    covariate
        A pre-exposure column: values are CUPED-adjusted first, y − θ(x − x̄) with θ pooled over all units.
    correction
        ``"holm"`` (default), ``"bh"``, ``"bonferroni"`` or None, over all effect rows of the call, and
        separately over its interaction tests.
    cov_type
        The robust covariance: ``"HC2"`` (default; the per-segment standard error is Welch's), ``"HC0"``,
        ``"HC1"`` or ``"HC3"``; statsmodels' ``OLS(...).fit(cov_type=...)`` gives the same numbers.
    min_units
        Segments where some variant has fewer units (at least 2) get NaN effects and stay out of the
        interaction test.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> units = pd.DataFrame({"variant": np.repeat(["control", "test"], 400),
    ...                       "device": np.tile(["mobile", "desktop"], 400)})
    >>> units["value"] = rng.normal(10, 2, 800) + (units["variant"] == "test") * (units["device"] == "mobile")
    >>> result = segments(units, by="device")
    >>> result.effects[["segment", "difference", "significant"]].round(2).values.tolist()
    [['desktop', 0.03, False], ['mobile', 1.08, True]]
    >>> print(result.summary())  # doctest: +ELLIPSIS
    value by device: the effect differs between segments (interaction adjusted p = 0.000183; Wald χ² = 14, 1 dof).
    """
    check_alpha(alpha)
    if cov_type not in COV_TYPES:
        raise StatsInputError(f"cov_type must be one of {COV_TYPES}, got {cov_type!r}")
    if isinstance(min_units, bool) or not isinstance(min_units, int) or min_units < 2:
        raise StatsInputError(f"min_units must be an integer >= 2, got {min_units!r}")
    metrics, properties = as_names(metric, "metric"), as_names(by, "by")
    frame = check_units(units, control=control, columns=[*metrics, *([covariate] if covariate else [])],
                        variant_column=variant_column)  # fmt: skip
    z = z_quantile(alpha)
    effect_rows: list[dict[str, object]] = []
    test_rows: list[dict[str, object]] = []
    for name in metrics:
        values = frame.values(name, covariate)
        for prop in properties:
            rows, test = _property(frame, values, prop, cov_type, min_units, z)
            effect_rows += [{"metric": name, **row} for row in rows]
            test_rows.append({"metric": name, **test})
    effects = pd.DataFrame.from_records(effect_rows, columns=[c for c in EFFECT_COLUMNS if c not in
                                                              ("adjusted_p_value", "significant")])  # fmt: skip
    interactions = pd.DataFrame.from_records(test_rows, columns=INTERACTION_COLUMNS[:-2])
    for table in (effects, interactions):
        p = table["p_value"].to_numpy(dtype=float)
        table["adjusted_p_value"] = adjust_pvalues(p, correction) if correction else p
        with np.errstate(invalid="ignore"):
            table["significant" if table is effects else "heterogeneous"] = table["adjusted_p_value"] < alpha
    interactions["dof"] = interactions["dof"].astype(int)
    return SegmentEffects(effects, interactions, control, alpha, correction, cov_type)


def _property(
    frame: UnitsFrame, values: Floats, prop: str, cov_type: CovType, min_units: int, z: float
) -> tuple[list[dict[str, object]], dict[str, object]]:
    codes, names = frame.segment_codes(prop)
    k = len(frame.variants)
    c = cells(values, codes, len(names), frame.variant_codes, k)
    # Segments in the model: every variant with min_units or more (statsmodels would find the design singular
    # otherwise); HC1's K counts the model's cells.
    kept = np.all(c.n >= min_units, axis=1)
    model = Cells(c.n[kept], c.mean[kept], c.var[kept])
    variance = np.full(c.n.shape, math.nan)
    variance[kept] = robust_cell_variance(model, cov_type, parameters=float(model.n.size))
    rows: list[dict[str, object]] = []
    for s, segment in enumerate(names):
        for v in range(1, k):
            rows.append({"property": prop, "segment": segment, "variant": frame.variants[v],
                         "control": frame.control, **_effect(c, variance, s, v, z)})  # fmt: skip
    statistic, dof = _wald(model.mean, variance[kept]) if kept.sum() >= 2 else (math.nan, 0)
    p = chi2_sf(statistic, dof) if dof > 0 and math.isfinite(statistic) else math.nan
    return rows, {"property": prop, "segments": int(kept.sum()), "statistic": statistic, "dof": dof, "p_value": p}


def _effect(c: Cells, variance: npt.NDArray[np.float64], s: int, v: int, z: float) -> dict[str, float]:
    m_t, m_c = float(c.mean[s, v]), float(c.mean[s, 0])
    v_t, v_c = float(variance[s, v]), float(variance[s, 0])
    difference = m_t - m_c
    se = math.sqrt(v_t + v_c) if math.isfinite(v_t + v_c) else math.nan
    if math.isfinite(se) and m_c > 0:
        lift = m_t / m_c - 1.0
        lift_se = math.sqrt(v_t / m_c**2 + v_c * m_t**2 / m_c**4)
    else:
        lift = lift_se = math.nan
    if not math.isfinite(se):
        difference = math.nan
    p = difference_p_value(difference, se)
    return {
        "units": float(c.n[s, v]),
        "control_units": float(c.n[s, 0]),
        "estimate": m_t,
        "control_estimate": m_c,
        "difference": difference,
        "difference_se": se,
        "difference_ci_low": difference - z * se,
        "difference_ci_high": difference + z * se,
        "lift": lift,
        "lift_ci_low": lift - z * lift_se,
        "lift_ci_high": lift + z * lift_se,
        "p_value": p,
    }
