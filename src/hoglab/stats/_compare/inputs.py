"""Turning what analysts have (dataclasses, tuples, dicts, DataFrames) into statistics.

Column names follow the SQL aggregates one would write, and PostHog's own result fields
(``key``, ``number_of_samples``, ``success_count``/``failure_count``, ``denominator_sum``,
``numerator_denominator_sum_product``) are understood too, so PostHog JSON loads directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .._errors import StatsInputError
from .._options import METRIC_KINDS, MetricKind, few
from .._statistics import Count, Proportion, Ratio, SampleMean

__all__ = ["Statistic", "kind_of", "metric_groups"]

Statistic = Proportion | Count | SampleMean | Ratio

_KIND_OF_TYPE: dict[type, MetricKind] = {
    Proportion: "conversion",
    Count: "count",
    SampleMean: "mean",
    Ratio: "ratio",
}

_ALIASES = {
    "key": "variant",
    "number_of_samples": "n",
    "users": "n",
    "units": "n",
    "exposures": "n",
    "conversions": "successes",
    "converted": "successes",
    "numerator_sum": "sum",
    "numerator_sum_squares": "sum_squares",
    "numerator_denominator_sum_product": "sum_of_products",
}


def kind_of(statistic: object) -> MetricKind:
    for cls, kind in _KIND_OF_TYPE.items():
        if isinstance(statistic, cls):
            return kind
    raise StatsInputError(f"not a statistic: {statistic!r}")


def metric_groups(
    data: Any, *, kind: MetricKind | None, name: str | None
) -> list[tuple[str, MetricKind, dict[str, Statistic]]]:
    """Split ``data`` into ``(metric name, kind, {variant: statistic})`` per metric."""
    if kind is not None and kind not in METRIC_KINDS:
        raise StatsInputError(f"metric must be one of {METRIC_KINDS} or None, got {kind!r}")
    if isinstance(data, pd.DataFrame):
        frame = data.rename(columns=_ALIASES)
        if "metric" in frame.columns:
            groups = []
            for metric, part in frame.groupby("metric", sort=False):
                part = part.drop(columns="metric").dropna(axis=1, how="all")
                arms = _arms_from_frame(part)
                groups.append((str(metric), *_typed(arms, kind)))
            if not groups:
                raise StatsInputError("the DataFrame has no rows")
            return groups
        arms = _arms_from_frame(frame)
    elif isinstance(data, Mapping):
        arms = {str(k): v for k, v in data.items()}
    else:
        raise StatsInputError(
            "data must be a mapping variant -> statistic/tuple/dict or a DataFrame with one row per variant, "
            f"got {type(data).__name__}"
        )
    metric_kind, stats = _typed(arms, kind)
    return [(name or metric_kind, metric_kind, stats)]


def _arms_from_frame(frame: pd.DataFrame) -> dict[str, Any]:
    if "variant" in frame.columns:
        keys = frame["variant"].astype(str).tolist()
        rows = frame.drop(columns="variant")
    else:
        keys = [str(k) for k in frame.index]
        rows = frame
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1} if len(keys) <= 50 else set(keys))
        raise StatsInputError(
            f"each variant must appear once per metric, got {len(keys):,} rows for {len(set(keys)):,} variants "
            f"(repeated: {few(repeated)}); a frame with one row per unit goes to "
            "recommend(units, value=...), segments(...) or quantile_effects(...)"
        )
    return {
        k: {c: v for c, v in row.items() if not _missing(v)}
        for k, (_, row) in zip(keys, rows.iterrows(), strict=True)
    }


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _typed(arms: Mapping[str, Any], kind: MetricKind | None) -> tuple[MetricKind, dict[str, Statistic]]:
    if not arms:
        raise StatsInputError("no variants given")
    stats: dict[str, Statistic] = {}
    for key, value in arms.items():
        stats[key] = _statistic(key, value, kind)
    kinds = {kind_of(s) for s in stats.values()}
    if len(kinds) != 1:
        raise StatsInputError(f"all variants of one metric must be the same kind, got {sorted(kinds)}")
    found = kinds.pop()
    if kind is not None and found != kind:
        raise StatsInputError(f"metric={kind!r} but the data are {found!r} statistics")
    return found, stats


def _statistic(key: str, value: Any, kind: MetricKind | None) -> Statistic:
    if isinstance(value, Proportion | Count | SampleMean | Ratio):
        return value
    if isinstance(value, Mapping):
        return _from_columns(key, {_ALIASES.get(str(k), str(k)): v for k, v in value.items()}, kind)
    if isinstance(value, tuple | list):
        numbers = list(value)
        if len(numbers) == 2:
            if kind == "count":
                return Count(*numbers)
            if kind in (None, "conversion"):
                return Proportion(*numbers)
        if len(numbers) == 3 and kind in (None, "mean"):
            return SampleMean(*numbers)
        raise StatsInputError(
            f"variant {key!r}: cannot read {value!r} as {kind or 'a metric'}; tuples are (n, successes) for "
            "conversion, (count, exposure) with metric='count', (n, sum, sum_squares) for mean"
        )
    raise StatsInputError(f"variant {key!r}: unsupported value {value!r}")


def _from_columns(key: str, row: dict[str, Any], kind: MetricKind | None) -> Statistic:
    has = set(row)
    try:
        if kind == "ratio" or (kind is None and "denominator_sum" in has):
            numerator = SampleMean(row["n"], row["sum"], row["sum_squares"])
            denominator = SampleMean(row["n"], row["denominator_sum"], row["denominator_sum_squares"])
            return Ratio(numerator, denominator, row["sum_of_products"])
        if kind in (None, "conversion") and {"success_count", "failure_count"} <= has:
            return Proportion(row["success_count"] + row["failure_count"], row["success_count"])
        if kind == "conversion" or (kind is None and "successes" in has):
            return Proportion(row["n"], row["successes"])
        if kind == "count" or (kind is None and {"count", "exposure"} <= has):
            return Count(row["count"], row["exposure"])
        if kind == "mean" or (kind is None and {"sum", "sum_squares"} <= has):
            if "pre_sum" in has:
                pre = SampleMean(row["n"], row["pre_sum"], row["pre_sum_squares"])
                return SampleMean(
                    row["n"], row["sum"], row["sum_squares"], pre=pre, sum_of_products=row["sum_of_products"]
                )
            return SampleMean(row["n"], row["sum"], row["sum_squares"])
    except KeyError as missing:
        raise StatsInputError(
            f"variant {key!r}: missing column {missing.args[0]!r} (have {sorted(has)})"
        ) from None
    raise StatsInputError(
        f"variant {key!r}: cannot tell the metric from columns {sorted(has)}; expected n+successes, "
        "count+exposure, n+sum+sum_squares, or a ratio's denominator_sum columns"
    )
