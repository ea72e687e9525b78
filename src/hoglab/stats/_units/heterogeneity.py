"""A heterogeneous-effect scan: which segments respond differently from everyone else, with the false
discovery rate controlled across every segment looked at.

The reference is Statsig's "Differential Impact Detection" (docs.statsig.com/experiments-plus/
differential-impact-detection; Statsig blog, 17 July 2024): for each segment of each chosen property, the
treatment effect in the segment is compared with the treatment effect in the rest of the population by Welch's
t-test,

    TE = x̄_t − x̄_c,   Var(TE) = s²_t/n_t + s²_c/n_c,   n_TE = min(n_t, n_c)
    t = (TE_seg − TE_rest)/√(Var_seg + Var_rest),
    ν = (Var_seg + Var_rest)²/(Var_seg²/(n_TE,seg − 1) + Var_rest²/(n_TE,rest − 1))    (Welch 1947)

Statsig corrects with Bonferroni; hoglab uses Benjamini–Hochberg at level q over every (metric, property,
segment, variant) tested (Benjamini & Hochberg 1995, *JRSS-B* 57:289): a scan is a search, and the false
discovery rate is the error worth bounding there. A segment is only tested when it and its rest both have at
least ``min_units`` units in the variant and in the control (small segments make extreme, noisy effects).

Each test's null is "this segment's effect equals the rest's". When one segment truly differs, the other segments
of the same property differ a little from their rest too (the rest includes the outlier), so a strong effect can
bring its neighbours along: read the discoveries from the smallest q-value, and use :func:`segments`' interaction
test for "does the effect differ across this property at all". Segments of a property unrelated to the outlier
keep their null, and the false discovery rate over them stays at q (``tests/stats/units/test_heterogeneity.py``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._distributions import t_p_value
from .._errors import StatsInputError
from .._frequentist.corrections import adjust_pvalues
from .frame import Cells, as_names, cells, check_units

__all__ = ["SCAN_COLUMNS", "HeterogeneityScan", "heterogeneity_scan"]

SCAN_COLUMNS = [
    "metric", "property", "segment", "variant", "units", "control_units", "segment_effect", "rest_effect",
    "difference", "se", "dof", "statistic", "p_value", "q_value", "discovery",
]  # fmt: skip


@dataclass(frozen=True)
class HeterogeneityScan:
    """The result of :func:`heterogeneity_scan`: ``results`` has a row per (metric, property, segment,
    variant); untested segments (too small) have NaN statistics and are not discoveries."""

    results: pd.DataFrame
    q: float
    min_units: int

    @property
    def discoveries(self) -> pd.DataFrame:
        """The rows whose BH-adjusted p-value (``q_value``) is at most ``q``, smallest first."""
        return self.results[self.results["discovery"]].sort_values("q_value").reset_index(drop=True)

    @property
    def tested(self) -> int:
        """How many segment × variant × metric tests the false discovery rate covers."""
        return int(self.results["p_value"].notna().sum())

    def summary(self) -> str:
        """The discoveries in words (or that there are none)."""
        found = self.discoveries
        head = (f"Heterogeneous-effect scan: {len(found)} of {self.tested} segments respond differently from the "
                f"rest (Benjamini–Hochberg, q = {self.q:g}; segments of at least {self.min_units} units per arm)")
        if found.empty:
            return head + "."
        parts = [
            f"{r['property']} = {r['segment']} ({r['variant']}, {r['metric']}): effect {r['segment_effect']:+.4g} "
            f"vs {r['rest_effect']:+.4g} elsewhere, q = {r['q_value']:.2g}"
            for r in found.to_dict("records")
        ]  # fmt: skip
        return head + ": " + "; ".join(parts) + "."

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        table = self.results.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        return f"<div><p>{html.escape(self.summary())}</p>{table}</div>"


def heterogeneity_scan(
    units: pd.DataFrame,
    by: str | Sequence[str],
    metric: str | Sequence[str] = "value",
    *,
    control: str = "control",
    covariate: str | None = None,
    q: float = 0.05,
    min_units: int = 100,
    variant_column: str = "variant",
) -> HeterogeneityScan:
    """Each segment's effect against the rest of the population's, over the properties ``by``, with the
    false discovery rate held at ``q`` (Statsig's differential impact detection, with Benjamini–Hochberg).

    ``units`` is a units frame (one row per unit: ``variant``, the ``metric`` column(s), the properties,
    optionally a CUPED ``covariate``). Returns a :class:`HeterogeneityScan`; its ``results`` columns are
    ``metric, property, segment, variant, units, control_units, segment_effect, rest_effect, difference``
    (segment minus rest), ``se, dof, statistic`` (Welch's t), ``p_value, q_value`` (BH-adjusted) and
    ``discovery`` (q_value ≤ q).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(4)
    >>> units = pd.DataFrame({"variant": rng.choice(["control", "test"], 6000),
    ...                       "country": rng.choice(["de", "fr", "uk", "us"], 6000)})
    >>> units["value"] = rng.normal(0, 1, 6000) + 0.3 * ((units["variant"] == "test") & (units["country"] == "fr"))
    >>> scan = heterogeneity_scan(units, by="country")
    >>> scan.discoveries[["segment", "discovery"]].values.tolist()
    [['fr', True]]
    """
    if not 0.0 < q < 1.0:
        raise StatsInputError(f"q must be strictly between 0 and 1, got {q!r}")
    if isinstance(min_units, bool) or not isinstance(min_units, int) or min_units < 2:
        raise StatsInputError(f"min_units must be an integer >= 2, got {min_units!r}")
    metrics, properties = as_names(metric, "metric"), as_names(by, "by")
    frame = check_units(units, control=control, columns=[*metrics, *([covariate] if covariate else [])],
                        variant_column=variant_column)  # fmt: skip
    k = len(frame.variants)
    records: list[dict[str, object]] = []
    for name in metrics:
        values = frame.values(name, covariate)
        totals = cells(values, np.zeros(values.size, dtype=np.intp), 1, frame.variant_codes, k)
        for prop in properties:
            codes, names = frame.segment_codes(prop)
            part = cells(values, codes, len(names), frame.variant_codes, k)
            rest = _complement(totals, part)
            for s, segment in enumerate(names):
                for v in range(1, k):
                    records.append({"metric": name, "property": prop, "segment": segment,
                                    "variant": frame.variants[v], **_test(part, rest, s, v, min_units)})  # fmt: skip
    results = pd.DataFrame.from_records(records, columns=SCAN_COLUMNS[:-2])
    results["q_value"] = adjust_pvalues(results["p_value"].to_numpy(dtype=float), "bh")
    with np.errstate(invalid="ignore"):
        results["discovery"] = results["q_value"] <= q
    return HeterogeneityScan(results, q, min_units)


def _complement(totals: Cells, part: Cells) -> Cells:
    """Each segment's rest (all other units) per variant, by removing the segment from the arm's totals:
    M2_total = M2_seg + M2_rest + δ²·n_seg·n_rest/n_total (Chan, Golub & LeVeque 1979)."""
    n_all, m_all = totals.n, totals.mean
    m2_all = np.nan_to_num(totals.var) * np.maximum(n_all - 1.0, 0.0)
    n_seg = part.n
    m2_seg = np.nan_to_num(part.var) * np.maximum(n_seg - 1.0, 0.0)
    n_rest = n_all - n_seg
    with np.errstate(invalid="ignore", divide="ignore"):
        m_seg = np.nan_to_num(part.mean)
        m_rest = np.where(n_rest > 0, (n_all * m_all - n_seg * m_seg) / n_rest, math.nan)
        m2_rest = m2_all - m2_seg - (m_rest - m_seg) ** 2 * n_seg * n_rest / n_all
        var_rest = np.where(n_rest > 1, np.maximum(m2_rest, 0.0) / (n_rest - 1.0), math.nan)
    return Cells(n_rest, m_rest, var_rest)


def _test(part: Cells, rest: Cells, s: int, v: int, min_units: int) -> dict[str, float]:
    row: dict[str, float] = {"units": float(part.n[s, v]), "control_units": float(part.n[s, 0])}
    te_seg, var_seg, n_seg = _treatment_effect(part, s, v)
    te_rest, var_rest, n_rest = _treatment_effect(rest, s, v)
    row |= {"segment_effect": te_seg, "rest_effect": te_rest, "difference": te_seg - te_rest}
    small = min(n_seg, n_rest) < min_units
    variance = var_seg + var_rest
    if small or not variance > 0:
        return row | {"se": math.nan, "dof": math.nan, "statistic": math.nan, "p_value": math.nan}
    se = math.sqrt(variance)
    dof = variance**2 / (var_seg**2 / (n_seg - 1.0) + var_rest**2 / (n_rest - 1.0))
    statistic = (te_seg - te_rest) / se
    return row | {"se": se, "dof": dof, "statistic": statistic, "p_value": t_p_value(statistic, dof)}


def _treatment_effect(c: Cells, s: int, v: int) -> tuple[float, float, float]:
    """TE, Var(TE) and n_TE = min(n_t, n_c) of one segment (row s) for variant v against the control."""
    n_t, n_c = float(c.n[s, v]), float(c.n[s, 0])
    if min(n_t, n_c) < 2:
        return math.nan, math.nan, min(n_t, n_c)
    te = float(c.mean[s, v] - c.mean[s, 0])
    return te, float(c.var[s, v] / n_t + c.var[s, 0] / n_c), min(n_t, n_c)

