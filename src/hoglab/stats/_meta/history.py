"""A history of experiments in: one row per experiment (× metric × arm) with an estimate and its standard error.

The columns :func:`~hoglab.stats.meta_analysis` reads from a history frame (what ``client.experiments.history``
returns), each name changeable by an argument:

* ``estimate`` (the relative lift of the arm against its control) and ``standard_error`` (its delta-method
  standard error, ``se`` also read): rows where either is missing, such as the control arm's own row (no lift of
  the control against itself), are left out and counted;
* ``shipped`` (optional, boolean; missing counts as not shipped): the experiments the winner's curse is about;
* ``metric`` (optional): a history of several metrics must be narrowed to one with ``metric=`` (lifts of
  different metrics are different quantities);
* ``units`` and ``control_units`` (optional): the arm's and the control's units, for planning (the history's
  noise per unit, :func:`~hoglab.stats.plan_from_history`).

Every other column (experiment id and name, variant, dates, decision) is carried through to the result's frame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._errors import StatsInputError

__all__ = ["History", "read_history"]

Floats = npt.NDArray[np.float64]
STANDARD_ERROR_ALIASES = ("standard_error", "se")


@dataclass(frozen=True)
class History:
    """A checked history: estimates ``y``, standard errors ``se``, shipped flags, the kept rows of the input."""

    frame: pd.DataFrame
    y: Floats
    se: Floats
    shipped: npt.NDArray[np.bool_] | None
    unit_variance: float
    left_out: int
    metric: str | None

    @property
    def k(self) -> int:
        return int(self.y.size)

    @property
    def v(self) -> Floats:
        variance: Floats = self.se * self.se
        return variance


def _floats(values: Any, what: str) -> Floats:
    try:
        raw = np.asarray(values)
        out: Floats = (raw.astype(float) if raw.dtype.kind in "biuf" else
                       np.asarray(pd.to_numeric(pd.Series(raw.ravel()), errors="raise"), dtype=float)).ravel()
    except (TypeError, ValueError):
        raise StatsInputError(f"{what} must be numbers") from None
    return out


def _flags(values: Any, size: int) -> npt.NDArray[np.bool_]:
    raw = np.asarray(values)
    if raw.dtype == bool and raw.size == size:
        return raw.ravel()
    flags = pd.Series(raw.astype(object).ravel())
    if flags.size != size:
        raise StatsInputError(f"shipped has {flags.size} values for {size} experiments")
    known = flags.isna() | flags.isin([True, False, 0, 1])
    if not bool(known.all()):
        raise StatsInputError(f"shipped must be true/false (or missing), got {flags[~known].iloc[0]!r}")
    return flags.fillna(False).astype(bool).to_numpy()


def _column(frame: pd.DataFrame, name: str | None, aliases: Sequence[str], what: str) -> str:
    if name is not None:
        if name not in frame.columns:
            raise StatsInputError(f"the history has no {what} column {name!r}; its columns: {list(frame.columns)}")
        return name
    for alias in aliases:
        if alias in frame.columns:
            return alias
    raise StatsInputError(f"the history has no {what} column (looked for {', '.join(map(repr, aliases))}); "
                          f"its columns: {list(frame.columns)}")  # fmt: skip


def read_history(
    history: Any,
    standard_error: Any = None,
    *,
    estimate: str = "estimate",
    shipped: Any = None,
    metric: str | None = None,
) -> History:
    """Check a history frame (column names) or arrays (``history`` the estimates, ``standard_error`` theirs)."""
    if isinstance(history, pd.DataFrame):
        frame = history
        if "metric" in frame.columns:
            metrics = list(dict.fromkeys(frame["metric"].dropna().astype(str)))
            if metric is not None:
                frame = frame[frame["metric"].astype(str) == metric]
                if frame.empty:
                    raise StatsInputError(f"no rows of metric {metric!r} in the history; its metrics: {metrics}")
            elif len(metrics) > 1:
                raise StatsInputError(f"the history holds several metrics {metrics}: pick one with metric=...")
            else:
                metric = metrics[0] if metrics else None
        elif metric is not None:
            raise StatsInputError(f"metric={metric!r} given but the history has no 'metric' column")
        if standard_error is not None and not isinstance(standard_error, str):
            raise StatsInputError("with a history frame, standard_error is a column name")
        y_all = _floats(frame[_column(frame, estimate, (), "estimate")], "estimates")
        se_all = _floats(frame[_column(frame, standard_error, STANDARD_ERROR_ALIASES, "standard error")],
                         "standard errors")  # fmt: skip
        flag_column = shipped if isinstance(shipped, str) else ("shipped" if "shipped" in frame.columns else None)
        if flag_column is not None and flag_column not in frame.columns:
            raise StatsInputError(f"the history has no shipped column {flag_column!r}")
        flags_all = _flags(frame[flag_column], len(frame)) if flag_column else None
    else:
        if standard_error is None or isinstance(standard_error, str):
            raise StatsInputError("with arrays of estimates, pass their standard errors as standard_error=[...]")
        y_all = _floats(history, "estimates")
        se_all = _floats(standard_error, "standard errors")
        if se_all.size != y_all.size:
            raise StatsInputError(f"{y_all.size} estimates but {se_all.size} standard errors")
        flags_all = None if shipped is None else _flags(shipped, y_all.size)
        # The estimates and standard errors join the result's frame there; only the flags are the history's own.
        frame = pd.DataFrame({} if flags_all is None else {"shipped": flags_all}, index=pd.RangeIndex(y_all.size))
    kept = ~(np.isnan(y_all) | np.isnan(se_all))
    y, se = y_all[kept], se_all[kept]
    if not np.all(np.isfinite(y)):
        raise StatsInputError("estimates must be finite")
    if not np.all(np.isfinite(se) & (se > 0)):
        raise StatsInputError("standard errors must be positive and finite")
    if y.size < 2:
        raise StatsInputError(f"a meta-analysis needs at least 2 experiments with an estimate, got {y.size}")
    out = (frame if kept.all() else frame.loc[kept]).reset_index(drop=True)
    return History(out, y, se, None if flags_all is None else flags_all[kept], _unit_variance(out, se),
                   int((~kept).sum()), metric)  # fmt: skip


def _unit_variance(frame: pd.DataFrame, se: Floats) -> float:
    """The history's noise per unit, median of se²/(1/n + 1/n_control): the lift's variance with one unit per arm."""
    if not {"units", "control_units"} <= set(frame.columns):
        return math.nan
    n = pd.to_numeric(frame["units"], errors="coerce").to_numpy(dtype=float)
    n_c = pd.to_numeric(frame["control_units"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_unit = se * se / (1.0 / n + 1.0 / n_c)
    per_unit = per_unit[np.isfinite(per_unit) & (per_unit > 0)]
    return float(np.median(per_unit)) if per_unit.size else math.nan
