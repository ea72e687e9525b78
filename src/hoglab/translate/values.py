"""``{name}`` placeholders bound to literal nodes, and the escape helpers for code that writes HogQL.

A value becomes a literal *node* in the tree, never text in the query, so no value can change the statement's
structure: ``{"x": "1 OR 1=1"}`` is the string ``'1 OR 1=1'``.

>>> escape_literal("it's"), escape_literal(None), escape_literal([1, "a"])
("'it''s'", 'NULL', "[1, 'a']")
>>> escape_identifier("$feature/new-checkout"), escape_identifier("event")
('`$feature/new-checkout`', 'event')
"""

from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from sqlglot import exp

from .dialect import HOGQL_PLACEHOLDER, HogQLDialect
from .errors import HogQLError, node_span

__all__ = ["VARIABLE_PREFIX", "bind_placeholders", "call", "escape_identifier", "escape_literal", "value_to_node"]

VARIABLE_PREFIX = "variables."
"""``{variables.x}`` (PostHog's insight variables) is the placeholder named ``variables.x``."""

_MAX_DEPTH = 8
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def call(name: str, *args: exp.Expr) -> exp.Anonymous:
    """A call of the ClickHouse function ``name`` on ``args``, as the printer writes it.

    >>> call("ifNull", exp.column("a"), exp.Literal.number(0)).sql("clickhouse")
    'ifNull(a, 0)'
    """
    return exp.Anonymous(this=name, expressions=list(args))


def _datetime_node(value: dt.datetime, timezone: str) -> exp.Expr:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
        zone = "UTC"
    else:
        zone = timezone  # a naive datetime is a wall-clock time in the project's zone, as in PostHog
    text = value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return exp.Anonymous(
        this="toDateTime64",
        expressions=[exp.Literal.string(text), exp.Literal.number(6), exp.Literal.string(zone)],
    )


def value_to_node(value: Any, *, timezone: str = "UTC", _depth: int = 0) -> exp.Expr:
    """A Python value as a HogQL literal node.

    str, int, float, bool, None, Decimal, UUID, date, datetime (naive = project time zone), and lists/tuples
    of those (lists become arrays, tuples become tuples).
    """
    if _depth > _MAX_DEPTH:
        raise HogQLError("Placeholder value is nested too deeply")
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Neg(this=exp.Literal.number(-value)) if value < 0 else exp.Literal.number(value)
    if isinstance(value, (float, Decimal)):
        if isinstance(value, float) and not math.isfinite(value):
            raise HogQLError("Placeholder values must be finite numbers")
        text = repr(value) if isinstance(value, float) else str(value)
        if text.startswith("-"):
            return exp.Neg(this=exp.Literal.number(text[1:]))
        return exp.Literal.number(text)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, uuid.UUID):
        return exp.Anonymous(this="toUUID", expressions=[exp.Literal.string(str(value))])
    if isinstance(value, dt.datetime):
        return _datetime_node(value, timezone)
    if isinstance(value, dt.date):
        return exp.Anonymous(this="toDate", expressions=[exp.Literal.string(value.isoformat())])
    if isinstance(value, (list, tuple)):
        items = [value_to_node(v, timezone=timezone, _depth=_depth + 1) for v in value]
        return exp.Array(expressions=items) if isinstance(value, list) else exp.Tuple(expressions=items)
    raise HogQLError(f"Unsupported placeholder value of type {type(value).__name__}")


def escape_literal(value: Any, *, timezone: str = "UTC") -> str:
    """HogQL text for a literal value, for code that must write HogQL text (prefer ``values``).

    Strings are quoted with ClickHouse's escapes so that the HogQL parser reads back exactly the same string.
    """
    return str(value_to_node(value, timezone=timezone).sql(dialect=HogQLDialect))


def escape_identifier(name: str) -> str:
    """HogQL text for a name (a column, an alias, a property key in ``properties.<key>``).

    Plain names that are not keywords stay bare; anything else is backtick-quoted with escapes.
    """
    if not isinstance(name, str) or not name:
        raise HogQLError("An identifier must be a non-empty string")
    if _SIMPLE_NAME.match(name) and name.upper() not in HogQLDialect.tokenizer_class.KEYWORDS:
        return name
    return str(exp.to_identifier(name, quoted=True).sql(dialect=HogQLDialect))


def bind_placeholders(
    tree: exp.Expr,
    values: Mapping[str, Any] | None,
    *,
    timezone: str = "UTC",
    special: Mapping[str, Callable[[], exp.Expr]] | None = None,
) -> exp.Expr:
    """Replace every HogQL ``{name}`` with the literal for ``values[name]`` (or a ``special`` builder's node).

    An unknown name is an error that names it. Returns the (possibly replaced) root.
    """
    values = values or {}
    special = special or {}
    for node in list(tree.find_all(exp.Placeholder)):
        if node.args.get("kind") != HOGQL_PLACEHOLDER:
            continue
        name = node.name
        if name in special:
            replacement = special[name]()
        elif name in values:
            replacement = value_to_node(values[name], timezone=timezone)
        else:
            start, end = node_span(node)
            if name.startswith(VARIABLE_PREFIX):
                raise HogQLError(f"Unknown variable {name[len(VARIABLE_PREFIX) :]}", start=start, end=end)
            raise HogQLError(f"Placeholder {{{name}}} has no value: pass it in 'values'", start=start, end=end)
        replacement.meta["hq_placeholder"] = name
        if node is tree:
            return replacement
        node.replace(replacement)
    return tree
