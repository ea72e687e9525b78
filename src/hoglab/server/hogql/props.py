"""Property access: JSON paths on ``properties`` columns, and how they compare.

``properties.$browser`` becomes ``JSONExtract(<properties>, '$browser', 'Nullable(String)')``:

* a string value comes back unescaped, a number or boolean as its JSON text (``'49.5'``, ``'true'``), an
  object or array as raw JSON;
* a missing key or a JSON ``null`` is ``NULL`` (PostHog returns null, not ``''``).

A property is read as a number (``toFloat64OrNull``) where only a number makes sense, and for the properties
the project's data types as numeric (``numeric`` below, PostHog's property definitions: every sampled value is
a JSON number) also where a number and a string would order differently. See :func:`type_numeric_contexts`.

Compared with a number literal (``properties.price > 10``, ``IN (1, 2)``, ``BETWEEN 1 AND 5``) the value is read
as a number (``toFloat64OrNull``), which is how PostHog treats a property its taxonomy knows as numeric;
compared with ``true``/``false`` it is compared with the JSON text ``'true'``/``'false'``. Anything else stays a
string: write ``toFloat(properties.x)`` to do arithmetic.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from .catalog import Catalog

__all__ = [
    "EVENT_PROPERTIES_META",
    "JSON_META",
    "NAME_META",
    "PERSON_PROPERTIES_META",
    "PROP_META",
    "TABLE_META",
    "TYPED_NODES",
    "NameRead",
    "json_access",
    "mark_json",
    "type_comparisons",
    "type_numeric_contexts",
    "use_materialized",
]

JSON_META = "hq_json"  # node is a reference to a JSON column (a properties column of some view)
PROP_META = "hq_prop"  # node is a property access (JSONExtract of a JSON column)
NAME_META = "hq_name"  # name the value would have as a column (the last key, as PostHog names it)
TABLE_META = "hq_table"  # HogQL table a JSON column or property access belongs to ("events", "persons", ...)
KEY_META = "hq_key"  # a property access of one top-level key: that key
EVENT_PROPERTIES_META = "hq_event_props"  # node is the events view's ``properties`` column (value: its database)
PERSON_PROPERTIES_META = "hq_person_props"  # node is the persons view's ``properties`` column (value: its database)
_MATERIALIZED_META = "hq_mat"  # the access reads a materialized column holding the same values (the catalog's)


@dataclass(frozen=True)
class NameRead:
    """A name of the project's own data that a statement reads: an event property key (``kind="events"``), a
    person property key (``"persons"``) or an event name compared with ``event`` (``"event"``). ``start``/``end``
    locate it in the statement's text (``None`` when it came from elsewhere: a bound value, ``{filters}``);
    ``literal`` says it was written as a string (``properties['x']``, ``event = 'x'``), not as a name.

    The query service warns about the ones the project has never seen (``server/query/taxonomy.py``): a
    property that does not exist reads as NULL, and an event that does not exist matches nothing, silently.
    """

    kind: Literal["event", "events", "persons"]
    name: str
    start: int | None = None
    end: int | None = None
    literal: bool = False


def mark_json(node: exp.Expr, name: str, table: str | None = None) -> exp.Expr:
    node.meta[JSON_META] = True
    node.meta[NAME_META] = name
    if table is not None:
        node.meta[TABLE_META] = table
    return node


def json_access(base: exp.Expr, keys: list[exp.Expr], catalog: Catalog, team_id: int | None = None) -> exp.Expr:
    """``JSONExtract(base, k1, k2, ..., 'Nullable(String)')``, flattening an access already made on ``base``; a
    single key of ``events``/``persons`` ``properties`` is marked with the ``catalog``'s column for it, if any
    (asked for project ``team_id``, whose read it counts as)."""
    if base.meta.get(PROP_META):
        args = list(base.expressions[:-1])
        root = args[0]
        keys = [*args[1:], *keys]
    else:
        root = base
    node = exp.Anonymous(this="JSONExtract", expressions=[root, *keys, exp.Literal.string("Nullable(String)")])
    node.meta[PROP_META] = True
    if base.meta.get(TABLE_META):
        node.meta[TABLE_META] = base.meta[TABLE_META]
    if len(keys) == 1 and isinstance(keys[0], exp.Literal) and keys[0].is_string:
        node.meta[KEY_META] = keys[0].this
    last = keys[-1] if keys else None
    if isinstance(last, exp.Literal) and last.is_string:
        node.meta[NAME_META] = last.this
        source = _materializable(root)
        if len(keys) == 1 and source is not None:
            node.meta[_MATERIALIZED_META] = catalog.column(last.this, *source, team_id)
    return node


def _materializable(root: exp.Expr) -> tuple[str, str] | None:
    """``(database, table)`` when ``root`` is a ``properties`` column whose keys may be materialized columns."""
    for meta, table in ((EVENT_PROPERTIES_META, "events"), (PERSON_PROPERTIES_META, "persons")):
        if database := root.meta.get(meta):
            return str(database), table
    return None


def use_materialized(tree: exp.Expr) -> None:
    """Read materialized columns instead of ``JSONExtract(<events or persons>.properties, key, ...)`` where one
    the catalog names one: the column's expression is that very extraction (engine/materialized.py), and the views
    carry it as they carry ``properties`` (hogql/tables.py), so the answer is the same."""
    for node in list(tree.find_all(exp.Anonymous)):
        column = node.meta.get(_MATERIALIZED_META)
        if not column or not node.meta.get(PROP_META):
            continue
        root = node.expressions[0]
        replacement = exp.column(exp.to_identifier(column, quoted=True), table=root.args.get("table"))
        replacement.meta[NAME_META] = node.meta.get(NAME_META)
        node.replace(replacement)


def _is_number(node: exp.Expr) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string


def _as_number(prop: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="toFloat64OrNull", expressions=[prop])


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
TYPED_NODES = (*_COMPARISONS, exp.In, exp.Between)
"""Nodes whose operands type_comparisons may retype."""


def _is_prop(node: exp.Expr | None) -> bool:
    return node is not None and bool(node.meta.get(PROP_META))


def type_comparisons(nodes: list[exp.Expr]) -> None:
    """Apply the number/boolean comparison rule to the comparisons in ``nodes`` (one scope's nodes)."""
    for node in nodes:
        if isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            for prop, other, key in ((left, right, "this"), (right, left, "expression")):
                if not _is_prop(prop) or other is None:
                    continue
                if _is_number(other):
                    node.set(key, _as_number(prop))
                elif isinstance(other, exp.Boolean):
                    other.replace(exp.Literal.string("true" if other.this else "false"))
        elif isinstance(node, exp.In) and _is_prop(node.this):
            items = node.expressions
            if items and all(_is_number(i) for i in items):
                node.set("this", _as_number(node.this))
        elif (
            isinstance(node, exp.Between)
            and _is_prop(node.this)
            and _is_number(node.args["low"])
            and _is_number(node.args["high"])
        ):
            node.set("this", _as_number(node.this))


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg)
# Aggregates that only take numbers (their -If/-OrNull/... combinations included, see _aggregate_base).
_NUMERIC_AGGREGATES = (
    "sum", "avg", "median", "quantile", "stddev", "var", "corr", "covar", "skew", "kurt", "sumKahan", "avgWeighted",
)  # fmt: skip
# Aggregates whose answer differs between numbers and text ('10' < '9'): numeric only for numeric-typed keys.
_ORDERING_AGGREGATES = ("min", "max", "argMin", "argMax")
_AGG_NODES = (exp.Anonymous, exp.AnonymousAggFunc, exp.CombinedAggFunc)


