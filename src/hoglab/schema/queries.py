"""The query kinds of ``POST /api/projects/:project_id/query`` and the request around them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from ._base import RequestModel, SettingsModel
from ._query_base import InsightBase, IntervalType, QueryBase
from .experiment_metrics import ExperimentExposureQuery, ExperimentQuery
from .filters import (
    AnyPropertyFilter,
    BreakdownFilter,
    CompareFilter,
    DateRange,
)
from .groups import GroupsQuery
from .insights import LifecycleQuery, PathsQuery, RetentionQuery, StickinessQuery
from .nodes import AnyFunnelExclusion, SeriesNode

__all__ = [
    "ActorsQuery",
    "AnyQuery",
    "ChartDisplayType",
    "EventsQuery",
    "FormulaNode",
    "FunnelCorrelationQuery",
    "FunnelCorrelationType",
    "FunnelsActorsQuery",
    "FunnelsFilter",
    "FunnelsQuery",
    "HogQLFilters",
    "HogQLQuery",
    "InsightActorsQuery",
    "IntervalType",
    "QueryRequest",
    "RefreshType",
    "TrendsFilter",
    "TrendsQuery",
    "funnel_window_seconds",
    "parse_query",
]

# The engine reads OFFSET as a signed 64-bit number: a larger one is the caller's mistake, told as such.
_MAX_OFFSET = 2**63 - 1

ChartDisplayType = Literal[
    "ActionsLineGraph",
    "ActionsBar",
    "ActionsUnstackedBar",
    "ActionsStackedBar",
    "ActionsAreaGraph",
    "ActionsLineGraphCumulative",
    "BoldNumber",
    "ActionsPie",
    "ActionsBarValue",
    "ActionsTable",
    "WorldMap",
    "CalendarHeatmap",
]
TOTAL_VALUE_DISPLAYS: frozenset[str] = frozenset(
    {"BoldNumber", "ActionsPie", "ActionsBarValue", "ActionsTable", "WorldMap"}
)
RefreshType = (
    Literal[
        "blocking",
        "async",
        "lazy_async",
        "force_blocking",
        "force_async",
        "force_cache",
        "async_except_on_cache_miss",
    ]
    | bool
)


class HogQLFilters(RequestModel):
    """What ``{filters}`` in a HogQL statement expands to."""

    properties: list[AnyPropertyFilter] | None = None
    dateRange: DateRange | None = None
    filterTestAccounts: bool | None = None


class HogQLQuery(QueryBase):
    """A HogQL statement: ClickHouse SQL over the project's ``events``, ``persons`` and friends.

    >>> HogQLQuery(query="select event, count() from events group by event").kind
    'HogQLQuery'
    """

    kind: Literal["HogQLQuery"] = "HogQLQuery"
    query: str = Field(min_length=1, max_length=100_000)
    values: dict[str, Any] | None = None
    variables: dict[str, Any] | None = None
    filters: HogQLFilters | None = None
    name: str | None = Field(default=None, max_length=128)
    explain: bool | None = None


class FormulaNode(RequestModel):
    """A formula over the series, letters in series order: ``{"formula": "A/B"}``."""

    formula: str = Field(min_length=1, max_length=400)
    custom_name: str | None = None


class TrendsFilter(SettingsModel):
    """How a trend is displayed and combined (``display``, ``formulaNodes``); UI-only keys are kept as sent."""

    display: ChartDisplayType | None = "ActionsLineGraph"
    formula: str | None = None
    formulas: list[str] | None = None
    formulaNodes: list[FormulaNode] | None = None
    smoothingIntervals: int | None = Field(default=1, ge=1, le=365)


class TrendsQuery(InsightBase):
    """Counts of events over time, one line per series (and breakdown value).

    >>> from hoglab.schema import EventsNode
    >>> TrendsQuery(series=[EventsNode(event="$pageview", math="dau")], interval="week").interval
    'week'
    """

    kind: Literal["TrendsQuery"] = "TrendsQuery"
    series: list[SeriesNode] = Field(min_length=1, max_length=50)
    interval: IntervalType | None = "day"
    breakdownFilter: BreakdownFilter | None = None
    compareFilter: CompareFilter | None = None
    trendsFilter: TrendsFilter | None = None
    conversionGoal: dict[str, Any] | None = None


FUNNEL_WINDOW_UNIT_SECONDS = {
    "second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 31 * 86_400,
}  # fmt: skip


def funnel_window_seconds(interval: int | None = None, unit: str | None = None) -> int:
    """A funnel's conversion window in seconds, PostHog's way: 14 days by default, a month counts 31 days.

    >>> funnel_window_seconds(), funnel_window_seconds(2, "month") // 86_400
    (1209600, 62)
    """
    seconds = FUNNEL_WINDOW_UNIT_SECONDS.get(unit or "day")
    if seconds is None:
        raise ValueError(f"unknown funnel window unit {unit!r}; one of {', '.join(FUNNEL_WINDOW_UNIT_SECONDS)}")
    return int(interval if interval is not None else 14) * seconds


class FunnelsFilter(SettingsModel):
    """Funnel settings, with PostHog's defaults (14-day window, ordered steps, step counts)."""

    funnelWindowInterval: int | None = Field(default=14, ge=1, le=10_000)
    funnelWindowIntervalUnit: Literal["second", "minute", "hour", "day", "week", "month"] | None = "day"
    funnelOrderType: Literal["strict", "unordered", "ordered"] | None = "ordered"
    funnelVizType: Literal["steps", "time_to_convert", "trends"] | None = "steps"
    funnelStepReference: Literal["total", "previous"] | None = "total"
    breakdownAttributionType: Literal["first_touch", "last_touch", "all_events", "step"] | None = "first_touch"
    breakdownAttributionValue: int | None = Field(default=None, ge=0)
    exclusions: list[AnyFunnelExclusion] | None = None
    funnelFromStep: int | None = Field(default=None, ge=0)
    funnelToStep: int | None = Field(default=None, ge=1)
    binCount: int | None = Field(default=None, ge=1, le=90)
    funnelAggregateByHogQL: str | None = None


