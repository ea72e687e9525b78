"""Argument checks and the small ``where=`` grammar shared by the builders.

Each check raises :class:`~hoglab.errors.InvalidArgument` naming the builder's argument, before any request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import date, datetime, timedelta
from typing import Any, TypeVar, cast, get_args

import pydantic

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    AnyPropertyFilter,
    CohortPropertyFilter,
    ElementPropertyFilter,
    EventPropertyFilter,
    FeaturePropertyFilter,
    GroupPropertyFilter,
    HogQLPropertyFilter,
    PersonPropertyFilter,
    PropertyOperator,
    is_date_text,
)

__all__ = [
    "call_errors",
    "check_choice",
    "date_arg",
    "model_errors",
    "positive_int",
    "property_filters",
    "where_filters",
    "window_arg",
]

T = TypeVar("T")

# ``{"price__gt": 10}``: the suffix after the last "__" is an operator when it is one of these names.
_OPERATOR_ALIASES: dict[str, str] = {
    **{op: op for op in get_args(PropertyOperator)},
    "eq": "exact",
    "ne": "is_not",
    "contains": "icontains",
    "not_contains": "not_icontains",
    "in": "exact",  # PostHog's exact takes a list: any of the values
    "not_in": "is_not",
}
_FILTER_MODELS = (
    EventPropertyFilter,
    PersonPropertyFilter,
    GroupPropertyFilter,
    FeaturePropertyFilter,
    CohortPropertyFilter,
    HogQLPropertyFilter,
    ElementPropertyFilter,
)
_WINDOW = re.compile(r"^\s*(\d+)\s*([a-zA-Z]+)\s*$")
_WINDOW_UNITS = {
    **dict.fromkeys(("s", "sec", "second", "seconds"), "second"),
    **dict.fromkeys(("min", "minute", "minutes"), "minute"),
    **dict.fromkeys(("h", "hour", "hours"), "hour"),
    **dict.fromkeys(("d", "day", "days"), "day"),
    **dict.fromkeys(("w", "week", "weeks"), "week"),
    **dict.fromkeys(("mo", "month", "months"), "month"),
}


def check_choice(argument: str, value: T, choices_type: Any) -> T:
    """``value`` must be one of the ``Literal`` type's values.

    >>> check_choice("interval", "week", "day week")
    'week'
    >>> check_choice("interval", "fortnight", "day week")
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: interval: 'fortnight' is not one of 'day', 'week'.
    """
    choices = tuple(choices_type.split()) if isinstance(choices_type, str) else _literal_values(choices_type)
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise InvalidArgument(f"{argument}: {value!r} is not one of {shown}.", argument=argument)
    return value


def positive_int(argument: str, value: Any, *, low: int = 1) -> int | None:
    """``value`` must be an integer of at least ``low`` (``None`` passes: the argument was not given).

    >>> positive_int("limit", 100), positive_int("offset", 0, low=0), positive_int("limit", None)
    (100, 0, None)
    >>> positive_int("steps", 1, low=2)
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: steps: expected an integer >= 2, got 1.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidArgument(f"{argument}: expected an integer >= {low}, got {value!r}.", argument=argument)
    return value


def _literal_values(tp: Any) -> tuple[Any, ...]:
    out: list[Any] = []
    for arg in get_args(tp):
        out.extend(_literal_values(arg) if get_args(arg) else [arg])
    return tuple(a for a in out if a is not None and not isinstance(a, type))


def date_arg(argument: str, value: str | date | None) -> str | None:
    """A relative date (``-7d``, ``-1mStart``, ``all``), an ISO date/datetime, or a ``date``/``datetime``.

    >>> date_arg("date_from", "-30d"), date_arg("date_from", date(2025, 6, 1))
    ('-30d', '2025-06-01')
    """
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if not isinstance(value, str):
        raise InvalidArgumentType(
            f"{argument}: expected a string like '-7d' or a date, got {type(value).__name__}.", argument=argument
        )
    text = value.strip()
    if not is_date_text(text):
        raise InvalidArgument(
            f"{argument}: {value!r} is neither a relative date ('-7d', '-1mStart', 'all') nor an ISO date.",
            argument=argument,
        )
    return text


def window_arg(value: int | str | timedelta) -> tuple[int, str]:
    """A funnel window: days as an int, a ``timedelta``, or ``"14d"``/``"2w"``/``"6h"``/``"1 month"``.

    >>> window_arg("14d"), window_arg(timedelta(hours=6)), window_arg(3)
    ((14, 'day'), (6, 'hour'), (3, 'day'))
    """
    if isinstance(value, bool):
        raise InvalidArgumentType(
            "window: expected an int (days), a timedelta or a string like '14d'.", argument="window"
        )
    if isinstance(value, int):
        return value, "day"
    if isinstance(value, timedelta):
        seconds = int(value.total_seconds())
        for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
            if seconds and seconds % size == 0:
                return seconds // size, unit
        raise InvalidArgument("window: a timedelta of at least one second is needed.", argument="window")
    if isinstance(value, str):
        m = _WINDOW.match(value)
        if m and m.group(2).lower() in _WINDOW_UNITS and m.group(2) != "m":
            return int(m.group(1)), _WINDOW_UNITS[m.group(2).lower()]
        raise InvalidArgument(
            f"window: {value!r} is not understood; use e.g. '14d', '2w', '6h', '30min' or '1 month'.", argument="window"
        )
    raise InvalidArgumentType(
        f"window: expected an int (days), a timedelta or a string like '14d', got {type(value).__name__}.",
        argument="window",
    )


