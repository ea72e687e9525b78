"""PostHog's rules for experiments and their flags, kept apart from the HTTP plumbing of ``experiments.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from hoglab.schema import (
    DEFAULT_VARIANTS,
    ExperimentCreate,
    ExperimentParameters,
    ExperimentUpdate,
    RequestModel,
    parse_metric,
)
from hoglab.translate.metric.query import FEATURE_FLAG_CALLED
from hoglab.translate.properties import hogql_expression

from ..errors import ResourceNotFound, ValidationFailed
from ..store import CohortRecord, DuplicateFlagKey, ExperimentRecord, FlagRecord, HoldoutRecord, Store, UserRecord
from ..store.experiments import METRIC_COLUMNS
from ..validation import validate_body
from .holdouts import flag_holdout, holdout_body, holdout_change, holdout_for
from .legacy.filters import read_metric
from .saved_metrics import link_bodies, link_saved_metrics

__all__ = [
    "MODEL_ERROR_ATTRS",
    "UPDATABLE_FIELDS",
    "check_metric_filters",
    "create_with_flag",
    "experiment_answers",
    "experiment_body",
    "experiment_not_found",
    "exposure_cohort_filters",
    "flag_filters",
    "metric_fields",
    "object_changes",
    "read_only_dropped",
    "requires_flag_implementation",
    "shipped_filters",
    "to_utc",
    "usable_metric_fields",
    "variants_from",
]

# Fields a PATCH may change (PostHog's list; ``type`` is fixed once created). Others: "Can't update keys: ...".
UPDATABLE_FIELDS = frozenset(
    {"name", "description", "start_date", "end_date", "filters", "parameters", "archived", "secondary_metrics",
     "metrics", "metrics_secondary", "exposure_criteria", "stats_config", "conclusion", "conclusion_comment",
     "primary_metrics_ordered_uuids", "secondary_metrics_ordered_uuids", "holdout_id", "saved_metrics_ids"}
)  # fmt: skip
# Read-only members of PostHog's experiment serializer that hold objects: sent back (an answer PATCHed again) they
# are ignored, as DRF ignores read-only fields.
READ_ONLY_OBJECTS = ("holdout", "saved_metrics")
# Model-level checks of the schema report no field; these are the fields they are about.
MODEL_ERROR_ATTRS = {
    "End date must be after start date": "end_date",
    "Metric uuids must be unique within the list.": "metrics",
    "Experiments do not support global filter properties": "filters__properties",
}


def to_utc(value: datetime | None, attr: str) -> datetime | None:
    """``value`` in UTC; a 400 naming ``attr`` when the shift leaves the calendar (year 1 at +05:00)."""
    if value is None:
        return None
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValidationFailed("Datetime is out of the supported range.", attr=attr) from None


def _plain_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def variants_from(parameters: ExperimentParameters | None) -> list[dict[str, Any]]:
    """The flag variants an experiment asks for (control/test 50/50 unless ``feature_flag_variants`` says)."""
    if parameters is None or not parameters.feature_flag_variants:
        return [dict(v) for v in DEFAULT_VARIANTS]
    variants: list[dict[str, Any]] = []
    for variant in parameters.feature_flag_variants:
        item: dict[str, Any] = {"key": variant.key}
        if variant.name is not None:
            item["name"] = variant.name
        item["rollout_percentage"] = _plain_number(variant.rollout_percentage)
        variants.append(item)
    return variants


def flag_filters(
    variants: Sequence[Mapping[str, Any]],
    aggregation_group_type_index: int | None,
    holdout: HoldoutRecord | None = None,
) -> dict[str, Any]:
    """The filters of an experiment's new flag: everyone in, split by the variants' rollout, and the holdout
    (``{"id", "exclusion_percentage"}`` or ``None``, PostHog's ``_ensure_feature_flag``).

    >>> flag_filters([{"key": "control", "rollout_percentage": 100}], None)["groups"]
    [{'properties': [], 'rollout_percentage': 100}]
    """
    return {
        "groups": [{"properties": [], "rollout_percentage": 100}],
        "multivariate": {"variants": [dict(v) for v in variants]},
        "aggregation_group_type_index": aggregation_group_type_index,
        "holdout": flag_holdout(holdout),
    }


def shipped_filters(
    filters: Mapping[str, Any], variant_key: str, *, release_to_everyone: bool = False
) -> dict[str, Any]:
    """The flag's filters once ``variant_key`` is shipped (PostHog's ``_transform_filters_for_winning_variant``):
    that variant gets 100% of the split, the others 0; the release conditions stay, unless ``release_to_everyone``
    puts a catch-all condition first. A key the flag does not serve is refused.

    >>> shipped_filters({"groups": [], "multivariate": {"variants": [{"key": "control", "rollout_percentage": 50},
    ...                 {"key": "test", "rollout_percentage": 50}]}}, "test")["multivariate"]["variants"]
    [{'key': 'control', 'rollout_percentage': 0}, {'key': 'test', 'rollout_percentage': 100}]
    """
    variants = [v for v in ((filters.get("multivariate") or {}).get("variants") or []) if isinstance(v, Mapping)]
    if not any(v.get("key") == variant_key for v in variants):
        raise ValidationFailed(f"Variant '{variant_key}' not found on feature flag.", attr="variant_key")
    groups = list(filters.get("groups") or [])
    if release_to_everyone:
        groups = [{"properties": [], "rollout_percentage": 100,
                   "description": "Added automatically when the experiment was ended to keep only one variant."},
                  *groups]  # fmt: skip
    shipped = [{"key": v["key"], "rollout_percentage": 100 if v["key"] == variant_key else 0,
                **({"name": v["name"]} if v.get("name") else {})} for v in variants]  # fmt: skip
    # The holdout stays: its persons keep answering holdout-<id> (PostHog rewrites the dict without it; hoglab keeps
    # what its flag evaluation reads).
    return {**filters, "multivariate": {"variants": shipped}, "groups": groups}


def same_variants(left: Sequence[Mapping[str, Any]], right: Sequence[Mapping[str, Any]]) -> bool:
    """Same keys with the same rollout, in any order (names are labels and may change)."""

    def shape(variants: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return {str(v.get("key")): float(v.get("rollout_percentage") or 0) for v in variants}

    return shape(left) == shape(right)


NOT_FOUND_IDS = 10
"""How many of the project's experiment ids a 404 lists (the first ones; the rest are counted)."""


