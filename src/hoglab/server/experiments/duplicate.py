"""``POST /experiments/{id}/duplicate/``: a draft copy of an experiment, as PostHog's ``clone_experiment`` makes it.

PostHog sources: ``products/experiments/backend/presentation/views.py`` (``duplicate``) and
``experiment_service.py`` (``clone_experiment``).

* The copy is a draft (no start or end date) named ``"<name> (Copy)"``, then ``"<name> (Copy) 1"``, ``2``, ...
  while the project has an experiment of that name (or the body's ``name`` as given).
* Without ``feature_flag_key`` it runs on the source's flag (PostHog shares it); with a key naming a flag of the
  project, on that flag (its variants become the copy's); with a new key, on a new flag with the source's variants.
* Copied: description, type, parameters, metrics and secondary metrics (fresh ``uuid``s, the order lists following
  them), stats settings, exposure criteria and the saved metric links. Not copied: the holdout, dates, conclusion.
* An experiment on legacy metrics (a ``filters`` metric or legacy ``secondary_metrics``) can't be duplicated:
  400 ``Duplication is not supported for experiments using legacy metrics.``
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

from hoglab.schema import FLAG_KEY_PATTERN

from ..errors import ValidationFailed
from ..store import DuplicateFlagKey, ExperimentRecord, FlagRecord, Store
from ..validation import char_field
from .rules import flag_filters
from .saved_metrics import link_saved_metrics

__all__ = ["copy_name", "duplicate_experiment"]

_KEY = re.compile(FLAG_KEY_PATTERN)


def copy_name(name: str, taken: set[str]) -> str:
    """The first free name of ``"<name> (Copy)"``, ``"<name> (Copy) 1"``, ...

    >>> copy_name("Pricing", {"Pricing (Copy)"})
    'Pricing (Copy) 1'
    """
    base = f"{name} (Copy)"
    if base not in taken:
        return base
    n = 1
    while f"{base} {n}" in taken:
        n += 1
    return f"{base} {n}"


def _fresh_uuids(metrics: list[dict[str, Any]] | None, renamed: dict[str, str]) -> list[dict[str, Any]] | None:
    if metrics is None:
        return None
    out = []
    for metric in metrics:
        new = str(uuid4())
        if metric.get("uuid"):
            renamed[str(metric["uuid"])] = new
        out.append({**metric, "uuid": new})
    return out


def _flag(store: Store, project_id: int, user_id: int, source: FlagRecord, key: str | None) -> FlagRecord:
    if key is None or key == source.key:
        return source
    if not isinstance(key, str) or not key or len(key) > 400 or not _KEY.match(key):
        raise ValidationFailed("Only letters, numbers, hyphens (-) & underscores (_) are allowed.",
                               attr="feature_flag_key")  # fmt: skip
    existing = store.flags.get_by_key(project_id, key)
    if existing is not None:
        return existing
    try:
        return store.flags.create(
            project_id, key, name=f"Feature Flag for Experiment {key}",
            filters=flag_filters(source.variants, source.filters.get("aggregation_group_type_index")),
            active=False, ensure_experience_continuity=source.ensure_experience_continuity, created_by_id=user_id,
        )  # fmt: skip
    except DuplicateFlagKey:
        raise ValidationFailed("There is already a feature flag with this key.", attr="feature_flag_key",
                               code="unique") from None  # fmt: skip


def duplicate_experiment(
    store: Store, record: ExperimentRecord, source: FlagRecord, user_id: int, body: Mapping[str, Any]
) -> tuple[ExperimentRecord, FlagRecord]:
    """The draft copy of ``record`` and its flag, written in one transaction."""
    if record.filters or record.secondary_metrics:
        raise ValidationFailed("Duplication is not supported for experiments using legacy metrics.")
    name = char_field(body, "name", required=False, nullable=True)
    key = body.get("feature_flag_key")
    with store.transaction():
        flag = _flag(store, record.team_id, user_id, source, key if key not in (None, "") else None)
        if not name:
            taken = {e.name for e in store.experiments.list(record.team_id, archived=None, limit=10**9).results}
            name = copy_name(record.name, taken)
        renamed: dict[str, str] = {}
        metrics = _fresh_uuids(record.metrics, renamed)
        secondary = _fresh_uuids(record.metrics_secondary, renamed)
        parameters = dict(record.parameters or {})
        if flag.id != source.id and flag.variants:
            parameters["feature_flag_variants"] = flag.variants
        fields: dict[str, Any] = {
            "metrics": metrics,
            "metrics_secondary": secondary,
            "stats_config": record.stats_config,
            "exposure_criteria": record.exposure_criteria,
            "primary_metrics_ordered_uuids": [renamed.get(u, u) for u in record.primary_metrics_ordered_uuids or []]
            if record.primary_metrics_ordered_uuids is not None else None,
            "secondary_metrics_ordered_uuids": [renamed.get(u, u)
                                                for u in record.secondary_metrics_ordered_uuids or []]
            if record.secondary_metrics_ordered_uuids is not None else None,
        }  # fmt: skip
        copy = store.experiments.create(
            record.team_id, name=name, feature_flag_id=flag.id, description=record.description,
            parameters=parameters or None, secondary_metrics=[], filters={}, created_by_id=user_id,
            type=record.type, metric_fields=fields,
        )  # fmt: skip
        links = store.saved_metrics.links([record.id]).get(record.id, [])
        if links:
            copy = link_saved_metrics(
                store, copy, [{"id": link.saved_metric.id, "metadata": link.metadata} for link in links],
                replace=False,
            )  # fmt: skip
    return copy, flag
