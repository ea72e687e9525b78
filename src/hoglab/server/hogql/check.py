"""Allow-lists over the parsed tree: every node kind, function and name must be known to be harmless.

The check is an allow-list of sqlglot node classes, not a deny-list: a construct sqlglot learns to parse
tomorrow is refused until someone decides it is safe. Names of tables are not checked here (resolve.py maps
each one to a guarded view or refuses it); this step refuses what no resolution could make safe.

>>> from hoglab.translate.parse import parse_hogql
>>> check_query(parse_hogql("select count() from events"))
>>> check_query(parse_hogql("select hostName()"))
Traceback (most recent call last):
...
hoglab.translate.errors.HogQLError: Function 'hostName' is not allowed
>>> check_query(parse_hogql("select countt() from events"))
Traceback (most recent call last):
...
hoglab.translate.errors.HogQLError: Function 'countt' is not allowed; did you mean 'count'?
"""

from __future__ import annotations

import re

from sqlglot import exp

from hoglab.translate.errors import HogQLError, node_span

from .functions import function_names, is_allowed_function
from .posthog_names import POSTHOG_ONLY
from .suggest import did_you_mean

__all__ = ["INTERNAL_PREFIX", "RESERVED_NAMES", "chain_top", "check_query", "function_name"]

INTERNAL_PREFIX = "__hq"
"""Prefix of every name the compiler invents (CTE names, join aliases); users may not use it."""

RESERVED_NAMES = frozenset({"team_id"})
"""Names that can never be a column, alias or table alias: ``team_id`` is the isolation key."""

_ALLOWED_NODES: tuple[type[exp.Expr], ...] = (
    # query structure
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery, exp.With, exp.CTE, exp.From, exp.Join,
    exp.Table, exp.TableAlias, exp.TableSample, exp.Where, exp.PreWhere, exp.Group, exp.Rollup, exp.Cube,
    exp.GroupingSets, exp.Having, exp.Qualify, exp.Order, exp.Ordered, exp.WithFill, exp.Limit, exp.Offset,
    exp.Distinct, exp.Window, exp.WindowSpec, exp.Star, exp.Alias, exp.Column, exp.Identifier, exp.Dot,
    exp.Bracket, exp.Lambda, exp.Paren, exp.Tuple, exp.Array, exp.Struct, exp.Exists, exp.In, exp.LimitOptions,
    # values
    exp.Literal, exp.Boolean, exp.Null, exp.HexString, exp.BitString, exp.Interval, exp.DataType,
    exp.DataTypeParam, exp.Var,
    # operators
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.Not, exp.And, exp.Or, exp.Xor,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is, exp.Like,
    exp.ILike, exp.RegexpLike, exp.RegexpILike, exp.Between, exp.DPipe, exp.Concat, exp.Case, exp.If,
    # function calls (names checked below)
    exp.Anonymous, exp.AnonymousAggFunc, exp.CombinedAggFunc, exp.ParameterizedAgg,
    exp.CombinedParameterizedAgg, exp.Quantile, exp.Explode, exp.Cast, exp.Extract, exp.Trim, exp.StrPosition,
    exp.Substring,
)  # fmt: skip

# Typed call nodes the dialect still builds, by the ClickHouse function they print as.
_TYPED_CALLS: dict[type[exp.Expr], str] = {
    exp.Quantile: "quantile",
    exp.Explode: "arrayJoin",
    exp.Struct: "tuple",
    exp.Concat: "concat",
}

_EXPLAINED: dict[type[exp.Expr], str] = {
    exp.Final: "FINAL is not supported: persons and distinct ids are already deduplicated",
    exp.Columns: "COLUMNS(...) matchers are not supported: name the columns",
    exp.Apply: "APPLY is not supported",
    exp.Values: "VALUES is not supported",
    exp.Command: "Only SELECT queries are allowed",
    exp.Into: "INTO is not allowed in HogQL",
}

# A keyword the dialect keeps as a bare word (an INTERVAL or EXTRACT unit, a window frame bound): plain ASCII
# words only. sqlglot also reads "7 ＳＥＬＥＣＴday" as a unit, which the printer could not write safely.
_KEYWORD_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*")

_CALL_NODES = (
    exp.Anonymous,
    exp.AnonymousAggFunc,
    exp.CombinedAggFunc,
    exp.ParameterizedAgg,
    exp.CombinedParameterizedAgg,
)

_FORBIDDEN_SELECT_ARGS = {
    "into": "INTO",
    "settings": "SETTINGS",
    "format": "FORMAT",
    "hint": "Hints",
    "locks": "Locks",
    "connect": "CONNECT BY",
    "match": "MATCH_RECOGNIZE",
    "laterals": "LATERAL",
    "kind": "SELECT AS STRUCT/VALUE",
    "operation_modifiers": "Operation modifiers",
    "options": "Options",
    "pivots": "PIVOT",
}


