"""Series nodes: what a trend, funnel or metric counts (an event: ``EventsNode``; a stored action:
``ActionsNode``), and how (``math``).

>>> from pydantic import TypeAdapter
>>> nodes = TypeAdapter(list[SeriesNode]).validate_python([{"event": "a"}, {"kind": "ActionsNode", "id": 3}])
>>> [type(n).__name__ for n in nodes]
['EventsNode', 'ActionsNode']
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from ._base import RequestModel
from .filters import AnyPropertyFilter

__all__ = [
    "ActionsNode",
    "AnyFunnelExclusion",
    "BaseMathType",
    "CountPerActorMathType",
    "EventsNode",
    "FunnelExclusion",
    "FunnelExclusionActionsNode",
    "MathType",
    "PropertyMathType",
    "SeriesFields",
    "SeriesNode",
    "node_kind",
]

_MAX_ID = 2**63 - 1

BaseMathType = Literal[
    "total",
    "dau",
    "weekly_active",
    "monthly_active",
    "unique_session",
    "first_time_for_user",
    "first_matching_event_for_user",
]
PropertyMathType = Literal["avg", "sum", "min", "max", "median", "p75", "p90", "p95", "p99"]
CountPerActorMathType = Literal[
    "avg_count_per_actor",
    "min_count_per_actor",
    "max_count_per_actor",
    "median_count_per_actor",
    "p75_count_per_actor",
    "p90_count_per_actor",
    "p95_count_per_actor",
    "p99_count_per_actor",
]
MathType = BaseMathType | PropertyMathType | CountPerActorMathType | Literal["unique_group", "hogql"]

PROPERTY_MATH: frozenset[str] = frozenset(get_args(PropertyMathType))
COUNT_PER_ACTOR_MATH: frozenset[str] = frozenset(get_args(CountPerActorMathType))


class SeriesFields(RequestModel):
    """What every series node holds besides what it counts: its label, filters and math (``EventsNode`` counts an
    event, ``ActionsNode`` a stored action's events)."""

    name: str | None = Field(default=None, max_length=400)
    custom_name: str | None = Field(default=None, max_length=400)
    math: MathType | None = None
    math_property: str | None = Field(default=None, max_length=400)
    math_property_type: str | None = None
    math_hogql: str | None = Field(default=None, max_length=2000)
    math_group_type_index: int | None = Field(default=None, ge=0, le=4)
    math_multiplier: float | None = None
    properties: list[AnyPropertyFilter] | None = None
    fixedProperties: list[AnyPropertyFilter] | None = None
    optionalInFunnel: bool | None = None
    limit: int | None = None
    orderBy: list[str] | None = None

    @model_validator(mode="after")
    def _math_has_its_inputs(self) -> SeriesFields:
        if self.math in PROPERTY_MATH and not self.math_property:
            raise ValueError(f"Math {self.math!r} needs a math_property (the property to aggregate).")
        if self.math == "hogql" and not self.math_hogql:
            raise ValueError("Math 'hogql' needs a math_hogql expression.")
        if self.math == "unique_group" and self.math_group_type_index is None:
            raise ValueError("Math 'unique_group' needs the group type to count (math_group_type_index, 0 to 4).")
        return self


class EventsNode(SeriesFields):
    """One series: an event (``None`` means all events), its filters and its math.

    >>> EventsNode(event="purchase", math="sum", math_property="price").math_property
    'price'
    """

    kind: Literal["EventsNode"] = "EventsNode"
    event: str | None = Field(default=None, max_length=400)


class FunnelExclusion(EventsNode):
    """An event that, between two steps, disqualifies a funnel attempt."""

    funnelFromStep: int = Field(ge=0)
    funnelToStep: int = Field(ge=1)

    @model_validator(mode="after")
    def _steps_in_order(self) -> FunnelExclusion:
        if self.funnelToStep <= self.funnelFromStep:
            raise ValueError("funnelToStep must be after funnelFromStep.")
        return self


class ActionsNode(SeriesFields):
    """A series (or funnel step, or metric source) that counts the events of a stored action.

    ``id`` is the action's id in the project (PostHog requires it); the toolkit's builders may leave it out and
    give the action's ``name``, which the client turns into the id before sending (``client.actions``).

    >>> ActionsNode(id=3, properties=[{"key": "plan", "value": "pro", "type": "event"}]).properties[0].key
    'plan'
    """

    kind: Literal["ActionsNode"] = "ActionsNode"
    id: int | None = Field(default=None, ge=-_MAX_ID, le=_MAX_ID)


class FunnelExclusionActionsNode(ActionsNode):
    """An action whose events, between two steps, disqualify a funnel attempt."""

    funnelFromStep: int = Field(ge=0)
    funnelToStep: int = Field(ge=1)

    @model_validator(mode="after")
    def _steps_in_order(self) -> FunnelExclusionActionsNode:
        if self.funnelToStep <= self.funnelFromStep:
            raise ValueError("funnelToStep must be after funnelFromStep.")
        return self


def node_kind(value: Any) -> str:
    """The ``kind`` of a series node, a dict or a model; ``EventsNode`` when it names none (PostHog's default).

    >>> node_kind({"event": "$pageview"}), node_kind({"kind": "ActionsNode", "id": 1}), node_kind(ActionsNode(id=2))
    ('EventsNode', 'ActionsNode', 'ActionsNode')
    """
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return str(kind) if kind is not None else "EventsNode"


def _no_warehouse(value: Any) -> Any:
    # Checked before the union so a data warehouse node gets a sentence instead of "does not match any tag".
    if isinstance(value, dict) and value.get("kind") in ("DataWarehouseNode", "ExperimentDataWarehouseNode"):
        raise ValueError("Data warehouse series are not supported by hoglab: use an EventsNode or an ActionsNode.")
    return value


SeriesNode = Annotated[
    Annotated[EventsNode, Tag("EventsNode")] | Annotated[ActionsNode, Tag("ActionsNode")],
    Discriminator(node_kind),
    BeforeValidator(_no_warehouse),
]
"""A series of an insight or a metric: an ``EventsNode`` (the default kind) or an ``ActionsNode``."""

AnyFunnelExclusion = Annotated[
    Annotated[FunnelExclusion, Tag("EventsNode")] | Annotated[FunnelExclusionActionsNode, Tag("ActionsNode")],
    Discriminator(node_kind),
]
"""A funnel exclusion: an event (``FunnelExclusion``) or an action (``FunnelExclusionActionsNode``)."""
