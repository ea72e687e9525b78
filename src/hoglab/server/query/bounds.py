"""A bound on compile work, checked before any heavy Python work (validation, HogQL parsing, binding): a query
body is refused with a 400 naming the limit when it is bigger than anything the engine would run.

* ``max_query_nodes``: values, objects and lists in the body's ``query`` (50,000), counted without recursion and
  stopping at the limit, so the check costs at most the limit;
* ``max_values_items``: items of one placeholder list in ``values`` (10,000): a longer ``IN`` list belongs in a
  table or a subquery;
* ``max_query_size``: characters of any one string (262,144, ClickHouse's own ``max_query_size``: a HogQL text
  longer than that could never be sent to the engine anyway).

>>> check_compile_budget({"query": {"kind": "HogQLQuery", "query": "select {ids}", "values": {"ids": [1, 2]}}})
>>> check_compile_budget({"query": {"kind": "HogQLQuery", "query": "x", "values": {"ids": list(range(10_001))}}})
Traceback (most recent call last):
...
hoglab.server.errors.ValidationFailed: values.ids has 10001 items, more than max_values_items (10000).
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationFailed

__all__ = ["MAX_QUERY_NODES", "MAX_QUERY_SIZE", "MAX_VALUES_ITEMS", "check_compile_budget"]

MAX_QUERY_NODES = 50_000
MAX_VALUES_ITEMS = 10_000
MAX_QUERY_SIZE = 262_144


def _too_complex(detail: str, attr: str) -> ValidationFailed:
    return ValidationFailed(detail, attr=attr, code="query_too_complex")


def check_compile_budget(data: Any) -> None:
    """Refuse a request body whose ``query`` is over one of the bounds (a 400 ``query_too_complex``)."""
    query = data.get("query") if isinstance(data, dict) else None
    if not isinstance(query, dict):
        return
    values = query.get("values")
    if isinstance(values, dict):
        for name, value in values.items():
            if isinstance(value, list) and len(value) > MAX_VALUES_ITEMS:
                raise _too_complex(
                    f"values.{name} has {len(value)} items, more than max_values_items ({MAX_VALUES_ITEMS}).",
                    f"query__values__{name}",
                )
    nodes = 0
    stack: list[tuple[Any, str]] = [(query, "query")]
    while stack:
        node, where = stack.pop()
        nodes += 1
        if nodes > MAX_QUERY_NODES:
            raise _too_complex(
                f"The query has more than max_query_nodes ({MAX_QUERY_NODES}) values, objects and lists.", "query"
            )
        if isinstance(node, str):
            if len(node) > MAX_QUERY_SIZE:
                raise _too_complex(
                    f"{where} is {len(node)} characters long, more than max_query_size ({MAX_QUERY_SIZE}).",
                    where.replace(".", "__"),
                )
        elif isinstance(node, dict):
            stack.extend((value, f"{where}.{key}") for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, f"{where}.{i}") for i, value in enumerate(node))
