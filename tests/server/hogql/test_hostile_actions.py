"""Hostile actions: every HogQL-bearing part of an action (``matchesAction``'s argument, a step's event, URL,
URL regex, element fields and property filters, HogQL filters included) either refused with a HogQLError or
compiled, RUN on chDB and seen to return only the caller's rows. Team 2 holds ``T2SECRET`` in every text
column (its ``elements_chain`` too) and has its own action, which team 1's catalog never holds: naming it is
"not found", never its events.
"""

from __future__ import annotations

from typing import Any

import pytest

from hoglab.server.filters.actions import action_to_expr
from hoglab.server.hogql import NO_MATERIALIZED, HogQLError, WithActions
from hoglab.translate.actions import ActionDefinition

from .conftest import Runner
from .world import MARKER, World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")

FOREIGN = 900  # team 2's action: not in team 1's catalog


def _step(**fields: Any) -> dict[str, Any]:
    return {"event": None, "properties": None, "selector": None, "tag_name": None, "text": None,
            "text_matching": None, "href": None, "href_matching": None, "url": None, "url_matching": "contains",
            **fields}  # fmt: skip


# Team 1's actions: (id, name, steps). Names and values carry quotes, comments and SQL on purpose.
ACTIONS = [
    (1, "Views", [_step(event="$pageview")]),
    (2, "x' OR 1=1 --", [_step(event="$pageview' OR 1=1 --")]),
    (3, "url quotes", [_step(url="x' OR '1'='1", url_matching="exact")]),
    (4, "url regex", [_step(url="^(a+)+$", url_matching="regex")]),
    (5, "like wildcards", [_step(url="%")]),
    (6, "team guard", [_step(properties=[{"type": "hogql", "key": "team_id = 2"}])]),
    (7, "escape parens", [_step(properties=[{"type": "hogql", "key": "1 = 1) OR (1 = 1"}])]),
    (8, "system table", [_step(properties=[{"type": "hogql", "key": "(SELECT count() FROM system.tables) > 0"}])]),
    (9, "nested", [_step(properties=[{"type": "hogql", "key": "matchesAction(1)"}])]),
    (10, "self", [_step(properties=[{"type": "hogql", "key": "matchesAction(10)"}])]),
    (11, "json key team_id", [_step(properties=[{"key": "team_id", "value": "2", "type": "event"}])]),
    (12, "elements", [_step(event="$autocapture", tag_name="a')||(", text=".*", text_matching="regex",
                            href="%", href_matching="contains")]),
    (13, "selector copied", [_step(event="$autocapture", selector="a.btn")]),
    (14, "cohort of theirs", [_step(properties=[{"type": "cohort", "key": "id", "value": 2}])]),
    (15, "person filter", [_step(properties=[{"key": "email", "value": "x@y.z' OR 1=1", "type": "person"}])]),
    (16, "Everything", []),
    (17, "twin", [_step(event="a")]),
    (18, "twin", [_step(event="b")]),
]
CATALOG = WithActions(
    NO_MATERIALIZED,
    [ActionDefinition(i, name, tuple(steps), bytecode_error="selector" if i == 13 else None)
     for i, name, steps in ACTIONS],
    action_to_expr,
)  # fmt: skip
THEIRS = WithActions(NO_MATERIALIZED, [ActionDefinition(FOREIGN, "Theirs", (_step(),))], action_to_expr)

REFUSED = "refused"
NO_LEAK = "no leak"


def views(world: World) -> int:
    return sum(1 for e in world.team("events") if e["event"] == "$pageview")


