"""Breakdowns shared by trends and funnels: the value expression, PostHog's special buckets, the top-N ranking.

* A missing property and an empty string both land in ``$$_posthog_breakdown_null_$$``.
* The top ``breakdown_limit`` values (default 25) are kept, ranked by the series total (descending; ascending for
  ``min`` math, as PostHog), ties by value; the rest are summed, interval by interval, into
  ``$$_posthog_breakdown_other_$$`` unless ``breakdown_hide_other_aggregation`` (then ``hasMore`` still says so).

>>> p = Params()
>>> breakdown_value_sql({"breakdown": "$browser", "breakdown_type": "event"}, p)
'ifNull(nullIf(toString(properties.`$browser`), {p0}), {p1})'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ValidationFailed
from ...filters.properties import Params, hogql_expression, property_access

__all__ = [
    "BREAKDOWN_NULL",
    "BREAKDOWN_OTHER",
    "DEFAULT_BREAKDOWN_LIMIT",
    "breakdown_items",
    "breakdown_limit",
    "breakdown_value_sql",
    "has_breakdown",
    "ranked_sql",
]

BREAKDOWN_OTHER = "$$_posthog_breakdown_other_$$"
BREAKDOWN_NULL = "$$_posthog_breakdown_null_$$"
DEFAULT_BREAKDOWN_LIMIT = 25


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def breakdown_items(bf: Any) -> list[tuple[str, str]]:
    """``[(type, property), ...]``: one for ``breakdown``, up to three for ``breakdowns``; ``[]`` for none."""
    if bf is None:
        return []
    many = _get(bf, "breakdowns")
    if many:
        return [(str(_get(item, "type") or "event"), str(_get(item, "property"))) for item in many]
    breakdown = _get(bf, "breakdown")
    if breakdown is None or breakdown == "" or breakdown == []:
        return []
    kind = str(_get(bf, "breakdown_type") or "event")
    if isinstance(breakdown, list):
        if len(breakdown) != 1:
            raise ValidationFailed("Give one breakdown property, or several in 'breakdowns'.", attr="breakdownFilter")
        breakdown = breakdown[0]
    return [(kind, str(breakdown))]


def has_breakdown(bf: Any) -> bool:
    return bool(breakdown_items(bf))


def breakdown_limit(bf: Any) -> int:
    return int(_get(bf, "breakdown_limit") or DEFAULT_BREAKDOWN_LIMIT)


def _one_value_sql(kind: str, prop: str, p: Params, attr: str) -> str:
    if kind in ("event", "person"):
        expr = f"toString({property_access(prop, kind)})"
    elif kind == "hogql":
        expr = f"toString{hogql_expression(prop, attr)}"
    else:
        raise ValidationFailed(
            f"Breakdowns of type {kind!r} are not supported (event, person and hogql are).", attr=attr
        )
    return f"ifNull(nullIf({expr}, {p.add('')}), {p.add(BREAKDOWN_NULL)})"


def breakdown_value_sql(bf: Any, p: Params) -> str:
    """HogQL for the breakdown value of an event: a string, or an array of strings for several breakdowns."""
    items = breakdown_items(bf)
    parts = [_one_value_sql(kind, prop, p, f"breakdownFilter.breakdowns.{i}") for i, (kind, prop) in enumerate(items)]
    if len(items) == 1 and not _get(bf, "breakdowns"):
        return parts[0]
    return "[" + ", ".join(parts) + "]"


def ranked_sql(inner: str, limit: int, other: str, *, ascending: bool = False) -> str:
    """Wrap ``inner`` (columns ``bucket, bv, value``) so values past the top ``limit`` become ``other``.

    The rank uses each value's total over all buckets; ``other`` rows sum the merged values per bucket. The
    output columns get fresh names (``ranked_bv``, ``ranked_value``): ClickHouse aliases are global, and an outer
    ``AS bv`` would replace the inner ``bv`` in the window's PARTITION BY.
    """
    order = "ASC" if ascending else "DESC"
    return f"""
        SELECT bucket, if(rk <= {limit}, b0, {other}) AS ranked_bv, sum(v0) AS ranked_value
        FROM (
            SELECT bucket, b0, v0, dense_rank() OVER (ORDER BY total {order}, b0 ASC) AS rk
            FROM (SELECT bucket, bv AS b0, value AS v0, sum(value) OVER (PARTITION BY bv) AS total FROM ({inner}))
        )
        GROUP BY bucket, ranked_bv
    """
