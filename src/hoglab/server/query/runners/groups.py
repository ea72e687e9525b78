"""``GroupsQuery``: the groups of one type as a table, PostHog's groups list.

For example (a sketch of a call and its answer, not run)::

    {"kind": "GroupsQuery", "group_type_index": 0, "select": ["properties.plan", "created_at"], "search": "ac"}
    -> {"columns": ["group_name", "key", "properties.plan", "created_at"],
        "results": [["Acme Inc", "acme", "pro", "2025-06-01T10:00:00Z"]], "types": [...], "hasMore": false,
        "limit": 100, "offset": 0, "hogql": "...", "kind": "GroupsQuery"}

PostHog's semantics (its ``GroupsQueryRunner``), restated:

* The columns are always ``group_name`` and ``key`` first, then the ``select`` expressions not already there (HogQL
  over the ``groups`` table: ``properties.plan``, ``created_at``...). ``group_name`` is the group's ``name``
  property, else its key.
* ``properties`` are group filters read in the groups' own scope (``{"type": "group", "key": "plan", ...}`` tests
  the group's ``plan``) or HogQL; ``search`` keeps groups whose name or key contains it (case-insensitive).
* ``orderBy`` defaults to the newest groups first (``created_at DESC``); an entry starting with ``group_name``
  sorts by the shown name (descending if it says ``DESC``).
* ``limit`` defaults to 100 (at most 10,000); ``hasMore`` says whether another page follows.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from hoglab.schema import MAX_SELECT_RETURNED_ROWS, GroupsQuery
from hoglab.translate.params import Params
from hoglab.translate.properties import hogql_expression, property_filters_to_hogql

from .base import RunContext, register
from .events import strip_alias

__all__ = ["GROUP_NAME", "group_order", "group_search", "run_groups"]

GROUP_NAME = "coalesce(toString(properties.name), key)"
"""HogQL of a group's shown name: its ``name`` property, else its key (PostHog's ``group_name``)."""
_DIRECTION = re.compile(r"\s+(ASC|DESC)\s*$", re.I)


def group_order(entries: list[str] | None, attr: str = "orderBy") -> list[str]:
    """HogQL ORDER BY items for ``orderBy`` entries over the groups table (default: newest first).

    >>> group_order(["group_name DESC", "properties.plan"])
    ['coalesce(toString(properties.name), key) DESC', '(properties.plan\\n) ASC']
    """
    if not entries:
        return ["created_at DESC", "key ASC"]
    order = []
    for i, entry in enumerate(entries):
        text = strip_alias(entry)
        match = _DIRECTION.search(text)
        direction = match.group(1).upper() if match else "ASC"
        expression = text[: match.start()] if match else text
        if expression.strip().startswith("group_name"):
            order.append(f"{GROUP_NAME} {'DESC' if 'DESC' in text.upper() else 'ASC'}")
        else:
            order.append(f"{hogql_expression(expression, f'{attr}.{i}')} {direction}")
    return order


def group_search(p: Params, search: str) -> str:
    """The condition of a groups search (GroupsQuery's and ActorsQuery's ``search``, as PostHog's): the group's
    ``name`` property or its key contains the text, case-insensitively."""
    term = p.add(f"%{search}%")
    return f"(toString(properties.name) ILIKE {term} OR key ILIKE {term})"


@register("GroupsQuery")
def run_groups(query: GroupsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a GroupsQuery: ``columns, results, types, hasMore, limit, offset, hogql``."""
    p = Params()
    columns = ["group_name", "key"]
    sources = {"group_name": GROUP_NAME, "key": "key"}
    select = []
    for i, entry in enumerate(query.select or []):
        text = strip_alias(entry)
        if text in columns or entry in columns:
            continue
        columns.append(entry)
        sources[entry] = hogql_expression(text, f"select.{i}")
    select = [f"{sources[c]} AS c{i}" for i, c in enumerate(columns)]
    where = [f"index = {p.add(query.group_type_index)}"]
    filters = property_filters_to_hogql(query.properties, p, attr="properties", timezone=ctx.timezone,
                                        group_scope=True)  # fmt: skip
    if filters:
        where.append(filters)
    if query.search:
        where.append(group_search(p, query.search))
    limit = min(query.limit or 100, MAX_SELECT_RETURNED_ROWS)
    offset = query.offset or 0
    hogql = (
        f"SELECT {', '.join(select)} FROM groups WHERE {' AND '.join(where)} "
        f"ORDER BY {', '.join(group_order(query.orderBy))} LIMIT {limit + 1} OFFSET {offset}"
    )
    compiled = ctx.compile(hogql, values=p.values, max_limit=MAX_SELECT_RETURNED_ROWS + 1)
    result = ctx.execute_json(compiled)
    found = orjson.loads(result.data)
    return {
        "kind": "GroupsQuery",
        "columns": columns,
        "results": found[:limit],
        "types": list(result.types),
        "hogql": compiled.hogql,
        "hasMore": len(found) > limit,
        "limit": limit,
        "offset": offset,
        "timings": ctx.timings.to_list(),
    }