CORPUS: list[tuple[str, Any, dict[str, Any] | None]] = [
    ("SELECT count() FROM events WHERE matchesAction(1)", lambda rows, w: rows == [[views(w)]], None),
    ("SELECT count() FROM events WHERE matchesAction('Views')", lambda rows, w: rows == [[views(w)]], None),
    ("SELECT count() FROM events AS e WHERE MATCHESACTION(1)", lambda rows, w: rows == [[views(w)]], None),
    ("SELECT count() FROM events WHERE matchesAction({id})", lambda rows, w: rows == [[views(w)]], {"id": 1}),
    ("SELECT count() FROM events WHERE matchesAction(16)", lambda rows, w: rows == [[len(w.team("events"))]],
     None),
    (f"SELECT count() FROM events WHERE matchesAction({FOREIGN})", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction('Theirs')", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(-1)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(99999999999999999999999)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(1.5)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(1 + 1)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(event)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction()", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(1, 2)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction((SELECT 1))", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction('twin')", REFUSED, None),  # two actions of that name
    ("SELECT count() FROM events WHERE `matchesAction`(1)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(\"x' OR 1=1 --\")", REFUSED, None),  # an identifier
    ("SELECT count() FROM events WHERE matchesAction('x'' OR 1=1 --')", lambda rows, w: rows == [[0]], None),
    ("SELECT count() FROM events WHERE matchesAction(2)", lambda rows, w: rows == [[0]], None),
    ("SELECT count() FROM events WHERE matchesAction(3)", lambda rows, w: rows == [[0]], None),
    ("SELECT count() FROM events WHERE matchesAction(4)", NO_LEAK, None),
    ("SELECT count() FROM events WHERE matchesAction(5)",
     lambda rows, w: rows == [[sum(1 for e in w.team("events") if prop(e, "$current_url") is not None)]], None),
    ("SELECT count() FROM events WHERE matchesAction(6)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(7)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(8)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(9)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(10)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(11)", lambda rows, w: rows == [[0]], None),
    ("SELECT count(), any(elements_chain) FROM events WHERE matchesAction(12)", NO_LEAK, None),
    ("SELECT count() FROM events WHERE matchesAction(13)", REFUSED, None),
    ("SELECT count() FROM events WHERE matchesAction(14)", lambda rows, w: rows == [[0]], None),
    ("SELECT count() FROM events WHERE matchesAction(15)", lambda rows, w: rows == [[0]], None),
    ("SELECT * FROM events WHERE matchesAction(16)", NO_LEAK, None),
    ("SELECT matchesAction(1) FROM persons", REFUSED, None),  # persons have no event column
    ("SELECT count() FROM events e JOIN persons p ON e.person_id = p.id WHERE matchesAction(1)", NO_LEAK, None),
    ("SELECT count() FROM (SELECT * FROM events WHERE matchesAction(1)) WHERE matchesAction(16)",
     lambda rows, w: rows == [[views(w)]], None),
]


@pytest.mark.parametrize(("statement", "expect", "values"), CORPUS, ids=[f"a{i:02d}" for i in range(len(CORPUS))])
def test_hostile_actions(ch: Runner, world: World, statement: str, expect: Any, values: dict[str, Any] | None) -> None:
    if expect == REFUSED:
        with pytest.raises(HogQLError) as info:
            ch.compile(statement, values=values, catalog=CATALOG)
        assert not info.value.internal, info.value
        return
    try:
        rows = ch.query(statement, values=values, catalog=CATALOG)
    except HogQLError:
        raise
    except Exception as e:  # the engine refused it: nothing was returned
        assert expect == NO_LEAK and MARKER not in str(e)
        return
    assert MARKER not in repr(rows)
    assert expect == NO_LEAK or expect(rows, world), rows


def test_the_other_team_reads_its_own_action_and_only_its_rows(ch: Runner, world: World) -> None:
    from .world import OTHER

    rows = ch.query(f"SELECT count(), any(elements_chain) FROM events WHERE matchesAction({FOREIGN})",
                    team_id=OTHER, catalog=THEIRS)  # fmt: skip
    assert rows == [[len(world.team("events", OTHER)), MARKER]]
    with pytest.raises(HogQLError, match="no action with id 1"):
        ch.compile("SELECT count() FROM events WHERE matchesAction(1)", team_id=OTHER, catalog=THEIRS)


def test_an_error_points_at_the_call() -> None:
    statement = "SELECT count() FROM events WHERE event = 'a' AND matchesAction(12345)"
    with pytest.raises(HogQLError) as info:
        Runner(None).compile(statement, catalog=CATALOG)
    assert info.value.column == statement.index("matchesAction") + 1
    assert "no action with id 12345" in info.value.message


def test_compiled_statements_depend_on_the_actions_definitions() -> None:
    changed = WithActions(NO_MATERIALIZED, [ActionDefinition(1, "Views", (_step(event="$screen"),))], action_to_expr)
    assert CATALOG.version() != changed.version()
    one = Runner(None).compile("SELECT count() FROM events WHERE matchesAction(1)", catalog=changed).sql
    assert "$screen" in one and "$pageview" not in one
