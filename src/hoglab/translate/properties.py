"""THE translator of PostHog property filters: filters (and AND/OR groups of them) as HogQL text whose every value
is a ``{placeholder}``, used by the insight runners, experiments and HogQL ``{filters}`` alike.

Runners write HogQL; user values never become HogQL text: :class:`Params` hands out placeholder names and keeps
the values for ``ctx.run(..., values=params.values)``, and property keys go through ``escape_identifier``.

Every operator answers true or false, never NULL, with PostHog's semantics: PostHog builds a comparison of the
property and its printer wraps comparisons of nullable values in ``ifNull(..., 0)``, negative ones in
``ifNull(..., 1)`` (see docs/insights.md, "Property filters", for the whole table):

* a missing key (or JSON ``null``) matches only ``is_not``/``not_in``, ``not_icontains``, ``not_regex`` and
  ``is_not_set``; every other operator, ``not_between`` included, drops it;
* ``exact``/``is_not`` compare text; a number value also compares numerically (``5`` matches ``"5"``, ``5`` and
  ``"5.0"``, as a property PostHog types as Numeric does); ``true``/``false`` compare as the text JSON gives them;
  a list means any of them (``is_not``: none of them);
* ``icontains``/``not_icontains`` are case-insensitive substring tests (a list: any of / none of), ``regex`` is
  RE2 ``match``; ``gt``/``gte``/``lt``/``lte``/``min``/``max``/``between``/``not_between`` compare numbers, and a
  value that is not a number matches none of them; ``between`` needs ``[low, high]`` with low <= high;
* ``is_date_before``/``is_date_after``/``is_date_exact`` compare moments: the property parsed as a date, the
  value a relative date (``-7d``) or an ISO date in the project's zone;
* ``is_set``/``is_not_set``: the key is present and not JSON ``null``, or not.

A ``group`` filter (``{"type": "group", "group_type_index": 0, "key": "plan", ...}``) reads the property of the
event's group of that type (``group_0.properties.plan``: an event without such a group has none), or, in the
groups' own scope (``GroupsQuery``, ``group_scope=True``), the group's property (``properties.plan``).

Flags decide the same operators in Python with the rules of PostHog's flags service, which differ on purpose
(case-insensitive ``exact``, booleans): ``hoglab.server.flags.properties``.

>>> p = Params()
>>> property_filters_to_hogql([{"key": "$browser", "value": ["Chrome", "Safari"], "type": "event"}], p)
'(ifNull(properties.`$browser` IN {p0}, 0))'
>>> p.values
{'p0': ['Chrome', 'Safari']}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .dates import date_hogql
from .errors import HogQLError, TranslationFailed
from .params import Params
from .parse import parse_hogql_expr
from .values import escape_identifier

__all__ = [
    "GROUP_TYPE_INDEXES",
    "group_type_index",
    "hogql_expression",
    "property_access",
    "property_filters_to_hogql",
    "test_account_filters",
]


def _get(flt: Any, name: str, default: Any = None) -> Any:
    if isinstance(flt, Mapping):
        return flt.get(name, default)
    return getattr(flt, name, default)


GROUP_TYPE_INDEXES = range(5)
"""The group type indexes PostHog has: 0 to 4."""


def group_type_index(value: Any, attr: str) -> int:
    """A group type index from a query, checked: an integer 0-4, else a 400 naming ``attr``.

    >>> group_type_index(2, "aggregation_group_type_index")
    2
    >>> group_type_index(None, "properties.0.group_type_index")
    Traceback (most recent call last):
    ...
    hoglab.translate.errors.TranslationFailed: A group type index (0 to 4) is required.
    """
    if value is None:
        raise TranslationFailed("A group type index (0 to 4) is required.", attr=attr)
    if isinstance(value, bool) or not isinstance(value, int) or value not in GROUP_TYPE_INDEXES:
        raise TranslationFailed(f"A group type index is 0 to 4, got {value!r}.", attr=attr)
    return value


def property_access(key: str, kind: str = "event", group_index: int | None = None) -> str:
    """HogQL for a property: ``properties.`$browser```, ``person.properties.email`` or, for ``kind="group"``,
    ``group_<group_index>.properties.plan`` (the event's group of that type)."""
    if kind == "group":
        path = f"group_{group_type_index(group_index, 'group_type_index')}.properties"
    else:
        path = "person.properties" if kind == "person" else "properties"
    return f"{path}.{escape_identifier(key)}"


def hogql_expression(text: Any, attr: str) -> str:
    """A user's own HogQL expression (a ``hogql`` filter, ``math_hogql``, a HogQL breakdown or aggregation) as
    text for a runner's query: parsed alone first, so a mistake is a 400 naming ``attr`` (not a place in SQL the
    user never wrote) and the text can't reach past its own parentheses (``1) OR (1``); the closing one goes on
    its own line, out of reach of a trailing ``--`` comment.

    >>> hogql_expression("count() -- all", "series.0.math_hogql")
    '(count() -- all\\n)'
    >>> hogql_expression("1) OR (1", "series.0.properties.0.key")
    Traceback (most recent call last):
    ...
    hoglab.translate.errors.TranslationFailed: Invalid HogQL expression '1) OR (1': Syntax error: ...
    """
    if not isinstance(text, str) or not text.strip():
        raise TranslationFailed("A HogQL expression is required.", attr=attr)
    try:
        parse_hogql_expr(text)
    except HogQLError as e:
        raise TranslationFailed(f"Invalid HogQL expression {text[:80]!r}: {e.message}", attr=attr) from None
    return f"({text}\n)"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any, attr: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TranslationFailed(f"Expected a number, got {value!r}.", attr=attr) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise TranslationFailed(f"Expected a finite number, got {value!r}.", attr=attr)
    return number


def _like(value: Any) -> str:
    return "%" + re.sub(r"([\\%_])", r"\\\1", _text(value)) + "%"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equals_any(prop: str, values: list[Any], p: Params, typed: bool = False) -> str:
    """True when the property equals one of ``values`` (text, or number for number values); NULL when missing.

    ``typed``: a column's text, where a boolean is 1 or 0 (a JSON property's is ``true``/``false``)."""
    texts = [_text(v) for v in values]
    text_test = f"{prop} = {p.add(texts[0])}" if len(texts) == 1 else f"{prop} IN {p.add(texts)}"
    numbers = [float(v) for v in values if _is_number(v) or (typed and isinstance(v, bool))]
    if not numbers:
        return text_test
    return f"{text_test} OR toFloat64OrNull({prop}) IN {p.add(numbers)}"


def _any_of(tests: list[str]) -> str:
    return tests[0] if len(tests) == 1 else "(" + " OR ".join(tests) + ")"


_COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "min": ">=", "max": "<="}
_DATE_COMPARISONS = {"is_date_exact": "=", "is_date_before": "<", "is_date_after": ">"}


