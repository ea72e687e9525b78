"""An experiment as the HogQL builders read it (:class:`ResolvedExperiment`): its flag, variants, dates, exposure
criteria and stats settings, already read from wherever it is stored.

The service resolves a stored experiment into it before the query cache lookup
(``server/experiments/metric/resolve.py``); the toolkit builds it from PostHog's answer (``client/_units.py``).

>>> from datetime import UTC, datetime
>>> ResolvedExperiment(experiment_id=1, flag_key="f", variants=("control", "test"),
...                    start=datetime(2026, 1, 1, tzinfo=UTC), group_type_index=0).entity
'`$group_0`'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from hoglab.schema import ExperimentExposureCriteria

__all__ = ["ResolvedExperiment"]


class ResolvedExperiment(BaseModel):
    """What the HogQL builders read of an experiment: the service reads it from the stored experiment (and, for
    exposures, the query's own overrides), the toolkit from PostHog's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    experiment_id: int
    flag_key: str
    variants: tuple[str, ...]
    start: datetime
    end: datetime | None = None
    exposure_criteria: ExperimentExposureCriteria = ExperimentExposureCriteria()
    stats_config: dict[str, Any] = {}
    team_config: dict[str, Any] = {}
    only_count_matured_users: bool = False
    holdout_key: str | None = None
    # hoglab's compare_to_holdout sets it to the holdout arm; otherwise PostHog's choice (the service's baseline()).
    baseline_override: str | None = None
    # The flag's aggregation_group_type_index: the experiment randomises groups of that type, not persons.
    group_type_index: int | None = None

    @property
    def entity(self) -> str:
        """HogQL of an event's unit: ``person_id``, or ``$group_N`` for an experiment by group (PostHog's entity
        key: the exposure event's group, and each metric event's own group)."""
        return "person_id" if self.group_type_index is None else f"`$group_{self.group_type_index}`"
