"""The tables and their joins: persons (newest version, deleted dropped), distinct ids, cohorts, overrides."""

from __future__ import annotations

from typing import Any

import pytest

from hoglab.server.hogql import HogQLError

from .conftest import Runner
from .world import MARKER, P1, P5, World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")


def _person_email(world: World, person_id: str) -> str | None:
    person = world.persons_now().get(person_id)
    return prop(person, "email") if person else None


def test_person_fields_on_events(ch: Runner, world: World) -> None:
    rows = ch.query("select uuid, person_id, person.id, person.properties.email, person.properties.plan from events")
    expected = {}
    for e in world.team("events"):
        person = world.persons_now().get(e["person_id"])
        expected[e["uuid"]] = [
            e["person_id"],
            person["id"] if person else None,
            prop(person, "email") if person else None,
            prop(person, "plan") if person else None,
        ]
    assert {r[0]: r[1:] for r in rows} == expected


def test_several_distinct_ids_count_as_one_person(ch: Runner, world: World) -> None:
    rows = ch.query(
        "select person.properties.email, count(), uniq(distinct_id) from events where person.id is not null "
        "group by 1 order by 1"
    )
    expected: dict[str, list[Any]] = {}
    for e in world.team("events"):
        email = _person_email(world, e["person_id"])
        if email is None:
            continue
        entry = expected.setdefault(email, [0, set()])
        entry[0] += 1
        entry[1].add(e["distinct_id"])
    assert rows == [[k, v[0], len(v[1])] for k, v in sorted(expected.items())]


def test_person_created_at_is_newest_version(ch: Runner, world: World) -> None:
    rows = ch.query(f"select person.created_at from events where person_id = '{P1}' limit 1")
    assert rows[0][0].startswith(world.persons_now()[P1]["created_at"][:19])


def test_pdi_join_uses_newest_mapping(ch: Runner, world: World) -> None:
    rows = ch.query("select distinct_id, pdi.person_id, pdi.person.properties.email from events order by distinct_id")
    pdi = world.pdi_now()
    expected = sorted(
        {
            (e["distinct_id"], pdi.get(e["distinct_id"]), _person_email(world, pdi.get(e["distinct_id"], "")))
            for e in world.team("events")
        }
    )
    assert sorted({tuple(r) for r in rows}) == expected


def test_person_distinct_ids_table(ch: Runner, world: World) -> None:
    rows = ch.query("select distinct_id, person_id, person.properties.email from person_distinct_ids")
    expected = {d: [p, _person_email(world, p)] for d, p in world.pdi_now().items()}
    assert {r[0]: r[1:] for r in rows} == expected


def test_persons_table_star(ch: Runner, world: World) -> None:
    compiled = ch.compile("select * from persons order by id")
    assert compiled.columns == ("id", "created_at", "properties", "is_identified")
    rows = ch.rows(compiled.sql)
    assert [r[0] for r in rows] == sorted(world.persons_now())
    assert MARKER not in repr(rows)


def test_cohort_people_latest_calculation(ch: Runner, world: World) -> None:
    rows = ch.query("select cohort_id, person_id from cohort_people order by cohort_id, person_id")
    expected = sorted((c, p) for c in (1, 2) for p in world.cohort_members(c))
    assert [tuple(r) for r in rows] == expected
    rows = ch.query(
        "select count() from events where person_id in (select person_id from cohort_people where cohort_id = 1)"
    )
    members = world.cohort_members(1)
    assert rows == [[sum(1 for e in world.team("events") if e["person_id"] in members)]]


@pytest.mark.parametrize("overrides", [False, True])
def test_person_overrides(ch: Runner, world: World, overrides: bool) -> None:
    rows = ch.query("select uuid, person_id, person.properties.email from events", person_overrides=overrides)
    expected = {}
    for e in world.team("events"):
        person_id = world.override_of(e["person_id"]) if overrides else e["person_id"]
        expected[e["uuid"]] = [person_id, _person_email(world, person_id)]
    assert {r[0]: r[1:] for r in rows} == expected
    merged_uuid = next(e["uuid"] for e in world.team("events") if e["person_id"] == P5)
    assert [r[1] for r in rows if r[0] == merged_uuid] == [P1 if overrides else P5]


def test_overrides_fast_path_has_no_join(ch: Runner) -> None:
    assert "person_overrides" not in ch.compile("select count() from events", person_overrides=True).sql
    assert "person_overrides" not in ch.compile("select person_id from events", person_overrides=False).sql
    assert "person_overrides" in ch.compile("select person_id from events", person_overrides=True).sql


def test_uniq_persons_with_overrides(ch: Runner, world: World) -> None:
    rows = ch.query("select uniq(person_id) from events", person_overrides=True)
    assert rows == [[len({world.override_of(e["person_id"]) for e in world.team("events")})]]


def test_numbers(ch: Runner) -> None:
    assert ch.query("select sum(number) from numbers(10)") == [[45]]
    assert ch.query("select n.number from numbers(2, 3) n order by 1") == [[2], [3], [4]]
    with pytest.raises(HogQLError, match="numbers"):
        ch.compile("select * from numbers(100000000000)")


def test_events_star_never_has_team_id(ch: Runner) -> None:
    compiled = ch.compile("select * from events")
    assert "team_id" not in (compiled.columns or ())
    meta = ch.raw(compiled.sql)["meta"]
    assert [m["name"] for m in meta] == list(compiled.columns or ())
    compiled = ch.compile("select * except (properties, elements_chain) from events")
    assert compiled.columns == ("uuid", "event", "timestamp", "distinct_id", "created_at", "$session_id", "$window_id")


def test_session_and_window_ids(ch: Runner, world: World) -> None:
    rows = ch.query("select uuid, $session_id, $window_id from events")
    expected = {e["uuid"]: [prop(e, "$session_id") or "", prop(e, "$window_id") or ""] for e in world.team("events")}
    assert {r[0]: r[1:] for r in rows} == expected


def test_self_join_and_right_join_see_one_team(ch: Runner, world: World) -> None:
    n = len(world.team("events"))
    assert ch.query("select count() from events a join events b on a.distinct_id = b.distinct_id") == [
        [sum(1 for a in world.team("events") for b in world.team("events") if a["distinct_id"] == b["distinct_id"])]
    ]
    assert ch.query("select count() from events a right join events b on a.uuid = b.uuid") == [[n]]
    assert ch.query("select count() from events a full join persons p on a.person_id = p.id") == [
        [n + sum(1 for p in world.persons_now() if p not in {e["person_id"] for e in world.team("events")})]
    ]
    assert ch.query("select count() from events a cross join events b") == [[n * n]]
    assert ch.query("select count() from events a, persons b") == [[n * len(world.persons_now())]]
