"""The project's time zone for functions that would otherwise use the server's.

DateTime *columns* are already converted to the project zone inside the views (tables.py), so
``toStartOfDay(timestamp)``, ``toDate(timestamp)``, ``toHour(timestamp)`` and comparisons with strings all work
in that zone. What remains are functions that *make* a DateTime from something zone-less — ``now()``,
``today()``, ``toDateTime('2024-01-01 00:00:00')``, ``parseDateTimeBestEffort(s)`` — which get the zone as an
explicit argument when the user gave none, as PostHog's printer does.

PostHog's conveniences ``toInt``/``toFloat`` become ClickHouse casts that return NULL when the
value does not convert (they accept strings and numbers alike).

>>> from hoglab.translate.parse import parse_hogql
>>> tree = parse_hogql("select now(), today(), toDateTime('2024-01-01'), toFloat(x)")
>>> for item in apply_timezone(tree, "Europe/Berlin").expressions:
...     print(item.sql("clickhouse"))
now64(6, 'Europe/Berlin')
toDate(now('Europe/Berlin'))
toDateTime('2024-01-01', 'Europe/Berlin')
accurateCastOrNull(x, 'Float64')
"""

from __future__ import annotations

from sqlglot import exp

from hoglab.translate.values import call

from .functions import TZ_FUNCTIONS

__all__ = ["apply_timezone"]

_CASTS = {"toint": "Int64", "tofloat": "Float64"}


def _rewrite(node: exp.Anonymous, zone: str) -> exp.Expr | None:
    name = node.name.lower()
    args = list(node.expressions)
    tz = exp.Literal.string(zone)
    if name == "now" and not args:  # PostHog's now() is now64(6, zone): microseconds, a DateTime64
        return call("now64", exp.Literal.number(6), tz)
    if name in TZ_FUNCTIONS and len(args) == TZ_FUNCTIONS[name]:
        node.append("expressions", tz)
        return None
    if name == "now64" and len(args) <= 1:
        precision = args[0] if args else exp.Literal.number(3)
        return call(node.name, precision, tz)
    if name == "today" and not args:
        return call("toDate", call("now", tz))
    if name == "yesterday" and not args:
        return call("subtractDays", call("toDate", call("now", tz)), exp.Literal.number(1))
    if name in _CASTS and len(args) == 1:
        return call("accurateCastOrNull", args[0], exp.Literal.string(_CASTS[name]))
    return None


def apply_timezone(tree: exp.Expr, zone: str) -> exp.Expr:
    """Rewrite zone-less DateTime constructors and PostHog's casts in ``tree``; returns the tree."""
    for node in list(tree.find_all(exp.Anonymous)):
        replacement = _rewrite(node, zone)
        if replacement is not None:
            if node is tree:
                return replacement
            node.replace(replacement)
    return tree
