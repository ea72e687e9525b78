"""``{filters}``: a ``HogQLFilters`` (properties, dateRange) as a HogQL condition.

The condition is built as nodes (values are literal nodes, keys are identifiers) and then checked and
resolved with the rest of the query, so it names ``properties.<key>``, ``person.properties.<key>`` and
``timestamp`` of whatever table the query reads. No filters: ``true``.

Relative dates: ``-<n><unit>`` with units ``h d w m q y`` (and ``M`` minutes, ``s`` seconds), optionally
``Start``/``End`` (the start or end of that unit), ``all`` (no bound); anything else is parsed as a date or
datetime in the project's time zone. ``filterTestAccounts`` is accepted and ignored (hoglab keeps no test
account filters).

>>> from .dialect import HogQLDialect
>>> filters_to_expr({"properties": [{"key": "$browser", "value": "Chrome", "type": "event"}]}).sql(HogQLDialect)
"(properties.`$browser` = 'Chrome')"
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from .errors import HogQLError
from .parse import parse_hogql_expr
from .scope import identifier
from .values import bind_placeholders

__all__ = ["filters_to_expr"]

_RELATIVE = re.compile(r"-?(\d*)([hdwmqyMs])(Start|End)?\Z")
_UNITS = {
    "s": ("Second", "Second"),
    "M": ("Minute", "Minute"),
    "h": ("Hour", "Hour"),
    "d": ("Day", "Day"),
    "w": ("Week", "Week"),
    "m": ("Month", "Month"),
    "q": ("Quarter", "Quarter"),
    "y": ("Year", "Year"),
}


def _fn(name: str, *args: exp.Expr) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _str(value: Any) -> exp.Literal:
    if isinstance(value, bool):
        return exp.Literal.string("true" if value else "false")
    return exp.Literal.string(str(value))


def _num(value: Any) -> exp.Expr:
    number = float(value)
    node = exp.Literal.number(repr(abs(number)))
    return exp.Neg(this=node) if number < 0 else node


def _date(text: str, timezone: str) -> exp.Expr:
    tz = exp.Literal.string(timezone)
    match = _RELATIVE.match(text)
    if match:
        count, unit, edge = match.groups()
        now: exp.Expr = _fn("now64", exp.Literal.number(6), tz)
        interval, start = _UNITS[unit]
        if count:
            now = _fn(f"subtract{interval}s", now, exp.Literal.number(int(count)))
        if edge == "Start" or edge == "End":
            truncated = _fn("toDateTime64", _fn(f"toStartOf{start}", now), exp.Literal.number(6), tz)
            if unit == "w":
                truncated = _fn("toDateTime64", _fn("toStartOfWeek", now), exp.Literal.number(6), tz)
            if edge == "End":
                truncated = _fn(
                    "subtractSeconds", _fn(f"add{interval}s", truncated, exp.Literal.number(1)), exp.Literal.number(1)
                )
            return truncated
        return now
    return _fn("parseDateTime64BestEffort", exp.Literal.string(text), exp.Literal.number(6), tz)


def _prop(flt: dict[str, Any]) -> exp.Expr:
    key = flt.get("key")
    if not isinstance(key, str) or not key:
        raise HogQLError("A property filter needs a 'key'")
    path = ["person", "properties"] if flt.get("type") == "person" else ["properties"]
    node: exp.Expr = exp.Column(this=identifier(key), table=identifier(path[-1]))
    if len(path) == 2:
        node.set("db", identifier(path[0]))
    return node


def _like_value(value: Any) -> exp.Literal:
    text = re.sub(r"([\\%_])", r"\\\1", str(value))
    return exp.Literal.string(f"%{text}%")


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _or_null(prop: exp.Expr, condition: exp.Expr) -> exp.Expr:
    # "is not X" keeps the events that have no such property at all, as PostHog does.
    return exp.Paren(this=exp.Or(this=exp.Is(this=prop.copy(), expression=exp.Null()), expression=condition))


def _text_condition(prop: exp.Expr, op: str, value: Any) -> exp.Expr | None:
    strings = [_str(v) for v in _values(value)] if value is not None else []
    if op in ("exact", "in", "is_not", "not_in") and not strings:
        raise HogQLError(f"Operator {op!r} needs a value")
    if op in ("exact", "in"):
        return exp.EQ(this=prop, expression=strings[0]) if len(strings) == 1 else exp.In(this=prop, expressions=strings)
    if op in ("is_not", "not_in"):
        if len(strings) == 1:
            return _or_null(prop, exp.NEQ(this=prop, expression=strings[0]))
        return _or_null(prop, exp.Not(this=exp.In(this=prop, expressions=strings)))
    if op == "icontains":
        return exp.ILike(this=prop, expression=_like_value(value))
    if op == "not_icontains":
        return _or_null(prop, exp.Not(this=exp.ILike(this=prop, expression=_like_value(value))))
    if op == "regex":
        return _fn("match", prop, _str(value))
    if op == "not_regex":
        return _or_null(prop, exp.Not(this=_fn("match", prop, _str(value))))
    if op == "is_set":
        return exp.Not(this=exp.Is(this=prop, expression=exp.Null()))
    if op == "is_not_set":
        return exp.Is(this=prop, expression=exp.Null())
    return None


def _number_condition(prop: exp.Expr, op: str, value: Any, timezone: str) -> exp.Expr:
    number = _fn("toFloat64OrNull", prop)
    comparisons = {"gt": exp.GT, "gte": exp.GTE, "lt": exp.LT, "lte": exp.LTE, "min": exp.GTE, "max": exp.LTE}
    if op in comparisons:
        return comparisons[op](this=number, expression=_num(value))
    if op in ("between", "not_between"):
        low, high = _values(value)
        between = exp.Between(this=number, low=_num(low), high=_num(high))
        return exp.Not(this=between) if op == "not_between" else between
    if op in ("is_date_exact", "is_date_before", "is_date_after"):
        parsed = _fn("parseDateTime64BestEffortOrNull", prop, exp.Literal.number(6), exp.Literal.string(timezone))
        cls = {"is_date_exact": exp.EQ, "is_date_before": exp.LT, "is_date_after": exp.GT}[op]
        return cls(this=parsed, expression=_date(str(value), timezone))
    raise HogQLError(f"Unsupported property operator {op!r}")


def _property_condition(flt: dict[str, Any], timezone: str) -> exp.Expr:
    kind = flt.get("type", "event")
    if kind == "hogql":
        return parse_hogql_expr(str(flt.get("key")))
    if kind == "cohort":
        cohort = parse_hogql_expr("person_id IN (SELECT person_id FROM cohort_people WHERE cohort_id = {cohort})")
        cohort = bind_placeholders(cohort, {"cohort": int(flt["value"])})
        return exp.Not(this=cohort) if flt.get("operator") == "not_in" else cohort
    if kind not in ("event", "feature", "person"):
        raise HogQLError(f"Property filters of type {kind!r} are not supported in {{filters}}")
    prop, op, value = _prop(flt), str(flt.get("operator") or "exact"), flt.get("value")
    condition = _text_condition(prop, op, value)
    return condition if condition is not None else _number_condition(prop, op, value, timezone)


def _group(group: Any, timezone: str) -> exp.Expr | None:
    if isinstance(group, list):
        parts = [_property_condition(f, timezone) for f in group]
        return exp.and_(*parts) if parts else None
    kind = group.get("type")
    values = group.get("values") or []
    if kind in ("AND", "OR"):
        parts = [p for p in (_group(v, timezone) for v in values) if p is not None]
        if not parts:
            return None
        joined = exp.and_(*parts) if kind == "AND" else exp.or_(*parts)
        return exp.Paren(this=joined)
    return _property_condition(group, timezone)


def filters_to_expr(filters: Any, *, timezone: str = "UTC") -> exp.Expr:
    """The condition for ``{filters}`` (``true`` when there is nothing to filter)."""
    if filters is None:
        return exp.true()
    data = filters.model_dump(exclude_none=True) if hasattr(filters, "model_dump") else dict(filters)
    parts: list[exp.Expr] = []
    date_range = data.get("dateRange") or {}
    timestamp = exp.column("timestamp")
    if date_range.get("date_from") and date_range["date_from"] != "all":
        parts.append(exp.GTE(this=timestamp, expression=_date(date_range["date_from"], timezone)))
    if date_range.get("date_to"):
        parts.append(exp.LTE(this=timestamp.copy(), expression=_date(date_range["date_to"], timezone)))
    properties = data.get("properties")
    if properties:
        condition = _group(properties, timezone)
        if condition is not None:
            parts.append(condition)
    return exp.Paren(this=exp.and_(*parts)) if parts else exp.true()
