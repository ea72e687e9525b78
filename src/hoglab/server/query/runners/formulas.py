"""Trend formulas (``A/B``, ``(A+B)*100``): parsed with Python's ``ast`` and evaluated element-wise, never ``eval``.

Letters name the series in order (``A`` is the first). Allowed: numbers, letters, ``+ - * / %``, unary minus and
parentheses. Division by zero gives 0, as in PostHog (a chart cannot show infinity).

>>> evaluate_formula("(A+B)*100/C", [[1, 2], [3, 4], [8, 0]], attr="f")
[50.0, 0.0]
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence

from ...errors import ValidationFailed

__all__ = ["evaluate_formula", "formula_letters"]

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


def _divide(a: float, b: float) -> float:
    return a / b if b else 0.0


def _modulo(a: float, b: float) -> float:
    return a % b if b else 0.0


def _parse(formula: str, attr: str) -> ast.expr:
    try:
        tree = ast.parse(formula.strip().upper(), mode="eval")
    except SyntaxError:
        raise ValidationFailed(f"Invalid formula {formula!r}.", attr=attr) from None
    return tree.body


def formula_letters(formula: str, *, attr: str) -> set[str]:
    """The series letters a formula uses (validating its syntax)."""
    letters: set[str] = set()

    def walk(node: ast.expr) -> None:
        if isinstance(node, ast.BinOp) and type(node.op) in (*_BINARY, ast.Div, ast.Mod):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            walk(node.operand)
        elif isinstance(node, ast.Name) and len(node.id) == 1 and node.id.isalpha():
            letters.add(node.id)
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        ):
            return
        else:
            raise ValidationFailed(
                f"Invalid formula {formula!r}: use series letters, numbers, + - * / % and parentheses.", attr=attr
            )

    walk(_parse(formula, attr))
    return letters


def evaluate_formula(formula: str, series: Sequence[Sequence[float]], *, attr: str) -> list[float]:
    """``formula`` over equal-length ``series`` (``series[0]`` is ``A``), one value per position."""
    letters = formula_letters(formula, attr=attr)
    for letter in letters:
        if ord(letter) - ord("A") >= len(series):
            raise ValidationFailed(f"Formula {formula!r} uses {letter}, but there is no such series.", attr=attr)
    tree = _parse(formula, attr)
    length = max((len(s) for s in series), default=0)

    def value(node: ast.expr, i: int) -> float:
        if isinstance(node, ast.BinOp):
            left, right = value(node.left, i), value(node.right, i)
            if isinstance(node.op, ast.Div):
                return _divide(left, right)
            if isinstance(node.op, ast.Mod):
                return _modulo(left, right)
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            inner = value(node.operand, i)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.Name):
            column = series[ord(node.id) - ord("A")]
            return float(column[i]) if i < len(column) and column[i] is not None else 0.0
        assert isinstance(node, ast.Constant)
        return float(node.value)  # type: ignore[arg-type]  # walk() admitted only int/float constants

    return [value(tree, i) for i in range(length)]
