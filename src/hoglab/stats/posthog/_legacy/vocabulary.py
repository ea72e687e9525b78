"""PostHog's experiment vocabulary: constants, significance codes, variant and verdict shapes.

Field names and JSON shapes follow PostHog's ``ExperimentVariantFunnelsBaseStats``,
``ExperimentVariantTrendsBaseStats`` and ``Experiment{Funnels,Trends}QueryResponse``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np

from ..._errors import PostHogStatsError, StatsInputError

__all__ = [
    "CONTROL_VARIANT_KEY",
    "EXPECTED_LOSS_SIGNIFICANCE_LEVEL",
    "FF_DISTRIBUTION_THRESHOLD",
    "MIN_PROBABILITY_FOR_SIGNIFICANCE",
    "P_VALUE_SIGNIFICANCE_LEVEL",
    "FunnelInput",
    "FunnelVariant",
    "PostHogFunnelVerdict",
    "PostHogTrendVerdict",
    "SignificanceCode",
    "TrendInput",
    "TrendVariant",
]

# PostHog's constants (posthog/hogql_queries/experiments/__init__.py).
CONTROL_VARIANT_KEY = "control"
FF_DISTRIBUTION_THRESHOLD = 100
MIN_PROBABILITY_FOR_SIGNIFICANCE = 0.9
EXPECTED_LOSS_SIGNIFICANCE_LEVEL = 0.01
P_VALUE_SIGNIFICANCE_LEVEL = 0.05
MAX_TEST_VARIANTS = 9  # PostHog refuses 10 or more test variants (11+ variants in all)


class SignificanceCode(StrEnum):
    """PostHog's ``ExperimentSignificanceCode`` values."""

    SIGNIFICANT = "significant"
    NOT_ENOUGH_EXPOSURE = "not_enough_exposure"
    LOW_WIN_PROBABILITY = "low_win_probability"
    HIGH_LOSS = "high_loss"
    HIGH_P_VALUE = "high_p_value"


@dataclass(frozen=True)
class FunnelVariant:
    """One funnel arm as PostHog reports it: last-step conversions and drop-offs."""

    key: str
    success_count: float
    failure_count: float

    def __post_init__(self) -> None:
        _check_key(self.key)
        for name in ("success_count", "failure_count"):
            _check_count(f"FunnelVariant {self.key!r}", name, getattr(self, name))

    @property
    def total(self) -> float:
        return self.success_count + self.failure_count


@dataclass(frozen=True)
class TrendVariant:
    """One trend arm: event ``count``, ``exposure`` relative to control, raw ``absolute_exposure``."""

    key: str
    count: float
    exposure: float
    absolute_exposure: float = 1.0  # PostHog's default when the exposure query found none

    def __post_init__(self) -> None:
        _check_key(self.key)
        _check_count(f"TrendVariant {self.key!r}", "count", self.count)
        for name in ("exposure", "absolute_exposure"):
            value = getattr(self, name)
            _check_count(f"TrendVariant {self.key!r}", name, value)
            if value <= 0:
                raise StatsInputError(f"TrendVariant {self.key!r}.{name} must be positive, got {value!r}")


@dataclass(frozen=True)
class PostHogFunnelVerdict:
    """PostHog's funnel result fields (``ExperimentFunnelsQueryResponse`` minus the insight)."""

    probability: dict[str, float]
    significant: bool
    significance_code: SignificanceCode
    expected_loss: float
    credible_intervals: dict[str, tuple[float, float]]
    variants: tuple[FunnelVariant, ...]

    def to_dict(self) -> dict[str, Any]:
        """PostHog's JSON shapes: intervals as ``[low, high]`` lists, the code as its string."""
        return {
            "probability": dict(self.probability),
            "significant": self.significant,
            "significance_code": self.significance_code.value,
            "expected_loss": self.expected_loss,
            "credible_intervals": {k: [lo, hi] for k, (lo, hi) in self.credible_intervals.items()},
            "variants": [
                {"key": v.key, "success_count": v.success_count, "failure_count": v.failure_count}
                for v in self.variants
            ],
        }