def function_name(node: exp.Expr) -> str:
    """The ClickHouse name a call node prints as."""
    for cls, name in _TYPED_CALLS.items():
        if isinstance(node, cls):
            return name
    return str(node.name if not isinstance(node.this, exp.Identifier) else node.this.name)


def _error(message: str, node: exp.Expr | None) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def _positioned(node: exp.Expr) -> exp.Expr:
    """``node``, or its nearest ancestor with a position (sqlglot keeps none on a bare word such as a unit)."""
    located: exp.Expr | None = node
    while located is not None and node_span(located)[0] is None:
        located = located.parent
    return located or node


def chain_top(node: exp.Expr) -> exp.Expr:
    """The outermost ``Column``/``Dot`` of a dotted name (``a.b.c.d.e`` is a Dot over a Column)."""
    top = node
    while isinstance(top.parent, exp.Dot) and top.parent.this is top:
        top = top.parent
    return top


def _is_json_path(node: exp.Identifier) -> bool:
    """``properties.team_id`` reads a JSON key, not a column: anything after ``properties`` is data."""
    if not isinstance(node.parent, (exp.Column, exp.Dot)):
        return False
    parts = chain_top(node.parent).parts
    names = [p.name.lower() for p in parts]
    index = next((i for i, p in enumerate(parts) if p is node), -1)
    return "properties" in names[: max(index, 0)]


def _check_identifier(node: exp.Identifier) -> None:
    name = node.name.lower()
    if name not in RESERVED_NAMES and not name.startswith(INTERNAL_PREFIX):
        return
    if _is_json_path(node):
        return
    if name in RESERVED_NAMES:
        raise _error(f"'{node.name}' is reserved: a query only ever sees its own project's rows", node)
    raise _error(f"Names starting with '{INTERNAL_PREFIX}' are reserved", node)


def _check_call(node: exp.Expr) -> None:
    name = function_name(node)
    lowered = name.lower()
    if lowered == "view" or isinstance(node.this, exp.Select):
        raise _error("The view() table function is not allowed", node)
    if isinstance(node, exp.Anonymous) and isinstance(node.this, exp.Identifier) and node.this.quoted:
        raise _error("Quoted function names are not allowed", node)
    if lowered in POSTHOG_ONLY:
        raise _error(f"Function '{name}' needs PostHog itself, which hoglab is not: {POSTHOG_ONLY[lowered]}", node)
    if not is_allowed_function(name):
        hint = did_you_mean(name, function_names())
        raise _error(f"Function '{name}' is not allowed" + (f"; {hint}" if hint else ""), node)


def _check_table(node: exp.Table) -> None:
    if node.args.get("db") or node.args.get("catalog"):
        raise _error(
            "Database-qualified tables are not allowed: query events, persons, person_distinct_ids, "
            "cohort_people or numbers(n)",
            node,
        )
    if node.args.get("joins") or node.args.get("pivots") or node.args.get("laterals"):
        raise _error("Unsupported table syntax", node)


def check_query(tree: exp.Expr) -> None:
    """Raise a HogQLError at the first node that is not allowed; return ``None`` when the tree is clean."""
    for node in tree.walk():
        cls = type(node)
        if cls in _EXPLAINED:
            raise _error(_EXPLAINED[cls], node)
        if cls is exp.Placeholder:
            raise _error(f"Placeholder {{{node.name}}} has no value", node)
        if not isinstance(node, _ALLOWED_NODES) and cls not in _TYPED_CALLS:
            raise _error(f"Unsupported syntax: {cls.__name__}", node)
        if isinstance(node, _CALL_NODES):
            if isinstance(node.parent, exp.Table):
                continue  # a table function: resolve.py allows numbers(n) only; its arguments are still walked
            _check_call(node)
        elif isinstance(node, exp.Identifier):
            _check_identifier(node)
        elif isinstance(node, exp.Table):
            _check_table(node)
        elif isinstance(node, (exp.Select, exp.SetOperation)):
            for key, label in _FORBIDDEN_SELECT_ARGS.items():
                if node.args.get(key):
                    value = node.args[key]
                    raise _error(f"{label} is not allowed in HogQL", value if isinstance(value, exp.Expr) else node)
        elif isinstance(node, exp.Star) and (node.args.get("replace") or node.args.get("rename")):
            raise _error("Only * EXCEPT (...) is supported as a * modifier", node)
        elif isinstance(node, exp.With) and node.args.get("recursive"):
            raise _error("WITH RECURSIVE is not supported", node)
        elif isinstance(node, exp.Var) and (
            not isinstance(node.parent, (exp.Interval, exp.Extract, exp.WindowSpec))
            or not _KEYWORD_WORDS.fullmatch(node.name)
        ):
            raise _error(f"Unexpected word {node.name!r}", _positioned(node))
        elif isinstance(node, exp.Limit) and node.args.get("limit_options"):
            opts = node.args["limit_options"]
            if opts.args.get("percent") or opts.args.get("rows"):
                raise _error("LIMIT ... PERCENT/ROWS is not supported", node)
