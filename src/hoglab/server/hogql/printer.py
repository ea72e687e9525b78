"""The top-level LIMIT rules, output column names, and printing.

* No LIMIT: ``LIMIT default_limit + 1`` (the runner trims the extra row and sets ``hasMore``).
* A constant LIMIT is capped: ``LIMIT min(n, max_limit)``; an expression becomes
  ``least(toUInt64(max_limit), toUInt64(greatest(0, expr)))`` so it can be neither negative nor fractional
  (ClickHouse reads ``LIMIT -5`` as "the last 5" and ``LIMIT 0.5`` as "half the rows").
* A set operation (``UNION ALL``...) is wrapped, ``SELECT * FROM (<query>) LIMIT ...``, because ClickHouse
  applies a trailing LIMIT to the last SELECT only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from hoglab.translate.dialect import HogQLDialect, HogQLGenerator
from hoglab.translate.errors import HogQLError, node_span
from hoglab.translate.values import call

from .props import NAME_META
from .scope import Scope

__all__ = ["ClickHouseOutput", "LimitInfo", "apply_limit", "name_columns", "print_clickhouse", "print_hogql"]

TEXT_META = "hq_text"


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ClickHouseOutputGenerator(HogQLGenerator):
    def identifier_sql(self, expression: exp.Identifier) -> str:
        # ClickHouse's lexer knows more than sqlglot's: ``$$`` starts a heredoc string and “ ” ‘ ’ are quotes.
        # An unquoted name holding such characters could change what the printed SQL means, so every name
        # that is not plain ASCII is quoted.
        if not expression.quoted and not _PLAIN.match(expression.name):
            expression = exp.Identifier(this=expression.name, quoted=True)
        return str(super().identifier_sql(expression))


class ClickHouseOutput(HogQLDialect):
    """HogQLDialect for printing SQL that ClickHouse will run: every non-plain name is quoted."""

    Generator = ClickHouseOutputGenerator


@dataclass(frozen=True)
class LimitInfo:
    limit: int | None
    offset: int | None
    has_implicit_limit: bool


def _err(message: str, node: exp.Expr | None) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def _int_constant(node: exp.Expr, what: str) -> int | None:
    """The value of an integer literal; None for another expression; an error for a negative or fraction."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        raise _err(f"{what} must not be negative", node)
    if isinstance(node, exp.Literal) and not node.is_string:
        if not node.is_int:
            raise _err(f"{what} must be a whole number", node)
        return int(node.this)
    if isinstance(node, exp.Literal):
        raise _err(f"{what} must be a number", node)
    return None


def apply_limit(tree: exp.Query, *, default_limit: int | None, max_limit: int) -> tuple[exp.Select, LimitInfo]:
    """Apply the top-level limit rules; returns the (possibly wrapped) top SELECT and what was applied."""
    if max_limit < 0 or (default_limit is not None and default_limit < 0):
        raise HogQLError("Limits must not be negative")
    if isinstance(tree, exp.SetOperation):
        top = exp.Select(expressions=[exp.Star()]).from_(exp.Subquery(this=tree), copy=False)
    else:
        assert isinstance(tree, exp.Select)
        top = tree
    limit_node = top.args.get("limit")
    offset_node = top.args.get("offset")
    offset = 0
    if offset_node is not None:
        value = _int_constant(offset_node.expression, "OFFSET")
        offset = value if value is not None else -1
    if limit_node is not None and limit_node.args.get("limit_options"):
        raise _err("WITH TIES is not allowed on the outermost LIMIT: it could return more rows than the cap", top)
    if isinstance(limit_node, exp.Limit) and limit_node.args.get("offset") is not None:
        # ``LIMIT 5, 10``: sqlglot keeps the offset in the Limit; make it the query's OFFSET.
        if offset_node is not None:
            raise _err("Two OFFSET clauses", limit_node)
        offset_node = exp.Offset(expression=limit_node.args["offset"])
        limit_node.set("offset", None)
        top.set("offset", offset_node)
        value = _int_constant(offset_node.expression, "OFFSET")
        offset = value if value is not None else -1
    implicit = False
    if limit_node is None:
        if default_limit is not None:
            limit, implicit, count = default_limit, True, default_limit + 1
        else:
            limit, count = max_limit, max_limit
        top.set("limit", exp.Limit(expression=exp.Literal.number(count)))
    else:
        value = _int_constant(limit_node.expression, "LIMIT")
        if value is not None:
            limit = min(value, max_limit)
            limit_node.set("expression", exp.Literal.number(limit))
        else:
            limit = None
            cap = call("toUInt64", exp.Literal.number(max_limit))
            asked = call("toUInt64", call("greatest", exp.Literal.number(0), limit_node.expression))
            bounded = call("least", cap, asked)
            limit_node.set("expression", bounded)
    return top, LimitInfo(limit=limit, offset=offset if offset >= 0 else None, has_implicit_limit=implicit)


