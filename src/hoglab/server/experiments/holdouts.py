"""PostHog's rules for experiment holdouts and the flags that carry them.

PostHog sources: ``ee/clickhouse/views/experiment_holdouts.py`` (the endpoint and its validation),
``products/experiments/backend/models/experiment.py`` (``holdout_filters_for_flag``) and
``experiment_service.py`` (an experiment's holdout on create and update).

* A holdout's ``filters`` are flag groups; each needs a ``rollout_percentage`` in [0, 100], and every group's
  ``variant`` is rewritten to the holdout's value (``holdout-<id>``) when it is stored.
* The flag of an experiment with a holdout carries ``filters.holdout = {"id", "exclusion_percentage"}`` (the first
  group's rollout), or ``None``: written when the experiment is created or its holdout changes, rewritten on
  every flag using the holdout when the holdout's filters change, cleared when the holdout is deleted.
* An experiment's holdout can't change once it is launched (``Can't update holdout on running Experiment``).

>>> check_filters([{"properties": [], "rollout_percentage": 10}])
[{'properties': [], 'rollout_percentage': 10}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hoglab.schema import holdout_variant_key

from ..errors import ValidationFailed
from ..store import ExperimentRecord, FlagRecord, HoldoutRecord, Store, UserRecord
from ..validation import MAX_ID, char_field

__all__ = [
    "HOLDOUT_FIELDS",
    "check_filters",
    "create_holdout",
    "delete_holdout",
    "flag_holdout",
    "holdout_body",
    "holdout_change",
    "holdout_fields",
    "holdout_for",
    "set_flag_holdout",
    "update_holdout",
]

HOLDOUT_FIELDS = frozenset({"name", "description", "filters"})
# Read-only members of PostHog's serializer: sent back unchanged (a GET body PATCHed again) they are ignored.
_READ_ONLY = frozenset({"id", "created_by", "created_at", "updated_at"})


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check_filters(filters: Any) -> list[dict[str, Any]]:
    """PostHog's ``validate_filters``: every group has a ``rollout_percentage`` between 0 and 100.

    >>> check_filters([{"rollout_percentage": 120}])
    Traceback (most recent call last):
    ...
    hoglab.server.errors.ValidationFailed: Rollout percentage must be between 0 and 100.
    """
    if not isinstance(filters, list) or not all(isinstance(group, dict) for group in filters):
        raise ValidationFailed("Filters must be a list of groups (objects with a rollout_percentage).",
                               attr="filters", code="invalid")  # fmt: skip
    for group in filters:
        value = group.get("rollout_percentage")
        if value is None:
            raise ValidationFailed("Rollout percentage must be present.", attr="filters", code="invalid")
        number = _number(value)
        if number is None:
            raise ValidationFailed("Rollout percentage must be a number.", attr="filters", code="invalid")
        if number < 0 or number > 100:
            raise ValidationFailed("Rollout percentage must be between 0 and 100.", attr="filters", code="invalid")
    return [dict(group) for group in filters]


def holdout_fields(data: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    """The holdout fields of a create (``partial=False``) or PATCH body, checked with PostHog's messages.

    Read-only members (``id``, ``created_by``, ...) are ignored as PostHog ignores them; any other unknown member
    is a 400 naming it.
    """
    unknown = sorted(set(data) - HOLDOUT_FIELDS - _READ_ONLY)
    if unknown:
        raise ValidationFailed(f"Unknown field {unknown[0]!r}: it is not part of this request.", attr=unknown[0])
    fields: dict[str, Any] = {}
    name = char_field(data, "name", required=not partial, nullable=False)
    if name is not None:
        fields["name"] = name
    if "description" in data:
        fields["description"] = char_field(data, "description", required=False, nullable=True)
    if "filters" in data and data["filters"] is not None:
        fields["filters"] = data["filters"]
    if not partial and not fields.get("filters"):
        # Raised by PostHog's create(), not by a field validator: no attr.
        raise ValidationFailed("Filters are required to create an holdout group", code="invalid")
    if "filters" in fields:
        fields["filters"] = check_filters(fields["filters"])
    return fields


def _with_variant(filters: list[dict[str, Any]], holdout_id: int) -> list[dict[str, Any]]:
    variant = f"holdout-{holdout_id}"
    return [{**group, "variant": variant} for group in filters]


def flag_holdout(holdout: HoldoutRecord | None) -> dict[str, Any] | None:
    """The ``filters.holdout`` member of a flag using ``holdout`` (PostHog's ``holdout_filters_for_flag``).

    The id is the one in the holdout's value (``holdout-<id>``): the holdout's own id, or the remote's for a pulled
    holdout, so the flag answers what the pulled events hold.
    """
    if holdout is None or not holdout.filters:
        return None
    key = holdout_variant_key(holdout.id, holdout.filters)
    return {"id": int(key.rsplit("-", 1)[1]), "exclusion_percentage": holdout.filters[0].get("rollout_percentage")}


def set_flag_holdout(store: Store, flag: FlagRecord, holdout: HoldoutRecord | None) -> FlagRecord:
    """Write ``holdout`` into the flag (``None`` clears it, as PostHog's ``set_holdout`` writes the key as null;
    the legacy ``holdout_groups`` is cleared with it)."""
    filters = {**flag.filters, "holdout": flag_holdout(holdout)}
    if "holdout_groups" in filters:
        filters["holdout_groups"] = None
    if filters == flag.filters:
        return flag
    return store.flags.update(flag.id, filters=filters)


def holdout_body(holdout: HoldoutRecord, user: UserRecord | None) -> dict[str, Any]:
    """PostHog's ``ExperimentHoldout`` answer."""
    return {
        "id": holdout.id,
        "name": holdout.name,
        "description": holdout.description,
        "filters": holdout.filters,
        "created_by": None if user is None else user.to_api(),
        "created_at": holdout.created_at,
        "updated_at": holdout.updated_at,
    }


def holdout_for(store: Store, project_id: int, holdout_id: Any) -> HoldoutRecord | None:
    """The project's holdout an experiment names in ``holdout_id`` (``None`` for none); DRF's "does not exist"
    400 for an id of no holdout of the project (PostHog scopes the field to the team)."""
    if holdout_id is None:
        return None
    found = store.holdouts.get(project_id, int(holdout_id)) if 0 < int(holdout_id) <= MAX_ID else None
    if found is None:
        raise ValidationFailed(f'Invalid pk "{holdout_id}" - object does not exist.', attr="holdout_id",
                               code="does_not_exist")  # fmt: skip
    return found


def create_holdout(store: Store, project_id: int, user_id: int | None, data: Mapping[str, Any]) -> HoldoutRecord:
    """Validate and store a new holdout, its groups' variant set to ``holdout-<id>``."""
    fields = holdout_fields(data, partial=False)
    with store.transaction():
        record = store.holdouts.create(
            project_id, name=fields["name"], description=fields.get("description"), filters=fields["filters"],
            created_by_id=user_id,
        )  # fmt: skip
        updated = store.holdouts.update(project_id, record.id, filters=_with_variant(record.filters, record.id))
    assert updated is not None
    return updated


def _experiment_flags(store: Store, project_id: int, holdout_id: int) -> list[tuple[ExperimentRecord, FlagRecord]]:
    found = []
    for experiment in store.experiments.with_holdout(project_id, holdout_id):
        flag = store.flags.get(experiment.feature_flag_id)
        if flag is not None:
            found.append((experiment, flag))
    return found


def update_holdout(store: Store, project_id: int, holdout_id: int, data: Mapping[str, Any]) -> HoldoutRecord | None:
    """Apply a PATCH (or PUT) body; when the filters change, every flag using the holdout is rewritten with it,
    in the same transaction. ``None`` when there is no such holdout."""
    fields = holdout_fields(data, partial=True)
    with store.transaction():
        current = store.holdouts.get(project_id, holdout_id)
        if current is None:
            return None
        if "filters" in fields:
            # A pulled holdout keeps its remote value (see holdout_variant_key); a local one gets holdout-<id>.
            key = holdout_variant_key(current.id, current.filters)
            fields["filters"] = _with_variant(fields["filters"], int(key.rsplit("-", 1)[1]))
        updated = store.holdouts.update(project_id, holdout_id, **fields)
        assert updated is not None
        if updated.filters != current.filters:
            for _, flag in _experiment_flags(store, project_id, holdout_id):
                set_flag_holdout(store, flag, updated)
    return updated


def delete_holdout(store: Store, project_id: int, holdout_id: int) -> bool:
    """Delete the holdout: every flag using it loses it and its experiments' ``holdout_id`` becomes null."""
    with store.transaction():
        for _, flag in _experiment_flags(store, project_id, holdout_id):
            set_flag_holdout(store, flag, None)
        return store.holdouts.delete(project_id, holdout_id) is not None


def holdout_change(
    store: Store, record: ExperimentRecord, flag: FlagRecord, holdout_id: Any
) -> tuple[FlagRecord, HoldoutRecord | None]:
    """PATCH of an experiment's ``holdout_id``: refused once launched when it differs (PostHog's message), else
    the experiment's flag is rewritten with the new holdout (or without one). The flag and the holdout."""
    holdout = holdout_for(store, record.team_id, holdout_id)
    new_id = None if holdout is None else holdout.id
    if new_id == record.holdout_id:
        return flag, holdout
    if not record.is_draft:
        raise ValidationFailed("Can't update holdout on running Experiment")
    return set_flag_holdout(store, flag, holdout), holdout
