"""``{filters}`` in a HogQL statement: a ``HogQLFilters`` (properties, dateRange) as one HogQL condition.

The condition is written by the same translator as the insight runners' (``hoglab.translate.properties``, dates
by ``hoglab.translate.dates.date_hogql``), with its values in placeholders; the compiler parses it alone, binds the
values as literals, then checks and resolves it with the rest of the query, so it names ``properties.<key>``,
``person.properties.<key>`` and ``timestamp`` of whatever table the query reads. No filters: ``None`` (the compiler
writes ``true``). ``filterTestAccounts`` is accepted; hoglab projects keep no test-account filters.

The query service hands :func:`filters_condition` to ``compile_hogql`` as its ``filters`` (a callable, asked only
when a statement uses ``{filters}``), so the compiler does not import this package, which imports the compiler.

>>> hogql, values = filters_condition({"properties": [{"key": "$browser", "value": "Chrome", "type": "event"}]})
>>> hogql, values
('(ifNull(properties.`$browser` = {p0}, 0))', {'p0': 'Chrome'})
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from hoglab.translate.dates import date_hogql
from hoglab.translate.errors import TranslationFailed
from hoglab.translate.params import Params
from hoglab.translate.properties import property_filters_to_hogql

from ..errors import ValidationFailed

__all__ = ["filters_condition", "filters_expansion"]


def filters_condition(filters: Any, *, timezone: str = "UTC") -> tuple[str, dict[str, Any]] | None:
    """The condition for ``{filters}`` as HogQL with placeholders and their values (None: nothing to filter)."""
    if filters is None:
        return None
    data = filters.model_dump(exclude_none=True) if hasattr(filters, "model_dump") else dict(filters)
    p = Params()
    parts: list[str] = []
    date_range = data.get("dateRange") or {}
    try:  # a field the writer refuses is the service's refusal (ValidationFailed), wherever the compiler asks
        if date_range.get("date_from") and date_range["date_from"] != "all":
            parts.append(f"timestamp >= {date_hogql(str(date_range['date_from']), timezone, p)}")
        if date_range.get("date_to"):
            parts.append(f"timestamp <= {date_hogql(str(date_range['date_to']), timezone, p)}")
        condition = property_filters_to_hogql(data.get("properties"), p, attr="filters.properties", timezone=timezone)
    except TranslationFailed as exc:
        raise ValidationFailed.from_translation(exc) from None
    if condition:
        parts.append(condition)
    if not parts:
        return None
    return " AND ".join(parts), p.values


def filters_expansion(filters: Any, *, timezone: str) -> Callable[[], tuple[str, dict[str, Any]] | None] | None:
    """``compile_hogql``'s ``filters`` for a ``HogQLFilters`` (or its dict): translated only if the statement asks."""
    return None if filters is None else partial(filters_condition, filters, timezone=timezone)
