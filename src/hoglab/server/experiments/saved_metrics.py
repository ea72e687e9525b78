"""PostHog's rules for saved (shared) experiment metrics and their links to experiments.

PostHog sources: ``products/experiments/backend/presentation/saved_metric_serializers.py`` and
``experiment_saved_metric_service.py`` (the endpoint), ``metric_validation.py`` (``parse_and_validate_metric``,
``validate_saved_metric_link_overrides``) and ``experiment_service.py`` (``validate_saved_metrics_ids``,
``_sync_saved_metrics``).

* A saved metric's ``query`` is an ``ExperimentMetric`` body, refused with PostHog's ``Invalid metric: ...``
  messages; it gets a fresh ``uuid`` when created (a sent one is replaced), keeps it on update (changing it is a
  400) and its name is unique in the project whatever its case.
* ``saved_metrics_ids: [{"id", "metadata": {"type", overrides...}}]`` links saved metrics to an experiment: every id
  must be a saved metric of the project; each link's metric ``uuid`` joins the experiment's
  ``primary_metrics_ordered_uuids`` (or secondary, by ``metadata.type``). A PATCH replaces the links: links not
  sent are removed, kept ones get the new metadata, new ones are made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from pydantic import ValidationError

from hoglab.schema import SavedMetricLinkMetadata, parse_metric, validation_error_body

from ..errors import ValidationFailed
from ..store import (
    DuplicateSavedMetricName,
    ExperimentRecord,
    SavedMetricLinkRecord,
    SavedMetricRecord,
    Store,
    UserRecord,
)
from ..validation import char_field

__all__ = [
    "LEGACY_METRIC_KINDS",
    "check_metric",
    "create_saved_metric",
    "delete_saved_metric",
    "link_bodies",
    "link_saved_metrics",
    "saved_metric_body",
    "update_saved_metric",
    "validate_links",
]

LEGACY_METRIC_KINDS = frozenset({"ExperimentTrendsQuery", "ExperimentFunnelsQuery"})
_METRIC_TYPES = ("mean", "funnel", "ratio", "retention")
_FIELDS = frozenset({"name", "description", "query", "tags"})
_READ_ONLY = frozenset({"id", "created_by", "created_at", "updated_at", "user_access_level"})


def check_metric(query: Any, *, prefix: str = "Invalid metric: ") -> dict[str, Any]:
    """PostHog's ``parse_and_validate_metric`` on a saved metric's ``query``: its messages, ``attr`` the field.

    >>> check_metric({"kind": "ExperimentTrendsQuery"})
    Traceback (most recent call last):
    ...
    hoglab.server.errors.ValidationFailed: Invalid metric: legacy metric kind 'ExperimentTrendsQuery' is no longer \
