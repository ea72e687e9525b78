"""What every insight builder shares: series, date ranges, breakdowns, comparisons and intervals.

A series is an event or an action, with its filters and math; a builder takes one or a list of them. Each part
raises :class:`~hoglab.errors.InvalidArgument` naming the builder's argument.

An action is named by its id (an int) or its name (a string): a name makes an ``ActionsNode`` without an id,
which :class:`hoglab.Client` fills in from the project's actions before sending (``client.actions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    PROPERTY_MATH,
    ActionsNode,
    BreakdownFilter,
    BreakdownItem,
    CompareFilter,
    DateRange,
    EventsNode,
    MathType,
)
from ._args import check_choice, date_arg, model_errors, where_filters
from ._groups import group_type_arg, named

__all__ = [
    "INTERVALS",
    "ActionRef",
    "Node",
    "Where",
    "action_fields",
    "breakdown_filter",
    "compare_filter",
    "date_range",
    "series",
    "series_list",
]

Where = dict[str, Any] | str | Sequence[Any] | None
"""``where=``: ``{"$browser": "Chrome", "price__gt": 10, "person.plan": "pro"}``, a HogQL string, or a list."""
ActionRef = int | str
"""An action, by id (``7``) or by name (``"Signed up"``)."""
Node = EventsNode | ActionsNode
"""A series: an event's or an action's."""


def action_fields(argument: str, action: Any) -> dict[str, Any]:
    """``{"id": 7}`` or ``{"name": "Signed up"}`` for an action given by id or name.

    >>> action_fields("action", 7), action_fields("action", "Signed up")
    ({'id': 7}, {'name': 'Signed up'})
    """
    if isinstance(action, int) and not isinstance(action, bool):
        if action < 1:
            raise InvalidArgument(f"{argument}: an action id is a positive integer, got {action}.", argument=argument)
        return {"id": action}
    if isinstance(action, str) and action.strip():
        return {"name": action}
    raise InvalidArgumentType(
        f"{argument}: expected an action's id (int) or name (str), got {action!r}.", argument=argument
    )

INTERVALS = "hour day week month"
"""The intervals of retention, lifecycle and stickiness (trends also takes ``minute``)."""


def series(
    event: str | None = None,
    *,
    action: ActionRef | None = None,
    math: str | None = None,
    math_property: str | None = None,
    math_hogql: str | None = None,
    where: Where = None,
    person_where: Where = None,
    name: str | None = None,
    aggregate_by: str | int | None = None,
) -> Node:
    """One series of a trend, one funnel step or a metric's source, with its own filters and math.

    It counts an event (``None``: all events) or an ``action`` (its id, or its name).

    ``aggregate_by`` (a group type's name or index) counts that type's groups instead of persons (PostHog's
    ``unique_group`` math, the default then); with ``dau``, ``weekly_active`` or ``monthly_active`` it keeps
    counting persons, of the events that have such a group, as PostHog does.

    >>> series("purchase", math="sum", math_property="price", where={"plan": "pro"}).properties[0].key
    'plan'
    >>> node = series("purchase", aggregate_by="company")
    >>> node.math, node.group_type_names
    ('unique_group', {'math_group_type_index': 'company'})
    >>> s = series(action="Signed up", math="dau")
    >>> s.kind, s.id, s.name, s.math
    ('ActionsNode', None, 'Signed up', 'dau')
    """
    if event is not None and not isinstance(event, str):
        raise InvalidArgumentType(f"event: expected a string or None, got {type(event).__name__}.", argument="event")
    if action is not None and event is not None:
        raise InvalidArgument("series: give an event or an action, not both.", argument="action")
    if math is not None:
        check_choice("math", math, MathType)
        if math in PROPERTY_MATH and not math_property:
            raise InvalidArgument(
                f"math_property: math={math!r} needs the property to aggregate.", argument="math_property"
            )
    index, type_name = group_type_arg("aggregate_by", aggregate_by) if aggregate_by is not None else (None, None)
    if index is not None:
        math = math or "unique_group"
        if math not in ("unique_group", "dau", "weekly_active", "monthly_active"):
            raise InvalidArgument(
                f"aggregate_by: groups are counted with math='unique_group' (or restrict 'dau', 'weekly_active', "
                f"'monthly_active'); math={math!r} counts events or persons.",
                argument="aggregate_by",
            )
    filters = where_filters(where, person_where)
    if action is not None:
        ref = action_fields("action", action)
        with model_errors("series"):
            # ``name`` is the action's own (what the client looks an id up by); a label of yours is custom_name.
            acted = ActionsNode(
                **ref, custom_name=name, math=math, math_property=math_property, math_hogql=math_hogql,
                math_group_type_index=index, properties=filters or None,
            )  # fmt: skip
        return named(acted, "math_group_type_index", type_name)
    with model_errors("series"):
        node = EventsNode(
            event=event,
            name=name or event,
            custom_name=name,
            math=math,
            math_property=math_property,
            math_hogql=math_hogql,
            math_group_type_index=index,
            properties=filters or None,
        )
    return named(node, "math_group_type_index", type_name)


def series_list(
    argument: str,
    events: Any,
    math: str | None,
    math_property: str | None,
    aggregate_by: str | int | None = None,
    action: Any = None,
) -> list[Node]:
    """The series of a builder: its ``events``, then its ``action``.

    ``events`` is a name, ``None`` for all events, a :func:`series` or a list of them; ``action`` an id or name,
    or a list of them. ``math``/``math_property``/``aggregate_by`` apply to those given by name or id. With
    ``action`` and no ``events``, only the actions.
    """
    items = [events] if events is None or isinstance(events, str | EventsNode | ActionsNode) else events
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise InvalidArgumentType(
            f"{argument}: expected an event name, a hoglab.series(...) or a list of them, got {type(events).__name__}.",
            argument=argument,
        )
    if action is not None and events is None:
        items = []
    nodes: list[Node] = []
    for item in items:
        if isinstance(item, EventsNode | ActionsNode):
            nodes.append(item)
        elif item is None or isinstance(item, str):
            nodes.append(series(item, math=math, math_property=math_property, aggregate_by=aggregate_by))
        else:
            raise InvalidArgumentType(
                f"{argument}: items must be event names or hoglab.series(...), got {type(item).__name__}.",
                argument=argument,
            )
    actions = [] if action is None else [action] if isinstance(action, int | str) else action
    if not isinstance(actions, Sequence) or isinstance(actions, bytes):
        raise InvalidArgumentType("action: expected an action's id or name, or a list of them.", argument="action")
    nodes += [series(action=a, math=math, math_property=math_property, aggregate_by=aggregate_by) for a in actions]
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
        check_choice("breakdown_type", breakdown_type, "event person group cohort hogql event_metadata session")

    def split(prop: Any) -> tuple[Any, str]:
        if isinstance(prop, str) and prop.startswith("person.") and breakdown_type is None:
            return prop[len("person.") :], "person"
        if isinstance(prop, str) and (breakdown_type == "group" or prop.startswith("group.")):
            return prop.removeprefix("group."), "group"
        if isinstance(prop, int) and not isinstance(prop, bool):
            return prop, breakdown_type or "cohort"
        if not isinstance(prop, str) or not prop:
            raise InvalidArgumentType(f"breakdown: expected a property name, got {prop!r}.", argument="breakdown")
        return prop, breakdown_type or "event"

    def group(prop: Any) -> tuple[Any, int, str | None]:
        # "company.plan": the group type (name or index) and its property
        kind, _, name = str(prop).partition(".")
        if not name:
            raise InvalidArgument(
                f"breakdown: a group property is 'type.property' ('company.plan'), got {prop!r}.", argument="breakdown"
            )
        index, type_name = group_type_arg("breakdown", kind)
        return name, index, type_name

    with model_errors("breakdown"):
        if isinstance(breakdown, list | tuple):
            if not 1 <= len(breakdown) <= 3:
                raise InvalidArgument("breakdown: between one and three properties.", argument="breakdown")
            items = []
            for p, t in map(split, breakdown):
                if t != "group":
                    items.append(BreakdownItem(property=p, type=t))
                    continue
                name, index, type_name = group(p)
                items.append(named(BreakdownItem(property=name, type="group", group_type_index=index),
                                   "group_type_index", type_name))  # fmt: skip
            return BreakdownFilter(breakdowns=items, breakdown_type=None, breakdown_limit=limit)
        prop, kind = split(breakdown)
        if kind != "group":
            return BreakdownFilter(breakdown=prop, breakdown_type=kind, breakdown_limit=limit)
        name, index, type_name = group(prop)
        found = BreakdownFilter(breakdown=name, breakdown_type="group", breakdown_group_type_index=index,
                                breakdown_limit=limit)  # fmt: skip
        return named(found, "breakdown_group_type_index", type_name)
