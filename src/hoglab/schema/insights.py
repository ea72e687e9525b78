"""Retention, lifecycle, stickiness and paths queries, with PostHog's field names and defaults.

A series (lifecycle, stickiness) is an ``EventsNode`` or an ``ActionsNode``; a retention entity names an event
(``type: "events"``) or an action (``type: "actions"`` with the action's ``id``).

>>> RetentionQuery(retentionFilter=RetentionFilter(period="Week")).retentionFilter.totalIntervals
8
>>> PathsQuery(pathsFilter=PathsFilter(includeEventTypes=["$pageview"])).pathsFilter.stepLimit
5
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ._base import RequestModel, SettingsModel
from ._query_base import InsightBase
from .filters import AnyPropertyFilter, BreakdownFilter, CompareFilter
from .nodes import SeriesNode

__all__ = [
    "LifecycleFilter",
    "LifecycleQuery",
    "LifecycleToggle",
    "PathCleaningFilter",
    "PathType",
    "PathsFilter",
    "PathsQuery",
    "RetentionEntity",
    "RetentionFilter",
    "RetentionPeriod",
    "RetentionQuery",
    "StickinessCriteria",
    "StickinessFilter",
    "StickinessQuery",
    "check_clickhouse_regex",
]

RetentionPeriod = Literal["Hour", "Day", "Week", "Month"]
LifecycleToggle = Literal["new", "resurrecting", "returning", "dormant"]
PathType = Literal["$pageview", "$screen", "custom_event", "hogql"]
InsightInterval = Literal["hour", "day", "week", "month"]

_MAX_ID = 2**63 - 1


class RetentionEntity(RequestModel):
    """The event that starts a cohort (target) or counts as coming back (returning), or an action.

    An event is ``{"id": "$pageview", "type": "events"}`` (``id`` ``None`` means any event), an action
    ``{"id": 7, "type": "actions"}`` (the toolkit may name it instead, ``{"name": "Signed up", "type": "actions"}``,
    for the client to fill the id in).

    >>> RetentionEntity(id="signup", type="events").event, RetentionEntity(id=7, type="actions").action_id
    ('signup', 7)
    """

    id: str | int | None = None
    type: Literal["actions", "events", "data_warehouse", "new_entity"] | None = None
    kind: Literal["ActionsNode", "EventsNode"] | None = None
    name: str | None = Field(default=None, max_length=400)
    custom_name: str | None = Field(default=None, max_length=400)
    order: int | None = None
    uuid: str | None = None
    properties: list[AnyPropertyFilter] | None = None

    @model_validator(mode="after")
    def _known_kind(self) -> RetentionEntity:
        if self.type == "data_warehouse":
            raise ValueError("Data warehouse entities are not supported by hoglab.")
        if self.is_action and self.id is not None:
            # PostHog matches actions by type; a kind of ActionsNode alone names one too.
            given = self.id
            if isinstance(given, bool) or not isinstance(given, int | str) or not str(given).lstrip("-").isdigit():
                raise ValueError("An action entity needs the action's id (an integer).")
            if abs(int(str(given))) > _MAX_ID:
                raise ValueError("An action id is a 64-bit integer.")
        return self

    @property
    def is_action(self) -> bool:
        """Whether the entity names an action (``type: "actions"``, or ``kind: "ActionsNode"``)."""
        return self.type == "actions" or (self.type is None and self.kind == "ActionsNode")

    @property
    def action_id(self) -> int | None:
        """The action's id when the entity names one."""
        return int(str(self.id)) if self.is_action and self.id is not None else None

    @property
    def event(self) -> str | None:
        """The event name this entity matches (``None``: every event, or an action)."""
        return None if self.id is None or self.is_action else str(self.id)


