"""Sample ratio mismatch: Pearson's goodness-of-fit test of the traffic split, as a table."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ._distributions import chi2_sf
from ._errors import StatsInputError

__all__ = ["SRM_THRESHOLD", "SRMResult", "SummaryForm", "srm"]

SRM_THRESHOLD = 0.001
"""p-value below which a split counts as mismatched (GrowthBook's default, strict because the
check runs on every experiment and every refresh)."""

SummaryForm = Literal["sentence", "line", "title"]
"""How :meth:`SRMResult.summary` says it: a ``sentence`` for a page (picker, report HTML, results), a ``line`` for
a terminal report (``Traffic split: ...``), a ``title`` for a chart (no advice)."""


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
        """One row per variant: observed, expected share, observed share, expected count.

        ``observed`` is a count, so a nullable integer (``Int64``) when every count is whole; ``expected_count`` is
        an expectation (a float). The test itself is one result, not a column: ``attrs`` holds its ``statistic``,
        ``dof`` and ``p_value``.

        >>> frame = srm({"control": 5050, "test": 4950}).to_frame()
        >>> str(frame["observed"].dtype), frame["observed"].tolist(), round(frame.attrs["p_value"], 4)
        ('Int64', [5050, 4950], 0.3173)
        """
        total = self.total
        observed = pd.Series(list(self.observed), dtype="float64")
        whole = bool(np.all(np.isfinite(observed)) and np.all(observed == np.floor(observed)))
        frame = pd.DataFrame(
            {
                "variant": list(self.variants),
                "observed": observed.astype("Int64") if whole else observed,
                "expected_share": list(self.expected_shares),
                "observed_share": [o / total if total else math.nan for o in self.observed],
                "expected_count": [s * total for s in self.expected_shares],
            }
        )
        frame.attrs = {"statistic": self.statistic, "dof": self.dof, "p_value": self.p_value}
        return frame

    @property
    def planned_split(self) -> str:
        """The expected shares as text, e.g. ``50%/50%``."""
        return "/".join(f"{share:.0%}" for share in self.expected_shares)

    @property
    def counts_text(self) -> str:
        """The observed units per variant as text, e.g. ``control 5,050, test 4,950``."""
        return ", ".join(f"{v} {int(n):,}" for v, n in zip(self.variants, self.observed, strict=True))

    def summary(self, form: SummaryForm = "sentence", *, counted: str | None = None) -> str:
        """THE words of the check: every view of it (the picker, the report's text and page, the SRM plot's title,
        a comparison's results, this result's own display) says it through here.

        ``counted`` names what was counted (``"Exposures"``) to lead with the counts per variant.

        >>> ok, bad = srm({"control": 5050, "test": 4950}), srm({"control": 821, "test": 1000})
        >>> ok.summary()
        'Traffic split as planned (50%/50%): SRM check p = 0.32 (χ² = 1, 1 dof).'
        >>> bad.summary("line")
        'Traffic split: MISMATCH, investigate before trusting the results (SRM χ² p = 2.73e-05).'
        >>> bad.summary("title")
        'Sample ratio mismatch: p = 2.7e-05 < 0.001 (χ² = 17.6, 1 dof)'
        >>> ok.summary("line", counted="Exposures")
        'Exposures: control 5,050, test 4,950. Traffic split: as planned (SRM χ² p = 0.317).'
        """
        stat = f"χ² = {self.statistic:.3g}, {self.dof} dof"
        if form == "title":
            if self.mismatch:
                return f"Sample ratio mismatch: p = {self.p_value:.2g} < {self.threshold:g} ({stat})"
            return f"Traffic split as designed: p = {self.p_value:.2g} ({stat})"
        if form == "line":
            state = "MISMATCH, investigate before trusting the results" if self.mismatch else "as planned"
            text = f"Traffic split: {state} (SRM χ² p = {self.p_value:.3g})."
            return f"{counted}: {self.counts_text}. {text}" if counted else text
        if self.mismatch:
            text = (
                f"Sample ratio mismatch: p = {self.p_value:.2g} < {self.threshold:g} ({stat}). The traffic split "
                f"differs from the plan ({self.planned_split}): find out why before trusting the results."
            )
        else:
            text = f"Traffic split as planned ({self.planned_split}): SRM check p = {self.p_value:.2g} ({stat})."
        return f"{counted} {self.counts_text}. {text}" if counted else text

    def _repr_html_(self) -> str:
        table = self.to_frame().to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0)
        colour = "#cf222e" if self.mismatch else "inherit"
        return f"<div><p style='color:{colour}'>{html.escape(self.summary())}</p>{table}</div>"

    def __str__(self) -> str:
        return self.summary("line")


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