@dataclass(frozen=True)
class PostHogTrendVerdict:
    """PostHog's trend result fields (``ExperimentTrendsQueryResponse`` minus the insight)."""

    probability: dict[str, float]
    significant: bool
    significance_code: SignificanceCode
    p_value: float
    credible_intervals: dict[str, tuple[float, float]]
    variants: tuple[TrendVariant, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "probability": dict(self.probability),
            "significant": self.significant,
            "significance_code": self.significance_code.value,
            "p_value": self.p_value,
            "credible_intervals": {k: [lo, hi] for k, (lo, hi) in self.credible_intervals.items()},
            "variants": [
                {
                    "key": v.key,
                    "count": v.count,
                    "exposure": v.exposure,
                    "absolute_exposure": v.absolute_exposure,
                }
                for v in self.variants
            ],
        }


FunnelInput = Iterable[FunnelVariant | tuple[str, float, float]] | Mapping[str, tuple[float, float]]
TrendInput = Iterable[TrendVariant | tuple[Any, ...]] | Mapping[str, tuple[float, float]]

_V = TypeVar("_V", FunnelVariant, TrendVariant)


def _split(arms: list[_V]) -> tuple[_V, tuple[_V, ...]]:
    keys = [v.key for v in arms]
    if len(set(keys)) != len(keys):
        raise StatsInputError(f"variant keys must be unique, got {keys}")
    control = next((v for v in arms if v.key == CONTROL_VARIANT_KEY), None)
    if control is None:
        raise PostHogStatsError("No control variant data found", code="no_data")
    tests = tuple(v for v in arms if v.key != CONTROL_VARIANT_KEY)
    if len(tests) > MAX_TEST_VARIANTS:
        raise PostHogStatsError(
            "Can't calculate experiment results for more than 10 variants", code="too_much_data"
        )
    if not tests:
        raise PostHogStatsError("Can't calculate experiment results for less than 2 variants", code="no_data")
    return control, tests


def _funnel_variants(variants: FunnelInput) -> list[FunnelVariant]:
    if isinstance(variants, Mapping):
        return [FunnelVariant(str(k), *_pair(k, v)) for k, v in variants.items()]
    out = []
    for item in variants:
        if isinstance(item, FunnelVariant):
            out.append(item)
        elif isinstance(item, tuple) and len(item) == 3:
            out.append(FunnelVariant(str(item[0]), item[1], item[2]))
        else:
            raise StatsInputError(
                f"expected FunnelVariant or (key, success_count, failure_count), got {item!r}"
            )
    return out


def _trend_variants(variants: TrendInput) -> list[TrendVariant]:
    if isinstance(variants, Mapping):
        pairs = {str(k): _pair(k, v) for k, v in variants.items()}
        base = pairs.get(CONTROL_VARIANT_KEY)
        if base is None:
            raise PostHogStatsError("No control variant data found", code="no_data")
        if base[1] <= 0:
            raise StatsInputError("the control's absolute exposure must be positive")
        return [TrendVariant(k, c, e / base[1], e) for k, (c, e) in pairs.items()]
    out = []
    for item in variants:
        if isinstance(item, TrendVariant):
            out.append(item)
        elif isinstance(item, tuple) and len(item) in (3, 4):
            out.append(TrendVariant(str(item[0]), *item[1:]))
        else:
            raise StatsInputError(
                f"expected TrendVariant or (key, count, exposure, absolute_exposure), got {item!r}"
            )
    return out


def _pair(key: object, value: object) -> tuple[float, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise StatsInputError(f"variant {key!r}: expected a pair of numbers, got {value!r}")
    return value[0], value[1]


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise StatsInputError(f"variant key must be a non-empty string, got {key!r}")


def _check_count(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise StatsInputError(f"{owner}.{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)) or float(value) < 0:
        raise StatsInputError(f"{owner}.{name} must be finite and non-negative, got {value!r}")