def _value_condition(prop: str, op: str, value: Any, p: Params, attr: str, timezone: str, typed: bool = False) -> str:
    """The HogQL condition of one operator on ``prop``: a JSON property's text, or (``typed``) a typed column of
    the events row or its session (a number, a date, a text), compared through its text as a property's is (a
    column in the project's time zone prints its time there, as the date operators read it)."""
    values = value if isinstance(value, list) else [value]
    if op in ("is_set", "is_not_set"):
        return f"{prop} IS NOT NULL" if op == "is_set" else f"{prop} IS NULL"
    if value is None or values == []:
        raise TranslationFailed(f"Operator {op!r} needs a value.", attr=attr)
    if typed:  # toFloat64OrNull, ILIKE and the date parser take text only
        prop = f"toString({prop})"
    if op in ("exact", "in"):
        return f"ifNull({_equals_any(prop, values, p, typed)}, 0)"
    if op in ("is_not", "not_in"):
        return f"ifNull(NOT ({_equals_any(prop, values, p, typed)}), 1)"
    if op in ("icontains", "not_icontains"):
        found = _any_of([f"{prop} ILIKE {p.add(_like(v))}" for v in values])
        return f"ifNull({found}, 0)" if op == "icontains" else f"ifNull(NOT {found}, 1)"
    if op in ("regex", "not_regex"):
        found = _any_of([f"match({prop}, {p.add(_text(v))})" for v in values])
        return f"ifNull({found}, 0)" if op == "regex" else f"ifNull(NOT {found}, 1)"
    number = f"toFloat64OrNull({prop})"
    if op in _COMPARISONS:
        return f"ifNull({number} {_COMPARISONS[op]} {p.add(_number(values[0], attr))}, 0)"
    if op in ("between", "not_between"):
        if len(values) != 2:
            raise TranslationFailed(f"Operator {op!r} needs [low, high].", attr=attr)
        low_value, high_value = (_number(v, attr) for v in values)
        if low_value > high_value:
            raise TranslationFailed(f"Operator {op!r} needs low <= high, got {values!r}.", attr=attr)
        low, high = p.add(low_value), p.add(high_value)
        if op == "between":
            return f"ifNull({number} >= {low} AND {number} <= {high}, 0)"
        return f"ifNull({number} < {low} OR {number} > {high}, 0)"
    if op in _DATE_COMPARISONS:
        wanted = date_hogql(_text(values[0]), timezone, p)
        moment = f"parseDateTime64BestEffortOrNull({prop}, 6, {p.add(timezone)})"
        return f"ifNull({moment} {_DATE_COMPARISONS[op]} {wanted}, 0)"
    raise TranslationFailed(f"Unsupported property operator {op!r}.", attr=attr)


