"""Property access on a real chDB, against values computed from the inserted JSON in Python."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Runner
from .world import MARKER, World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")


def _by_uuid(rows: list[list[Any]]) -> dict[str, list[Any]]:
    return {r[0]: r[1:] for r in rows}


def _expected(world: World, *path: str) -> dict[str, list[Any]]:
    return {e["uuid"]: [prop(e, *path)] for e in world.team("events")}


@pytest.mark.parametrize(
    ("hogql", "path"),
    [
        ("properties.$browser", ("$browser",)),
        ("events.properties.$browser", ("$browser",)),
        ("properties['$browser']", ("$browser",)),
        ("properties.`$feature/new-checkout`", ("$feature/new-checkout",)),
        ("properties['$feature/new-checkout']", ("$feature/new-checkout",)),
        ("properties.a.b", ("a", "b")),
        ("properties.a['b']", ("a", "b")),
        ("properties['a']['b']", ("a", "b")),
        ("properties.a", ("a",)),
        ("properties.price", ("price",)),
        ("properties.flag", ("flag",)),
        ("properties.nullish", ("nullish",)),
        ("properties.empty", ("empty",)),
        ("properties.missing", ("missing",)),
        ("properties.quote", ("quote",)),
        ("properties.uni", ("uni",)),
        ("properties.team_id", ("team_id",)),
    ],
)
def test_property_values_match_posthog_semantics(ch: Runner, world: World, hogql: str, path: tuple[str, ...]) -> None:
    rows = ch.query(f"select uuid, {hogql} from events")
    assert _by_uuid(rows) == _expected(world, *path)


def test_missing_key_is_null_not_empty_string(ch: Runner) -> None:
    rows = ch.query("select count() from events where properties.missing is null")
    assert rows == [[8]]
    assert ch.query("select count() from events where properties.empty = ''") == [[1]]


def test_property_column_is_named_after_its_last_key(ch: Runner) -> None:
    compiled = ch.compile("select properties.$browser, properties.a.b, properties['$feature/new-checkout'] from events")
    assert compiled.columns == ("$browser", "b", "$feature/new-checkout")
    meta = ch.raw(compiled.sql)["meta"]
    assert [m["name"] for m in meta] == ["$browser", "b", "$feature/new-checkout"]
    assert {m["type"] for m in meta} == {"Nullable(String)"}


def test_numbers_compare_as_numbers(ch: Runner, world: World) -> None:
    def price(e: dict[str, Any]) -> float | None:
        value = prop(e, "price")
        return float(value) if value is not None else None

    prices = [price(e) for e in world.team("events")]
    assert ch.query("select count() from events where properties.price > 9") == [
        [sum(1 for p in prices if p is not None and p > 9)]
    ]
    assert ch.query("select count() from events where properties.price = 20.5") == [[1]]
    assert ch.query("select count() from events where properties.price in (5, 100)") == [[2]]
    assert ch.query("select count() from events where properties.price between 5 and 10") == [[3]]
    assert ch.query("select count() from events where properties.price < -1") == [[0]]
    # compared with a string, the value stays a string
    assert ch.query("select count() from events where properties.price = '20.5'") == [[1]]


def test_booleans_compare_with_json_text(ch: Runner) -> None:
    assert ch.query("select count() from events where properties.flag = true") == [[1]]
    assert ch.query("select count() from events where properties.flag = false") == [[1]]


def test_person_properties_on_persons_table(ch: Runner, world: World) -> None:
    rows = ch.query("select id, properties.email, properties.nested.k from persons")
    expected = {}
    for pid, person in world.persons_now().items():
        expected[pid] = [prop(person, "email"), prop(person, "nested", "k")]
    assert _by_uuid(rows) == expected


def test_toFloat_and_toInt_conveniences(ch: Runner, world: World) -> None:
    rows = ch.query("select sum(toFloat(properties.price)), max(toInt(properties.price)) from events")
    prices = [float(p) for e in world.team("events") if (p := prop(e, "price")) is not None]
    ints = [int(p) for e in world.team("events") if (p := prop(e, "price")) is not None and p.isdigit()]
    assert rows == [[pytest.approx(sum(prices)), max(ints)]]


def test_properties_through_a_cte_and_a_subquery(ch: Runner, world: World) -> None:
    expected = sorted(b for e in world.team("events") if (b := prop(e, "$browser")) is not None)
    rows = ch.query(
        "with x as (select properties from events) "
        "select x.properties.$browser as b from x where b is not null order by b"
    )
    assert [r[0] for r in rows] == expected
    rows = ch.query(
        "select s.properties.$browser as b from (select properties from events) s where b is not null order by b"
    )
    assert [r[0] for r in rows] == expected
    rows = ch.query(
        "select b.$browser from (select properties.$browser from events) b where b.$browser is not null order by 1"
    )
    assert [r[0] for r in rows] == expected


def test_no_other_team_values(ch: Runner) -> None:
    rows = ch.query("select properties.secret, properties.$browser from events")
    assert MARKER not in repr(rows)
