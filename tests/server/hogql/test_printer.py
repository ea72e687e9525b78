"""Top-level LIMIT rules (default + 1 for hasMore, the cap), output names and the echoed HogQL."""

from __future__ import annotations

import pytest

from hoglab.server.hogql import HogQLError, compile_hogql

from .conftest import Runner
from .world import World

pytestmark = pytest.mark.xdist_group("hogql_chdb")


def test_default_limit_runs_one_more_row(ch: Runner) -> None:
    compiled = ch.compile("select number from numbers(1000)")
    assert (compiled.limit, compiled.offset, compiled.has_implicit_limit) == (100, 0, True)
    assert compiled.hogql == "SELECT number FROM numbers(1000) LIMIT 101"
    assert len(ch.rows(compiled.sql)) == 101
    compiled = ch.compile("select number from numbers(1000) offset 990")
    assert (compiled.limit, compiled.offset) == (100, 990)
    assert [r[0] for r in ch.rows(compiled.sql)] == list(range(990, 1000))


def test_explicit_limit_is_kept_and_capped(ch: Runner) -> None:
    compiled = ch.compile("select number from numbers(100000) limit 50")
    assert (compiled.limit, compiled.has_implicit_limit) == (50, False)
    assert len(ch.rows(compiled.sql)) == 50
    compiled = ch.compile("select number from numbers(100000) limit 60000")
    assert compiled.limit == 10_000
    assert "LIMIT 10000" in compiled.hogql
    assert len(ch.rows(compiled.sql)) == 10_000
    compiled = ch.compile("select number from numbers(100000) limit 5, 20")
    assert (compiled.limit, compiled.offset) == (20, 5)
    assert [r[0] for r in ch.rows(compiled.sql)] == list(range(5, 25))


def test_expression_limit_is_bounded(ch: Runner) -> None:
    compiled = ch.compile("select number from numbers(100000) limit 20000 + 20000")
    assert compiled.limit is None
    assert len(ch.rows(compiled.sql)) == 10_000
    assert len(ch.rows(ch.compile("select number from numbers(100) limit 2 + 3").sql)) == 5
    assert len(ch.rows(ch.compile("select number from numbers(100) limit 0 - 5").sql)) == 0
    assert len(ch.rows(ch.compile("select number from numbers(100) limit {n}", values={"n": 7}).sql)) == 7
    assert len(ch.rows(ch.compile("select number from numbers(100000) limit {n}", values={"n": 10**9}).sql)) == 10_000


@pytest.mark.parametrize("limit", ["-5", "0.5", "'10'", "10 with ties"])
def test_limits_that_could_escape_the_cap_are_refused(limit: str) -> None:
    with pytest.raises(HogQLError):
        compile_hogql(f"select number from numbers(10) limit {limit}", team_id=1)


def test_inner_limits_are_free(ch: Runner) -> None:
    rows = ch.query("select count() from (select number from numbers(50000) limit 20000)")
    assert rows == [[20000]]


def test_custom_limits(ch: Runner) -> None:
    compiled = ch.compile("select number from numbers(100)", default_limit=10, max_limit=20)
    assert len(ch.rows(compiled.sql)) == 11
    compiled = ch.compile("select number from numbers(100)", default_limit=None, max_limit=30)
    assert (compiled.limit, compiled.has_implicit_limit) == (30, False)
    assert len(ch.rows(compiled.sql)) == 30


def test_union_all_is_limited_as_a_whole(ch: Runner) -> None:
    compiled = ch.compile("select number from numbers(80) union all select number from numbers(80)")
    assert compiled.has_implicit_limit
    assert len(ch.rows(compiled.sql)) == 101
    compiled = ch.compile("select number from numbers(80) union all select number from numbers(80) limit 3")
    # ClickHouse reads the LIMIT as the second SELECT's: 80 + 3 rows, then the default limit on the whole.
    assert len(ch.rows(compiled.sql)) == 83


def test_union_distinct_intersect_except(ch: Runner) -> None:
    assert ch.query("select number from numbers(5) union distinct select number from numbers(3) order by 1") == [
        [i] for i in range(5)
    ]
    assert ch.query("select number from numbers(5) intersect select number + 3 from numbers(5) order by 1") == [
        [3],
        [4],
    ]
    assert ch.query("select number from numbers(3) except select number from numbers(1) order by 1") == [[1], [2]]
    with pytest.raises(HogQLError, match="DISTINCT or ALL"):
        compile_hogql("select 1 union select 2", team_id=1)


def test_column_names_match_engine(ch: Runner) -> None:
    compiled = ch.compile(
        "select event, count(), count() + 1, toStartOfDay(timestamp) as day, person.properties.email, "
        "e.properties.$browser from events e group by event, day, person.properties.email, e.properties.$browser"
    )
    assert compiled.columns == ("event", "count()", "count() + 1", "day", "email", "$browser")
    assert [m["name"] for m in ch.raw(compiled.sql)["meta"]] == list(compiled.columns or ())


def test_hogql_echo_is_normalised(ch: Runner) -> None:
    compiled = ch.compile("select   event  from events where properties.$browser = {b} limit 5", values={"b": "it's"})
    assert compiled.hogql == "SELECT event FROM events WHERE properties.$browser = 'it''s' LIMIT 5"
    again = ch.compile(compiled.hogql)
    assert again.sql == compiled.sql


@pytest.mark.parametrize(
    "query",
    [
        "select a.number, b.number from numbers(2) a, numbers(2) b",
        "select * from events e join persons p on p.id = e.person_id",
        "select person.id, e.person_id, p.id from events e join persons p on p.id = e.person_id",
        "select e.event, e2.event, e.event as x from events e join events e2 on e.uuid = e2.uuid",
        "select properties.$browser, person.properties.$browser from events",
    ],
)
def test_duplicate_names_are_made_unique(ch: Runner, query: str) -> None:
    compiled = ch.compile(query)
    names = [m["name"] for m in ch.raw(compiled.sql)["meta"]]
    assert compiled.columns is None or list(compiled.columns) == names
    assert len(set(names)) == len(names)


def test_scalar_with_on_a_union_is_resolved(ch: Runner, world: World) -> None:
    compiled = ch.compile("WITH (SELECT count() FROM events) AS c SELECT c UNION ALL SELECT c + 1")
    assert compiled.columns == ("c",)
    assert sorted(r[0] for r in ch.rows(compiled.sql)) == [len(world.team("events")), len(world.team("events")) + 1]