class FunnelsQuery(InsightBase):
    """How many people go through 1 to 20 steps, in order, within a window.

    >>> from hoglab.schema import EventsNode
    >>> FunnelsQuery(series=[EventsNode(event="$pageview"), EventsNode(event="signup")]).kind
    'FunnelsQuery'
    """

    kind: Literal["FunnelsQuery"] = "FunnelsQuery"
    series: list[SeriesNode] = Field(min_length=1, max_length=20)
    interval: Literal["hour", "day", "week", "month"] | None = "day"
    breakdownFilter: BreakdownFilter | None = None
    funnelsFilter: FunnelsFilter | None = None

    @model_validator(mode="after")
    def _steps_refer_to_series(self) -> FunnelsQuery:
        steps = len(self.series)
        ff = self.funnelsFilter
        for exclusion in (ff.exclusions or []) if ff else []:
            if exclusion.funnelToStep >= steps:
                raise ValueError(f"An exclusion's funnelToStep must be below the number of steps ({steps}).")
        return self


class EventsQuery(QueryBase):
    """Raw events as a table of HogQL expressions (``*``, ``person``, ``properties.$browser``, ...);
    ``actionId`` keeps the events of one stored action."""

    kind: Literal["EventsQuery"] = "EventsQuery"
    select: list[str] = Field(min_length=1, max_length=100)
    where: list[str] | None = None
    properties: list[AnyPropertyFilter] | None = None
    fixedProperties: list[AnyPropertyFilter] | None = None
    event: str | None = None
    actionId: int | None = Field(default=None, ge=-_MAX_OFFSET, le=_MAX_OFFSET)
    personId: str | None = None
    after: str | None = None
    before: str | None = None
    orderBy: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    offset: int | None = Field(default=None, ge=0, le=_MAX_OFFSET)
    filterTestAccounts: bool | None = None


class InsightActorsQuery(RequestModel):
    """The persons behind one data point of an insight.

    Trends: ``series``, ``day``, ``breakdown``, ``compare``. Retention: ``interval`` (the cohort), ``day`` (the
    returning period, ``3`` or ``"Day 3"``) and ``breakdown``. Lifecycle: ``status`` and ``day``. Stickiness:
    ``day`` is the number of active intervals. Paths: the source's ``pathsFilter.pathStartKey``/``pathEndKey``/
    ``pathDropoffKey``.
    """

    kind: Literal["InsightActorsQuery"] = "InsightActorsQuery"
    source: Annotated[
        TrendsQuery | FunnelsQuery | RetentionQuery | LifecycleQuery | StickinessQuery | PathsQuery,
        Field(discriminator="kind"),
    ]
    day: str | int | None = None
    series: int | None = Field(default=None, ge=0)
    breakdown: str | int | list[str | int] | None = None
    compare: Literal["current", "previous"] | None = None
    interval: int | None = None
    status: str | None = None
    includeRecordings: bool | None = None
    modifiers: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


