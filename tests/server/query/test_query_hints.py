"""Errors and answers that say what to do: did-you-mean for functions, tables and fields, the double-quoted string
hint, and a warning (PostHog's ``metadata.warnings``) for a property or event the project has never seen, whose
suggestion comes from the caller's project only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from querytesting import Project, Seeded, capture, make_events, new_project

from hoglab.local import LocalService
from posthog_openapi import assert_valid


@pytest.fixture(scope="module")
def people(hoglab_service: LocalService) -> Iterator[Project]:
    """A project whose persons have properties (``plan``, ``email``), set by their events' ``$set``."""
    project = new_project(hoglab_service, "hints")
    events = make_events(40)
    for i, event in enumerate(events):
        event["properties"]["$set"] = {"plan": ("free", "pro")[i % 2], "email": f"u{i % 23}@example.com"}
    capture(hoglab_service, project.id, events)
    yield project
    project.close()


def _refusal(seeded: Seeded, hogql: str) -> dict[str, Any]:
    response = seeded.a.query(hogql)
    assert response.status_code == 400, response.text
    body: dict[str, Any] = response.json()
    assert (body["type"], body["code"], body["attr"]) == ("validation_error", "invalid_input", None)
    return body


@pytest.mark.parametrize(
    ("hogql", "wrong", "hint"),
    [
        ("select countt() from events", "countt", "Function 'countt' is not allowed; did you mean 'count'?"),
        ("select countiff(event = 'signup') from events", "countiff", "did you mean 'countIf'?"),
        ("select count() from evnts", "evnts", "Unknown table 'evnts' (did you mean 'events'?)"),
        ("select evnt from events", "evnt", "Unknown field 'evnt' (reading events); did you mean 'event'?"),
        ("select e.timestmp from events e", "timestmp", "not found on table 'events'; did you mean 'timestamp'?"),
        ("select count() from events where evnt.x = 1", "evnt", "Unknown table or field 'evnt'; did you mean"),
    ],
)
def test_unknown_names_suggest_the_closest(seeded: Seeded, hogql: str, wrong: str, hint: str) -> None:
    body = _refusal(seeded, hogql)
    assert hint in body["detail"]
    assert wrong in hogql[body["start"] : body["end"]]


def test_no_suggestion_when_nothing_is_close(seeded: Seeded) -> None:
    body = _refusal(seeded, "select zqxjw() from events")
    assert body["detail"].startswith("Function 'zqxjw' is not allowed") and "did you mean" not in body["detail"]


def test_a_double_quoted_string_is_a_name_and_the_error_says_so(seeded: Seeded) -> None:
    hogql = 'select count() from events where event = "signup"'
    body = _refusal(seeded, hogql)
    assert body["detail"].startswith("Unknown field 'signup' (reading events); strings take single quotes: 'signup'")
    assert hogql[body["start"] : body["end"]] == '"signup"'
    # backticks quote a name on purpose: no string hint there
    assert "single quotes" not in _refusal(seeded, "select count() from events where event = `signup`")["detail"]
    # with single quotes it runs
    assert seeded.a.rows("select count() from events where event = 'signup'")[0][0] == 100


def _warnings(project: Project, hogql: str, **body: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    response = project.query(hogql, refresh="force_blocking", **body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer, (answer["metadata"] or {}).get("warnings", [])


def test_a_property_never_seen_is_a_warning_with_the_closest_key(seeded: Seeded) -> None:
    hogql = "select properties.$browsr as b, count() as n from events group by b"
    answer, warnings = _warnings(seeded.a, hogql)
    assert answer["results"] == [[None, 400]]  # the NULL it reads as, now with a warning
    assert warnings == [{
        "message": "Property '$browsr' has never been seen on this project's events: it reads as NULL; "
                   "did you mean '$browser'?",
        "start": hogql.index("$browsr"), "end": hogql.index("$browsr") + len("$browsr"), "fix": "$browser",
    }]  # fmt: skip
    assert answer["metadata"]["isValid"] is True and answer["metadata"]["errors"] == []
    assert_valid(answer, "HogQLQueryResponse")


def test_person_properties_brackets_and_event_names(people: Project) -> None:
    hogql = ("select person.properties.plann, properties['prise'] from events "
             "where event in ('signupp', 'purchase') limit 1")  # fmt: skip
    _, warnings = _warnings(people, hogql)
    by_fix = {w["fix"]: w for w in warnings}
    assert set(by_fix) == {"plan", "'price'", "'signup'"}
    assert by_fix["plan"]["message"].startswith("Person property 'plann' has never been seen on this project's")
    # the persons' keys are not the events': a person property read on events is "never seen" there
    _, on_events = _warnings(people, "select properties.email from events limit 1")
    assert [w["message"].split(":")[0] for w in on_events] == [
        "Property 'email' has never been seen on this project's events"
    ]
    assert hogql[by_fix["'price'"]["start"] : by_fix["'price'"]["end"]] == "'prise'"
    assert by_fix["'signup'"]["message"] == (
        "Event 'signupp' has never been seen in this project: it matches no event; did you mean 'signup'?"
    )


def test_known_names_and_bound_values(seeded: Seeded) -> None:
    answer, warnings = _warnings(seeded.a, "select properties.$browser, properties.plan from events "
                                         "where event = 'signup' limit 1")  # fmt: skip
    assert warnings == [] and answer["metadata"] is None  # as before: no warnings, no metadata
    # a value bound on the server is checked too; it has no place in the text
    _, warnings = _warnings(seeded.a, "select count() from events where event = {e}", values={"e": "purchse"})
    assert [(w["fix"], w["start"]) for w in warnings] == [("'purchase'", None)]


def test_suggestions_come_from_the_callers_project_only(seeded: Seeded) -> None:
    # only project B has the property 'secret': A's typo of it is never seen in A, and nothing of B is suggested
    _, warnings = _warnings(seeded.a, "select properties.secrt from events limit 1")
    assert len(warnings) == 1 and warnings[0]["fix"] is None and "secret" not in warnings[0]["message"]
    # B's own query reads it without a warning
    response = seeded.b.query("select properties.secret from events limit 1", refresh="force_blocking")
    assert response.status_code == 200 and response.json()["metadata"] is None
