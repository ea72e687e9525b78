"""Series nodes: what a trend or funnel counts, and how (``math``)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from ._base import RequestModel
from .filters import AnyPropertyFilter

__all__ = [
    "BaseMathType",
    "CountPerActorMathType",
    "EventsNode",
    "FunnelExclusion",
    "MathType",
    "PropertyMathType",
]

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


class EventsNode(RequestModel):
    """One series: an event (``None`` means all events), its filters and its math.

    >>> EventsNode(event="purchase", math="sum", math_property="price").math_property
    'price'
    """

    kind: Literal["EventsNode"] = "EventsNode"
    event: str | None = Field(default=None, max_length=400)
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
    def _math_has_its_inputs(self) -> EventsNode:
        if self.math in PROPERTY_MATH and not self.math_property:
            raise ValueError(f"Math {self.math!r} needs a math_property (the property to aggregate).")
        if self.math == "hogql" and not self.math_hogql:
            raise ValueError("Math 'hogql' needs a math_hogql expression.")
        if self.math == "unique_group" and self.math_group_type_index is None:
            raise ValueError("Math 'unique_group' needs the group type to count (math_group_type_index, 0 to 4).")
        return self


class FunnelExclusion(EventsNode):
    """An event that, between two steps, disqualifies a funnel attempt."""

    funnelFromStep: int = Field(ge=0)
    funnelToStep: int = Field(ge=1)

    @model_validator(mode="after")
    def _steps_in_order(self) -> FunnelExclusion:
        if self.funnelToStep <= self.funnelFromStep:
            raise ValueError("funnelToStep must be after funnelFromStep.")
        return self
