"""Whatever text arrives, the compiler answers with a CompiledQuery or a HogQLError, and nothing else.

A compiled result is also run on chDB: it may fail there (a user's type error is the engine's to report) but
it may never show the other team's rows.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.hogql import CompiledQuery, HogQLError, compile_hogql

from .conftest import DATABASE, Runner
from .world import MARKER, TEAM

pytestmark = pytest.mark.xdist_group("hogql_chdb")

# HOGQL_FUZZ=10 runs ten times as many examples, and HYPOTHESIS_PROFILE=explore new ones each run (a deeper
# search before a release, not every test run: see tests/conftest.py).
SCALE = int(os.environ.get("HOGQL_FUZZ", "1"))

VALID = [
    "select event, count() from events group by event order by 2 desc",
    "select properties.$browser as b, person.properties.email from events where timestamp > now() - interval 7 day",
    "with x as (select distinct_id, count() c from events group by distinct_id) select * from x where c > 1",
    "select e.uuid, p.id from events e left join persons p on p.id = e.person_id limit 10",
    "select toStartOfDay(timestamp) d, uniq(person_id) from events where event = {e} group by d",
    "select number from numbers(10) union all select number from numbers(5)",
    "select arrayMap(x -> x * 2, [1, 2, 3]), properties['a']['b'] from events array join [1, 2] as k",
    "select distinct_id, row_number() over (partition by distinct_id order by timestamp) from events "
    "limit 3 by distinct_id",
    "select count() from events where distinct_id in (select distinct_id from person_distinct_ids) and {filters}",
    "select windowFunnel(86400)(toDateTime(timestamp), event = 'a', event = 'b') from events group by person_id",
]
VOCAB = [
    " ", "(", ")", ",", ".", ";", "'", '"', "`", "\\", "*", "=", "--", "/*", "*/", "{", "}", "{e}", "$", "[", "]",
    "select", "from", "where", "union all", "join", "on", "using", "limit", "offset", "settings", "format",
    "team_id", "system.tables", "hoglab.events", "file('x')", "remote('h', t)", "events", "persons", "numbers(3)",
    "properties", "person", "pdi", "__hq_e", "1", "-1", "0.5", "null", "true", "as", "with", "in", "global",
    "array join", "final", "sample 0.5", "prewhere", "group by", "order by", "having", "into outfile 'x'",
    "ＳＥＬＥＣＴ", "\x00", "\u200b", "é", "😀",
]  # fmt: skip


def _outcome(ch: Runner, query: str) -> None:
    try:
        compiled = compile_hogql(query, team_id=TEAM, database=DATABASE, values={"e": "$pageview"})
    except HogQLError as e:
        assert not e.internal, f"internal error for {query!r}: {e} ({e.__cause__!r})"
        return
    assert isinstance(compiled, CompiledQuery)
    try:
        rows = ch.rows(compiled.sql)
    except Exception as e:  # the engine may refuse what is valid HogQL but wrong ClickHouse (types, names)
        assert "SECRET" not in str(e)
        return
    assert MARKER not in repr(rows)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    query = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(query)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate"]))
        if action == "insert":
            query = query[:position] + draw(st.sampled_from(VOCAB)) + query[position:]
        elif action == "delete":
            query = query[:position] + query[position + draw(st.integers(1, 12)) :]
        else:
            query = query[:position] + query[position : position + draw(st.integers(1, 20))] + query[position:]
    return query


@settings(
    max_examples=400 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=mutated())
def test_mutations_of_valid_queries(ch: Runner, query: str) -> None:
    _outcome(ch, query)


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=80))
def test_random_text(ch: Runner, query: str) -> None:
    _outcome(ch, query)


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=25).map("".join))
def test_token_soup(ch: Runner, query: str) -> None:
    _outcome(ch, "select " + query)


@pytest.mark.parametrize("query", VALID)
def test_valid_queries_compile_and_run(ch: Runner, query: str) -> None:
    compiled = compile_hogql(query, team_id=TEAM, database=DATABASE, values={"e": "$pageview"})
    assert MARKER not in repr(ch.rows(compiled.sql))