def first_select(node: exp.Expr) -> exp.Select | None:
    while isinstance(node, (exp.Subquery, exp.SetOperation)):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def remember_texts(top: exp.Select) -> None:
    """Record each output expression's HogQL text, the column name PostHog gives unnamed expressions."""
    target = first_select(top.args["from_"].this) if _is_wrapper(top) else top
    if target is None:
        return
    for item in target.expressions:  # an earlier step may have kept the text as written (posthog_names.py)
        item.meta.setdefault(TEXT_META, item.sql(dialect=HogQLDialect, comments=False))


def _is_wrapper(top: exp.Select) -> bool:
    from_ = top.args.get("from_")
    return (
        from_ is not None
        and isinstance(from_.this, exp.Subquery)
        and isinstance(from_.this.this, exp.SetOperation)
        and len(top.expressions) == 1
        and isinstance(top.expressions[0], exp.Star)
    )


def name_columns(top: exp.Select, scopes: dict[int, Scope]) -> tuple[str, ...] | None:
    """Alias unnamed output expressions with their HogQL text (when safe) and return the output names."""
    target = first_select(top.args["from_"].this) if _is_wrapper(top) else top
    if target is None or id(target) not in scopes:
        return None
    scope = scopes[id(target)]
    taken = {e.alias for e in target.expressions if isinstance(e, exp.Alias)}
    names: list[str] = []
    for item in list(target.expressions):
        if isinstance(item, exp.Alias):
            names.append(item.alias)
        elif isinstance(item, exp.Column) and not isinstance(item.this, exp.Star):
            # ClickHouse names a qualified column ``b.number`` or ``number`` depending on what else the query
            # reads; an explicit alias makes the name certain. A repeated name takes its HogQL text instead.
            name = item.name
            if not item.table and name not in names:
                names.append(name)  # an unqualified name (an alias, a subquery column) is its own column name
                continue
            if name in taken or name in names:
                name = str(item.meta.get(TEXT_META) or f"{item.table}.{item.name}")
            if not scope.try_alias(item, name, taken | set(names)):
                return None
            names.append(name)
        elif isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            star = _star_names(scope, item)
            if star is None:
                return None
            names.extend(star)
        else:
            name = str(item.meta.get(NAME_META) or item.meta.get(TEXT_META) or "")
            if name in names or not scope.try_alias(item, name, taken | set(names)):
                return None
            names.append(name)
    return tuple(names) if len(set(names)) == len(names) else None


def _star_names(scope: Scope, item: exp.Expr) -> list[str] | None:
    sources = scope.sources if isinstance(item, exp.Star) else [s for s in scope.sources if s.alias == item.table]
    if len(scope.sources) != 1:
        return None  # over a join ClickHouse may qualify some of the names
    names: list[str] = []
    for source in sources:
        cols = source.columns
        if cols is None or not cols.complete:
            return None
        names.extend(cols.names)
    return names if len(set(names)) == len(names) else None


def print_clickhouse(tree: exp.Expr) -> str:
    """ClickHouse SQL for the resolved tree (comments are never printed: they could hide or split text)."""
    # copy=False: this is the tree's last use, and copying a large tree costs more than printing it.
    return str(tree.sql(dialect=ClickHouseOutput, comments=False, copy=False))


def print_hogql(tree: exp.Expr) -> str:
    """HogQL text of the checked tree (values bound, limits applied), for the response's ``hogql`` field."""
    return str(tree.sql(dialect=HogQLDialect, comments=False))
