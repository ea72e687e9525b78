"""An ``ExperimentQuery`` or ``ExperimentExposureQuery`` made whole: the stored experiment read into the query.

Both kinds name an experiment by id; its flag, variants, dates, exposure criteria and stats method live in the
store. The query service resolves them *before* its cache lookup (``runners.base.register_resolver``), so the
cache key covers the experiment's stored settings: PATCHing the experiment gives the next query a new key.

The project's experiment defaults (``/experiments_config/``: CUPED, sequential testing, matured users) are read in
too, so changing them also gives the next query a new key; the stats resolve them as PostHog does
(``hoglab.stats.posthog.resolve_cuped``, ``resolve_stats_settings``).

Another project's experiment is "not found" (404), as PostHog's ``Experiment.objects.get(team=...)`` is; a draft
(no ``start_date``) is a 400 saying so.

Holdouts: the experiment's holdout arm is ``holdout_key`` (its persons' flag value, ``holdout-<id>``). PostHog's
``ExperimentQuery`` leaves them out (its current runner compares flag variants only); hoglab's
``compare_to_holdout`` adds the arm and makes it the baseline. ``ExperimentExposureQuery`` shows the arm's row
when the query names a ``holdout`` (PostHog's runner) or, without one, when the experiment has a holdout (PostHog's
UI always sends it then).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from hoglab.schema import (
    ExperimentExposureCriteria,
    ExperimentExposureQuery,
    ExperimentQuery,
    ExperimentStatsConfig,
    holdout_variant_key,
)
from hoglab.stats.posthog import TeamDefaults, baseline_variant_key, resolve_cuped
from hoglab.translate.metric.experiment import ResolvedExperiment

from ...errors import ValidationFailed
from ...query.runners.base import register_resolver
from ..rules import experiment_not_found

if TYPE_CHECKING:
    from ...store import ProjectRecord, Store

__all__ = [
    "ResolvedExperimentQuery",
    "ResolvedExposureQuery",
    "baseline",
    "cuped_days",
    "resolve_experiment",
    "team_defaults",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def team_defaults(config: dict[str, Any]) -> TeamDefaults:
    """PostHog's team defaults from a project's saved ``experiments_config`` (absent fields: PostHog's).

    >>> team_defaults({"default_cuped_enabled": True}).cuped_enabled
    True
    """
    return TeamDefaults(
        sequential_testing_enabled=bool(config.get("default_sequential_testing_enabled")),
        sequential_tuning_parameter=config.get("default_sequential_tuning_parameter"),
        cuped_enabled=bool(config.get("default_cuped_enabled")),
        cuped_lookback_days=config.get("default_cuped_lookback_days"),
    )


def baseline(experiment: ResolvedExperiment) -> str:
    """The arm every other variant is compared with: the holdout arm under ``compare_to_holdout``, else
    ``stats_config.baseline_variant_key``, else control."""
    return experiment.baseline_override or baseline_variant_key(experiment.stats_config, experiment.variants)


def cuped_days(experiment: ResolvedExperiment) -> int | None:
    """The experiment's CUPED lookback in days as the stats resolve it (its ``stats_config``, else the project's
    defaults), ``None`` when CUPED is off: what ``hoglab.translate.metric.query.cuped_lookback`` reads."""
    settings = resolve_cuped(experiment.stats_config, team_defaults(experiment.team_config))
    return settings.lookback_days if settings.enabled else None


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
        raise experiment_not_found(store, project.id, experiment_id)
    start = start or record.start_date
    if start is None:
        raise ValidationFailed(
            f"Experiment {experiment_id} is a draft: it has no start_date, so nobody has been exposed yet. "
            "Launch it (PATCH a start_date) to analyse it.",
            attr="query__experiment_id",
        )
    # PostHog's runner analyses the flag's variants less the experiment's parameters.excluded_variants
    parameters = record.parameters if isinstance(record.parameters, Mapping) else {}
    excluded = parameters.get("excluded_variants")
    dropped = {str(v) for v in excluded} if isinstance(excluded, list) else set()
    variants = tuple(str(v.get("key")) for v in flag.variants if v.get("key") and str(v.get("key")) not in dropped)
    holdout = store.holdouts.get(project.id, record.holdout_id) if record.holdout_id is not None else None
    stop = end or record.end_date
    criteria = exposure_criteria or ExperimentExposureCriteria.model_validate(record.exposure_criteria or {})
    stats = ExperimentStatsConfig.model_validate(record.stats_config or {}).model_dump(mode="json", exclude_none=True)
    group = (flag.filters or {}).get("aggregation_group_type_index")
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or not 0 <= group <= 4):
        raise ValidationFailed(
            f"Experiment {experiment_id}'s flag has aggregation_group_type_index {group!r}: a group type index is 0-4.",
            attr="query__experiment_id",
        )
    baseline = baseline_variant_key(stats, variants)
    if baseline not in variants:
        # PostHog's wording; a flag without control and no configured baseline compares with its first variant.
        raise ValidationFailed(
            f"Invalid baseline_variant_key: {baseline!r}. Must be one of: {', '.join(variants)}",
            attr="query__experiment_id",
        )
    team = store.experiments_config.get(project.id)
    matured = getattr(record, "only_count_matured_users", None)
    return ResolvedExperiment(
        experiment_id=experiment_id, flag_key=flag.key, variants=variants, start=start.astimezone(UTC),
        end=None if stop is None else stop.astimezone(UTC),
        exposure_criteria=criteria, stats_config=stats, team_config=team, group_type_index=group,
        only_count_matured_users=bool(team.get("default_only_count_matured_users") if matured is None else matured),
        holdout_key=None if holdout is None else holdout_variant_key(holdout.id, holdout.filters),
    )  # fmt: skip


@register_resolver("ExperimentQuery")
def resolve_experiment_query(query: ExperimentQuery, project: ProjectRecord, store: Store) -> ResolvedExperimentQuery:
    assert query.experiment_id is not None  # the schema requires it
    experiment = resolve_experiment(store, project, query.experiment_id)
    if query.compare_to_holdout:
        if experiment.holdout_key is None:
            raise ValidationFailed(
                f"Experiment {query.experiment_id} has no holdout to compare with: compare_to_holdout (hoglab's "
                "extension) needs the experiment's holdout_id.",
                attr="query__compare_to_holdout",
            )
        experiment = experiment.model_copy(
            update={"variants": (*experiment.variants, experiment.holdout_key),
                    "baseline_override": experiment.holdout_key}
        )
    return ResolvedExperimentQuery(query=query, experiment=experiment)


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
    sent = query.feature_flag.get("key") if query.feature_flag else None
    if sent is not None and sent != experiment.flag_key:
        # PostHog's runner reads the flag it is sent; hoglab reads the experiment's, so another one is refused
        raise ValidationFailed(f"feature_flag {sent!r} is not experiment {query.experiment_id}'s flag "
                               f"({experiment.flag_key!r}): hoglab reads the experiment's own flag.",
                               attr="query__feature_flag__key")  # fmt: skip
    shown = _exposure_holdout(store, project, query) if "holdout" in query.model_fields_set else experiment.holdout_key
    if shown is not None and shown not in experiment.variants:
        experiment = experiment.model_copy(update={"variants": (*experiment.variants, shown)})
    return ResolvedExposureQuery(query=query, experiment=experiment)


def _exposure_holdout(store: Store, project: ProjectRecord, query: ExperimentExposureQuery) -> str | None:
    """The holdout arm the query names (PostHog's ``ExperimentHoldoutType``: ``{"id", "name", "filters"}``)."""
    holdout = query.holdout
    holdout_id = holdout.get("id") if isinstance(holdout, dict) else None
    if not isinstance(holdout_id, int) or isinstance(holdout_id, bool) or not 0 < holdout_id < 2**63:
        return None
    found = store.holdouts.get(project.id, holdout_id)
    return holdout_variant_key(holdout_id, found.filters if found is not None else (holdout or {}).get("filters"))
