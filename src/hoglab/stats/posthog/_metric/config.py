"""PostHog's experiment settings, resolved as PostHog resolves them (``stats_config`` + the team's defaults).

Pure functions over the experiment's ``stats_config`` JSON (PostHog: ``products/experiments/backend/hogql_queries/
utils.py``, ``cuped_config.py``, ``__init__.py``; the frontend's ``sequential.ts``). A value that is missing or
malformed falls back to the next level (experiment → team default → PostHog's default); PostHog never refuses a
setting here, so neither do these functions.

>>> settings = resolve_stats_settings({"method": "frequentist", "frequentist": {"sequential_testing_enabled": True}})
>>> settings.method, settings.alpha, settings.sequential, settings.sequential_tuning_parameter
('frequentist', 0.05, True, 5000.0)
>>> resolve_cuped({"cuped": {"enabled": True, "lookback_days": 90}})
CupedSettings(enabled=True, lookback_days=30)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..._errors import PostHogStatsError
from .._legacy.vocabulary import CONTROL_VARIANT_KEY

__all__ = [
    "DEFAULT_CUPED_LOOKBACK_DAYS",
    "DEFAULT_SEQUENTIAL_TUNING_PARAMETER",
    "CupedSettings",
    "StatsSettings",
    "TeamDefaults",
    "baseline_variant_key",
    "bayesian_ci_level",
    "bayesian_interval_bounds",
    "resolve_correction",
    "resolve_cuped",
    "resolve_cuped_variance",
    "resolve_stats_settings",
]

DEFAULT_SEQUENTIAL_TUNING_PARAMETER = 5000.0
DEFAULT_CUPED_LOOKBACK_DAYS = 14
_CUPED_LOOKBACK_RANGE = (1, 30)
_TUNING_RANGE = (1.0, 1_000_000_000.0)

Method = Literal["bayesian", "frequentist"]


@dataclass(frozen=True)
class TeamDefaults:
    """The team's experiment defaults (PostHog's ``TeamExperimentsConfig``), used when the experiment is silent."""

    sequential_testing_enabled: bool = False
    sequential_tuning_parameter: float | None = None
    cuped_enabled: bool = False
    cuped_lookback_days: int | None = None


@dataclass(frozen=True)
class StatsSettings:
    """Everything the statistics read from ``stats_config``, defaults applied.

    ``relative`` is PostHog's ``difference_type`` (``RELATIVE`` unless ``ABSOLUTE``); ``alpha`` and the sequential
    fields matter for the frequentist method, ``ci_level`` for the Bayesian one.
    """

    method: Method = "bayesian"
    relative: bool = True
    alpha: float = 0.05
    ci_level: float = 0.95
    sequential: bool = False
    sequential_tuning_parameter: float = DEFAULT_SEQUENTIAL_TUNING_PARAMETER


@dataclass(frozen=True)
class CupedSettings:
    """Whether CUPED is on for the experiment and its pre-exposure window (PostHog's ``CupedQueryConfig``)."""

    enabled: bool = False
    lookback_days: int = DEFAULT_CUPED_LOOKBACK_DAYS


def _section(stats_config: object, name: str) -> Mapping[str, Any]:
    section = stats_config.get(name) if isinstance(stats_config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def _in_range(value: object, low: float, high: float, default: float) -> float:
    # PostHog's _validate_numeric_range: a numeric string counts, anything unparsable or outside is the default.
    if isinstance(value, bool):
        return default
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return number if low <= number <= high else default


def _open_unit(value: object, default: float) -> float:
    number = _in_range(value, 0.0, 1.0, default)
    return number if 0.0 < number < 1.0 else default


def bayesian_ci_level(stats_config: object) -> float:
    """``stats_config.bayesian.ci_level`` if it is a finite number in (0, 1) whose interval bounds are both inside
    (0, 1) as floats, else 0.95 (0.9999999999999999 is refused: its upper bound rounds to 1).

    >>> bayesian_ci_level({"bayesian": {"ci_level": "0.925"}}), bayesian_ci_level({"bayesian": {"ci_level": 1}})
    (0.925, 0.95)
    """
    level = _open_unit(_section(stats_config, "bayesian").get("ci_level"), 0.95)
    lower = (1.0 - level) / 2.0
    return level if lower > 0.0 and 1.0 - lower < 1.0 else 0.95


def bayesian_interval_bounds(stats_config: object) -> tuple[float, float]:
    """The quantiles of the v2 credible intervals: ((1 − level)/2, 1 − (1 − level)/2).

    >>> [round(b, 4) for b in bayesian_interval_bounds({"bayesian": {"ci_level": 0.925}})]
    [0.0375, 0.9625]
    """
    lower = (1.0 - bayesian_ci_level(stats_config)) / 2.0
    return lower, 1.0 - lower


def _difference_type_relative(section: Mapping[str, Any]) -> bool:
    # PostHog parses the enum by name and falls back to RELATIVE for anything else.
    value = section.get("difference_type", "RELATIVE")
    return not (isinstance(value, str) and value == "ABSOLUTE")


def resolve_stats_settings(stats_config: object, team: TeamDefaults | None = None) -> StatsSettings:
    """PostHog's settings for ``stats_config`` (``method``: ``bayesian`` unless exactly ``frequentist``).

    Sequential testing: the experiment's ``frequentist.sequential_testing_enabled`` when present (an explicit
    ``False`` overrides a team default of ``True``), else the team default; the tuning parameter N* is the
    experiment's, else the team's, else 5000, each kept only within [1, 10⁹].
    """
    team = team or TeamDefaults()
    method: Method = "frequentist" if isinstance(stats_config, Mapping) and stats_config.get(
        "method") == "frequentist" else "bayesian"  # fmt: skip
    if method == "bayesian":
        bayes = _section(stats_config, "bayesian")
        return StatsSettings("bayesian", _difference_type_relative(bayes), ci_level=bayesian_ci_level(stats_config))
    freq = _section(stats_config, "frequentist")
    enabled = bool(freq["sequential_testing_enabled"]) if "sequential_testing_enabled" in freq else bool(
        team.sequential_testing_enabled)  # fmt: skip
    fallback = DEFAULT_SEQUENTIAL_TUNING_PARAMETER
    if team.sequential_tuning_parameter is not None:
        fallback = _in_range(team.sequential_tuning_parameter, *_TUNING_RANGE, fallback)
    tuning = _in_range(freq.get("sequential_tuning_parameter", fallback), *_TUNING_RANGE, fallback)
    alpha = _open_unit(freq.get("alpha", 0.05), 0.05)
    if not math.isfinite(alpha):
        alpha = 0.05
    return StatsSettings("frequentist", _difference_type_relative(freq), alpha, 0.95, enabled, tuning)


def _lookback(value: object, fallback: int) -> int:
    try:
        days: int = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return fallback
    low, high = _CUPED_LOOKBACK_RANGE
    return min(max(days, low), high)


def resolve_cuped(stats_config: object, team: TeamDefaults | None = None) -> CupedSettings:
    """PostHog's ``resolve_experiment_cuped_config``: ``stats_config.cuped.enabled`` when present, else the team
    default; the lookback (days) is the experiment's, else the team's, else 14, clamped to 1–30.

    Whether the *metric* supports CUPED (mean metrics without a threshold or session property; funnels that are
    ordered and not over warehouse steps) is the caller's to decide.
    """
    team = team or TeamDefaults()
    section = _section(stats_config, "cuped")
    enabled = bool(section["enabled"]) if "enabled" in section else bool(team.cuped_enabled)
    if not enabled:
        return CupedSettings()
    fallback = DEFAULT_CUPED_LOOKBACK_DAYS if team.cuped_lookback_days is None else _lookback(
        team.cuped_lookback_days, DEFAULT_CUPED_LOOKBACK_DAYS)  # fmt: skip
    value = section.get("lookback_days")
    return CupedSettings(True, fallback if value is None else _lookback(value, fallback))


CupedVariance = Literal["posthog", "delta"]


def resolve_cuped_variance(stats_config: object) -> CupedVariance:
    """hoglab's extension ``stats_config.cuped.variance``: ``"delta"`` for the delta-method variance of CUPED's
    relative effect (calibrated, docs/statistics.md §6.5), else ``"posthog"`` (PostHog's formula, the default, so
    the service's answers equal PostHog's). Anything else is PostHog's, as PostHog never refuses a setting.

    >>> resolve_cuped_variance({"cuped": {"enabled": True, "variance": "delta"}}), resolve_cuped_variance(None)
    ('delta', 'posthog')
    """
    return "delta" if _section(stats_config, "cuped").get("variance") == "delta" else "posthog"


def resolve_correction(stats_config: object) -> Literal["holm", "bh", "bonferroni"] | None:
    """hoglab's extension ``stats_config.multiple_comparisons``: ``"holm"``, ``"bh"`` (Benjamini–Hochberg) or
    ``"bonferroni"`` across the primary and secondary metrics and their variants; None (PostHog has no correction)
    for anything else.

    >>> resolve_correction({"multiple_comparisons": "bh"}), resolve_correction({})
    ('bh', None)
    """
    value = stats_config.get("multiple_comparisons") if isinstance(stats_config, Mapping) else None
    return value if value in ("holm", "bh", "bonferroni") else None


def baseline_variant_key(stats_config: object, variant_keys: Sequence[str]) -> str:
    """The experiment's baseline: ``stats_config.baseline_variant_key`` if set, else ``control`` when the flag has
    it (or has no variants), else the flag's first variant (PostHog's ``get_baseline_variant_key``).

    >>> baseline_variant_key(None, ["a", "b"]), baseline_variant_key({"baseline_variant_key": "b"}, ["a", "b"])
    ('a', 'b')
    """
    configured = stats_config.get("baseline_variant_key") if isinstance(stats_config, Mapping) else None
    if configured:
        return str(configured)
    if not variant_keys or CONTROL_VARIANT_KEY in variant_keys:
        return CONTROL_VARIANT_KEY
    return variant_keys[0]


def missing_baseline(key: str) -> PostHogStatsError:
    """PostHog's refusal when the baseline variant has no row (a ``no_data`` validation error)."""
    return PostHogStatsError(f"No exposures found for the baseline variant {key!r}", "no_data")
