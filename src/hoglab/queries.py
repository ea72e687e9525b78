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
>>> trends("$pageview", interval="fortnight")
Traceback (most recent call last):
hoglab.errors.InvalidArgument: interval: 'fortnight' is not one of 'minute', 'hour', 'day', 'week', 'month'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any, Literal

from ._queries._args import check_choice, date_arg, model_errors, property_filters, window_arg
from ._queries._metrics import funnel_metric, mean_metric, ratio_metric
from .errors import InvalidArgument, InvalidArgumentType
from .schema import (
    PROPERTY_MATH,
    ActorsQuery,
    BreakdownFilter,
    BreakdownItem,
    ChartDisplayType,
    CompareFilter,
    DateRange,
    EventsNode,
    EventsQuery,
    FormulaNode,
    FunnelExclusion,
    FunnelsActorsQuery,
    FunnelsFilter,
    FunnelsQuery,
    InsightActorsQuery,
    IntervalType,
    MathType,
    TrendsFilter,
    TrendsQuery,
)

__all__ = ["actors", "events", "funnel", "funnel_metric", "mean_metric", "ratio_metric", "series", "trends"]

Where = dict[str, Any] | str | Sequence[Any] | None
"""``where=``: ``{"$browser": "Chrome", "price__gt": 10, "person.plan": "pro"}``, a HogQL string, or a list."""

DEFAULT_EVENT_COLUMNS = ("event", "timestamp", "distinct_id", "properties")


def series(
    event: str | None,
    *,
    math: str | None = None,
    math_property: str | None = None,
    math_hogql: str | None = None,
    where: Where = None,
    person_where: Where = None,
    name: str | None = None,
) -> EventsNode:
    """One series of a trend or one funnel step: an event (``None``: all events), its filters and math.

    >>> series("purchase", math="sum", math_property="price", where={"plan": "pro"}).properties[0].key
    'plan'
    """
    if event is not None and not isinstance(event, str):
        raise InvalidArgumentType(f"event: expected a string or None, got {type(event).__name__}.", argument="event")
    if math is not None:
        check_choice("math", math, MathType)
        if math in PROPERTY_MATH and not math_property:
            raise InvalidArgument(
                f"math_property: math={math!r} needs the property to aggregate.", argument="math_property"
            )
    filters = property_filters("where", where) + property_filters("person_where", person_where, scope="person")
    with model_errors("series"):
        return EventsNode(
            event=event,
            name=name or event,
            custom_name=name,
            math=math,
            math_property=math_property,
            math_hogql=math_hogql,
            properties=filters or None,
        )


def _series_list(argument: str, events: Any, math: str | None, math_property: str | None) -> list[EventsNode]:
    items = [events] if events is None or isinstance(events, str | EventsNode) else events
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise InvalidArgumentType(
            f"{argument}: expected an event name, a hoglab.series(...) or a list of them, got {type(events).__name__}.",
            argument=argument,
        )
    nodes: list[EventsNode] = []
    for item in items:
        if isinstance(item, EventsNode):
            nodes.append(item)
        elif item is None or isinstance(item, str):
            nodes.append(series(item, math=math, math_property=math_property))
        else:
            raise InvalidArgumentType(
                f"{argument}: items must be event names or hoglab.series(...), got {type(item).__name__}.",
                argument=argument,
            )
    if not nodes:
        raise InvalidArgument(f"{argument}: at least one event is needed.", argument=argument)
    return nodes


def _date_range(date_from: str | date | None, date_to: str | date | None) -> DateRange | None:
    start, end = date_arg("date_from", date_from), date_arg("date_to", date_to)
    return DateRange(date_from=start, date_to=end) if start or end else None


def _breakdown(breakdown: Any, breakdown_type: str | None, limit: int | None) -> BreakdownFilter | None:
    if breakdown is None:
        if breakdown_type is not None or limit is not None:
            raise InvalidArgument("breakdown: breakdown_type/breakdown_limit need a breakdown.", argument="breakdown")
        return None
    if breakdown_type is not None:
        check_choice("breakdown_type", breakdown_type, "event person cohort hogql event_metadata session")

    def split(prop: Any) -> tuple[Any, str]:
        if isinstance(prop, str) and prop.startswith("person.") and breakdown_type is None:
            return prop[len("person.") :], "person"
        if isinstance(prop, int) and not isinstance(prop, bool):
            return prop, breakdown_type or "cohort"
        if not isinstance(prop, str) or not prop:
            raise InvalidArgumentType(f"breakdown: expected a property name, got {prop!r}.", argument="breakdown")
        return prop, breakdown_type or "event"

    with model_errors("breakdown"):
        if isinstance(breakdown, list | tuple):
            if not 1 <= len(breakdown) <= 3:
                raise InvalidArgument("breakdown: between one and three properties.", argument="breakdown")
            items = [BreakdownItem(property=p, type=t) for p, t in map(split, breakdown)]
            return BreakdownFilter(breakdowns=items, breakdown_type=None, breakdown_limit=limit)
        prop, kind = split(breakdown)
        return BreakdownFilter(breakdown=prop, breakdown_type=kind, breakdown_limit=limit)


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
    nodes = _series_list("events", events, math, math_property)
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
            dateRange=_date_range(date_from, date_to),
            breakdownFilter=_breakdown(breakdown, breakdown_type, breakdown_limit),
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
    nodes = _series_list("steps", list(steps), None, None)
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
            dateRange=_date_range(date_from, date_to),
            breakdownFilter=_breakdown(breakdown, breakdown_type, None),
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
    source: TrendsQuery | FunnelsQuery | None = None,
    day: str | date | None = None,
    series: int | None = None,
    breakdown: Any = None,
    step: int | None = None,
) -> ActorsQuery:
    """An ActorsQuery: persons as a table (default ``person, id, created_at``); ``where`` filters person
    properties. With ``source``, the persons behind a trend's data point (``day``, ``series``, ``breakdown``) or
    a funnel step (``step``: 1-based, positive converted, negative dropped off).

    >>> actors(source=funnel(["a", "b"]), step=-2).source.funnelStep
    -2
    """
    if isinstance(select, str):
        select = [select]
    _limit(limit, offset)
    inner: InsightActorsQuery | FunnelsActorsQuery | None = None
    with model_errors("source"):
        if isinstance(source, FunnelsQuery) and step is not None:
            inner = FunnelsActorsQuery(source=source, funnelStep=step, funnelStepBreakdown=breakdown)
        elif isinstance(source, TrendsQuery | FunnelsQuery):
            day_text = day.isoformat() if isinstance(day, date) else day
            inner = InsightActorsQuery(source=source, day=day_text, series=series, breakdown=breakdown)
        elif source is not None:
            raise InvalidArgumentType(
                "source: expected a TrendsQuery or FunnelsQuery (from hoglab.trends/funnel).", argument="source"
            )
        elif step is not None or day is not None:
            raise InvalidArgument("source: day/series/step need a source query.", argument="source")
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