class FunnelsActorsQuery(RequestModel):
    """The persons at a funnel step: positive ``funnelStep`` converted to it, negative dropped off before it."""

    kind: Literal["FunnelsActorsQuery"] = "FunnelsActorsQuery"
    source: FunnelsQuery
    funnelStep: int | None = None
    funnelStepBreakdown: str | int | float | list[str | int | float] | None = None
    funnelTrendsDropOff: bool | None = None
    funnelTrendsEntrancePeriodStart: str | None = None
    includeRecordings: bool | None = None
    modifiers: dict[str, Any] | None = None
    response: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _step_not_zero(self) -> FunnelsActorsQuery:
        if self.funnelStep == 0:
            raise ValueError("funnelStep is 1-based: positive for converted, negative for dropped off.")
        return self


FunnelCorrelationType = Literal["events", "properties", "event_with_properties"]
"""What a funnel correlation correlates with converting: events, the actors' properties, or some events'
properties (PostHog's ``FunnelCorrelationResultsType``)."""
_NAMES = Annotated[list[Annotated[str, Field(min_length=1, max_length=400)]], Field(max_length=100)]


class FunnelCorrelationQuery(QueryBase):
    """Which events (or properties) go with converting through a funnel, and which with dropping off.

    ``source`` is the funnel's actors (``FunnelsActorsQuery``, its ``funnelStep`` left at the persons who
    entered); ``funnelCorrelationType`` says what is correlated: ``events`` (every other event the actors did
    between entering and converting or leaving, less ``funnelCorrelationExcludeEventNames``), ``properties``
    (``funnelCorrelationNames`` of the person or group, ``["$all"]`` for every one, less
    ``funnelCorrelationExcludeNames``) or ``event_with_properties`` (the properties of the events
    ``funnelCorrelationEventNames``, less ``funnelCorrelationEventExcludePropertyNames``).
    """

    kind: Literal["FunnelCorrelationQuery"] = "FunnelCorrelationQuery"
    source: FunnelsActorsQuery
    funnelCorrelationType: FunnelCorrelationType = "events"
    funnelCorrelationNames: _NAMES | None = None
    funnelCorrelationExcludeNames: _NAMES | None = None
    funnelCorrelationEventNames: _NAMES | None = None
    funnelCorrelationExcludeEventNames: _NAMES | None = None
    funnelCorrelationEventExcludePropertyNames: _NAMES | None = None


class ActorsQuery(QueryBase):
    """Persons as a table: the default columns are ``person, id, created_at``."""

    kind: Literal["ActorsQuery"] = "ActorsQuery"
    select: list[str] | None = Field(default=None, max_length=100)
    search: str | None = Field(default=None, max_length=400)
    properties: list[AnyPropertyFilter] | None = None
    fixedProperties: list[AnyPropertyFilter] | None = None
    orderBy: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    offset: int | None = Field(default=None, ge=0, le=_MAX_OFFSET)
    source: Annotated[InsightActorsQuery | FunnelsActorsQuery | HogQLQuery, Field(discriminator="kind")] | None = None


AnyQueryType = (
    HogQLQuery
    | TrendsQuery
    | FunnelsQuery
    | EventsQuery
    | ActorsQuery
    | RetentionQuery
    | LifecycleQuery
    | StickinessQuery
    | PathsQuery
    | ExperimentQuery
    | ExperimentExposureQuery
    | GroupsQuery
    | FunnelCorrelationQuery
)
AnyQuery = Annotated[AnyQueryType, Field(discriminator="kind")]
"""Any query the endpoint runs, told apart by ``kind``."""

QUERY_KINDS: tuple[str, ...] = (
    "HogQLQuery",
    "TrendsQuery",
    "FunnelsQuery",
    "EventsQuery",
    "ActorsQuery",
    "ExperimentQuery",
    "ExperimentExposureQuery",
    "RetentionQuery",
    "LifecycleQuery",
    "StickinessQuery",
    "PathsQuery",
    "GroupsQuery",
    "FunnelCorrelationQuery",
)

_any_query: TypeAdapter[Any] = TypeAdapter(AnyQuery)


def parse_query(data: dict[str, Any]) -> AnyQueryType:
    """Validate a query dict into its model (raises ``pydantic.ValidationError``)."""
    result: AnyQueryType = _any_query.validate_python(data)
    return result


class QueryRequest(RequestModel):
    """The body of ``POST /api/projects/:project_id/query``.

    ``async`` is a Python keyword, so the field is ``async_`` with the alias ``async``.
    """

    query: AnyQuery
    async_: bool | None = Field(default=None, alias="async")
    client_query_id: str | None = Field(default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    refresh: RefreshType | None = None
    name: str | None = Field(default=None, max_length=128)
    filters_override: dict[str, Any] | None = None
    variables_override: dict[str, Any] | None = None
