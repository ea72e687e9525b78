"""PostHog's settings resolution: PostHog's ``test_cuped_config.py`` reproduced (19 cases), and the statistics
settings (method, difference type, α, sequential testing) with the team's defaults. (``test_stats_config.py``'s
cases are in ``test_engine_cases.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

from hoglab.stats.posthog import (
    DEFAULT_CUPED_LOOKBACK_DAYS,
    DEFAULT_SEQUENTIAL_TUNING_PARAMETER,
    ExperimentStats,
    TeamDefaults,
    experiment_results,
    resolve_cuped,
    resolve_stats_settings,
)


@pytest.mark.parametrize(("stats_config", "team_enabled", "expected"), [
    (None, False, False), (None, True, True), ({"cuped": {}}, True, True), ({"method": "bayesian"}, True, True),
    ({"cuped": {"enabled": True}}, False, True), ({"cuped": {"enabled": False}}, True, False),
    ({"cuped": {"enabled": True}}, True, True),
], ids=["no_config_no_team_default", "no_config_team_default", "empty_cuped_uses_team_default",
        "missing_cuped_key_uses_team_default", "experiment_true_team_false", "experiment_false_overrides_team_true",
        "experiment_true_team_true"])  # fmt: skip
def test_cuped_priority(stats_config: Any, team_enabled: bool, expected: bool) -> None:
    assert resolve_cuped(stats_config, TeamDefaults(cuped_enabled=team_enabled)).enabled is expected


def test_cuped_experiment_lookback_when_explicitly_enabled() -> None:
    settings = resolve_cuped({"cuped": {"enabled": True, "lookback_days": 7}})
    assert settings.enabled and settings.lookback_days == 7


def test_cuped_default_lookback_when_the_team_enables() -> None:
    settings = resolve_cuped(None, TeamDefaults(cuped_enabled=True))
    assert settings.enabled and settings.lookback_days == DEFAULT_CUPED_LOOKBACK_DAYS == 14


def test_cuped_team_default_ignored_when_the_metric_is_unsupported() -> None:
    # experiment_results resolves CUPED only for mean (without threshold) and funnel metrics.
    ratio = ExperimentStats("control", 100, 50.0, 75.0, 200.0, 500.0, 120.0, covariate_sum=1.0,
                            covariate_sum_squares=1.0, covariate_sum_product=1.0)  # fmt: skip
    test = ExperimentStats("test", 100, 55.0, 80.0, 200.0, 500.0, 125.0, covariate_sum=1.0,
                           covariate_sum_squares=1.0, covariate_sum_product=1.0)  # fmt: skip
    _, [r] = experiment_results("ratio", ratio, [test], team=TeamDefaults(cuped_enabled=True))
    assert r.cuped is None


@pytest.mark.parametrize(("stats_config", "team_lookback", "expected"), [
    (None, None, 14), (None, 7, 7), ({"cuped": {"enabled": True, "lookback_days": 21}}, 7, 21),
    ({"cuped": {"enabled": True}}, 10, 10), (None, "not-a-number", 14), (None, 0, 1), (None, 1000, 30),
    ({"cuped": {"enabled": True, "lookback_days": "abc"}}, 7, 7),
    ({"cuped": {"enabled": True, "lookback_days": "abc"}}, None, 14),
])  # fmt: skip
def test_cuped_lookback_days_resolution(stats_config: Any, team_lookback: Any, expected: int) -> None:
    settings = resolve_cuped(stats_config, TeamDefaults(cuped_enabled=True, cuped_lookback_days=team_lookback))
    assert settings.enabled and settings.lookback_days == expected


@pytest.mark.parametrize(("stats_config", "method", "relative"), [
    (None, "bayesian", True), ({"method": "frequentist"}, "frequentist", True), ({"method": "other"}, "bayesian", True),
    ({"method": "frequentist", "frequentist": {"difference_type": "ABSOLUTE"}}, "frequentist", False),
    ({"bayesian": {"difference_type": "ABSOLUTE"}}, "bayesian", False), ([], "bayesian", True),
])  # fmt: skip
def test_method_and_difference_type(stats_config: Any, method: str, relative: bool) -> None:
    settings = resolve_stats_settings(stats_config)
    assert (settings.method, settings.relative) == (method, relative)


@pytest.mark.parametrize(("frequentist", "team", "sequential", "tuning"), [
    ({}, TeamDefaults(), False, DEFAULT_SEQUENTIAL_TUNING_PARAMETER),
    ({"sequential_testing_enabled": True, "sequential_tuning_parameter": 800}, TeamDefaults(), True, 800.0),
    ({}, TeamDefaults(sequential_testing_enabled=True, sequential_tuning_parameter=1200), True, 1200.0),
    ({"sequential_tuning_parameter": 900}, TeamDefaults(sequential_tuning_parameter=1200), False, 900.0),
    ({"sequential_tuning_parameter": 0}, TeamDefaults(sequential_tuning_parameter=1200), False, 1200.0),
    ({"sequential_tuning_parameter": 2e9}, TeamDefaults(), False, DEFAULT_SEQUENTIAL_TUNING_PARAMETER),
    ({"sequential_tuning_parameter": "300"}, TeamDefaults(sequential_tuning_parameter=-5), False, 300.0),
])  # fmt: skip
def test_sequential_settings(frequentist: dict[str, Any], team: TeamDefaults, sequential: bool, tuning: float) -> None:
    settings = resolve_stats_settings({"method": "frequentist", "frequentist": frequentist}, team)
    assert (settings.sequential, settings.sequential_tuning_parameter) == (sequential, tuning)


@pytest.mark.parametrize(("alpha", "expected"), [(0.01, 0.01), ("0.1", 0.1), (0, 0.05), (1, 0.05), (5.0, 0.05),
                                                 (None, 0.05), (True, 0.05)])  # fmt: skip
def test_alpha(alpha: Any, expected: float) -> None:
    assert resolve_stats_settings({"method": "frequentist", "frequentist": {"alpha": alpha}}).alpha == expected
