"""Breakdowns shared by trends and funnels: the value expression, PostHog's special buckets, the top-N ranking.

* A breakdown is an event, person or group property (``breakdown_type: "group"`` reads the event's group of
  ``breakdown_group_type_index``; ``breakdowns`` items carry their own ``group_type_index``) or a HogQL expression.
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
from dataclasses import dataclass
from typing import Any

from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index, hogql_expression, property_access

from ...errors import ValidationFailed

__all__ = [
    "BREAKDOWN_NULL",
    "BREAKDOWN_OTHER",
    "DEFAULT_BREAKDOWN_LIMIT",
    "Breakdown",
    "breakdown_items",
    "breakdown_limit",
    "breakdown_value_sql",
    "has_breakdown",
    "histogram_bins",
    "histogram_value_sql",
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


@dataclass(frozen=True)
class Breakdown:
    """One breakdown: its type (``event``, ``person``, ``group``, ``hogql``...), property and group type index;
    ``attr`` names it in errors."""

    kind: str
    prop: str
    group_index: Any = None
    attr: str = "breakdownFilter"

    def expr(self, kinds: tuple[str, ...] = ("event", "person", "group", "hogql")) -> str:
        """HogQL of the raw value (a property access or the HogQL expression); a 400 for a type not in ``kinds``."""
        if self.kind not in kinds:
            raise ValidationFailed(
                f"Breakdowns of type {self.kind!r} are not supported here ({', '.join(kinds)} are).",
                attr=f"{self.attr}.breakdown_type" if self.attr == "breakdownFilter" else self.attr,
            )
        if self.kind == "hogql":
            single = self.attr == "breakdownFilter"
            return hogql_expression(self.prop, "breakdownFilter.breakdown" if single else self.attr)
        if self.kind == "group":
            where = "breakdown_group_type_index" if self.attr == "breakdownFilter" else "group_type_index"
            index = group_type_index(self.group_index, f"{self.attr}.{where}")
            return property_access(self.prop, "group", index)
        return property_access(self.prop, self.kind)


def breakdown_items(bf: Any) -> list[Breakdown]:
    """One :class:`Breakdown` for ``breakdown``, up to three for ``breakdowns``; ``[]`` for none."""
    if bf is None:
        return []
    many = _get(bf, "breakdowns")
    if many:
        return [
            Breakdown(str(_get(item, "type") or "event"), str(_get(item, "property")), _get(item, "group_type_index"),
                      f"breakdownFilter.breakdowns.{i}")
            for i, item in enumerate(many)
        ]  # fmt: skip
    breakdown = _get(bf, "breakdown")
    if breakdown is None or breakdown == "" or breakdown == []:
        return []
    kind = str(_get(bf, "breakdown_type") or "event")
    if isinstance(breakdown, list):
        if len(breakdown) != 1:
            raise ValidationFailed("Give one breakdown property, or several in 'breakdowns'.", attr="breakdownFilter")
        breakdown = breakdown[0]
    return [Breakdown(kind, str(breakdown), _get(bf, "breakdown_group_type_index"))]


def has_breakdown(bf: Any) -> bool:
    return bool(breakdown_items(bf))


def breakdown_limit(bf: Any) -> int:
    return int(_get(bf, "breakdown_limit") or DEFAULT_BREAKDOWN_LIMIT)


def _one_value_sql(item: Breakdown, p: Params) -> str:
    return f"ifNull(nullIf(toString({item.expr()}), {p.add('')}), {p.add(BREAKDOWN_NULL)})"


def breakdown_value_sql(bf: Any, p: Params) -> str:
    """HogQL for the breakdown value of an event: a string, or an array of strings for several breakdowns."""
    items = breakdown_items(bf)
    parts = [_one_value_sql(item, p) for item in items]
    if len(items) == 1 and not _get(bf, "breakdowns"):
        return parts[0]
    return "[" + ", ".join(parts) + "]"


def histogram_bins(bf: Any) -> int | None:
    """``breakdown_histogram_bin_count`` of a one-property breakdown, or None."""
    count = _get(bf, "breakdown_histogram_bin_count")
    items = breakdown_items(bf)
    return int(count) if count and len(items) == 1 and not _get(bf, "breakdowns") else None


def histogram_value_sql(bf: Any, bins: int, where: str) -> str:
    """PostHog's histogram breakdown: the value's bin, ``'[low,high]'``, of ``bins`` bins whose edges are the
    quantiles of the distinct numeric values among the events ``where`` selects (floored to 2 decimals, repeats
    dropped, the last edge raised by 0.01 so the largest value falls in); ``'["",""]'`` for no number."""
    value = f"toFloat({breakdown_items(bf)[0].expr()})"
    levels = ", ".join(str(i / bins) for i in range(bins + 1))
    edges = (
        f"(SELECT arrayCompact(arrayMap(x -> floor(x, 2), quantiles({levels})(v))) "
        f"FROM (SELECT DISTINCT {value} AS v FROM events WHERE {where} AND v IS NOT NULL))"
    )
    # one edge (a single value) is the bin [v, v + 0.01]; bin i is [edges[i], edges[i + 1]), the last one closed
    bounds = f"if(length({edges}) = 1, [{edges}[1], {edges}[1]], {edges})"
    bin_of = """arrayElement(
        arrayConcat(arrayMap(i -> concat('[', toString(EDGES[i]), ',', toString(UPPER), ']'),
                             range(1, length(EDGES))), ['["",""]']),
        ifNull(nullIf(arrayFirstIndex(i -> VALUE >= EDGES[i] AND VALUE < UPPER, range(1, length(EDGES))), 0),
               length(EDGES)))"""
    upper = "if(i = length(EDGES) - 1, EDGES[i + 1] + 0.01, EDGES[i + 1])"
    mark = "\x00"  # VALUE stands out of the way while EDGES (which holds the value too) goes in
    return bin_of.replace("UPPER", upper).replace("VALUE", mark).replace("EDGES", bounds).replace(mark, value)


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
