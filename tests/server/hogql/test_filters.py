"""``{filters}``: HogQLFilters properties and date ranges, checked against Python over the inserted rows."""

from __future__ import annotations

from typing import Any

import pytest

from hoglab.schema import HogQLFilters
from hoglab.server.hogql import HogQLError

from .conftest import Runner
from .world import World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")


def _count(ch: Runner, filters: Any) -> int:
    rows = ch.query("select count() from events where {filters}", filters=filters)
    return int(rows[0][0])


def _num(e: dict[str, Any]) -> float | None:
    value = prop(e, "price")
    return float(value) if value is not None else None


CASES: list[tuple[dict[str, Any], Any]] = [
    ({"key": "$browser", "value": "Chrome"}, lambda e: prop(e, "$browser") == "Chrome"),
    ({"key": "$browser", "value": ["Chrome", "Safari"]}, lambda e: prop(e, "$browser") in ("Chrome", "Safari")),
    ({"key": "$browser", "value": "Chrome", "operator": "is_not"}, lambda e: prop(e, "$browser") != "Chrome"),
    (
        {"key": "$browser", "value": "fire", "operator": "icontains"},
        lambda e: "fire" in (prop(e, "$browser") or "").lower(),
    ),
    (
        {"key": "$browser", "value": "fire", "operator": "not_icontains"},
        lambda e: "fire" not in (prop(e, "$browser") or "").lower(),
    ),
    (
        {"key": "$browser", "value": "^(Chr|Saf)", "operator": "regex"},
        lambda e: (prop(e, "$browser") or "").startswith(("Chr", "Saf")),
    ),
    ({"key": "price", "value": 9, "operator": "gt"}, lambda e: (_num(e) or -1e9) > 9),
    ({"key": "price", "value": 7.5, "operator": "lte"}, lambda e: _num(e) is not None and _num(e) <= 7.5),  # type: ignore[operator]
    ({"key": "price", "value": [5, 10], "operator": "between"}, lambda e: _num(e) is not None and 5 <= _num(e) <= 10),  # type: ignore[operator]
    ({"key": "price", "operator": "is_set"}, lambda e: prop(e, "price") is not None),
    ({"key": "price", "operator": "is_not_set"}, lambda e: prop(e, "price") is None),
    (
        {"key": "$feature/new-checkout", "value": "test", "type": "feature"},
        lambda e: prop(e, "$feature/new-checkout") == "test",
    ),
    ({"key": "50%_off", "value": "x_y%", "operator": "icontains"}, lambda e: False),
]


@pytest.mark.parametrize(("flt", "predicate"), CASES)
def test_event_property_filters(ch: Runner, world: World, flt: dict[str, Any], predicate: Any) -> None:
    flt = {"type": "event", **flt}
    expected = sum(1 for e in world.team("events") if predicate(e))
    assert _count(ch, {"properties": [flt]}) == expected
    assert _count(ch, HogQLFilters.model_validate({"properties": [flt]})) == expected


def test_person_cohort_and_hogql_filters(ch: Runner, world: World) -> None:
    persons = world.persons_now()
    expected = sum(
        1 for e in world.team("events") if prop(persons.get(e["person_id"], {"properties": "{}"}), "plan") == "pro"
    )
    assert _count(ch, {"properties": [{"type": "person", "key": "plan", "value": "pro"}]}) == expected
    members = world.cohort_members(1)
    assert _count(ch, {"properties": [{"type": "cohort", "key": "id", "value": 1}]}) == sum(
        1 for e in world.team("events") if e["person_id"] in members
    )
    assert _count(ch, {"properties": [{"type": "hogql", "key": "event = 'signup'"}]}) == 1


def test_groups_and_date_ranges(ch: Runner, world: World) -> None:
    group = {
        "type": "OR",
        "values": [
            {
                "type": "AND",
                "values": [
                    {"type": "event", "key": "$browser", "value": "Safari"},
                    {"type": "event", "key": "price", "value": 100, "operator": "exact"},
                ],
            }
        ],
    }
    expected = sum(1 for e in world.team("events") if prop(e, "$browser") in ("Safari",) or prop(e, "price") == "100")
    assert _count(ch, {"properties": group}) == 0  # the AND of both matches nothing
    group["values"][0]["type"] = "OR"  # type: ignore[index]
    assert _count(ch, {"properties": group}) == expected
    in_range = sum(1 for e in world.team("events") if "2026-01-02" <= e["timestamp"][:10] <= "2026-01-04")
    assert _count(ch, {"dateRange": {"date_from": "2026-01-02", "date_to": "2026-01-04 23:59:59"}}) == in_range
    assert _count(ch, {"dateRange": {"date_from": "all"}}) == len(world.team("events"))
    assert _count(ch, {"dateRange": {"date_from": "-7d"}}) == 0  # the rows are in January 2026, "now" is later
    assert _count(ch, None) == len(world.team("events"))


def test_filters_cannot_smuggle_sql(ch: Runner) -> None:
    with pytest.raises(HogQLError):
        ch.compile(
            "select count() from events where {filters}",
            filters={"properties": [{"type": "hogql", "key": "1) OR (SELECT count() FROM system.tables"}]},
        )
    with pytest.raises(HogQLError):
        ch.compile(
            "select count() from events where {filters}",
            filters={"properties": [{"type": "hogql", "key": "hostName() = 'x'"}]},
        )
    assert _count(ch, {"properties": [{"type": "event", "key": "x' OR 1=1 --", "value": "' OR ''='"}]}) == 0
