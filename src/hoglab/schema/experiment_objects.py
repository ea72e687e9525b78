"""The objects experiments share: holdouts and saved (shared) metrics, as PostHog's API writes and answers them.

A **holdout** (PostHog's ``ExperimentHoldout``) keeps a share of persons out of every experiment that uses it: its
``filters`` are PostHog's flag groups, the first one's ``rollout_percentage`` being the share held out (PostHog
calls it the exclusion percentage). The flag of an experiment with a holdout carries
``filters.holdout = {"id", "exclusion_percentage"}`` and answers ``holdout-<id>`` to the persons held out.

A **saved metric** (``ExperimentSavedMetric``) is an ``ExperimentMetric`` body kept once and linked to experiments
through ``saved_metrics_ids: [{"id": 5, "metadata": {"type": "primary"}}]``; an experiment answers its links as
``saved_metrics`` (``ExperimentToSavedMetric``).

>>> holdout = ExperimentHoldout.model_validate({"id": 7, "name": "Q3", "filters": [
...     {"properties": [], "rollout_percentage": 10, "variant": "holdout-7"}]})
>>> holdout.exclusion_percentage, holdout.variant_key
(10.0, 'holdout-7')
>>> saved_metric_links([{"id": 5}, {"id": 6, "metadata": {"type": "secondary"}}])
[{'id': 5}, {'id': 6, 'metadata': {'type': 'secondary'}}]
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ._base import RequestModel, ResponseModel
from .filters import BreakdownItem
from .users import User

__all__ = [
    "HOLDOUT_VARIANT_PREFIX",
    "ExperimentHoldout",
    "ExperimentHoldoutCreate",
    "ExperimentHoldoutUpdate",
    "ExperimentSavedMetric",
    "ExperimentSavedMetricCreate",
    "ExperimentSavedMetricUpdate",
    "ExperimentToSavedMetric",
    "SavedMetricLinkMetadata",
    "holdout_filters",
    "holdout_variant_key",
    "saved_metric_definition",
    "saved_metric_links",
]

HOLDOUT_VARIANT_PREFIX = "holdout-"
_HOLDOUT_VARIANT = re.compile(r"^holdout-\d+$")


def holdout_variant_key(holdout_id: int, filters: Any) -> str:
    """The flag value a holdout's persons get: the ``variant`` its groups carry (PostHog writes
    ``holdout-<id>`` there), else ``holdout-<id>``.

    A holdout copied from another PostHog project (``hoglab pull``) keeps the remote's ``holdout-<remote id>``, the
    value its pulled flags and events carry.

    >>> holdout_variant_key(3, [{"rollout_percentage": 5}]), holdout_variant_key(3, [{"variant": "holdout-91"}])
    ('holdout-3', 'holdout-91')
    """
    if isinstance(filters, list) and filters and isinstance(filters[0], dict):
        variant = filters[0].get("variant")
        if isinstance(variant, str) and _HOLDOUT_VARIANT.match(variant):
            return variant
    return f"{HOLDOUT_VARIANT_PREFIX}{int(holdout_id)}"


def holdout_filters(
    exclusion_percentage: float, properties: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """PostHog's ``filters`` of a holdout holding out ``exclusion_percentage`` % of persons.

    >>> holdout_filters(10)
    [{'properties': [], 'rollout_percentage': 10, 'variant': 'holdout'}]
    """
    return [{"properties": list(properties or []), "rollout_percentage": exclusion_percentage, "variant": "holdout"}]


class ExperimentHoldout(ResponseModel):
    """A holdout as PostHog answers it (``created_by`` is PostHog's ``UserBasic``)."""

    id: int
    name: str
    description: str | None = None
    filters: list[dict[str, Any]] = Field(default_factory=list)
    created_by: User | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def exclusion_percentage(self) -> float | None:
        """The share of persons held out, in % (the first group's ``rollout_percentage``)."""
        value = self.filters[0].get("rollout_percentage") if self.filters else None
        return None if value is None or isinstance(value, bool) else float(value)

    @property
    def variant_key(self) -> str:
        """The flag value of the persons held out (``holdout-<id>``): their arm in results."""
        return holdout_variant_key(self.id, self.filters)


class ExperimentHoldoutCreate(RequestModel):
    """The body of a new holdout: a name and PostHog's ``filters`` (see :func:`holdout_filters`)."""

    name: str = Field(min_length=1, max_length=400)
    description: str | None = Field(default=None, max_length=400)
    filters: list[dict[str, Any]] = Field(min_length=1)


class ExperimentHoldoutUpdate(RequestModel):
    """A PATCH of a holdout: any of its fields."""

    name: str | None = Field(default=None, min_length=1, max_length=400)
    description: str | None = Field(default=None, max_length=400)
    filters: list[dict[str, Any]] | None = None


class ExperimentSavedMetric(ResponseModel):
    """A saved metric as PostHog answers it: ``query`` is the ``ExperimentMetric`` body (with its ``uuid``)."""

    id: int
    name: str
    description: str | None = None
    query: dict[str, Any]
    tags: list[Any] = Field(default_factory=list)
    created_by: User | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class ExperimentSavedMetricCreate(RequestModel):
    """The body of a new saved metric: a name unique in the project and the metric (``query``)."""

    name: str = Field(min_length=1, max_length=400)
    description: str | None = Field(default=None, max_length=400)
    query: dict[str, Any]
    tags: list[str] | None = None


class ExperimentSavedMetricUpdate(RequestModel):
    """A PATCH of a saved metric: any of its fields (the metric's ``uuid`` is kept)."""

    name: str | None = Field(default=None, min_length=1, max_length=400)
    description: str | None = Field(default=None, max_length=400)
    query: dict[str, Any] | None = None
    tags: list[str] | None = None


class ExperimentToSavedMetric(ResponseModel):
    """One experiment's use of a saved metric: ``metadata.type`` (``primary``/``secondary``) and overrides; ``query``
    and ``name`` are the saved metric's."""

    id: int
    experiment: int
    saved_metric: int
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    query: dict[str, Any] = Field(default_factory=dict)
    name: str = ""

    @property
    def role(self) -> str:
        """``primary`` or ``secondary`` (a link without metadata is primary)."""
        return "secondary" if (self.metadata or {}).get("type") == "secondary" else "primary"


def saved_metric_links(value: Any) -> list[dict[str, Any]] | None:
    """``saved_metrics_ids`` checked as PostHog checks it, with its messages.

    It is a list of ``{"id", "metadata"?}``, the metadata an object with a ``type``. Whether each id names a saved
    metric of the project is the service's check.
    """
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError("Saved metrics must be a list")
    for item in value:
        if not isinstance(item, dict):
            raise ValueError("Saved metric must be an object")
        if "id" not in item:
            raise ValueError("Saved metric must have an id")
        if "metadata" in item and not isinstance(item["metadata"], dict):
            raise ValueError("Metadata must be an object")
        if "metadata" in item and "type" not in item["metadata"]:
            raise ValueError("Metadata must have a type key")
    return value



class SavedMetricLinkMetadata(RequestModel):
    """A link's ``metadata``: ``type`` and PostHog's overrides of the saved query for this experiment.

    The overrides (``validate_saved_metric_link_overrides``) are up to 3 ``breakdowns``, a ``breakdown_limit`` and
    a funnel's attribution. Other keys are kept as sent.
    """

    model_config = RequestModel.model_config | {"extra": "allow"}

    type: str | None = None
    breakdowns: list[BreakdownItem] | None = Field(default=None, max_length=3)
    breakdown_limit: int | None = None
    breakdownAttributionType: Literal["first_touch", "last_touch", "step", "all_events"] | None = None
    breakdownAttributionValue: int | None = None


_OVERRIDES = ("breakdown_limit", "breakdownAttributionType", "breakdownAttributionValue")


def saved_metric_definition(
    query: dict[str, Any], metadata: dict[str, Any] | None, *, saved_metric_id: int | None = None, name: str = ""
) -> dict[str, Any]:
    """The metric a linked saved metric is analysed as (PostHog's ``resolve_saved_metric_definition``).

    The saved query, with its breakdowns always taken from the link (none when the link has none), the limit and
    the funnel's attribution only with them; marked ``isSharedMetric``/``sharedMetricId`` as PostHog's UI marks it.

    >>> q = {"metric_type": "mean", "uuid": "u", "source": {"event": "buy"},
    ...      "breakdownFilter": {"breakdowns": [{"property": "$os"}]}}
    >>> sorted(saved_metric_definition(q, {"type": "primary"}, saved_metric_id=5))
    ['isSharedMetric', 'metric_type', 'sharedMetricId', 'source', 'uuid']
    >>> saved_metric_definition(q, {"breakdowns": [{"property": "$browser"}]})["breakdownFilter"]
    {'breakdowns': [{'property': '$browser'}]}
    """
    metric = {k: v for k, v in query.items() if k not in ("breakdownFilter", *_OVERRIDES)}
    overrides = metadata or {}
    if overrides.get("breakdowns"):
        breakdown_filter: dict[str, Any] = {"breakdowns": list(overrides["breakdowns"])}
        if overrides.get("breakdown_limit") is not None:
            breakdown_filter["breakdown_limit"] = overrides["breakdown_limit"]
        metric["breakdownFilter"] = breakdown_filter
        for key in ("breakdownAttributionType", "breakdownAttributionValue"):
            if overrides.get(key) is not None:
                metric[key] = overrides[key]
    if not metric.get("name") and name:
        metric["name"] = name
    if saved_metric_id is not None:
        metric["isSharedMetric"] = True
        metric["sharedMetricId"] = saved_metric_id
    return metric