class RetentionFilter(SettingsModel):
    """Retention settings with PostHog's defaults: daily periods, 8 intervals, recurring retention of
    ``$pageview`` returning with ``$pageview``."""

    retentionType: Literal["retention_recurring", "retention_first_time", "retention_first_ever_occurrence"] | None = (
        None
    )
    period: RetentionPeriod | None = "Day"
    totalIntervals: int | None = Field(default=8, ge=1, le=400)
    targetEntity: RetentionEntity | None = None
    returningEntity: RetentionEntity | None = None
    retentionReference: Literal["total", "previous"] | None = None
    cumulative: bool | None = None
    minimumOccurrences: int | None = Field(default=None, ge=1, le=10_000)
    meanRetentionCalculation: Literal["simple", "weighted", "none"] | None = None
    timeWindowMode: Literal["strict_calendar_dates", "24_hour_windows"] | None = None
    display: str | None = None
    dashboardDisplay: Literal["table_only", "graph_only", "all"] | None = None
    showTrendLines: bool | None = None


class RetentionQuery(InsightBase):
    """Of the people who did the target event in a period, how many came back in each following period.

    >>> RetentionQuery(retentionFilter={"period": "Week", "totalIntervals": 4}).retentionFilter.period
    'Week'
    """

    kind: Literal["RetentionQuery"] = "RetentionQuery"
    retentionFilter: RetentionFilter
    breakdownFilter: BreakdownFilter | None = None


class LifecycleFilter(SettingsModel):
    """Which of the four statuses to show (``toggledLifecycles``; all by default) and how."""

    toggledLifecycles: list[LifecycleToggle] | None = None
    showLegend: bool | None = False
    showValuesOnSeries: bool | None = None
    stacked: bool | None = True


class LifecycleQuery(InsightBase):
    """People per interval by status: new, returning, resurrecting, dormant (negative).

    >>> from hoglab.schema import EventsNode
    >>> LifecycleQuery(series=[EventsNode(event="$pageview")], interval="week").interval
    'week'
    """

    kind: Literal["LifecycleQuery"] = "LifecycleQuery"
    series: list[SeriesNode] = Field(min_length=1, max_length=1)
    interval: InsightInterval | None = "day"
    lifecycleFilter: LifecycleFilter | None = None


class StickinessCriteria(RequestModel):
    """What makes an interval count as active: the person's events in it ``gte``/``lte``/``exact`` ``value``."""

    operator: Literal["gte", "lte", "exact"]
    value: int = Field(ge=0, le=1_000_000)


class StickinessFilter(SettingsModel):
    """Stickiness settings: ``computedAs`` cumulative ("at least N intervals") and the activity criteria."""

    computedAs: Literal["non_cumulative", "cumulative"] | None = None
    stickinessCriteria: StickinessCriteria | None = None
    display: str | None = None
    hiddenLegendIndexes: list[int] | None = None
    resultCustomizationBy: Literal["value", "position"] | None = "value"
    resultCustomizations: dict[str, Any] | None = None
    showLegend: bool | None = None
    showMultipleYAxes: bool | None = None
    showValuesOnSeries: bool | None = None


class StickinessQuery(InsightBase):
    """People by the number of intervals of the range in which they were active, one line per series.

    >>> from hoglab.schema import EventsNode
    >>> StickinessQuery(series=[EventsNode(event="$pageview")]).interval
    'day'
    """

    kind: Literal["StickinessQuery"] = "StickinessQuery"
    series: list[SeriesNode] = Field(min_length=1, max_length=50)
    interval: InsightInterval | None = "day"
    intervalCount: int | None = Field(default=None, ge=1, le=365)
    compareFilter: CompareFilter | None = None
    stickinessFilter: StickinessFilter | None = None

    @model_validator(mode="after")
    def _groups_by_series(self) -> StickinessQuery:
        if self.aggregation_group_type_index is not None:
            raise ValueError(
                "StickinessQuery has no aggregation_group_type_index (PostHog's neither): count groups with a "
                "series' math 'unique_group' and its math_group_type_index."
            )
        return self


