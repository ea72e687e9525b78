"""PostHog's printer rules for NULL, applied to one resolved scope.

* ``x = NULL`` / ``x != NULL`` are ``isNull(x)`` / ``isNotNull(x)`` (ClickHouse's ``x <> NULL`` is always NULL, so
  the condition would keep no row).
* ``concat(a, b, ..)`` (and ``a || b``) reads each argument as ``ifNull(toString(a), '')``: a missing property
  does not turn the whole text into NULL.
* ``!=``, ``NOT LIKE``, ``NOT ILIKE`` and ``NOT IN`` with an operand that may be NULL (a property, a joined
  person's field, a subquery's column or an alias) are wrapped ``ifNull(.., 1)``: a row whose property is missing
  is *not equal* to ``'x'`` and is kept, as in PostHog. ``=``, ``<``, ``<=``, ``>``, ``>=``, ``LIKE``, ``ILIKE`` and
  ``IN`` are wrapped ``ifNull(.., 0)``, so ``NOT (properties.x = 'a')`` keeps those rows too and a comparison
  selected as a column is ``0``, never NULL. Wrapping a value that is never NULL changes nothing.

>>> from hoglab.translate.parse import parse_hogql
>>> select = parse_hogql("select concat(a, 'b'), a != NULL from t")
>>> apply_null_rules(list(select.walk()))
>>> select.sql("clickhouse")
"SELECT concat(ifNull(toString(a), ''), 'b'), isNotNull(a) FROM t"
"""

from __future__ import annotations

from sqlglot import exp

from hoglab.translate.values import call

from .props import PROP_META

__all__ = ["NULLABLE_META", "apply_null_rules"]

NULLABLE_META = "hq_nullable"
"""Set on a resolved column that may be NULL although its name is not a property (joined or derived fields)."""


def _may_be_null(node: exp.Expr) -> bool:
    for part in node.walk():
        if isinstance(part, exp.Null) or part.meta.get(PROP_META) or part.meta.get(NULLABLE_META):
            return True
        # an alias or a name left for the engine: its type is not known here
        if isinstance(part, exp.Column) and not part.meta.get("hq_done"):
            return True
    return False


def _null_comparison(node: exp.EQ | exp.NEQ) -> exp.Expr | None:
    left, right = node.this, node.expression
    other = right if isinstance(left, exp.Null) else left if isinstance(right, exp.Null) else None
    if other is None:
        return None
    return call("isNull" if isinstance(node, exp.EQ) else "isNotNull", other)


def _concat_arguments(node: exp.Anonymous) -> None:
    args = []
    for arg in node.expressions:
        if isinstance(arg, exp.Literal) and arg.is_string:
            args.append(arg)
        else:
            args.append(call("ifNull", call("toString", arg), exp.Literal.string("")))
    node.set("expressions", args)


def _negation_operands(node: exp.Expr) -> list[exp.Expr] | None:
    """Operands of ``!=`` / ``NOT LIKE`` / ``NOT ILIKE`` / ``NOT IN``; None for any other node."""
    if isinstance(node, exp.NEQ):
        return [node.this, node.expression]
    if isinstance(node, (exp.Like, exp.ILike)) and node.args.get("negate"):
        return [node.this, node.expression]
    if isinstance(node, exp.Not):
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner, (exp.Like, exp.ILike)):
            return [inner.this, inner.expression]
        if isinstance(inner, exp.In):
            return [inner.this, *inner.expressions]
    return None


def apply_null_rules(nodes: list[exp.Expr]) -> None:
    """Apply the rules above to ``nodes`` (one scope's expression nodes, resolved)."""
    replaced: set[int] = set()
    for node in nodes:
        if isinstance(node, (exp.EQ, exp.NEQ)):
            replacement = _null_comparison(node)
            if replacement is not None:
                node.replace(replacement)
                replaced.add(id(node))
                continue
        if isinstance(node, exp.Anonymous) and node.name.lower() == "concat":
            _concat_arguments(node)
    for node in nodes:
        if id(node) in replaced or _in_join_condition(node):
            continue
        operands = _negation_operands(node)
        default = 1
        if operands is None:
            operands = _comparison_operands(node)
            default = 0
        if operands is None or not any(o is not None and _may_be_null(o) for o in operands):
            continue
        paren = exp.Paren()
        node.replace(call("ifNull", paren, exp.Literal.number(default)))
        paren.set("this", node)


def _in_join_condition(node: exp.Expr) -> bool:
    # ClickHouse needs the bare equalities of a JOIN ON to find its keys; PostHog leaves them unwrapped too.
    parent = node.parent
    while parent is not None and not isinstance(parent, (exp.Select, exp.SetOperation)):
        if isinstance(parent, exp.Join):
            return True
        parent = parent.parent
    return False


def _comparison_operands(node: exp.Expr) -> list[exp.Expr] | None:
    """Operands of ``=``, ``<``, ``<=``, ``>``, ``>=``, ``LIKE``, ``ILIKE``, ``IN``; None for any other node."""
    if isinstance(node, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        return [node.this, node.expression]
    if isinstance(node, (exp.Like, exp.ILike)) and not node.args.get("negate"):
        return [node.this, node.expression]
    if isinstance(node, exp.In) and not isinstance(node.parent, exp.Not):
        return [node.this, *node.expressions]
    return None
