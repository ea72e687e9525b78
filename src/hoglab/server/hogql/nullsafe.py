"""PostHog's printer rules for NULL, applied to one resolved scope.

* ``x = NULL`` / ``x != NULL`` (and ``LIKE``, ``ILIKE``, the regex operators and their negations with a NULL
  operand) are ``isNull(x)`` / ``isNotNull(x)``: ClickHouse's ``x <> NULL`` is always NULL, so the condition would
  keep no row.
* ``concat(a, b, ..)`` (and ``a || b``) reads each argument as ``ifNull(toString(a), '')``: a missing property
  does not turn the whole text into NULL.
* A comparison with an operand that may be NULL (a property, a joined person's field, a subquery's column or an
  alias) answers as PostHog's printer makes it answer, never NULL:

  - ``=``, ``LIKE``, ``ILIKE``, ``=~``, ``=~*``: false when one side is NULL, *true when both are*
    (``ifNull(a = b, isNull(a) AND isNull(b))``; against a constant just ``ifNull(.., 0)``);
  - ``!=``, ``NOT LIKE``, ``NOT ILIKE``, ``!~``, ``!~*``: true when one side is NULL, *false when both are*
    (``ifNull(a != b, isNotNull(a) OR isNotNull(b))``; against a constant ``ifNull(.., 1)``), so a row whose
    property is missing is *not equal* to ``'x'`` and is kept;
  - ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``BETWEEN`` (either way): false (``ifNull(.., 0)``); ``NOT IN`` true.

  Wrapping a value that is never NULL changes nothing, so an operand that cannot be NULL keeps the cheap form.
  Conditions of a JOIN's ``ON`` are left alone, as PostHog leaves them: ClickHouse needs their bare equalities.

>>> from hoglab.translate.parse import parse_hogql
>>> select = parse_hogql("select concat(a, 'b'), a != NULL, a = b from t")
>>> apply_null_rules(list(select.walk()))
>>> select.sql("clickhouse")
"SELECT concat(ifNull(toString(a), ''), 'b'), isNotNull(a), ifNull((a = b), isNull(a) AND isNull(b)) FROM t"
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


_MATCHES = (exp.EQ, exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike)
"""Comparisons that are true when both sides are NULL (PostHog's Eq, Like, ILike, Regex, IRegex)."""


def _null_comparison(node: exp.Expr) -> exp.Expr | None:
    """``x = NULL`` as ``isNull(x)``, ``x != NULL`` (or a negated match) as ``isNotNull(x)``; None otherwise."""
    negated = isinstance(node, exp.Not)
    inner = _unparen(node.this) if negated else node
    if isinstance(inner, exp.NEQ) and not negated:
        negated, matching = True, inner
    elif isinstance(inner, _MATCHES):
        matching = inner
        negated = negated or bool(inner.args.get("negate"))
    else:
        return None
    left, right = matching.this, matching.expression
    other = right if isinstance(left, exp.Null) else left if isinstance(right, exp.Null) else None
    if other is None:
        return None
    return call("isNotNull" if negated else "isNull", other)


def _unparen(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Paren) else node


def _concat_arguments(node: exp.Anonymous) -> None:
    args = []
    for arg in node.expressions:
        if isinstance(arg, exp.Literal) and arg.is_string:
            args.append(arg)
        else:
            args.append(call("ifNull", call("toString", arg), exp.Literal.string("")))
    node.set("expressions", args)


def _negation_operands(node: exp.Expr) -> list[exp.Expr] | None:
    """Operands of ``!=``, ``NOT LIKE``, ``NOT ILIKE``, ``!~``, ``!~*`` and ``NOT IN``; None for any other node."""
    if isinstance(node, exp.NEQ):
        return [node.this, node.expression]
    if isinstance(node, (exp.Like, exp.ILike)) and node.args.get("negate"):
        return [node.this, node.expression]
    if isinstance(node, exp.Not):
        inner = _unparen(node.this)
        if isinstance(inner, (exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike)):
            return [inner.this, inner.expression]
        if isinstance(inner, exp.In):
            return [inner.this, *inner.expressions]
    return None


def _default(node: exp.Expr, operands: list[exp.Expr], negated: bool) -> exp.Expr:
    """What a comparison answers where ClickHouse's is NULL: PostHog's value for one or both NULL sides."""
    pair = len(operands) == 2 and not isinstance(node, exp.In) and not isinstance(_unparen(node.this), exp.In)
    matching = negated or isinstance(node, _MATCHES)
    if not (pair and matching and all(_may_be_null(o) for o in operands)):
        return exp.Literal.number(1 if negated else 0)
    if negated:  # false only when both sides are NULL
        return exp.or_(call("isNotNull", operands[0].copy()), call("isNotNull", operands[1].copy()))
    return exp.and_(call("isNull", operands[0].copy()), call("isNull", operands[1].copy()))


def apply_null_rules(nodes: list[exp.Expr]) -> None:
    """Apply the rules above to ``nodes`` (one scope's expression nodes, resolved)."""
    replaced: set[int] = set()
    for node in nodes:
        if id(node) in replaced:
            continue
        replacement = _null_comparison(node)
        if replacement is not None:
            node.replace(replacement)
            replaced.update(id(n) for n in node.walk())
            continue
        if isinstance(node, exp.Anonymous) and node.name.lower() == "concat":
            _concat_arguments(node)
    for node in nodes:
        if id(node) in replaced or _in_join_condition(node):
            continue
        operands = _negation_operands(node)
        negated = operands is not None
        if operands is None:
            operands = _comparison_operands(node)
        if operands is None or not any(o is not None and _may_be_null(o) for o in operands):
            continue
        default = _default(node, operands, negated)
        paren = exp.Paren()
        node.replace(call("ifNull", paren, default))
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
    """Operands of ``=``, ``<``, ``<=``, ``>``, ``>=``, ``LIKE``, ``ILIKE``, ``=~``, ``=~*``, ``IN`` and
    ``[NOT] BETWEEN``; None for any other node."""
    if isinstance(node, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        return [node.this, node.expression]
    if isinstance(node, (exp.Like, exp.ILike)) and not node.args.get("negate"):
        return [node.this, node.expression]
    if isinstance(node, (exp.RegexpLike, exp.RegexpILike, exp.In)) and not isinstance(_parent(node), exp.Not):
        return [node.this, *node.expressions] if isinstance(node, exp.In) else [node.this, node.expression]
    if isinstance(node, exp.Between) and not isinstance(_parent(node), exp.Not):
        return [node.this, node.args["low"], node.args["high"]]
    if isinstance(node, exp.Not) and isinstance(_unparen(node.this), exp.Between):
        between = _unparen(node.this)
        return [between.this, between.args["low"], between.args["high"]]
    return None


def _parent(node: exp.Expr) -> exp.Expr | None:
    parent = node.parent
    return parent.parent if isinstance(parent, exp.Paren) else parent
