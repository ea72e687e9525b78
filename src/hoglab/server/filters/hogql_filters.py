"""``{filters}`` in a HogQL statement: a ``HogQLFilters`` (properties, dateRange) as one condition.

The condition is written by the same translator as the insight runners' (:mod:`.properties`, dates by
:func:`.dates.date_hogql`), parsed alone, and its values bound as literals; the compiler then checks and resolves it
with the rest of the query, so it names ``properties.<key>``, ``person.properties.<key>`` and ``timestamp`` of
whatever table the query reads. No filters: ``true``. ``filterTestAccounts`` is accepted; hoglab projects keep no
test-account filters.

>>> from hoglab.server.hogql.dialect import HogQLDialect
>>> filters_to_expr({"properties": [{"key": "$browser", "value": "Chrome", "type": "event"}]}).sql(HogQLDialect)
"((ifNull(properties.`$browser` = 'Chrome', 0)))"
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..hogql.parse import parse_hogql_expr
from ..hogql.values import bind_placeholders
from .dates import date_hogql
from .params import Params
from .properties import property_filters_to_hogql

__all__ = ["filters_to_expr"]


def filters_to_expr(filters: Any, *, timezone: str = "UTC") -> exp.Expr:
    """The condition for ``{filters}`` (``true`` when there is nothing to filter)."""
    if filters is None:
        return exp.true()
    data = filters.model_dump(exclude_none=True) if hasattr(filters, "model_dump") else dict(filters)
    p = Params()
    parts: list[str] = []
    date_range = data.get("dateRange") or {}
    if date_range.get("date_from") and date_range["date_from"] != "all":
        parts.append(f"timestamp >= {date_hogql(str(date_range['date_from']), timezone, p)}")
    if date_range.get("date_to"):
        parts.append(f"timestamp <= {date_hogql(str(date_range['date_to']), timezone, p)}")
    condition = property_filters_to_hogql(data.get("properties"), p, attr="filters.properties", timezone=timezone)
    if condition:
        parts.append(condition)
    if not parts:
        return exp.true()
    return bind_placeholders(parse_hogql_expr("(" + " AND ".join(parts) + ")"), p.values, timezone=timezone)
