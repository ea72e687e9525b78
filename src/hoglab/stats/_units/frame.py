"""Per-unit data in: the units frame that segments, the heterogeneity scan and quantiles read.

A units frame has one row per exposed unit (person or group): its ``variant``, one numeric column per metric,
optionally a pre-exposure covariate, and property columns to slice by (what ``client.experiments.units``
returns). This module checks such a frame once and reduces a (segment, variant) grid of it to per-cell
sufficient statistics with ``numpy.bincount``, so a simulation of thousands of experiments stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._errors import StatsInputError
from .._options import few

__all__ = ["MISSING_SEGMENT", "Cells", "UnitsFrame", "as_names", "cells", "check_units"]

MISSING_SEGMENT = "(none)"
"""The segment of units whose property is missing: a segment of its own, never silently dropped."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class UnitsFrame:
    """A checked units frame: the variant of every unit as codes, the variant names (control first)."""

    frame: pd.DataFrame
    variant_codes: npt.NDArray[np.intp]
    variants: tuple[str, ...]

    @property
    def control(self) -> str:
        return self.variants[0]

    def values(self, column: str, covariate: str | None = None) -> Floats:
        """``column`` as floats; with ``covariate``, CUPED-adjusted: y − θ(x − x̄), θ = Cov(y, x)/Var(x) pooled.

        θ on all units pooled, one θ for every arm and segment (Deng, Xu, Kohavi & Walker 2013, §3.3), treated as
        known, as :func:`hoglab.stats.cuped_effect` does.
        """
        y = _numeric(self.frame, column)
        if covariate is None:
            return y
        x = _numeric(self.frame, covariate)
        x_centred = x - x.mean()
        var_x = float(x_centred @ x_centred)
        theta = float((y - y.mean()) @ x_centred) / var_x if var_x > 0 else 0.0
        adjusted: Floats = y - theta * x_centred
        return adjusted

    def segment_codes(self, column: str) -> tuple[npt.NDArray[np.intp], tuple[str, ...]]:
        """Codes of ``column``'s values (missing → :data:`MISSING_SEGMENT`) and the value names, sorted."""
        if column not in self.frame.columns:
            raise StatsInputError(f"no property column {column!r} in the units frame; its columns: "
                                  f"{few(list(map(str, self.frame.columns)))}")  # fmt: skip
        return _codes(self.frame[column], missing=MISSING_SEGMENT, sort=True)


def as_names(value: str | Sequence[str], what: str) -> list[str]:
    """One column name or several, as a non-empty list without repeats."""
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise StatsInputError(f"{what}: expected a column name or a list of them, got {value!r}")
    return list(dict.fromkeys(names))


def check_units(
    units: pd.DataFrame, *, control: str, columns: Sequence[str], variant_column: str = "variant"
) -> UnitsFrame:
    """Check the frame has the variant column, the control among its variants, another variant, and the
    numeric ``columns``; the variants come back control first, the others in order of appearance."""
    if not isinstance(units, pd.DataFrame):
        raise StatsInputError(f"units must be a DataFrame with one row per unit, got {type(units).__name__}")
    missing = [c for c in [variant_column, *columns] if c not in units.columns]
    if missing:
        raise StatsInputError(f"the units frame has no column {missing[0]!r}; its columns: "
                              f"{few(list(map(str, units.columns)))}")  # fmt: skip
    raw_codes, names = _codes(units[variant_column], missing=None, sort=False)
    if control not in names:
        raise StatsInputError(f"no control variant {control!r} in the units frame; its variants are {few(names)}")
    if len(names) < 2:
        raise StatsInputError(f"the units frame has only the variant {list(names)}; a comparison needs another one")
    variants = (control, *[v for v in names if v != control])
    position = {v: i for i, v in enumerate(variants)}
    codes = np.array([position[v] for v in names], dtype=np.intp)[raw_codes]
    for column in columns:
        _numeric(units, column)
    return UnitsFrame(units, codes, variants)


def _codes(column: pd.Series, *, missing: str | None, sort: bool) -> tuple[npt.NDArray[np.intp], tuple[str, ...]]:
    """Codes of a column's values by their text (1 and "1" are one value), in order of appearance or sorted;
    missing values are ``missing`` (refused when None)."""
    raw, uniques = pd.factorize(column, use_na_sentinel=True)
    labels = [str(u) for u in uniques]
    if (raw < 0).any():
        if missing is None:
            raise StatsInputError(f"the units frame has rows without a {column.name!r}")
        labels.append(missing)
        raw = np.where(raw < 0, len(labels) - 1, raw)
    names = sorted(set(labels)) if sort else list(dict.fromkeys(labels))
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[label] for label in labels], dtype=np.intp)[raw], tuple(names)


def _numeric(frame: pd.DataFrame, column: str) -> Floats:
    try:
        values = pd.to_numeric(frame[column], errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise StatsInputError(f"column {column!r} of the units frame is not numeric") from None
    if not np.all(np.isfinite(values)):
        raise StatsInputError(f"column {column!r} of the units frame has missing or infinite values")
    return values


@dataclass(frozen=True)
class Cells:
    """Per (segment, variant) cell: units ``n``, ``mean`` and unbiased variance ``var`` (NaN below 2 units).

    Arrays are shaped (segments, variants); ``total`` is the number of units.
    """

    n: Floats
    mean: Floats
    var: Floats

    @property
    def total(self) -> float:
        return float(self.n.sum())


def cells(values: Floats, segment: npt.NDArray[np.intp], segments: int, variant: npt.NDArray[np.intp],
          variants: int) -> Cells:  # fmt: skip
    """Sufficient statistics of every (segment, variant) cell by ``numpy.bincount``.

    Values are centred on their overall mean first, so Σx² − (Σx)²/n does not cancel catastrophically for
    large values with a small spread.

    >>> c = cells(np.array([1.0, 2.0, 3.0, 5.0]), np.array([0, 0, 0, 0]), 1, np.array([0, 0, 1, 1]), 2)
    >>> c.n.tolist(), c.mean.tolist(), c.var.tolist()
    ([[2.0, 2.0]], [[1.5, 4.0]], [[0.5, 2.0]])
    """
    shift = float(values.mean()) if values.size else 0.0
    x = values - shift
    flat = segment * variants + variant
    size = segments * variants
    n = np.bincount(flat, minlength=size).astype(float)
    s = np.bincount(flat, weights=x, minlength=size)
    ss = np.bincount(flat, weights=x * x, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s / n, math.nan)
        var = np.where(n > 1, np.maximum(ss - s * s / n, 0.0) / (n - 1.0), math.nan)
    shape = (segments, variants)
    return Cells(n.reshape(shape), (mean + shift).reshape(shape), var.reshape(shape))