def _aggregate_base(name: str, bases: tuple[str, ...]) -> bool:
    lowered = name.lower()
    return any(lowered.startswith(base.lower()) for base in bases)


def _is_condition_arg(call: exp.Expr, arg: exp.Expr) -> bool:
    # sumIf(x, cond): the last argument of an -If combination is the condition, not a value
    return call.name.lower().endswith("if") and call.expressions and call.expressions[-1] is arg


def _needs_number(prop: exp.Expr, numeric_key: bool) -> bool:
    parent = prop.parent
    if isinstance(parent, _ARITHMETIC):
        return True
    if isinstance(parent, exp.Quantile) and parent.this is prop:
        return True
    if isinstance(parent, _AGG_NODES) and not _is_condition_arg(parent, prop):
        if _aggregate_base(parent.name, _NUMERIC_AGGREGATES):
            return True
        if numeric_key and _aggregate_base(parent.name, _ORDERING_AGGREGATES):
            return True  # min(x), max(x), and both the value and the key of argMin(x, key)/argMax
    return numeric_key and isinstance(parent, exp.Ordered)


def type_numeric_contexts(nodes: list[exp.Expr], numeric: Mapping[str, Collection[str]]) -> None:
    """Read property accesses in ``nodes`` as numbers where PostHog would (one scope's nodes, after resolution).

    Always: an operand of arithmetic (``properties.$screen_width * properties.$screen_height``) and a value of a
    numeric aggregate (``sum``, ``avg``, quantiles, deviations...). For a key in ``numeric[table]`` (typed as a
    number by the project's data): also in ``min``/``max``/``argMin``/``argMax`` and ``ORDER BY``, where text
    would order ``'10'`` before ``'9'``. Selected on its own a property keeps its text (docs/hogql.md).
    """
    for node in nodes:
        if not node.meta.get(PROP_META) or node.parent is None:
            continue
        key, table = node.meta.get(KEY_META), node.meta.get(TABLE_META)
        numeric_key = key is not None and table is not None and key in numeric.get(str(table), ())
        if _needs_number(node, numeric_key):
            wrapper = exp.Anonymous(this="toFloat64OrNull")
            node.replace(wrapper)
            wrapper.set("expressions", [node])
