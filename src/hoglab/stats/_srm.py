"""Sample ratio mismatch: Pearson's goodness-of-fit test of the traffic split, as a table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._errors import StatsInputError
from ._types import chi2_sf

__all__ = ["SRM_THRESHOLD", "SRMResult", "srm"]

SRM_THRESHOLD = 0.001
"""p-value below which a split counts as mismatched (GrowthBook's default, strict because the
check runs on every experiment and every refresh)."""


@dataclass(frozen=True)
class SRMResult:
    """Observed units per variant against the expected shares, and the chi-square p-value."""

    variants: tuple[str, ...]
    observed: tuple[float, ...]
    expected_shares: tuple[float, ...]
    statistic: float
    dof: int
    p_value: float
    threshold: float = SRM_THRESHOLD

    @property
    def mismatch(self) -> bool:
        """True when the p-value is below ``threshold``: investigate before trusting results."""
        return self.p_value < self.threshold

    @property
    def total(self) -> float:
        return float(sum(self.observed))

    def to_frame(self) -> pd.DataFrame:
        """One row per variant: observed, expected share, observed share, expected count."""
        total = self.total
        return pd.DataFrame(
            {
                "variant": list(self.variants),
                "observed": list(self.observed),
                "expected_share": list(self.expected_shares),
                "observed_share": [o / total if total else math.nan for o in self.observed],
                "expected_count": [s * total for s in self.expected_shares],
            }
        )

    def _repr_html_(self) -> str:
        verdict = (
            f"<b>Sample ratio mismatch</b> (p = {self.p_value:.3g} &lt; {self.threshold:g})"
            if self.mismatch
            else f"Traffic split consistent with the design (p = {self.p_value:.3g})"
        )
        table = self.to_frame().to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0)
        return f"<div><p>{verdict}; χ² = {self.statistic:.4g}, dof = {self.dof}</p>{table}</div>"

    def __str__(self) -> str:
        state = "MISMATCH" if self.mismatch else "ok"
        return f"SRM {state}: chi2={self.statistic:.4g}, dof={self.dof}, p={self.p_value:.4g}"


def srm(
    observed: Mapping[str, float] | Sequence[float],
    expected_shares: Mapping[str, float] | Sequence[float] | None = None,
    *,
    threshold: float = SRM_THRESHOLD,
) -> SRMResult:
    """Chi-square goodness-of-fit test of observed units against the planned split.

    χ² = Σ (O_i − E_i)²/E_i with E_i = w_i·N, w the expected shares normalised to sum 1,
    dof = (number of arms with a positive share) − 1; p = χ²_dof.sf(χ²) (Pearson 1900; the
    standard SRM check of Fabijan et al. 2019, "Diagnosing Sample Ratio Mismatch in Online
    Controlled Experiments", KDD). Shares default to an equal split. An arm with a zero
    share takes no part unless units arrived there, which is a certain mismatch (p = 0).

    Examples
    --------
    >>> r = srm({"control": 5050, "test": 4950})
    >>> round(r.statistic, 3), round(r.p_value, 4), r.mismatch
    (1.0, 0.3173, False)
    >>> srm([821, 1000], [0.5, 0.5]).mismatch
    True
    """
    variants, counts = _as_pairs(observed, "observed")
    if expected_shares is None:
        shares = np.full(len(counts), 1.0 / len(counts))
    else:
        share_keys, share_values = _as_pairs(expected_shares, "expected_shares")
        if isinstance(expected_shares, Mapping):
            if isinstance(observed, Mapping) and set(share_keys) != set(variants):
                raise StatsInputError(
                    f"expected_shares keys {sorted(share_keys)} != variants {sorted(variants)}"
                )
            lookup = dict(zip(share_keys, share_values, strict=True))
            share_values = np.array([lookup.get(v, math.nan) for v in variants])
        if len(share_values) != len(counts):
            raise StatsInputError("expected_shares must give one share per variant")
        if share_values.sum() <= 0:
            raise StatsInputError("expected_shares must have a positive sum")
        shares = share_values / share_values.sum()
    if len(counts) < 2:
        raise StatsInputError("srm needs at least two variants")
    total = counts.sum()
    active = shares > 0
    dof = int(active.sum()) - 1
    if total == 0 or dof < 1:
        statistic, p_value = 0.0, 1.0
    elif np.any(counts[~active] > 0):
        statistic, p_value = math.inf, 0.0
    else:
        expected = shares[active] * total
        statistic = float(((counts[active] - expected) ** 2 / expected).sum())
        p_value = chi2_sf(statistic, dof)
    return SRMResult(
        variants=tuple(variants),
        observed=tuple(float(c) for c in counts),
        expected_shares=tuple(float(s) for s in shares),
        statistic=statistic,
        dof=max(dof, 0),
        p_value=p_value,
        threshold=threshold,
    )


def _as_pairs(values: Mapping[str, float] | Sequence[float], name: str) -> tuple[list[str], np.ndarray]:
    if isinstance(values, Mapping):
        keys = [str(k) for k in values]
        array = np.asarray(list(values.values()), dtype=float)
    else:
        array = np.asarray(list(values), dtype=float)
        keys = [f"variant_{i}" for i in range(array.size)]
    if array.ndim != 1 or not np.all(np.isfinite(array)) or np.any(array < 0):
        raise StatsInputError(f"{name} must be finite non-negative numbers")
    return keys, array
