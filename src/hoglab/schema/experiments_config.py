"""A project's experiment defaults: PostHog's ``TeamExperimentsConfig``, ``/api/projects/:id/experiments_config/``.

The defaults an experiment falls back to when its ``stats_config`` is silent (resolved at query time, never copied
into the experiment): CUPED on or off and its lookback, sequential testing and its tuning parameter, and whether
only persons whose metric window has elapsed count. The other fields are kept for PostHog's UI and ``hoglab pull``.

>>> ExperimentsConfigUpdate(default_cuped_enabled=True, default_cuped_lookback_days=7).to_json_dict()
{'default_cuped_enabled': True, 'default_cuped_lookback_days': 7}
>>> ExperimentsConfig().default_sequential_testing_enabled
False
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import RequestModel, ResponseModel

__all__ = ["EXPERIMENTS_CONFIG_FIELDS", "ExperimentsConfig", "ExperimentsConfigUpdate"]

_TIME = r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$"


class ExperimentsConfigUpdate(RequestModel):
    """A PATCH of the defaults: any subset of the fields (``null`` clears a nullable one)."""

    experiment_recalculation_time: str | None = Field(default=None, pattern=_TIME)
    default_experiment_confidence_level: float | None = Field(default=None, gt=0, lt=1)
    default_experiment_stats_method: Literal["bayesian", "frequentist"] | None = None
    experiment_precomputation_enabled: bool | None = None
    default_only_count_matured_users: bool | None = None
    default_cuped_enabled: bool | None = None
    default_cuped_lookback_days: int | None = Field(default=None, ge=1, le=30)
    default_minimum_detectable_effect: float | None = Field(default=None, gt=0, le=1000)
    default_sequential_testing_enabled: bool | None = None
    default_sequential_tuning_parameter: float | None = Field(default=None, ge=1, le=1_000_000_000)


class ExperimentsConfig(ResponseModel):
    """The project's experiment defaults as the endpoint answers them (PostHog's defaults where none was saved)."""

    experiment_recalculation_time: str | None = None
    default_experiment_confidence_level: float | None = None
    default_experiment_stats_method: Literal["bayesian", "frequentist"] | None = None
    experiment_precomputation_enabled: bool = False
    default_only_count_matured_users: bool = False
    default_cuped_enabled: bool = False
    default_cuped_lookback_days: int | None = None
    default_minimum_detectable_effect: float | None = None
    default_sequential_testing_enabled: bool = False
    default_sequential_tuning_parameter: float | None = None


EXPERIMENTS_CONFIG_FIELDS: tuple[str, ...] = tuple(ExperimentsConfigUpdate.model_fields)
"""The fields of the endpoint, in PostHog's order."""
