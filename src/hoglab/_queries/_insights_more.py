"""Builders of the retention, lifecycle, stickiness and paths insights (re-exported by :mod:`hoglab.queries`).

>>> q = retention("signup", returning="$pageview", period="week", intervals=6)
>>> q.retentionFilter.period, q.retentionFilter.totalIntervals, q.retentionFilter.returningEntity.id
('Week', 6, '$pageview')
>>> lifecycle("$pageview", interval="week", statuses=["new", "dormant"]).lifecycleFilter.toggledLifecycles
['new', 'dormant']
>>> stickiness(["$pageview", "signup"], cumulative=True).stickinessFilter.computedAs
'cumulative'
>>> paths(start="/home", steps=4).pathsFilter.startPoint
'/home'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    CompareFilter,
    EventsNode,
    LifecycleFilter,
    LifecycleQuery,
    LifecycleToggle,
    PathCleaningFilter,
    PathsFilter,
    PathsQuery,
    PathType,
    RetentionEntity,
    RetentionFilter,
    RetentionQuery,
    StickinessCriteria,
    StickinessFilter,
    StickinessQuery,
)
from ._args import check_choice, date_arg, model_errors, property_filters
from ._series import Where, breakdown_filter, date_range, series_list

__all__ = ["lifecycle", "paths", "retention", "stickiness"]

_RETENTION_TYPES = {
    "first_time": "retention_first_time",
    "recurring": "retention_recurring",
    "first_ever": "retention_first_ever_occurrence",
}
_INTERVALS = "hour day week month"
_STICKINESS_OPERATORS = {">=": "gte", "<=": "lte", "==": "exact", "=": "exact", "gte": "gte", "lte": "lte",
                         "exact": "exact"}  # fmt: skip


def _filters(where: Where, person_where: Where) -> list[Any] | None:
    found = property_filters("where", where) + property_filters("person_where", person_where, scope="person")
    return found or None


def _positive(argument: str, value: Any, *, low: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidArgument(f"{argument}: expected an integer >= {low}, got {value!r}.", argument=argument)
    return value


def _entity(argument: str, value: Any) -> RetentionEntity:
    # An event name, None (any event), a hoglab.series(...) (its filters come along) or a RetentionEntity.
    if isinstance(value, RetentionEntity):
        return value
    with model_errors(argument):
        if value is None or isinstance(value, str):
            return RetentionEntity(id=value, name=value or "All events", type="events", kind="EventsNode")
        if isinstance(value, EventsNode):
            return RetentionEntity(
                id=value.event,
                name=value.name or value.event or "All events",
                custom_name=value.custom_name,
                type="events",
                kind="EventsNode",
                properties=value.properties,
            )
    raise InvalidArgumentType(
        f"{argument}: expected an event name, None (any event) or hoglab.series(...), got {type(value).__name__}.",
        argument=argument,
    )


def retention(
    target: str | EventsNode | RetentionEntity | None = "$pageview",
    *,
    returning: str | EventsNode | RetentionEntity | None = None,
    period: str = "day",
    intervals: int = 8,
    retention_type: str = "first_time",
    reference: str = "total",
    cumulative: bool = False,
    minimum_occurrences: int | None = None,
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_limit: int | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
) -> RetentionQuery:
    """A RetentionQuery: of the people who did ``target`` in a period, how many did ``returning`` in each of the
    following ``intervals - 1`` periods.

    ``target`` and ``returning`` are event names, ``None`` (any event) or :func:`hoglab.series` (with filters);
    ``returning`` defaults to ``target``. ``period``: ``hour``, ``day``, ``week`` or ``month``.
    ``retention_type``: ``first_time`` (a person's cohort is the period of their first ``target``),
    ``recurring`` (every period with a ``target`` starts a cohort for that person) or ``first_ever``.
    ``reference``: ``total`` (rates against the cohort) or ``previous`` (against the period before).
    ``cumulative``: a person counts in a period if they came back in it or any later one.
    ``minimum_occurrences``: how many ``returning`` events make a period count.

    >>> q = retention("signup", period="Week", reference="previous", breakdown="person.plan")
    >>> q.retentionFilter.returningEntity.id, q.retentionFilter.retentionReference, q.breakdownFilter.breakdown
    ('signup', 'previous', 'plan')
    >>> retention(period="fortnight")
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: period: 'fortnight' is not one of 'hour', 'day', 'week', 'month'.
    """
    unit = period.lower() if isinstance(period, str) else period
    check_choice("period", unit, _INTERVALS)
    check_choice("retention_type", retention_type, " ".join(_RETENTION_TYPES))
    check_choice("reference", reference, "total previous")
    _positive("intervals", intervals)
    _positive("minimum_occurrences", minimum_occurrences)
    start = _entity("target", target)
    back = start if returning is None else _entity("returning", returning)
    with model_errors("retention"):
        settings = RetentionFilter(
            retentionType=_RETENTION_TYPES[retention_type],
            period=unit.title(),
            totalIntervals=intervals,
            targetEntity=start,
            returningEntity=back,
            retentionReference=reference,
            cumulative=cumulative or None,
            minimumOccurrences=minimum_occurrences,
        )
        return RetentionQuery(
            retentionFilter=settings,
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, breakdown_limit),
            dateRange=date_range(date_from, date_to),
            properties=_filters(where, person_where),
            filterTestAccounts=filter_test_accounts,
        )


def lifecycle(
    event: str | EventsNode | None = "$pageview",
    *,
    interval: str = "day",
    statuses: Sequence[str] | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
) -> LifecycleQuery:
    """A LifecycleQuery: per interval, the people doing ``event`` for the first time (new), again after the
    previous interval (returning), again after a gap (resurrecting), and those who stopped (dormant).

    ``event`` is an event name, ``None`` (any event) or one :func:`hoglab.series`. ``statuses`` shows only some
    of ``new``, ``returning``, ``resurrecting``, ``dormant`` (PostHog's ``toggledLifecycles``).

    >>> q = lifecycle(where={"$browser": "Chrome"}, date_from="-30d")
    >>> q.series[0].event, q.interval, q.dateRange.date_from, q.properties[0].value
    ('$pageview', 'day', '-30d', 'Chrome')
    """
    if isinstance(event, Sequence) and not isinstance(event, str):
        raise InvalidArgumentType("event: a lifecycle has one event (a name, None or hoglab.series(...)).",
                                  argument="event")  # fmt: skip
    nodes = series_list("event", event, None, None)
    check_choice("interval", interval, _INTERVALS)
    toggled = None
    if statuses is not None:
        toggled = [check_choice("statuses", s, LifecycleToggle) for s in ([statuses] if isinstance(statuses, str)
                   else statuses)]  # fmt: skip
    with model_errors("lifecycle"):
        return LifecycleQuery(
            series=nodes,
            interval=interval,
            lifecycleFilter=LifecycleFilter(toggledLifecycles=toggled) if toggled else None,
            dateRange=date_range(date_from, date_to),
            properties=_filters(where, person_where),
            filterTestAccounts=filter_test_accounts,
        )


def _criteria(value: Any) -> StickinessCriteria | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = ("gte", value)
    if not isinstance(value, tuple | list) or len(value) != 2 or value[0] not in _STICKINESS_OPERATORS:
        raise InvalidArgument(
            f"active_when: expected (operator, events) with operator '>=', '<=' or '==', got {value!r}.",
            argument="active_when",
        )
    _positive("active_when", value[1], low=0)
    with model_errors("active_when"):
        return StickinessCriteria(operator=_STICKINESS_OPERATORS[value[0]], value=value[1])


def stickiness(
    events: str | EventsNode | Sequence[str | EventsNode | None] | None = "$pageview",
    *,
    interval: str = "day",
    interval_count: int | None = None,
    cumulative: bool = False,
    active_when: int | tuple[str, int] | None = None,
    compare: bool = False,
    compare_to: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
) -> StickinessQuery:
    """A StickinessQuery: for each series, how many people were active in exactly 1, 2, ... intervals of the
    range (in that many or more with ``cumulative``).

    ``events``: a name, ``None`` (any event), a :func:`hoglab.series` or a list of them. ``interval_count``
    groups intervals (``interval="day", interval_count=7``: weeks of seven days). ``active_when`` says what
    makes an interval count: ``3`` or ``(">=", 3)`` events at least, ``("<=", 2)``, ``("==", 1)``.
    ``compare`` adds the previous period (or ``compare_to``, ``"-4w"``) as more lines.

    >>> q = stickiness("$pageview", interval="week", active_when=(">=", 3), compare=True)
    >>> q.stickinessFilter.stickinessCriteria.operator, q.stickinessFilter.stickinessCriteria.value, q.interval
    ('gte', 3, 'week')
    """
    nodes = series_list("events", events, None, None)
    check_choice("interval", interval, _INTERVALS)
    _positive("interval_count", interval_count)
    criteria = _criteria(active_when)
    if compare_to is not None:
        compare = True  # asking for a comparison period is asking to compare
    with model_errors("stickiness"):
        settings = None
        if cumulative or criteria is not None:
            settings = StickinessFilter(computedAs="cumulative" if cumulative else None, stickinessCriteria=criteria)
        return StickinessQuery(
            series=nodes,
            interval=interval,
            intervalCount=interval_count,
            stickinessFilter=settings,
            compareFilter=CompareFilter(compare=True, compare_to=date_arg("compare_to", compare_to))
            if compare
            else None,
            dateRange=date_range(date_from, date_to),
            properties=_filters(where, person_where),
            filterTestAccounts=filter_test_accounts,
        )


def _cleaning(value: Any) -> list[PathCleaningFilter] | None:
    if value is None:
        return None
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    rules = []
    for order, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise InvalidArgumentType(
                f"clean: expected {{regex: alias}} or (regex, alias) pairs, got {pair!r}.", argument="clean"
            )
        with model_errors("clean"):
            rules.append(PathCleaningFilter(regex=pair[0], alias=pair[1], order=order))
    return rules or None


def paths(
    include: str | Sequence[str] | None = "$pageview",
    *,
    start: str | None = None,
    end: str | None = None,
    steps: int = 5,
    edge_limit: int = 50,
    min_weight: int | None = None,
    max_weight: int | None = None,
    exclude: Sequence[str] | None = None,
    clean: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    groupings: Sequence[str] | None = None,
    expression: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
) -> PathsQuery:
    """A PathsQuery: the most common sequences of pages (or screens, or events) within a session, as weighted
    edges between numbered steps.

    ``include``: ``"$pageview"`` (pages by URL, the default), ``"$screen"`` (screens by name),
    ``"custom_event"`` (events not starting with ``$``), ``"hogql"`` (``expression`` names each item), a list of
    them, or ``None`` for every event. ``start``/``end`` anchor the paths at an item; ``steps`` is how many items a
    path keeps; ``edge_limit`` how many edges come back, heaviest first; ``min_weight``/``max_weight`` bound an
    edge's people. ``clean`` rewrites items by regex (``{r"/user/\\d+": "/user/:id"}``) and ``groupings`` merges
    items matching a wildcard (``"/blog/*"``); ``exclude`` drops items.

    >>> q = paths(["$pageview", "custom_event"], end="/checkout", clean={r"/item/\\d+": "/item/:id"}, exclude=["/"])
    >>> q.pathsFilter.endPoint, q.pathsFilter.localPathCleaningFilters[0].alias, q.pathsFilter.includeEventTypes
    ('/checkout', '/item/:id', ['$pageview', 'custom_event'])
    """
    types = None
    if include is not None:
        types = [include] if isinstance(include, str) else list(include)
        for item in types:
            check_choice("include", item, PathType)
    if expression is not None and types is not None and "hogql" not in types:
        types.append("hogql")
    if types is not None and "hogql" in types and not expression:
        raise InvalidArgument("expression: include 'hogql' needs a HogQL expression naming each item.",
                              argument="expression")  # fmt: skip
    _positive("steps", steps, low=2)
    _positive("edge_limit", edge_limit)
    _positive("min_weight", min_weight, low=0)
    _positive("max_weight", max_weight, low=0)
    if min_weight is not None and max_weight is not None and min_weight > max_weight:
        raise InvalidArgument(f"min_weight: {min_weight} is above max_weight {max_weight}.", argument="min_weight")
    for argument, values in (("exclude", exclude), ("groupings", groupings)):
        if values is not None and (isinstance(values, str) or not all(isinstance(v, str) for v in values)):
            raise InvalidArgumentType(f"{argument}: expected a list of strings.", argument=argument)
    with model_errors("paths"):
        settings = PathsFilter(
            includeEventTypes=types,
            startPoint=start,
            endPoint=end,
            stepLimit=steps,
            edgeLimit=edge_limit,
            minEdgeWeight=min_weight,
            maxEdgeWeight=max_weight,
            excludeEvents=list(exclude) if exclude is not None else None,
            pathGroupings=list(groupings) if groupings is not None else None,
            localPathCleaningFilters=_cleaning(clean),
            pathsHogQLExpression=expression,
        )
        return PathsQuery(
            pathsFilter=settings,
            dateRange=date_range(date_from, date_to),
            properties=_filters(where, person_where),
            filterTestAccounts=filter_test_accounts,
        )