def _one_filter(argument: str, key: str, value: Any, scope: str) -> AnyPropertyFilter:
    if not isinstance(key, str) or not key:
        raise InvalidArgumentType(
            f"{argument}: property names must be non-empty strings, got {key!r}.", argument=argument
        )
    name, _, suffix = key.rpartition("__")
    operator = "exact"
    if name and suffix in _OPERATOR_ALIASES:
        key, operator = name, _OPERATOR_ALIASES[suffix]
    group: tuple[int, str | None] | None = None
    if key.startswith("person."):
        key, scope = key[len("person.") :], "person"
    elif key.startswith("group.") and scope == "event":
        kind, _, key = key[len("group.") :].partition(".")
        if not key:
            raise InvalidArgument(
                f"{argument}: a group property is 'group.<type>.<property>' ('group.company.plan').", argument=argument
            )
        from ._groups import group_type_arg

        group, scope = group_type_arg(argument, kind), "group"
    elif key.startswith("$feature/") and scope == "event":
        scope = "feature"
    if operator in ("is_set", "is_not_set"):
        if value is False:
            operator = "is_not_set" if operator == "is_set" else "is_set"
        value = None
    elif isinstance(value, tuple | set | frozenset):
        value = list(value)
    with model_errors(argument):
        if group is not None:
            found = GroupPropertyFilter(key=key, value=value, operator=operator, group_type_index=group[0])
            if group[1] is not None:
                found.group_type_names["group_type_index"] = group[1]
            return found
        model = {"event": EventPropertyFilter, "person": PersonPropertyFilter, "feature": FeaturePropertyFilter}[scope]
        return cast(AnyPropertyFilter, model(key=key, value=value, operator=operator))


def property_filters(argument: str, where: Any, scope: str = "event") -> list[AnyPropertyFilter]:
    """``where=`` in any of its forms to PostHog property filters.

    * a dict: ``{"$browser": "Chrome"}`` (exact; a list means any of), ``{"price__gt": 10}``,
      ``{"email__icontains": "@acme"}``, ``{"$browser__is_set": True}``, ``{"person.plan": "pro"}``,
      ``{"group.company.plan": "pro"}`` (a property of the event's group of type ``company``, or ``group.0.plan``);
      operators: PostHog's names (``exact``, ``is_not``, ``icontains``, ``regex``, ``gt``, ``between``...) and the
      aliases ``eq``, ``ne``, ``contains``, ``not_contains``, ``in``, ``not_in``;
    * a string: a HogQL boolean expression (``"toInt(properties.$screen_width) > 1000"``);
    * a list of the above, or of filter models or PostHog filter dicts (``{"key", "value", "operator", "type"}``).

    >>> found = property_filters("where", {"price__gt": 10, "person.plan": "pro"})
    >>> [(f.type, f.key, f.operator, f.value) for f in found]
    [('event', 'price', 'gt', 10), ('person', 'plan', 'exact', 'pro')]
    """
    if where is None:
        return []
    if isinstance(where, str):
        with model_errors(argument):
            return [HogQLPropertyFilter(key=where)]
    if isinstance(where, _FILTER_MODELS):
        return [where]
    if isinstance(where, Mapping):
        if {"key", "type"} <= set(where):  # already a PostHog filter dict
            with model_errors(argument):
                return [pydantic.TypeAdapter(AnyPropertyFilter).validate_python(dict(where))]
        return [_one_filter(argument, k, v, scope) for k, v in where.items()]
    if isinstance(where, Sequence):
        return [f for item in where for f in property_filters(argument, item, scope)]
    raise InvalidArgumentType(
        f"{argument}: expected a dict of properties, a HogQL string or a list of filters, got {type(where).__name__}.",
        argument=argument,
    )


def where_filters(where: Any, person_where: Any) -> list[AnyPropertyFilter]:
    """A builder's ``where=`` (event properties) and ``person_where=`` (person properties) as one filter list.

    >>> [(f.type, f.key) for f in where_filters({"$browser": "Chrome"}, {"plan": "pro"})]
    [('event', '$browser'), ('person', 'plan')]
    """
    return property_filters("where", where) + property_filters("person_where", person_where, scope="person")


@contextmanager
def model_errors(argument: str, rename: Callable[[str], str] | None = None) -> Iterator[None]:
    """Turn a schema model's ``pydantic.ValidationError`` into ``InvalidArgument`` naming the builder argument."""
    try:
        yield
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        path = ".".join(str(p) for p in first.get("loc", ()) if not str(p)[:1].isupper())
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        name = rename(path) if rename else argument
        where = f" ({path})" if path and path != name else ""
        raise InvalidArgument(f"{name}: {message}{where}", argument=name) from None


def call_errors(call: str) -> AbstractContextManager[None]:
    """:func:`model_errors` for a client call taking a model's fields as keywords (``create``, ``update``).

    The error names the top-level field at fault, or the call itself when the model as a whole is refused.
    """
    return model_errors(call, rename=lambda path: path.split(".")[0] or call)
