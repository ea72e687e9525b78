"""The public API as other modules call it, and the shapes of HogQL the insight runners will send."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from hoglab.server import hogql
from hoglab.server.hogql import REQUIRED_SETTINGS, CompiledQuery, HogQLError, compile_hogql

from .conftest import Runner
from .world import World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")

def test_compiled_query_is_frozen_and_complete() -> None:
    compiled = compile_hogql("select event from events", team_id=3)
    assert isinstance(compiled, CompiledQuery)
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.sql = "x"  # type: ignore[misc]
    assert dict(compiled.settings) == dict(REQUIRED_SETTINGS)
    assert set(hogql.__all__) >= {"compile_hogql", "CompiledQuery", "HogQLError", "escape_literal", "escape_identifier"}
    assert issubclass(HogQLError, ValueError)


def test_team_id_must_be_an_int() -> None:
    for bad in ("1", True, None, 1.0):
        with pytest.raises(TypeError):
            compile_hogql("select 1", team_id=bad)  # type: ignore[arg-type]


def test_the_team_is_the_only_team() -> None:
    sql = compile_hogql("select * from events e join persons p on p.id = e.person_id", team_id=42).sql
    assert re.findall(r"team_id`?, (\d+)\)", sql) == ["42", "42"]


def test_internal_errors_are_hogql_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from hoglab.server.hogql import compiler

    def boom(*args: Any, **kwargs: Any) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(compiler, "check_query", boom)
    with pytest.raises(HogQLError) as info:
        compile_hogql("select 1", team_id=1)
    assert info.value.internal and isinstance(info.value.__cause__, KeyError)


def test_runner_shapes(ch: Runner, world: World) -> None:
    """What the trends/funnels/events/actors runners will build, compiled and run."""
    events = world.team("events")
    trend = ch.query(
        "select toStartOfDay(timestamp) as day, properties.$browser as breakdown_value, count() as total "
        "from events where event = {event} and timestamp >= {start} and timestamp < {end} "
        "group by day, breakdown_value order by day, breakdown_value",
        values={"event": "$pageview", "start": "2026-01-01 00:00:00", "end": "2026-01-08 00:00:00"},
    )
    expected: dict[tuple[str, str | None], int] = {}
    for e in events:
        if e["event"] == "$pageview":
            key = (e["timestamp"][:10] + " 00:00:00", prop(e, "$browser"))
            expected[key] = expected.get(key, 0) + 1
    assert sorted(((r[0], r[1]), r[2]) for r in trend) == sorted(
        expected.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
    )

    funnel = ch.query(
        "select countIf(steps >= 1), countIf(steps >= 2) from (select person_id, windowFunnel(1209600)"
        "(toDateTime(timestamp), event = 'signup', event = 'purchase') as steps from events group by person_id)"
    )
    people = {e["person_id"] for e in events}
    signed = {e["person_id"] for e in events if e["event"] == "signup"}
    bought = {
        e["person_id"]
        for e in events
        if e["event"] == "purchase"
        and any(
            s["person_id"] == e["person_id"] and s["timestamp"] <= e["timestamp"]
            for s in events
            if s["event"] == "signup"
        )
    }
    assert funnel == [[len(signed & people), len(bought)]]

    actors = ch.query(
        "select id, properties.email from persons where id in (select person_id from events where event = 'purchase') "
        "order by id"
    )
    persons = world.persons_now()
    buyers = sorted(p for p in {e["person_id"] for e in events if e["event"] == "purchase"} if p in persons)
    assert actors == [[p, prop(persons[p], "email")] for p in buyers]

    latest = ch.query("select *, person.properties.email from events order by timestamp desc limit 2")
    assert [r[0] for r in latest] == [e["uuid"] for e in sorted(events, key=lambda e: e["timestamp"], reverse=True)[:2]]