# RE2 (ClickHouse's regex engine) has no lookaround and no backreferences; Python's `re` accepts both, so a
# pattern is checked for them too, or it would compile here and fail in the engine.
_RE2_UNSUPPORTED = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?P=|\(\?\(")


def check_clickhouse_regex(pattern: str) -> str:
    """Validate a regular expression the engine will run; ``ValueError`` names the problem.

    >>> check_clickhouse_regex(r"/users/\\d+")
    '/users/\\\\d+'
    >>> check_clickhouse_regex("(")
    Traceback (most recent call last):
    ...
    ValueError: Invalid regular expression '(': missing ), unterminated subpattern at position 0
    """
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"Invalid regular expression {pattern!r}: {exc}") from None
    if _RE2_UNSUPPORTED.search(pattern):
        raise ValueError(f"Regular expression {pattern!r} uses lookaround or backreferences, which are not supported.")
    return pattern


class PathCleaningFilter(RequestModel):
    """Replace what ``regex`` matches in a path item by ``alias``: ``{"regex": "/user/\\d+", "alias": "/user/:id"}``."""

    regex: str | None = Field(default=None, max_length=1000)
    alias: str | None = Field(default=None, max_length=1000)
    order: float | None = None

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        return None if value is None else check_clickhouse_regex(value)


class PathsFilter(SettingsModel):
    """Paths settings with PostHog's defaults: 5 steps, 50 edges, ``$pageview`` paths."""

    includeEventTypes: list[PathType] | None = None
    startPoint: str | None = Field(default=None, max_length=2000)
    endPoint: str | None = Field(default=None, max_length=2000)
    stepLimit: int | None = Field(default=5, ge=2, le=20)
    edgeLimit: int | None = Field(default=50, ge=1, le=10_000)
    minEdgeWeight: int | None = Field(default=None, ge=0)
    maxEdgeWeight: int | None = Field(default=None, ge=0)
    excludeEvents: list[str] | None = Field(default=None, max_length=200)
    pathGroupings: list[str] | None = Field(default=None, max_length=100)
    pathReplacements: bool | None = None
    localPathCleaningFilters: list[PathCleaningFilter] | None = Field(default=None, max_length=100)
    pathsHogQLExpression: str | None = Field(default=None, max_length=2000)
    pathStartKey: str | None = Field(default=None, max_length=2000)
    pathEndKey: str | None = Field(default=None, max_length=2000)
    pathDropoffKey: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _consistent(self) -> PathsFilter:
        types = self.includeEventTypes or []
        if "hogql" in types and not self.pathsHogQLExpression:
            raise ValueError("includeEventTypes 'hogql' needs a pathsHogQLExpression.")
        low, high = self.minEdgeWeight, self.maxEdgeWeight
        if low is not None and high is not None and low > high:
            raise ValueError("minEdgeWeight must not exceed maxEdgeWeight.")
        return self


class PathsQuery(InsightBase):
    """The most common sequences of pages, screens or events, as weighted edges between numbered steps.

    >>> PathsQuery(pathsFilter={"startPoint": "/home"}).pathsFilter.edgeLimit
    50
    """

    kind: Literal["PathsQuery"] = "PathsQuery"
    pathsFilter: PathsFilter
    funnelPathsFilter: dict[str, Any] | None = None

    @field_validator("aggregation_group_type_index")
    @classmethod
    def _paths_per_person(cls, value: int | None) -> int | None:
        if value is not None:
            # PostHog accepts the field but still builds paths per person (it only picks who the actors are).
            raise ValueError("Paths are per person: aggregation_group_type_index is not supported for paths.")
        return value

    @field_validator("funnelPathsFilter")
    @classmethod
    def _no_funnel_paths(cls, value: dict[str, Any] | None) -> None:
        if value is not None:
            raise ValueError("Paths relative to funnel steps (funnelPathsFilter) are not supported by hoglab.")
        return None
