"""``values`` placeholders and the escape helpers: values are literals, never text."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from sqlglot import exp

from hoglab.server.hogql import HogQLError, compile_hogql, escape_identifier, escape_literal, parse_hogql

from .conftest import Runner
from .world import P1, World

pytestmark = pytest.mark.xdist_group("hogql_chdb")

# Text as users type it, including quotes, backslashes, control characters and astral code points.
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def test_values_of_every_kind(ch: Runner) -> None:
    values = {
        "s": "it's a \\ test",
        "i": 42,
        "neg": -7,
        "f": 2.5,
        "t": True,
        "n": None,
        "arr": [1, 2, 3],
        "tup": ("a", "b"),
        "u": uuid.UUID(P1),
        "d": dt.date(2026, 1, 2),
        "ts": dt.datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=dt.UTC),
    }
    rows = ch.query("select {s}, {i}, {neg}, {f}, {t}, {n}, {arr}, {tup}, {u}, {d}, {ts}", values=values)
    assert rows == [["it's a \\ test", 42, -7, 2.5, True, None, [1, 2, 3], ["a", "b"], P1, "2026-01-02",
                     "2026-01-02 03:04:05.600000"]]  # fmt: skip


def test_naive_datetime_is_project_time(ch: Runner) -> None:
    rows = ch.query(
        "select toString({ts}, 'UTC')", values={"ts": dt.datetime(2026, 1, 2, 12)}, timezone="Europe/Berlin"
    )
    assert rows == [["2026-01-02 11:00:00.000000"]]


def test_placeholders_filter_rows(ch: Runner, world: World) -> None:
    rows = ch.query("select count() from events where event = {e} and distinct_id in {ids}",
                    values={"e": "$pageview", "ids": ["d1", "d1b", "nobody"]})  # fmt: skip
    expected = sum(1 for e in world.team("events") if e["event"] == "$pageview" and e["distinct_id"] in ("d1", "d1b"))
    assert rows == [[expected]]


def test_unknown_and_unsupported_values() -> None:
    with pytest.raises(HogQLError, match=r"Placeholder \{missing\} has no value") as info:
        compile_hogql("select {missing}", team_id=1, values={"other": 1})
    assert info.value.start == 7
    for bad in ({"x": {"a": 1}}, {"x": float("nan")}, {"x": object()}, {"x": [[[[[[[[[[1]]]]]]]]]]}):
        with pytest.raises(HogQLError):
            compile_hogql("select {x}", team_id=1, values=bad)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=TEXT)
def test_string_values_cannot_change_the_statement(ch: Runner, value: str) -> None:
    compiled = compile_hogql("select {v} as v, 1 as one", team_id=1, values={"v": value})
    assert ch.rows(compiled.sql) == [[value, 1]]
    tree = parse_hogql(compiled.hogql)
    assert isinstance(tree, exp.Select) and len(tree.expressions) == 2


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=TEXT)
def test_escape_literal_round_trips(ch: Runner, value: str) -> None:
    text = escape_literal(value)
    node = parse_hogql(f"select {text}").expressions[0]
    assert isinstance(node, exp.Literal) and node.this == value
    assert ch.rows(compile_hogql(f"select {text}", team_id=1).sql) == [[value]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=TEXT.filter(bool))
def test_escape_identifier_round_trips_as_a_property_key(ch: Runner, key: str) -> None:
    hogql = f"select properties.{escape_identifier(key)} from events where 0"
    compiled = compile_hogql(hogql, team_id=1, database="hoglab_hogql_tests")
    access = next(n for n in parse_hogql(hogql).find_all(exp.Column))
    assert access.name == key and access.table == "properties"
    assert f"'{key}'" in compiled.sql or "JSONExtract" in compiled.sql
    assert ch.rows(compiled.sql) == []


@pytest.mark.parametrize("value", [1, "x", None, True, 1.5, [1, "a"], ("a", 2), dt.date(2026, 1, 1)])
def test_escape_literal_matches_values(value: Any) -> None:
    by_text = compile_hogql(f"select {escape_literal(value)}", team_id=1).sql
    by_value = compile_hogql("select {v}", team_id=1, values={"v": value}).sql
    assert by_text.split(" AS ")[0] == by_value.split(" AS ")[0]


def test_escape_identifier_keeps_plain_names_bare() -> None:
    assert escape_identifier("event") == "event"
    assert escape_identifier("select") == "`select`"
    assert escape_identifier("a`b") == "`a``b`"
    with pytest.raises(HogQLError):
        escape_identifier("")


def test_placeholder_names_may_be_keywords(ch: Runner) -> None:
    rows = ch.query("select {event}, {end}, {select}", values={"event": 1, "end": 2, "select": 3})
    assert rows == [[1, 2, 3]]
