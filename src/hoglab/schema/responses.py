"""Answers of the Query endpoint: one response model per kind, plus the async ``query_status``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ._base import ResponseModel

__all__ = [
    "ActorsQueryResponse",
    "CorrelatedEvent",
    "EventOddsRatio",
    "EventsQueryResponse",
    "FunnelCorrelationResponse",
    "FunnelCorrelationResult",
    "FunnelStepResult",
    "FunnelsQueryResponse",
    "HogQLQueryResponse",
    "LifecycleQueryResponse",
    "LifecycleResultItem",
    "PathsLink",
    "PathsQueryResponse",
    "QueryStatus",
    "QueryStatusResponse",
    "ResolvedDateRange",
    "RetentionQueryResponse",
    "RetentionResult",
    "RetentionValue",
    "StickinessQueryResponse",
    "StickinessResultItem",
    "Timing",
    "TrendsQueryResponse",
    "TrendsResultItem",
]

MAX_SELECT_RETURNED_ROWS = 10_000
"""The row cap of one answer (the contract's limit; PostHog Cloud has since raised its own to 50,000)."""
DEFAULT_RETURNED_ROWS = 100
"""Rows of a HogQL ``SELECT`` without ``LIMIT``; it runs as ``LIMIT 101`` to fill ``hasMore``."""


class Timing(ResponseModel):
    """One phase of the work, in seconds: ``{"k": "./compile", "t": 0.0012}``."""

    k: str
    t: float


class ResolvedDateRange(ResponseModel):
    date_from: datetime
    date_to: datetime


class QueryStatus(ResponseModel):
    """The state of an asynchronous query; ``results`` holds the whole response once complete."""

    id: str
    team_id: int
    query_async: bool = True
    complete: bool = False
    error: bool = False
    error_message: str | None = None
    results: Any = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    pickup_time: datetime | None = None
    expiration_time: datetime | None = None
    query_progress: dict[str, Any] | None = None
    task_id: str | None = None
    dashboard_id: int | None = None
    insight_id: int | None = None
    labels: list[str] | None = None


class QueryStatusResponse(ResponseModel):
    query_status: QueryStatus


class _CachedResponse(ResponseModel):
    # The cache fields PostHog adds to every query answer.
    is_cached: bool = False
    last_refresh: datetime | None = None
    cache_key: str | None = None
    next_allowed_client_refresh: datetime | None = None
    cache_target_age: datetime | None = None
    timezone: str | None = None
    query_status: QueryStatus | None = None
    calculation_trigger: str | None = None
    timings: list[Timing] | None = None
    hogql: str | None = None
    error: str | None = None
    modifiers: dict[str, Any] | None = None
    resolved_date_range: ResolvedDateRange | None = None


class HogQLQueryResponse(_CachedResponse):
    """``results`` rows with ``columns`` and ``types`` (``[name, ClickHouse type]`` pairs)."""

    results: list[list[Any]] = Field(default_factory=list)
    columns: list[str] | None = None
    types: list[tuple[str, str]] | None = None
    clickhouse: str | None = None
    query: str | None = None
    hasMore: bool | None = None
    limit: int | None = None
    offset: int | None = None
    explain: list[str] | None = None
    metadata: dict[str, Any] | None = None


class TrendsResultItem(ResponseModel):
    """One line of a trend: a series (and breakdown value) over the intervals."""

    data: list[float] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    days: list[str] = Field(default_factory=list)
    count: float = 0
    label: str = ""
    breakdown_value: Any = None
    action: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None
    aggregated_value: float | None = None
    compare: bool | None = None
    compare_label: str | None = None
    persons_urls: list[dict[str, Any]] | None = None


class TrendsQueryResponse(_CachedResponse):
    results: list[TrendsResultItem] = Field(default_factory=list)
    hasMore: bool | None = None


class FunnelStepResult(ResponseModel):
    """One step of a funnel (conversion times in seconds; breakdown values are lists for properties)."""

    action_id: str | int | None = None
    name: str | None = None
    custom_name: str | None = None
    order: int
    count: int
    type: str = "events"
    people: list[Any] = Field(default_factory=list)
    average_conversion_time: float | None = None
    median_conversion_time: float | None = None
    breakdown: Any = None
    breakdown_value: Any = None
    converted_people_url: str | None = None
    dropped_people_url: str | None = None


class FunnelsQueryResponse(_CachedResponse):
    """``results``: steps, or a list of steps per breakdown value, or the time-to-convert/trends shapes."""

    results: Any = None
    isUdf: bool | None = None


class CorrelatedEvent(ResponseModel):
    """What a correlation row names (PostHog's ``EventDefinition``): ``event`` is the event's name, or
    ``event::property::value`` and ``property::value`` for the property kinds."""

    event: str
    properties: dict[str, Any] = Field(default_factory=dict)
    elements: list[Any] = Field(default_factory=list)


class EventOddsRatio(ResponseModel):
    """One correlation (PostHog's ``EventOddsRatioSerialized``): how many actors who did it converted
    (``success_count``) or not (``failure_count``), the odds ratio and whether it goes with ``success``."""

    event: CorrelatedEvent
    success_count: int
    failure_count: int
    odds_ratio: float
    correlation_type: Literal["success", "failure"]


class FunnelCorrelationResult(ResponseModel):
    """``events``: the ten strongest positive then the ten strongest negative correlations; ``skewed``: one of
    converted and dropped off outnumbers the other more than ten to one (or either is zero)."""

    events: list[EventOddsRatio] = Field(default_factory=list)
    skewed: bool = False


class FunnelCorrelationResponse(_CachedResponse):
    results: FunnelCorrelationResult = Field(default_factory=FunnelCorrelationResult)
    columns: list[Any] | None = None
    types: list[Any] | None = None
    hasMore: bool | None = None
    limit: int | None = None
    offset: int | None = None


class EventsQueryResponse(_CachedResponse):
    results: list[list[Any]] = Field(default_factory=list)
    columns: list[Any] = Field(default_factory=list)
    types: list[str] | None = None
    hasMore: bool | None = None
    limit: int | None = None
    offset: int | None = None


class ActorsQueryResponse(_CachedResponse):
    results: list[list[Any]] = Field(default_factory=list)
    columns: list[Any] = Field(default_factory=list)
    types: list[str] | None = None
    hasMore: bool | None = None
    limit: int | None = None
    offset: int | None = None
    missing_actors_count: int | None = None


class RetentionValue(ResponseModel):
    """One cell of a retention cohort: how many came back in that period."""

    count: int
    label: str | None = None


class RetentionResult(ResponseModel):
    """One cohort: people whose start fell in the period beginning at ``date`` (``label`` "Day 0", ...)."""

    date: datetime
    label: str
    values: list[RetentionValue] = Field(default_factory=list)
    breakdown_value: str | float | None = None


class RetentionQueryResponse(_CachedResponse):
    results: list[RetentionResult] = Field(default_factory=list)


class LifecycleResultItem(TrendsResultItem):
    """One status of a lifecycle (``new``, ``returning``, ``resurrecting``, ``dormant``) over the intervals."""

    status: str | None = None


class LifecycleQueryResponse(_CachedResponse):
    results: list[LifecycleResultItem] = Field(default_factory=list)


class StickinessResultItem(TrendsResultItem):
    """One series of a stickiness insight: PostHog's ``days`` are the numbers of active intervals (1, 2, ...)."""

    days: list[int | str] = Field(default_factory=list)  # type: ignore[assignment]


class StickinessQueryResponse(_CachedResponse):
    """One line per series: ``data[i]`` people were active in exactly ``days[i]`` intervals."""

    results: list[StickinessResultItem] = Field(default_factory=list)


class PathsLink(ResponseModel):
    """An edge of a paths insight: ``value`` people went from ``source`` to ``target`` (``"1_/home"`` ...)."""

    source: str
    target: str
    value: float
    average_conversion_time: float


class PathsQueryResponse(_CachedResponse):
    results: list[PathsLink] = Field(default_factory=list)
