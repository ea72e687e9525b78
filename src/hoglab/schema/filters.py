"""Filters shared by the query kinds: property filters, date ranges, breakdowns and comparisons."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ._base import RequestModel

__all__ = [
    "AnyPropertyFilter",
    "BreakdownFilter",
    "BreakdownItem",
    "BreakdownType",
    "CohortPropertyFilter",
    "CompareFilter",
    "DateRange",
    "ElementPropertyFilter",
    "EventPropertyFilter",
    "FeaturePropertyFilter",
    "GroupPropertyFilter",
    "HogQLPropertyFilter",
    "PersonPropertyFilter",
    "PropertyFilters",
    "PropertyGroupFilter",
    "PropertyGroupFilterValue",
    "PropertyOperator",
    "PropertyValue",
    "SessionPropertyFilter",
]

PropertyOperator = Literal[
    "exact",
    "is_not",
    "icontains",
    "not_icontains",
    "regex",
    "not_regex",
    "gt",
    "gte",
    "lt",
    "lte",
    "is_set",
    "is_not_set",
    "between",
    "not_between",
    "is_date_exact",
    "is_date_before",
    "is_date_after",
    "min",
    "max",
    "in",
    "not_in",
]
"""Operators of a property filter, as PostHog names them."""

ScalarValue = str | int | float | bool
PropertyValue = ScalarValue | list[ScalarValue] | None

_UNARY = {"is_set", "is_not_set"}
_RANGE = {"between", "not_between"}
_NUMERIC = {"gt", "gte", "lt", "lte", "min", "max"}


class _ValueFilter(RequestModel):
    key: str = Field(min_length=1, max_length=400)
    value: PropertyValue = None
    operator: PropertyOperator = "exact"
    label: str | None = None

    @model_validator(mode="after")
    def _value_fits_operator(self) -> _ValueFilter:
        op, value = self.operator, self.value
        if op in _UNARY:
            return self
        if value is None or value == []:
            raise ValueError(f"Operator {op!r} needs a value.")
        if op in _RANGE and not (isinstance(value, list) and len(value) == 2):
            raise ValueError(f"Operator {op!r} needs a value of two items [low, high].")
        if op in _NUMERIC:
            items = value if isinstance(value, list) else [value]
            for item in items:
                try:
                    float(item)
                except (TypeError, ValueError):
                    raise ValueError(f"Operator {op!r} needs a number, got {item!r}.") from None
        return self


class EventPropertyFilter(_ValueFilter):
    """A filter on a property of the event: ``{"key": "$browser", "value": "Chrome", "type": "event"}``."""

    type: Literal["event"] = "event"


class FeaturePropertyFilter(_ValueFilter):
    """A filter on a ``$feature/<flag>`` event property (PostHog's ``feature`` type)."""

    type: Literal["feature"] = "feature"


class PersonPropertyFilter(_ValueFilter):
    """A filter on a property of the person behind the event."""

    type: Literal["person"] = "person"


class SessionPropertyFilter(_ValueFilter):
    """A filter on a field of the event's session (``$entry_current_url``, ``$session_duration``, ...)."""

    type: Literal["session"] = "session"


class EventMetadataPropertyFilter(_ValueFilter):
    """A filter on one of the event's own fields (``distinct_id``, ``event``, ``timestamp``, ...), PostHog's
    ``event_metadata`` type: ``{"type": "event_metadata", "key": "distinct_id", "value": ["p3"]}``."""

    type: Literal["event_metadata"] = "event_metadata"


class GroupPropertyFilter(_ValueFilter):
    """A filter on a property of the event's group of one type (PostHog group analytics):
    ``{"key": "plan", "value": "pro", "type": "group", "group_type_index": 0}``."""

    type: Literal["group"] = "group"
    group_type_index: int | None = Field(default=None, ge=0, le=4)

    @model_validator(mode="after")
    def _needs_index(self) -> GroupPropertyFilter:
        if self.group_type_index is None:
            raise ValueError("A group filter needs its group_type_index (0 to 4).")
        return self


class ElementPropertyFilter(_ValueFilter):
    """A filter on autocapture elements (``tag_name``, ``text``, ``href``, ``selector``)."""

    type: Literal["element"] = "element"
    key: Literal["tag_name", "text", "href", "selector"]


class CohortPropertyFilter(RequestModel):
    """Membership of a cohort: ``{"key": "id", "value": 12, "type": "cohort"}``."""

    type: Literal["cohort"] = "cohort"
    key: Literal["id"] = "id"
    value: int
    operator: Literal["in", "not_in"] | None = "in"
    label: str | None = None


class HogQLPropertyFilter(RequestModel):
    """A HogQL boolean expression: ``{"key": "toInt(properties.$screen_width) > 1000", "type": "hogql"}``."""

    type: Literal["hogql"] = "hogql"
    key: str = Field(min_length=1, max_length=2000)
    value: None = None
    label: str | None = None


AnyPropertyFilter = Annotated[
    EventPropertyFilter
    | FeaturePropertyFilter
    | PersonPropertyFilter
    | SessionPropertyFilter
    | EventMetadataPropertyFilter
    | GroupPropertyFilter
    | ElementPropertyFilter
    | CohortPropertyFilter
    | HogQLPropertyFilter,
    Field(discriminator="type"),
]


class PropertyGroupFilterValue(RequestModel):
    """An AND/OR group of filters or further groups."""

    type: Literal["AND", "OR"]
    values: list[
        Annotated[
            EventPropertyFilter
            | FeaturePropertyFilter
            | PersonPropertyFilter
            | SessionPropertyFilter
            | EventMetadataPropertyFilter
            | GroupPropertyFilter
            | ElementPropertyFilter
            | CohortPropertyFilter
            | HogQLPropertyFilter
            | PropertyGroupFilterValue,
            Field(discriminator="type"),
        ]
    ]


class PropertyGroupFilter(RequestModel):
    """The top-level group form: ``{"type": "AND", "values": [{"type": "OR", "values": [...]}]}``."""

    type: Literal["AND", "OR"]
    values: list[PropertyGroupFilterValue]


PropertyFilters = list[AnyPropertyFilter] | PropertyGroupFilter
"""A query's ``properties``: a flat list (AND-ed) or a group."""


class DateRange(RequestModel):
    """``{"date_from": "-7d", "date_to": null}``.

    Relative strings: ``-<n><unit>[Start|End]`` with units ``h d w m q y`` (and ``M`` minutes, ``s`` seconds),
    ``"all"`` (from the first event), or ISO dates and datetimes (no offset: the project's time zone).
    """

    date_from: str | None = Field(default=None, max_length=64)
    date_to: str | None = Field(default=None, max_length=64)
    explicitDate: bool | None = None


BreakdownType = Literal["event", "person", "cohort", "hogql", "event_metadata", "session", "group"]


class BreakdownItem(RequestModel):
    """One entry of a multiple breakdown."""

    property: str | int
    type: BreakdownType | None = "event"
    normalize_url: bool | None = None
    histogram_bin_count: int | None = None
    group_type_index: int | None = Field(default=None, ge=0, le=4)


class BreakdownFilter(RequestModel):
    """Split a series by the values of a property: ``{"breakdown": "$browser", "breakdown_type": "event"}``."""

    breakdown_type: BreakdownType | None = "event"
    breakdown: str | int | list[str | int] | None = None
    breakdown_limit: int | None = Field(default=None, ge=1, le=10_000)
    breakdown_normalize_url: bool | None = None
    breakdown_hide_other_aggregation: bool | None = None
    breakdown_histogram_bin_count: int | None = Field(default=None, ge=1, le=1000)
    breakdown_group_type_index: int | None = Field(default=None, ge=0, le=4)
    breakdowns: list[BreakdownItem] | None = Field(default=None, max_length=3)


class CompareFilter(RequestModel):
    """Compare against the previous period, or the period ``compare_to`` ago (e.g. ``"-1w"``)."""

    compare: bool | None = False
    compare_to: str | None = None