supported. Use 'ExperimentMetric' instead.
    """
    if not isinstance(query, dict):
        raise ValidationFailed(f"{prefix}must be a dict", attr="query")
    kind = query.get("kind")
    if isinstance(kind, str) and kind in LEGACY_METRIC_KINDS:
        raise ValidationFailed(
            f"{prefix}legacy metric kind '{kind}' is no longer supported. Use 'ExperimentMetric' instead.", attr="query"
        )
    if kind != "ExperimentMetric":
        raise ValidationFailed(f"{prefix}metric kind must be 'ExperimentMetric'", attr="query__kind")
    if query.get("metric_type") is None:
        raise ValidationFailed(f"{prefix}ExperimentMetric requires a metric_type", attr="query__metric_type")
    if query.get("metric_type") not in _METRIC_TYPES:
        raise ValidationFailed(
            f"{prefix}ExperimentMetric metric_type must be 'mean', 'funnel', 'ratio', or 'retention'",
            attr="query__metric_type",
        )
    try:
        parse_metric(query)
    except ValidationError as exc:
        body = validation_error_body(exc, query)
        raise ValidationFailed(f"{prefix}{body.detail}", attr=f"query__{body.attr}" if body.attr else "query") from None
    return dict(query)  # stored as sent, as PostHog stores it


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise ValidationFailed("Expected a list of items but got type \"str\".", attr="tags", code="not_a_list")
    return list(dict.fromkeys(tag.strip() for tag in value if tag.strip()))


def _fields(data: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    unknown = sorted(set(data) - _FIELDS - _READ_ONLY)
    if unknown:
        if partial:
            raise ValidationFailed(f"Can't update keys: {', '.join(unknown)} on ExperimentSavedMetric", attr=unknown[0])
        raise ValidationFailed(f"Unknown field {unknown[0]!r}: it is not part of this request.", attr=unknown[0])
    fields: dict[str, Any] = {}
    name = char_field(data, "name", required=not partial, nullable=False)
    if name is not None:
        fields["name"] = name
    if "description" in data:
        fields["description"] = char_field(data, "description", required=False, nullable=True)
    if "tags" in data:
        fields["tags"] = _tags(data["tags"])
    if not partial and not data.get("query"):
        raise ValidationFailed("Query is required to create a saved metric", attr="query")
    if "query" in data:
        fields["query"] = data["query"]
    return fields


def _duplicate_name() -> ValidationFailed:
    return ValidationFailed("A shared metric with this name already exists.", attr="name", code="unique")


def create_saved_metric(
    store: Store, project_id: int, user_id: int | None, data: Mapping[str, Any]
) -> SavedMetricRecord:
    """Validate and store a new saved metric; its query gets a fresh ``uuid``."""
    fields = _fields(data, partial=False)
    query = {**check_metric(fields["query"]), "uuid": str(uuid4())}
    try:
        return store.saved_metrics.create(
            project_id, name=fields["name"], query=query, description=fields.get("description"),
            tags=fields.get("tags") or [], created_by_id=user_id,
        )  # fmt: skip
    except DuplicateSavedMetricName:
        raise _duplicate_name() from None


def update_saved_metric(
    store: Store, project_id: int, saved_metric_id: int, data: Mapping[str, Any]
) -> SavedMetricRecord | None:
    """Apply a PATCH (or PUT) body; ``None`` when there is no such saved metric. A query sent back unchanged is
    not validated again (PostHog's rule: a metric stored before a newer rule stays editable)."""
    fields = _fields(data, partial=True)
    current = store.saved_metrics.get(project_id, saved_metric_id)
    if current is None:
        return None
    if "query" in fields:
        sent = fields["query"]
        uuid = current.query.get("uuid")
        if isinstance(sent, dict) and sent.get("uuid") not in (None, uuid):
            raise ValidationFailed("Saved metric UUID cannot be changed", attr="query__uuid")
        if isinstance(sent, dict) and {**sent, "uuid": uuid} == current.query:
            del fields["query"]
        else:
            fields["query"] = {**check_metric(sent), "uuid": uuid or str(uuid4())}
    if not fields:
        return current
    try:
        return store.saved_metrics.update(project_id, saved_metric_id, **fields)
    except DuplicateSavedMetricName:
        raise _duplicate_name() from None


def delete_saved_metric(store: Store, project_id: int, saved_metric_id: int) -> bool:
    """Delete the saved metric; ``False`` when there is no such one."""
    # The links go with it (ON DELETE CASCADE): every experiment that used it no longer does.
    return store.saved_metrics.delete(project_id, saved_metric_id) is not None


def saved_metric_body(record: SavedMetricRecord, user: UserRecord | None) -> dict[str, Any]:
    """PostHog's ``ExperimentSavedMetric`` answer."""
    return {
        "id": record.id,
        "name": record.name,
        "description": record.description,
        "query": record.query,
        "created_by": None if user is None else user.to_api(),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "tags": record.tags,
    }


def link_bodies(links: Sequence[SavedMetricLinkRecord]) -> list[dict[str, Any]]:
    """An experiment's ``saved_metrics``: PostHog's ``ExperimentToSavedMetric`` answers."""
    return [
        {
            "id": link.id,
            "experiment": link.experiment_id,
            "saved_metric": link.saved_metric.id,
            "metadata": link.metadata,
            "created_at": link.created_at,
            "query": link.saved_metric.query,
            "name": link.saved_metric.name,
        }
        for link in links
    ]


def validate_links(store: Store, project_id: int, links: Sequence[Mapping[str, Any]]) -> list[SavedMetricRecord]:
    """``saved_metrics_ids`` (already checked in shape by the schema): every id a saved metric of the project
    (PostHog's message otherwise), every link's overrides valid; the saved metrics in the order sent."""
    ids: list[int] = []
    for link in links:
        value = link.get("id")
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63
        ids.append(int(value) if ok else 0)  # type: ignore[arg-type]
    found = store.saved_metrics.get_many(project_id, [i for i in ids if i])
    if len(set(ids)) != len(ids) or any(i not in found for i in ids):
        raise ValidationFailed("Saved metric does not exist or does not belong to this project",
                               attr="saved_metrics_ids")  # fmt: skip
    for index, link in enumerate(links):
        metadata = link.get("metadata")
        if metadata is None:
            continue
        try:
            SavedMetricLinkMetadata.model_validate(metadata)
        except ValidationError as exc:
            body = validation_error_body(exc, metadata)
            where = f"saved_metrics_ids__{index}__metadata" + (f"__{body.attr}" if body.attr else "")
            raise ValidationFailed(f"Invalid saved metric metadata: {body.detail}", attr=where) from None
        funnel = found[ids[index]].query.get("metric_type") == "funnel"
        if not funnel and any(metadata.get(k) is not None for k in ("breakdownAttributionType",
                                                                    "breakdownAttributionValue")):  # fmt: skip
            raise ValidationFailed("Invalid saved metric metadata: breakdown attribution applies to funnel metrics "
                                   "only.", attr=f"saved_metrics_ids__{index}__metadata")  # fmt: skip
    return [found[i] for i in ids]


def _ordering(record: ExperimentRecord, links: Sequence[tuple[SavedMetricRecord, Mapping[str, Any] | None]]
              ) -> dict[str, Any]:  # fmt: skip
    primary = list(record.primary_metrics_ordered_uuids or [])
    secondary = list(record.secondary_metrics_ordered_uuids or [])
    before = (list(primary), list(secondary))
    for metric, metadata in links:
        uuid = metric.query.get("uuid")
        if not uuid:
            continue
        target = primary if (metadata or {}).get("type", "primary") == "primary" else secondary
        if uuid not in target:
            target.append(uuid)
    if (primary, secondary) == before:
        return {}
    return {"primary_metrics_ordered_uuids": primary, "secondary_metrics_ordered_uuids": secondary}


def link_saved_metrics(
    store: Store, record: ExperimentRecord, links: Sequence[Mapping[str, Any]] | None, *, replace: bool
) -> ExperimentRecord:
    """Make the experiment's links those of ``links`` (``None``/``[]``: none) inside the caller's transaction.

    ``replace=False`` (a create) only adds; ``replace=True`` (a PATCH) removes links not sent, updates the
    metadata of kept ones and adds new ones. Each linked metric's ``uuid`` joins the experiment's ordering.
    """
    wanted = list(links or [])
    metrics = validate_links(store, record.team_id, wanted)
    existing = store.saved_metrics.links([record.id]).get(record.id, []) if replace else []
    by_metric = {link.saved_metric.id: link for link in existing}
    kept: set[int] = set()
    for metric, link in zip(metrics, wanted, strict=True):
        metadata = link.get("metadata")
        current = by_metric.get(metric.id)
        if current is None:
            store.saved_metrics.link(record.id, metric.id, metadata)
        else:
            kept.add(current.id)
            if current.metadata != metadata:
                store.saved_metrics.set_link_metadata(current.id, metadata)
    store.saved_metrics.unlink(link.id for link in existing if link.id not in kept)
    ordering = _ordering(record, [(m, link.get("metadata")) for m, link in zip(metrics, wanted, strict=True)])
    if not ordering:
        return record
    updated = store.experiments.update(record.team_id, record.id, ordering)
    assert updated is not None
    return updated
