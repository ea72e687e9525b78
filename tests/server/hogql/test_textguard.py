"""The text guard in front of JSON equality (hogql/textguard.py) never changes an answer.

Rows are written straight into the events table with hand-made JSON texts, so the JSON can spell a value in every
way it may: escaped (``\\u0043hrome``, ``\\"``), raw non-ASCII, numbers as ``1e3`` or ``1.50``, spaced objects,
duplicate keys, ``null``, the key missing. Each query is answered with the guard and without it (same service,
same rows) over HTTP, and the two answers must be equal; the guarded plan must really carry the guard.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.hogql.textguard import text_guards_off

START = datetime(2025, 3, 1, tzinfo=UTC)
WORDS = ["Chrome", "chrome", "Chrome ", "é✓", "a b", "Safari", "x'y", "true", "null"]
QUERIES = [
    "select count() as c from events where properties.k = 'Chrome'",
    "select count() as c from events where not (properties.k = 'Chrome')",
    "select count() as c from events where properties.k = 'é✓' or properties.k = 'x''y'",
    "select count() as c from events where properties.k in ('Chrome', 'a b', 'Safari')",
    "select count() as c from events where properties.k not in ('Chrome', 'a b')",
    "select properties.k = 'Chrome' as is_chrome, count() as c from events group by is_chrome order by is_chrome",
    "select count() as c from events where properties.k = 'true' and properties.other = 'Safari'",
    "select count() as c from events where properties.nested.k = 'Chrome'",
]


def _escape_all(text: str) -> str:
    return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in text) + '"'


def _spelling(value: Any, how: int) -> str:
    """One JSON text for ``value``: plain, ASCII-escaped, every character escaped, or a number spelled oddly."""
    if isinstance(value, str):
        return [json.dumps(value, ensure_ascii=False), json.dumps(value), _escape_all(value)][how % 3]
    if isinstance(value, float):
        return ["1.50", "1e3", "15e-1"][how % 3]
    return json.dumps(value)


values = st.one_of(st.sampled_from(WORDS), st.text(max_size=4), st.none(), st.just(1.5), st.just(["Chrome"]),
                   st.just({"k": "Chrome"}), st.just("MISSING"))  # fmt: skip


def _properties(value: Any, how: int, other: Any) -> str:
    parts = [] if value == "MISSING" else [f'"k": {_spelling(value, how)}']
    if how % 4 == 3:
        parts.append('"k": "Chrome"' if value != "Chrome" else '"k": "x"')  # a duplicate key: whichever wins
    parts.append(f'"other":{_spelling(other, how + 1)}')
    parts.append(f'"nested": {{ "k" : {_spelling(value if value != "MISSING" else None, how)} }}')
    return "{" + ", ".join(parts) + "}"


def _answers(project: Any, queries: list[str]) -> list[dict[str, Any]]:
    out = []
    for query in queries:
        body = {"query": {"kind": "HogQLQuery", "query": query}, "refresh": "force_blocking"}
        response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
        assert response.status_code == 200, response.text
        out.append(response.json())
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(values, st.integers(0, 11), values), min_size=1, max_size=15))
def test_the_guard_never_changes_an_answer(make_project: Any, hoglab_service: Any, rows: list[Any]) -> None:
    project = make_project(scopes=["query:read"])
    texts = [_properties(value, how, other) for value, how, other in rows]
    n = len(texts)
    hoglab_service.state.engine.insert_arrow("events", pa.table({
        "team_id": pa.array([project.id] * n, pa.int64()),
        "uuid": pa.array([str(uuid.uuid4()) for _ in texts]),
        "event": pa.array(["e"] * n),
        "distinct_id": pa.array([f"d{i}" for i in range(n)]),
        "person_id": pa.array([str(uuid.uuid4()) for _ in texts]),
        "timestamp": pa.array([START + timedelta(minutes=i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "properties": pa.array(texts),
        "elements_chain": pa.array([""] * n),
        "created_at": pa.array([START] * n, pa.timestamp("us", tz="UTC")),
    }))  # fmt: skip
    guarded = _answers(project, QUERIES)
    with text_guards_off():
        plain = _answers(project, QUERIES)
    for query, a, b in zip(QUERIES, guarded, plain, strict=True):
        assert a["results"] == b["results"], (query, texts)
    assert "multiSearchAny" in guarded[0]["clickhouse"] and "multiSearchAny" not in plain[0]["clickhouse"]
    # what the plain plan counts is what the texts hold (the oracle for the first query)
    first = lambda pairs: dict(reversed(pairs))  # noqa: E731  (the engine reads the first of duplicate keys)
    expected = sum(1 for t in texts if json.loads(t, object_pairs_hook=first).get("k") == "Chrome")
    assert guarded[0]["results"] == [[expected]]


@pytest.mark.parametrize(
    ("query", "guarded"),
    [
        ("select count() from events where properties.k = 'Chrome'", True),
        ("select count() from events where properties.k in ('a', 'b')", True),
        ("select count() from events where properties.k = '1e3'", False),  # a number: its text may differ
        ("select count() from events where properties.k = '{}'", False),  # an object: re-spaced text
        ("select count() from events where properties.k = 'a\"b'", False),  # needs an escape in JSON
        ("select count() from events where properties.k = ''", False),
        ("select count() from events where properties.k != 'Chrome'", False),  # kept where NULL: no guard
        ("select count() from events where properties.k like 'Chr%'", False),
    ],
)
def test_which_comparisons_get_the_guard(live_project: Any, query: str, guarded: bool) -> None:
    answer = _answers(live_project, [query])[0]
    assert ("multiSearchAny" in answer["clickhouse"]) is guarded, answer["clickhouse"]