def experiment_not_found(store: Store, team_id: int, experiment_id: int) -> ResourceNotFound:
    """The 404 for an experiment the project does not have, listing the ids it does have (only its own).

    ``Experiment 99 not found in project 1 (ids: 1, 2).``; past :data:`NOT_FOUND_IDS` ids it says how many more.
    """
    ids, total = store.experiments.ids(team_id, NOT_FOUND_IDS)
    if not ids:
        known = "it has no experiments"
    else:
        more = f", … {total - len(ids)} more" if total > len(ids) else ""
        known = "ids: " + ", ".join(map(str, ids)) + more
    return ResourceNotFound(f"Experiment {experiment_id} not found in project {team_id} ({known}).")


def experiment_body(
    record: ExperimentRecord,
    flag: FlagRecord,
    user: UserRecord | None,
    *,
    holdout: Mapping[str, Any] | None = None,
    saved_metrics: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``Experiment`` answer: PostHog's fields, the nested flag and creator, the holdout and the saved metric
    links (:func:`experiment_answers` reads them from the store)."""
    return {
        "id": record.id,
        "name": record.name,
        "description": record.description,
        "start_date": record.start_date,
        "end_date": record.end_date,
        "feature_flag_key": flag.key,
        "feature_flag": flag.to_api(),
        "exposure_cohort": record.exposure_cohort_id,
        "parameters": record.parameters,
        "secondary_metrics": record.secondary_metrics,
        "filters": record.filters,
        "archived": record.archived,
        "created_by": None if user is None else user.to_api(),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "type": record.type,
        "metrics": record.metrics or [],
        "metrics_secondary": record.metrics_secondary or [],
        "exposure_criteria": record.exposure_criteria,
        "stats_config": record.stats_config,
        "conclusion": record.conclusion,
        "conclusion_comment": record.conclusion_comment,
        "primary_metrics_ordered_uuids": record.primary_metrics_ordered_uuids,
        "secondary_metrics_ordered_uuids": record.secondary_metrics_ordered_uuids,
        "holdout": None if holdout is None else dict(holdout),
        "holdout_id": record.holdout_id,
        "saved_metrics": [dict(link) for link in saved_metrics],
        # Write-only in effect: PostHog's serializer has no value to read back and answers null.
        "saved_metrics_ids": None,
    }


def experiment_answers(
    store: Store, items: Sequence[tuple[ExperimentRecord, FlagRecord, UserRecord | None]]
) -> list[dict[str, Any]]:
    """The ``Experiment`` answers of several experiments, their holdouts and saved metric links read at once."""
    links = store.saved_metrics.links(record.id for record, _, _ in items)
    holdouts: dict[int, dict[str, Any]] = {}
    for record, _, _ in items:
        if record.holdout_id is not None and record.holdout_id not in holdouts:
            found = store.holdouts.get(record.team_id, record.holdout_id)
            if found is not None:
                creator = store.users.get(found.created_by_id) if found.created_by_id is not None else None
                holdouts[found.id] = holdout_body(found, creator)
    return [
        experiment_body(record, flag, user, holdout=holdouts.get(record.holdout_id or 0),
                        saved_metrics=link_bodies(links.get(record.id, [])))
        for record, flag, user in items
    ]  # fmt: skip


def read_only_dropped(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without the read-only object members (``holdout``, ``saved_metrics``) PostHog ignores."""
    return {key: value for key, value in data.items() if key not in READ_ONLY_OBJECTS}


def object_changes(
    store: Store, record: ExperimentRecord, flag: FlagRecord, payload: ExperimentUpdate, changes: dict[str, Any]
) -> FlagRecord:
    """The holdout of a PATCH, inside the caller's transaction: checked against ``record`` as it was (no change once
    launched), the flag rewritten, ``changes["holdout_id"]`` set. The saved metric links follow the update
    (:func:`link_saved_metrics`, which needs the updated ordering)."""
    if "holdout_id" in payload.model_fields_set:
        flag, holdout = holdout_change(store, record, flag, payload.holdout_id)
        changes["holdout_id"] = None if holdout is None else holdout.id
    return flag


def usable_metric_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` of a remote experiment without what hoglab can't keep: metrics it can't run (data
    warehouse, newer metric types) and an exposure, stats or type setting it doesn't read. For copies of
    PostHog's experiments (``hoglab pull``), which must not fail on one metric.

    >>> usable_metric_fields({"name": "x", "type": "", "metrics": [{"metric_type": "retention"}]})
    {'name': 'x', 'metrics': []}
    """
    kept = dict(fields)
    for name in ("metrics", "metrics_secondary"):
        if isinstance(kept.get(name), list):
            metrics = []
            for metric in kept[name]:
                try:
                    parse_metric(metric)
                except (ValidationError, TypeError):
                    continue
                metrics.append(metric)
            kept[name] = metrics
    for name in ("exposure_criteria", "stats_config", "type", "conclusion"):
        if name in kept:
            try:
                ExperimentUpdate.model_validate({name: kept[name]})
            except ValidationError:
                del kept[name]
    return kept


def _metric_nodes(metric: Any) -> list[tuple[str, Any]]:
    if metric.metric_type == "funnel":
        return [(f"series__{i}", node) for i, node in enumerate(metric.series)]
    if metric.metric_type == "ratio":
        return [("numerator", metric.numerator), ("denominator", metric.denominator)]
    if metric.metric_type == "retention":
        nodes = [("completion_event", metric.completion_event)]
        if metric.start_event.kind == "EventsNode":
            nodes.insert(0, ("start_event", metric.start_event))
        return nodes
    return [("source", metric.source)]


def _check_hogql_filters(properties: Sequence[Any] | None, attr: str) -> None:
    # Parsed when stored: a HogQL filter that cannot parse would otherwise fail every later query of the experiment.
    for i, prop in enumerate(properties or []):
        if getattr(prop, "type", None) == "hogql":
            hogql_expression(prop.key, f"{attr}__{i}__key")


def metric_fields(payload: ExperimentCreate | ExperimentUpdate) -> dict[str, Any]:
    """The metric-experiment columns a create or PATCH body sets, as stored: metrics validated (with their
    uuids), the rest as sent; a field sent as ``null`` clears it."""
    fields: dict[str, Any] = {}
    for name in sorted(METRIC_COLUMNS & payload.model_fields_set):
        value = getattr(payload, name)
        if name in ("metrics", "metrics_secondary") and value is not None:
            for i, metric in enumerate(value):
                for where, node in _metric_nodes(metric):
                    _check_hogql_filters(node.properties, f"{name}__{i}__{where}__properties")
            value = [metric.to_json_dict() for metric in value]
        elif isinstance(value, BaseModel):
            config = getattr(value, "exposure_config", None) if name == "exposure_criteria" else None
            if config is not None:
                _check_hogql_filters(config.properties, "exposure_criteria__exposure_config__properties")
            value = value.to_json_dict() if isinstance(value, RequestModel) else value.model_dump(mode="json")
        fields[name] = value
    return fields


def exposure_cohort_filters(
    flag_key: str, start_date: datetime, parameters: Mapping[str, Any] | None
) -> dict[str, Any]:
    """PostHog's definition of an exposure cohort: persons who performed the exposure event since the start.

    The exposure event is ``$feature_flag_called`` with ``$feature_flag = <key>``, or the first event of
    ``parameters.custom_exposure_filter`` with its event property filters.
    """
    event = FEATURE_FLAG_CALLED
    event_filters: list[Any] = [{"key": "$feature_flag", "value": [flag_key], "operator": "exact", "type": "event"}]
    custom = (parameters or {}).get("custom_exposure_filter")
    if isinstance(custom, Mapping):
        events = custom.get("events")
        if isinstance(events, list) and events and isinstance(events[0], Mapping) and events[0].get("id"):
            event = str(events[0]["id"])
            properties = events[0].get("properties")
            event_filters = [p for p in properties or [] if isinstance(p, Mapping) and p.get("type") == "event"]
    behavioral = {
        "type": "behavioral",
        "value": "performed_event",
        "key": event,
        "event_type": "events",
        "event_filters": event_filters,
        "explicit_datetime": start_date.isoformat(),
        "negation": False,
    }
    return {"properties": {"type": "OR", "values": [{"type": "OR", "values": [behavioral]}]}}


def cohort_body(cohort: CohortRecord, user: UserRecord | None) -> dict[str, Any]:
    return {**cohort.to_api(), "created_by": None if user is None else user.to_api()}


def requires_flag_implementation(samples: Sequence[Mapping[str, Any]]) -> bool:
    """True when no sampled event carries a ``$feature/<flag>`` property: the SDK doesn't send flag info yet.

    >>> requires_flag_implementation([]), requires_flag_implementation([{"$feature/x": "test"}])
    (True, False)
    """
    return not any(isinstance(key, str) and key.startswith("$feature/") for props in samples for key in props)


def check_metric_filters(filters: Any) -> None:
    """Refuse a primary metric the results could not read (a 400 naming the field), on create and on PATCH alike:
    an experiment stored with ``{"events": "x"}`` would only fail later, at every results request. Empty filters
    (a draft without a metric yet) pass.

    >>> check_metric_filters({})
    >>> check_metric_filters({"events": "x"})
    Traceback (most recent call last):
    ...
    hoglab.server.errors.ValidationFailed: 'events' is a list.
    """
    if filters:
        read_metric(filters, "filters")


def _duplicate_key() -> ValidationFailed:
    return ValidationFailed("There is already a feature flag with this key.", attr="key", code="unique")


def create_with_flag(
    store: Store, project_id: int, user_id: int, data: Mapping[str, Any]
) -> tuple[ExperimentRecord, FlagRecord]:
    """Validate a create body and store the experiment with its new multivariate flag.

    Flag and experiment are written in one transaction: a failure on either leaves neither behind. Used by the
    API and by the demo set-up, so both make experiments the same way.
    """
    data = read_only_dropped(data)
    payload = validate_body(ExperimentCreate, dict(data), model_error_attrs=MODEL_ERROR_ATTRS)
    check_metric_filters(data.get("filters"))
    start_date = to_utc(payload.start_date, "start_date")
    end_date = to_utc(payload.end_date, "end_date")
    parameters = payload.parameters
    variants = variants_from(parameters)
    extra = (parameters.model_extra or {}) if parameters is not None else {}
    with store.transaction():
        holdout = holdout_for(store, project_id, payload.holdout_id)
        if store.flags.get_by_key(project_id, payload.feature_flag_key) is not None:
            raise _duplicate_key()
        try:
            flag = store.flags.create(
                project_id,
                payload.feature_flag_key,
                name=f"Feature Flag for Experiment {payload.name}",
                filters=flag_filters(
                    variants, parameters.aggregation_group_type_index if parameters else None, holdout
                ),
                active=start_date is not None,
                ensure_experience_continuity=bool(extra.get("ensure_experience_continuity")),
                created_by_id=user_id,
            )
        except DuplicateFlagKey:
            raise _duplicate_key() from None
        record = store.experiments.create(
            project_id,
            name=payload.name,
            feature_flag_id=flag.id,
            description=payload.description or "",
            parameters=data.get("parameters"),
            secondary_metrics=data.get("secondary_metrics") or [],
            filters=data.get("filters") or {},
            start_date=start_date,
            end_date=end_date,
            archived=bool(payload.archived),
            created_by_id=user_id,
            type=payload.type or "product",
            metric_fields=metric_fields(payload),
            holdout_id=None if holdout is None else holdout.id,
        )
        if payload.saved_metrics_ids:
            record = link_saved_metrics(store, record, payload.saved_metrics_ids, replace=False)
    return record, flag