_ELEMENT_PATTERNS = {
    "tag_name": lambda v: r"(^|;)" + re.escape(v) + r"([.:;]|$)",
    "text": lambda v: 'text="' + re.escape(v) + '"',
    "href": lambda v: 'attr__href="' + re.escape(v) + '"',
}


def _element_condition(flt: Any, p: Params, attr: str) -> str:
    key, op, value = _get(flt, "key"), _get(flt, "operator") or "exact", _get(flt, "value")
    if key not in _ELEMENT_PATTERNS or op not in ("exact", "is_not"):
        raise TranslationFailed(
            "Element filters support tag_name, text and href with exact or is_not.", attr=f"{attr}.key"
        )
    values = value if isinstance(value, list) else [value]
    tests = [f"match(elements_chain, {p.add(_ELEMENT_PATTERNS[key](_text(v)))})" for v in values]
    joined = "(" + " OR ".join(tests) + ")"
    return joined if op == "exact" else f"NOT {joined}"


def _filter_to_hogql(flt: Any, p: Params, attr: str, timezone: str, person_id: str = "person_id",
                     group_scope: bool = False) -> str:  # fmt: skip
    kind = _get(flt, "type") or "event"
    if kind == "hogql":
        return hogql_expression(_get(flt, "key"), f"{attr}.key")
    if kind == "cohort":
        cohort = (
            f"{person_id} IN (SELECT person_id FROM cohort_people WHERE cohort_id = {p.add(int(_get(flt, 'value')))})"
        )
        return f"NOT ({cohort})" if _get(flt, "operator") == "not_in" else cohort
    if kind == "element":
        return _element_condition(flt, p, attr)
    if kind == "group":
        index = group_type_index(_get(flt, "group_type_index"), f"{attr}.group_type_index")
        key = escape_identifier(str(_get(flt, "key")))
        prop = f"properties.{key}" if group_scope else f"group_{index}.properties.{key}"
        return _value_condition(prop, str(_get(flt, "operator") or "exact"), _get(flt, "value"), p, attr, timezone)
    if group_scope:
        raise TranslationFailed(
            f"Groups are filtered by their own properties (type 'group') or HogQL, not {kind!r}.", attr=f"{attr}.type"
        )
    if kind == "session":  # the event's session (a query over sessions reads its own fields: compiler.py)
        prop = f"session.{escape_identifier(str(_get(flt, 'key')))}"
        operator = str(_get(flt, "operator") or "exact")
        return _value_condition(prop, operator, _get(flt, "value"), p, attr, timezone, typed=True)
    if kind == "event_metadata":  # a field of the events row itself (PostHog's EventMetadataPropertyFilter)
        prop = escape_identifier(str(_get(flt, "key")))
        operator = str(_get(flt, "operator") or "exact")
        return _value_condition(prop, operator, _get(flt, "value"), p, attr, timezone, typed=True)
    if kind not in ("event", "feature", "person"):
        raise TranslationFailed(f"Property filters of type {kind!r} are not supported.", attr=f"{attr}.type")
    prop = property_access(str(_get(flt, "key")), "person" if kind == "person" else "event")
    return _value_condition(prop, str(_get(flt, "operator") or "exact"), _get(flt, "value"), p, attr, timezone)


def property_filters_to_hogql(
    filters: Any, p: Params, *, attr: str = "properties", timezone: str = "UTC", person_id: str = "person_id",
    group_scope: bool = False,
) -> str | None:
    """A list (AND-ed) or an AND/OR group of filters as one HogQL condition; ``None`` when there is nothing.

    ``timezone`` (the project's) reads ISO dates of the date operators. ``person_id`` is the expression a cohort
    filter tests: an event's ``person_id``, or ``id`` when the rows are persons (ActorsQuery). ``group_scope``:
    the rows are groups (``GroupsQuery``), whose own properties ``group`` filters read.
    """
    if filters is None:
        return None
    if isinstance(filters, Sequence) and not isinstance(filters, (str, bytes)):
        parts = [_filter_to_hogql(f, p, f"{attr}.{i}", timezone, person_id, group_scope)
                 for i, f in enumerate(filters)]  # fmt: skip
        return "(" + " AND ".join(parts) + ")" if parts else None
    kind = _get(filters, "type")
    if kind in ("AND", "OR"):
        values = _get(filters, "values") or []
        parts = [
            part
            for i, v in enumerate(values)
            if (part := property_filters_to_hogql(v, p, attr=f"{attr}.values.{i}", timezone=timezone,
                                                  person_id=person_id, group_scope=group_scope)) is not None
        ]
        if not parts:
            return None
        return "(" + f" {kind} ".join(parts) + ")"
    return _filter_to_hogql(filters, p, attr, timezone, person_id, group_scope)


def test_account_filters(project: Any) -> list[Any]:
    """The project's ``test_account_filters`` (hoglab projects have none yet: ``filterTestAccounts`` is a no-op)."""
    filters = getattr(project, "test_account_filters", None)
    return list(filters) if isinstance(filters, list) else []
