"""Multiple-comparison corrections for p-values: Holm, Benjamini–Hochberg, Bonferroni."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .._errors import StatsInputError
from .._options import Correction

__all__ = ["adjust_pvalues"]


def adjust_pvalues(
    p_values: Sequence[float] | npt.ArrayLike, method: Correction = "holm"
) -> npt.NDArray[np.float64]:
    """Adjusted p-values for a family of tests; NaN entries are left out of the family.

    * ``"holm"``: step-down, p̃_(i) = max_{j≤i} min(1, (m − j + 1)·p_(j)), controls the
      family-wise error rate under any dependence (Holm 1979, Scand. J. Statist. 6:65).
    * ``"bh"``: step-up, p̃_(i) = min_{j≥i} min(1, m·p_(j)/j), controls the false discovery
      rate for independent or positively dependent tests (Benjamini & Hochberg 1995,
      JRSS-B 57:289).
    * ``"bonferroni"``: min(1, m·p).

    Reject where the adjusted p-value is below α. Same values as statsmodels'
    ``multipletests(method="holm" | "fdr_bh" | "bonferroni")``.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.02, 0.03, 0.5], "holm").round(2)
    array([0.04, 0.06, 0.06, 0.5 ])
    >>> adjust_pvalues([0.01, 0.02, 0.03, 0.5], "bh").round(2)
    array([0.04, 0.04, 0.04, 0.5 ])
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise StatsInputError("p_values must be one-dimensional")
    valid = ~np.isnan(p)
    if np.any((p[valid] < 0) | (p[valid] > 1)):
        raise StatsInputError("p-values must lie in [0, 1]")
    out = np.full(p.shape, np.nan)
    q = p[valid]
    m = q.size
    if m == 0:
        return out
    if method == "bonferroni":
        out[valid] = np.minimum(1.0, m * q)
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    elif method == "bh":
        adjusted = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
        adjusted = np.minimum(1.0, adjusted)
    else:
        raise StatsInputError(f"correction must be 'holm', 'bh' or 'bonferroni', got {method!r}")
    result = np.empty(m)
    result[order] = adjusted
    out[valid] = result
    return out
