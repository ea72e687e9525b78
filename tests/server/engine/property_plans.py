"""What the materialized-property tests share: the values a property can hold, the queries both plans answer,
and how an answer is taken (events' ``mat_`` and persons' ``pmat_`` columns are checked the same way)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from hypothesis import strategies as st

__all__ = ["MISSING", "answers", "comparisons", "trend", "values"]

# Every JSON type, the empty string, text that looks like a number or a boolean, quotes and backslashes,
# non-ASCII, nested values; MISSING leaves the key out.
MISSING = object()
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", " ", "0", "1", "1.5", "true", "false", "null", "Chrome", 'a"b', "a\\b", "é✓", "NULL"]),
    st.text(max_size=8),
)
values = st.one_of(
    st.just(MISSING), scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=3), scalars, max_size=2)
)


def comparisons(properties: str, key: str) -> list[str]:
    """HogQL over events reading ``<properties>.<key>`` in each way a comparison retypes it."""
    return [
        f"select {properties}.{key} as v, count() as c from events group by v order by v nulls first",
        f"select count() as c from events where {properties}.{key} = 'Chrome'",
        f"select count() as c from events where {properties}.{key} = ''",
        f"select count() as c from events where {properties}.{key} is null",
        f"select count() as c from events where {properties}.{key} > 1",
        f"select count() as c from events where {properties}.{key} in (0, 1.5)",
        f"select count() as c from events where {properties}.{key} = true",
        f"select count() as c from events where {properties}['{key}'] like '%a%'",
    ]


def trend(value: str, key: str, kind: str) -> dict[str, Any]:
    """A TrendsQuery filtering ``key`` (of type ``kind``: event or person) ``is_not value``, broken down by it."""
    return {
        "kind": "TrendsQuery",
        "dateRange": {"date_from": "2025-03-01", "date_to": "2025-03-03"},
        "series": [{"kind": "EventsNode", "event": "e", "properties": [
            {"key": key, "value": value, "operator": "is_not", "type": kind}]}],
        "breakdownFilter": {"breakdown": key, "breakdown_type": kind},
    }  # fmt: skip


def answers(post: Callable[[dict[str, Any]], httpx.Response], bodies: list[dict[str, Any]]) -> list[Any]:
    """Each body asked fresh; results, columns, types and the ClickHouse SQL of each answer."""
    out = []
    for body in bodies:
        response = post({"query": body, "refresh": "force_blocking"})
        assert response.status_code == 200, response.text
        answer = response.json()
        out.append({k: answer.get(k) for k in ("results", "columns", "types", "clickhouse")})
    return out
