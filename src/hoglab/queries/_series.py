"""What every insight builder shares: a series (an event, its filters and math), lists of them, a date range,
a breakdown, a comparison period, the intervals. Each raises :class:`~hoglab.errors.InvalidArgument` naming the
builder's argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import PROPERTY_MATH, BreakdownFilter, BreakdownItem, CompareFilter, DateRange, EventsNode, MathType
from ._args import check_choice, date_arg, model_errors, where_filters

__all__ = ["INTERVALS", "Where", "breakdown_filter", "compare_filter", "date_range", "series", "series_list"]

Where = dict[str, Any] | str | Sequence[Any] | None
"""``where=``: ``{"$browser": "Chrome", "price__gt": 10, "person.plan": "pro"}``, a HogQL string, or a list."""

INTERVALS = "hour day week month"
"""The intervals of retention, lifecycle and stickiness (trends also takes ``minute``)."""


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
    filters = where_filters(where, person_where)
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


def series_list(argument: str, events: Any, math: str | None, math_property: str | None) -> list[EventsNode]:
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


def date_range(date_from: str | date | None, date_to: str | date | None) -> DateRange | None:
    start, end = date_arg("date_from", date_from), date_arg("date_to", date_to)
    return DateRange(date_from=start, date_to=end) if start or end else None


def compare_filter(compare: bool, compare_to: str | None) -> CompareFilter | None:
    """The comparison period of a trend or stickiness: the previous period, or ``compare_to`` (``"-4w"``), which
    alone is asking to compare.

    >>> compare_filter(False, "-4w").compare_to, compare_filter(False, None)
    ('-4w', None)
    """
    if not compare and compare_to is None:
        return None
    return CompareFilter(compare=True, compare_to=date_arg("compare_to", compare_to))


def breakdown_filter(breakdown: Any, breakdown_type: str | None, limit: int | None) -> BreakdownFilter | None:
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
