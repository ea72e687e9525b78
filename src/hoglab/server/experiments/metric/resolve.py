"""An ``ExperimentQuery`` or ``ExperimentExposureQuery`` made whole: the stored experiment read into the query.

Both kinds name an experiment by id; its flag, variants, dates, exposure criteria and stats method live in the
store. The query service resolves them *before* its cache lookup (``runners.base.register_resolver``), so the
cache key covers the experiment's stored settings: PATCHing the experiment gives the next query a new key.

Another project's experiment is "not found" (404), as PostHog's ``Experiment.objects.get(team=...)`` is; a draft
(no ``start_date``) is a 400 saying so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from hoglab.schema import (
    CONTROL_VARIANT_KEY,
    ExperimentExposureCriteria,
    ExperimentExposureQuery,
    ExperimentQuery,
    ExperimentStatsConfig,
)

from ...errors import NotFound, ValidationFailed
from ...query.runners.base import register_resolver

if TYPE_CHECKING:
    from ...store import ProjectRecord, Store

__all__ = [
    "ResolvedExperiment",
    "ResolvedExperimentQuery",
    "ResolvedExposureQuery",
    "resolve_experiment",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ResolvedExperiment(_Frozen):
    """What the runners read from the stored experiment (and, for exposures, the query's own overrides)."""

    experiment_id: int
    flag_key: str
    variants: tuple[str, ...]
    start: datetime
    end: datetime | None = None
    exposure_criteria: ExperimentExposureCriteria = ExperimentExposureCriteria()
    stats_config: dict[str, Any] = {}
    # The flag's aggregation_group_type_index: the experiment randomises groups of that type, not persons.
    group_type_index: int | None = None

    @property
    def entity(self) -> str:
        """HogQL of an event's unit: ``person_id``, or ``$group_N`` for an experiment by group (PostHog's entity
        key: the exposure event's group, and each metric event's own group)."""
        return "person_id" if self.group_type_index is None else f"`$group_{self.group_type_index}`"


class ResolvedExperimentQuery(_Frozen):
    kind: Literal["ExperimentQuery"] = "ExperimentQuery"
    query: ExperimentQuery
    experiment: ResolvedExperiment


class ResolvedExposureQuery(_Frozen):
    kind: Literal["ExperimentExposureQuery"] = "ExperimentExposureQuery"
    query: ExperimentExposureQuery
    experiment: ResolvedExperiment


def _date(text: str | None, attr: str) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        # In UTC now, a day from either end of the calendar: the project's zone can still shift it.
        value = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
        if not 1 < value.year < 9999:
            raise OverflowError
    except (ValueError, OverflowError):
        raise ValidationFailed(f"{text[:40]!r} is not an ISO date-time between the years 2 and 9998.",
                               attr=attr) from None  # fmt: skip
    return value


def resolve_experiment(
    store: Store, project: ProjectRecord, experiment_id: int, *, start: datetime | None = None,
    end: datetime | None = None, exposure_criteria: ExperimentExposureCriteria | None = None,
) -> ResolvedExperiment:  # fmt: skip
    """The project's experiment as the runners need it; ``start``/``end``/``exposure_criteria`` override it."""
    record = store.experiments.get(project.id, experiment_id)
    flag = store.flags.get(record.feature_flag_id) if record is not None else None
    if record is None or flag is None:
        raise NotFound(f"Experiment {experiment_id} not found.")
    start = start or record.start_date
    if start is None:
        raise ValidationFailed(
            f"Experiment {experiment_id} is a draft: it has no start_date, so nobody has been exposed yet. "
            "Launch it (PATCH a start_date) to analyse it.",
            attr="query__experiment_id",
        )
    variants = tuple(str(v.get("key")) for v in flag.variants if v.get("key"))
    if CONTROL_VARIANT_KEY not in variants:
        raise ValidationFailed(
            f"Experiment {experiment_id}'s flag {flag.key!r} has no {CONTROL_VARIANT_KEY!r} variant to compare with.",
            attr="query__experiment_id",
        )
    stop = end or record.end_date
    criteria = exposure_criteria or ExperimentExposureCriteria.model_validate(record.exposure_criteria or {})
    stats = ExperimentStatsConfig.model_validate(record.stats_config or {}).model_dump(mode="json", exclude_none=True)
    group = (flag.filters or {}).get("aggregation_group_type_index")
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or not 0 <= group <= 4):
        raise ValidationFailed(
            f"Experiment {experiment_id}'s flag has aggregation_group_type_index {group!r}: a group type index is 0-4.",
            attr="query__experiment_id",
        )
    return ResolvedExperiment(
        experiment_id=experiment_id, flag_key=flag.key, variants=variants, start=start.astimezone(UTC),
        end=None if stop is None else stop.astimezone(UTC),
        exposure_criteria=criteria, stats_config=stats, group_type_index=group,
    )  # fmt: skip


@register_resolver("ExperimentQuery")
def resolve_experiment_query(query: ExperimentQuery, project: ProjectRecord, store: Store) -> ResolvedExperimentQuery:
    assert query.experiment_id is not None  # the schema requires it
    return ResolvedExperimentQuery(query=query, experiment=resolve_experiment(store, project, query.experiment_id))


@register_resolver("ExperimentExposureQuery")
def resolve_exposure_query(
    query: ExperimentExposureQuery, project: ProjectRecord, store: Store
) -> ResolvedExposureQuery:
    assert query.experiment_id is not None
    experiment = resolve_experiment(
        store, project, query.experiment_id,
        start=_date(query.start_date, "query__start_date"), end=_date(query.end_date, "query__end_date"),
        exposure_criteria=query.exposure_criteria,
    )  # fmt: skip
    return ResolvedExposureQuery(query=query, experiment=experiment)
