"""Query builders: short Python calls that return the :mod:`hoglab.schema` models PostHog's ``/query`` takes.

Every argument is checked here, so a mistake is an :class:`~hoglab.errors.InvalidArgument` (a ``ValueError``)
naming the argument, before any request. The models go to :meth:`hoglab.Client.query`, or serialise with
``.to_json_dict()`` for any other PostHog client.

>>> q = trends("$pageview", math="dau", interval="week", date_from="-30d", breakdown="$browser",
...            where={"$browser": "Chrome"})
>>> q.series[0].math, q.interval, q.breakdownFilter.breakdown, q.properties[0].value
('dau', 'week', '$browser', 'Chrome')
>>> funnel(["$pageview", "signup", "purchase"], window="14d", order="strict").funnelsFilter.funnelOrderType
'strict'
>>> mean_metric("purchase", math="sum", math_property="price", upper_bound_percentile=0.99).metric_type
'mean'
>>> retention("signup", returning="$pageview", period="week").retentionFilter.period
'Week'
>>> [q.kind for q in (lifecycle("$pageview"), stickiness("$pageview"), paths(start="/home"))]
['LifecycleQuery', 'StickinessQuery', 'PathsQuery']
>>> trends("$pageview", interval="fortnight")
Traceback (most recent call last):
hoglab.errors.InvalidArgument: interval: 'fortnight' is not one of 'minute', 'hour', 'day', 'week', 'month'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any, Literal

from ._queries._args import check_choice, date_arg, model_errors, property_filters, window_arg
from ._queries._insights_more import lifecycle, paths, retention, stickiness
from ._queries._metrics import funnel_metric, mean_metric, ratio_metric
from ._queries._series import Where, breakdown_filter, date_range, series, series_list
from .errors import InvalidArgument, InvalidArgumentType
from .schema import (
    ActorsQuery,
    ChartDisplayType,
    CompareFilter,
    EventsNode,
    EventsQuery,
    FormulaNode,
    FunnelExclusion,
    FunnelsActorsQuery,
    FunnelsFilter,
    FunnelsQuery,
    InsightActorsQuery,
    IntervalType,
    LifecycleQuery,
    PathsQuery,
    RetentionQuery,
    StickinessQuery,
    TrendsFilter,
    TrendsQuery,
)

__all__ = [
    "actors",
    "events",
    "funnel",
    "funnel_metric",
    "lifecycle",
    "mean_metric",
    "paths",
    "ratio_metric",
    "retention",
    "series",
    "stickiness",
    "trends",
]

DEFAULT_EVENT_COLUMNS = ("event", "timestamp", "distinct_id", "properties")
InsightQuery = TrendsQuery | FunnelsQuery | RetentionQuery | LifecycleQuery | StickinessQuery | PathsQuery
_INSIGHT_KINDS = (TrendsQuery, FunnelsQuery, RetentionQuery, LifecycleQuery, StickinessQuery, PathsQuery)


def trends(
    events: str | EventsNode | Sequence[str | EventsNode | None] | None,
    *,
    math: str | None = None,
    math_property: str | None = None,
    interval: str = "day",
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_limit: int | None = None,
    where: Where = None,
    person_where: Where = None,
    formula: str | Sequence[str] | None = None,
    compare: bool = False,
    compare_to: str | None = None,
    display: str | None = None,
    filter_test_accounts: bool = False,
) -> TrendsQuery:
    """A TrendsQuery: events counted per interval, one line per series (and breakdown value).

    ``events`` is an event name (``None``: all events), a :func:`series`, or a list of them; ``math`` and
    ``math_property`` apply to the ones given by name. ``breakdown`` is a property (``"person.plan"`` for a person
    property, an int for a cohort) or a list of up to three. ``formula`` combines series by letter (``"A/B"``).

    >>> q = trends(["signup", series("purchase", math="sum", math_property="price")], formula="B/A", compare=True)
    >>> [s.event for s in q.series], q.trendsFilter.formulaNodes[0].formula, q.compareFilter.compare
    (['signup', 'purchase'], 'B/A', True)
    """
    nodes = series_list("events", events, math, math_property)
    check_choice("interval", interval, IntervalType)
    if display is not None:
        check_choice("display", display, ChartDisplayType)
    formulas = [formula] if isinstance(formula, str) else list(formula or [])
    if compare_to is not None and not compare:
        compare = True  # asking for a comparison period is asking to compare
    trends_filter = None
    if display or formulas:
        with model_errors("formula"):
            trends_filter = TrendsFilter(
                display=display or "ActionsLineGraph",
                formulaNodes=[FormulaNode(formula=f) for f in formulas] or None,
            )
    filters = property_filters("where", where) + property_filters("person_where", person_where, scope="person")
    with model_errors("trends"):
        return TrendsQuery(
            series=nodes,
            interval=interval,
            dateRange=date_range(date_from, date_to),
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, breakdown_limit),
            compareFilter=CompareFilter(compare=True, compare_to=date_arg("compare_to", compare_to))
            if compare
            else None,
            trendsFilter=trends_filter,
            properties=filters or None,
            filterTestAccounts=filter_test_accounts,
        )


def funnel(
    steps: Sequence[str | EventsNode],
    *,
    window: int | str | timedelta | None = None,
    order: Literal["ordered", "strict", "unordered"] = "ordered",
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_attribution: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    exclude: Sequence[str | tuple[str, int, int]] | None = None,
    viz: Literal["steps", "time_to_convert", "trends"] = "steps",
    step_reference: Literal["total", "previous"] | None = None,
    filter_test_accounts: bool = False,
) -> FunnelsQuery:
    """A FunnelsQuery over 2 to 20 steps (event names or :func:`series`).

    ``window`` is how long a person has from the first step (days as an int, ``"14d"``, ``"6h"``, a
    ``timedelta``; PostHog's default is 14 days). ``exclude`` lists events that disqualify an attempt: a name
    (anywhere in the funnel) or ``(event, from_step, to_step)`` with 0-based steps.

    >>> q = funnel(["$pageview", "signup"], window="6h", exclude=["logout"], breakdown="person.plan")
    >>> settings = q.funnelsFilter
    >>> settings.funnelWindowIntervalUnit, settings.exclusions[0].funnelToStep, q.breakdownFilter.breakdown_type
    ('hour', 1, 'person')
    """
    if isinstance(steps, str | EventsNode) or not isinstance(steps, Sequence):
        raise InvalidArgumentType(
            "steps: expected a list of 2 to 20 event names or hoglab.series(...).", argument="steps"
        )
    nodes = series_list("steps", list(steps), None, None)
    if not 2 <= len(nodes) <= 20:
        raise InvalidArgument(f"steps: a funnel has 2 to 20 steps, got {len(nodes)}.", argument="steps")
    check_choice("order", order, "ordered strict unordered")
    check_choice("viz", viz, "steps time_to_convert trends")
    if step_reference is not None:
        check_choice("step_reference", step_reference, "total previous")
    if breakdown_attribution is not None:
        check_choice("breakdown_attribution", breakdown_attribution, "first_touch last_touch all_events step")
    size, unit = window_arg(window) if window is not None else (None, None)
    exclusions = []
    for item in exclude or []:
        event, start, end = (item, 0, len(nodes) - 1) if isinstance(item, str) else item
        if not 0 <= start < end < len(nodes):
            raise InvalidArgument(
                f"exclude: steps ({start}, {end}) must satisfy 0 <= from < to < {len(nodes)} (0-based steps).",
                argument="exclude",
            )
        with model_errors("exclude"):
            exclusions.append(FunnelExclusion(event=event, funnelFromStep=start, funnelToStep=end))
    filters = property_filters("where", where) + property_filters("person_where", person_where, scope="person")
    with model_errors("funnel"):
        settings = FunnelsFilter(funnelOrderType=order, funnelVizType=viz, exclusions=exclusions or None)
        if size is not None:
            settings.funnelWindowInterval, settings.funnelWindowIntervalUnit = size, unit  # type: ignore[assignment]
        if step_reference is not None:
            settings.funnelStepReference = step_reference
        if breakdown_attribution is not None:
            settings.breakdownAttributionType = breakdown_attribution  # type: ignore[assignment]
        return FunnelsQuery(
            series=nodes,
            dateRange=date_range(date_from, date_to),
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, None),
            funnelsFilter=settings,
            properties=filters or None,
            filterTestAccounts=filter_test_accounts,
        )


def _split_where(where: Where) -> tuple[list[str], list[Any]]:
    # For tables, strings are HogQL conditions (EventsQuery ``where``); everything else is a property filter.
    if where is None:
        return [], []
    items = [where] if isinstance(where, str | dict) else list(where)
    return [w for w in items if isinstance(w, str)], [w for w in items if not isinstance(w, str)]


def _limit(limit: int | None, offset: int | None) -> None:
    for name, value, low in (("limit", limit, 1), ("offset", offset, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise InvalidArgument(f"{name}: expected an integer >= {low}, got {value!r}.", argument=name)


def events(
    select: Sequence[str] | None = None,
    *,
    event: str | None = None,
    where: Where = None,
    person_where: Where = None,
    after: str | date | None = None,
    before: str | date | None = None,
    order_by: str | Sequence[str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
    person_id: str | None = None,
    filter_test_accounts: bool | None = None,
) -> EventsQuery:
    """An EventsQuery: raw events as a table of HogQL expressions (default ``event, timestamp, distinct_id,
    properties``). ``where`` strings are HogQL conditions; dicts are property filters. PostHog's default window
    is the last 24 hours (``after="-24h"``; ``after="all"`` lifts it).

    >>> q = events(["event", "properties.$browser"], event="$pageview", where=["timestamp > now() - interval 1 day",
    ...            {"$browser": "Chrome"}], order_by="timestamp DESC", limit=500)
    >>> q.where, q.properties[0].key, q.orderBy
    (['timestamp > now() - interval 1 day'], '$browser', ['timestamp DESC'])
    """
    if isinstance(select, str):
        select = [select]
    _limit(limit, offset)
    conditions, props = _split_where(where)
    filters = property_filters("where", props) + property_filters("person_where", person_where, scope="person")
    with model_errors("events"):
        return EventsQuery(
            select=list(select or DEFAULT_EVENT_COLUMNS),
            event=event,
            where=conditions or None,
            properties=filters or None,
            after=date_arg("after", after),
            before=date_arg("before", before),
            orderBy=[order_by] if isinstance(order_by, str) else (list(order_by) if order_by else None),
            limit=limit,
            offset=offset,
            personId=person_id,
            filterTestAccounts=filter_test_accounts,
        )


def actors(
    select: Sequence[str] | None = None,
    *,
    search: str | None = None,
    where: Where = None,
    order_by: str | Sequence[str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
    source: InsightQuery | None = None,
    day: str | int | date | None = None,
    series: int | None = None,
    breakdown: Any = None,
    step: int | None = None,
    status: str | None = None,
    cohort: int | None = None,
    period: int | None = None,
    interval: int | None = None,
    edge: tuple[str | None, str | None] | None = None,
    dropoff: str | None = None,
) -> ActorsQuery:
    """An ActorsQuery: persons as a table (default ``person, id, created_at``); ``where`` filters person
    properties. With ``source``, the persons behind one number of an insight:

    * a trend's data point: ``day``, ``series``, ``breakdown``;
    * a funnel step: ``step`` (1-based, positive converted, negative dropped off);
    * a retention cell: ``cohort`` (0-based, as the frame's ``cohort``), ``period`` and ``breakdown`` (PostHog's
      ``interval`` and ``day``, which ``interval=``/``day=`` also set as they are);
    * a lifecycle bar: ``status`` and ``day`` (the interval's start date);
    * a stickiness bar: ``day``, the number of active intervals (and ``series``);
    * a paths edge: ``edge=("1_/home", "2_/pricing")`` (PostHog's step-prefixed node names; either may be
      ``None``: everyone leaving, or reaching, a node), or ``dropoff="3_/pricing"``: the people whose path ended
      there.

    >>> actors(source=funnel(["a", "b"]), step=-2).source.funnelStep
    -2
    >>> actors(source=lifecycle("$pageview"), status="dormant", day="2025-06-03").source.status
    'dormant'
    >>> actors(source=paths(), edge=("1_/home", "2_/pricing")).source.source.pathsFilter.pathEndKey
    '2_/pricing'
    >>> cell = actors(source=retention("signup"), cohort=2, period=1).source
    >>> cell.interval, cell.day
    (2, 1)
    """
    if isinstance(select, str):
        select = [select]
    _limit(limit, offset)
    if status is not None:
        check_choice("status", status, "new returning resurrecting dormant")
    inner: InsightActorsQuery | FunnelsActorsQuery | None = None
    with model_errors("source"):
        if isinstance(source, FunnelsQuery) and step is not None:
            inner = FunnelsActorsQuery(source=source, funnelStep=step, funnelStepBreakdown=breakdown)
        elif isinstance(source, _INSIGHT_KINDS):
            if edge is not None or dropoff is not None:
                if not isinstance(source, PathsQuery):
                    name = "edge" if edge is not None else "dropoff"
                    raise InvalidArgument(f"{name}: only a paths source has edges.", argument=name)
                start, end = edge or (None, None)
                keys = source.pathsFilter.model_copy(
                    update={"pathStartKey": start, "pathEndKey": end, "pathDropoffKey": dropoff}
                )
                source = source.model_copy(update={"pathsFilter": keys})
            if cohort is not None or period is not None:
                if not isinstance(source, RetentionQuery):
                    name = "cohort" if cohort is not None else "period"
                    raise InvalidArgument(f"{name}: only a retention source has cohorts.", argument=name)
                interval = cohort if cohort is not None else interval
                day = period if period is not None else day
            day_value = day.isoformat() if isinstance(day, date) else day
            inner = InsightActorsQuery(
                source=source, day=day_value, series=series, breakdown=breakdown, status=status, interval=interval
            )
        elif source is not None:
            raise InvalidArgumentType(
                "source: expected an insight query (hoglab.trends/funnel/retention/lifecycle/stickiness/paths).",
                argument="source",
            )
        elif any(v is not None for v in (step, day, status, cohort, period, interval, edge, dropoff)):
            raise InvalidArgument(
                "source: a cell (day, step, status, cohort, edge...) needs a source.", argument="source"
            )
    filters = property_filters("where", where, scope="person")
    with model_errors("actors"):
        return ActorsQuery(
            select=list(select) if select else None,
            search=search,
            properties=filters or None,
            orderBy=[order_by] if isinstance(order_by, str) else (list(order_by) if order_by else None),
            limit=limit,
            offset=offset,
            source=inner,
        )
