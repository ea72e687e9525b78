"""HogQL as PostHog's docs write it (issue 14), through the real Query endpoint, checked against pandas.

NULL rules (concat, ``= NULL``, ``!=``/``NOT LIKE``/``NOT ILIKE``/``NOT IN`` keeping rows whose property is
missing), ``??``, numbers from properties in arithmetic and aggregates (and the data-typed numeric keys),
``person_display_name``, clear refusals of PostHog-only syntax, ``{variables.x}``, and the wrapper nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.local import LocalService
from hoglab.server.query import property_types

from .service import ServiceProject, new_service_project

pytestmark = pytest.mark.xdist_group("hogql_service")

START = datetime(2025, 5, 1, tzinfo=UTC)
PLANS = ("free", "pro", None, "Pro-trial")
PEOPLE = {"u0": {"email": "zoe@example.com"}, "u1": {"name": "Ann"}, "u2": {"username": "bob"}}


def _events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(120):
        distinct_id = f"u{i % 5}"
        props: dict[str, Any] = {
            "$screen_width": 320 + (i % 4) * 400,
            "$screen_height": 480 + (i % 3) * 300,
            "amount_paid": (i % 11) + 0.5 * (i % 2),  # 0 .. 10.5: "9" sorts after "10" as text
            "code": i if i % 2 else f"c{i}",  # numbers and strings: not a numeric key
        }
        plan = PLANS[i % 4]
        if plan is not None:
            props["plan"] = plan
        if i < 5 and distinct_id in PEOPLE:
            props["$set"] = PEOPLE[distinct_id]
        events.append(
            {
                "event": ("$pageview", "signup", "purchase")[i % 3],
                "distinct_id": distinct_id,
                "properties": props,
                "timestamp": (START + timedelta(minutes=7 * i)).isoformat().replace("+00:00", "Z"),
            }
        )
    return events


EVENTS = _events()


@pytest.fixture(scope="module")
def project(hoglab_service: LocalService) -> Iterator[ServiceProject]:
    made = new_service_project(hoglab_service, "posthog compat")
    made.capture(EVENTS)
    yield made
    made.http.close()


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rows = []
    for e in EVENTS:
        p = e["properties"]
        rows.append({"event": e["event"], "distinct_id": e["distinct_id"], "plan": p.get("plan"),
                     "w": p["$screen_width"], "h": p["$screen_height"], "amount": p["amount_paid"]})  # fmt: skip
    return pd.DataFrame(rows)


def _count(project: ServiceProject, where: str) -> int:
    value = project.rows(f"select count() from events where {where}")[0][0]
    return int(value)


def test_concat_reads_null_as_empty_text(project: ServiceProject, frame: pd.DataFrame) -> None:
    rows = project.rows("select concat(event, '/', properties.plan) as k, count() from events group by k order by k")
    expected = (frame["event"] + "/" + frame["plan"].fillna("")).value_counts().sort_index()
    assert [(k, int(n)) for k, n in rows] == list(expected.items())
    assert None not in [k for k, _ in rows]
    # the || operator is concat too
    assert project.rows("select event || '/' || properties.plan as k from events order by timestamp limit 3") == [
        [f"{e['event']}/{e['properties'].get('plan') or ''}"] for e in EVENTS[:3]
    ]


def test_comparisons_with_null_are_null_tests(project: ServiceProject, frame: pd.DataFrame) -> None:
    assert _count(project, "properties.plan != null") == int(frame["plan"].notna().sum())
    assert _count(project, "properties.plan = NULL") == int(frame["plan"].isna().sum())
    assert _count(project, "null != properties.plan") == int(frame["plan"].notna().sum())


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ("properties.plan != 'pro'", lambda plan: plan != "pro"),
        ("properties.plan NOT LIKE 'pro%'", lambda plan: plan is None or not plan.startswith("pro")),
        ("properties.plan NOT ILIKE 'pro%'", lambda plan: plan is None or not plan.lower().startswith("pro")),
        ("properties.plan NOT IN ('free', 'pro')", lambda plan: plan not in ("free", "pro")),
        ("NOT (properties.plan = 'free')", lambda plan: plan != "free"),
    ],
)
def test_negations_keep_rows_where_the_property_is_missing(
    project: ServiceProject, frame: pd.DataFrame, where: str, keep: Any
) -> None:
    expected = sum(1 for plan in frame["plan"] if keep(None if pd.isna(plan) else plan))
    assert frame["plan"].isna().any()
    assert _count(project, where) == expected


def test_coalesce_operator(project: ServiceProject, frame: pd.DataFrame) -> None:
    rows = project.rows(
        "select properties.plan ?? properties.missing ?? 'none' as p, count() from events group by p order by p"
    )
    expected = frame["plan"].fillna("none").value_counts().sort_index()
    assert [(p, int(n)) for p, n in rows] == list(expected.items())


def test_arithmetic_and_aggregates_on_properties(project: ServiceProject, frame: pd.DataFrame) -> None:
    [[area, paid, avg_paid, p90]] = project.rows(
        "select sum(properties.$screen_width * properties.$screen_height), sum(properties.amount_paid), "
        "avgIf(properties.amount_paid, event = 'purchase'), quantile(0.9)(properties.amount_paid) from events"
    )
    assert area == pytest.approx(float((frame["w"] * frame["h"]).sum()))
    assert paid == pytest.approx(float(frame["amount"].sum()))
    assert avg_paid == pytest.approx(float(frame.loc[frame["event"] == "purchase", "amount"].mean()))
    assert p90 == pytest.approx(float(frame["amount"].quantile(0.9)), rel=0.05)
    [[ratio]] = project.rows("select round(max(properties.$screen_width / properties.$screen_height), 6) from events")
    assert ratio == pytest.approx(round(float((frame["w"] / frame["h"]).max()), 6))


def test_numeric_keys_order_as_numbers(project: ServiceProject, frame: pd.DataFrame) -> None:
    # amount_paid is a number in every event, so min/max/ORDER BY read it as one ("10.5" > "9")
    [[top, bottom]] = project.rows("select max(properties.amount_paid), min(properties.amount_paid) from events")
    assert (top, bottom) == (frame["amount"].max(), frame["amount"].min())
    [[by_key]] = project.rows("select argMax(properties.amount_paid, properties.amount_paid) from events")
    assert by_key == frame["amount"].max()
    [[first]] = project.rows("select properties.amount_paid from events order by properties.amount_paid desc limit 1")
    assert float(first) == frame["amount"].max()
    # selected on its own a property keeps its text (docs/hogql.md)
    assert isinstance(first, str)
    # code is text in half the events: it stays text, so max is the greatest string
    [[code]] = project.rows("select max(properties.code) from events")
    texts = [str(e["properties"]["code"]) for e in EVENTS]
    assert code == max(texts)


def test_numeric_keys_follow_new_data(hoglab_service: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(property_types, "REFRESH_SECONDS", 0.0)  # the service runs in this process
    fresh = new_service_project(hoglab_service, "property types")
    fresh.capture([{"event": "e", "distinct_id": "a", "properties": {"v": 9}, "timestamp": "2025-05-01T00:00:00Z"}])
    fresh.capture([{"event": "e", "distinct_id": "a", "properties": {"v": 10}, "timestamp": "2025-05-01T00:01:00Z"}])
    assert fresh.rows("select max(properties.v) from events") == [[10.0]]
    fresh.capture([{"event": "e", "distinct_id": "a", "properties": {"v": "x"}, "timestamp": "2025-05-01T00:02:00Z"}])
    assert fresh.rows("select max(properties.v) from events") == [["x"]]
    fresh.http.close()


def test_person_display_name(project: ServiceProject) -> None:
    rows = project.rows("select distinct_id, person_display_name from events group by all order by distinct_id")
    expected = {d: PEOPLE.get(d, {}) for d in (f"u{i}" for i in range(5))}
    assert len(rows) == 5
    for distinct_id, (display, person_id, shown_distinct_id) in rows:
        props = expected[distinct_id]
        assert display == (props.get("email") or props.get("name") or props.get("username") or distinct_id)
        assert shown_distinct_id == distinct_id
        assert len(person_id) == 36
    names = sorted(r[0] for r in project.rows("select tupleElement(person_display_name, 1) from persons"))
    shown = sorted(p.get("email") or p.get("name") or p["username"] for p in PEOPLE.values())
    # the persons without those properties show their id
    assert [n for n in names if len(n) != 36] == shown
    assert len(names) == 5


def test_events_query_person_display_name(project: ServiceProject) -> None:
    answer = project.answer(
        {
            "kind": "EventsQuery",
            "select": ["person_display_name -- Person", "distinct_id"],
            "after": "all",
            "where": ["distinct_id = 'u0'"],
            "limit": 1,
        }
    )
    [[person, distinct_id]] = answer["results"]
    assert distinct_id == "u0"
    assert person["display_name"] == "zoe@example.com"
    assert person["distinct_id"] == "u0"
    assert set(person) == {"display_name", "id", "distinct_id"}


@pytest.mark.parametrize(
    ("hogql", "detail"),
    [
        ("select <Sparkline data={[1, 2, 3]} />", "HogQLX tags (<Sparkline ... />) are not supported"),
        ("select f'{event} happened' from events", "f-strings (f'...') are not supported"),
        ("select count() from events where event = {variables.event_name}", "Unknown variable event_name"),
    ],
)
def test_posthog_only_syntax_is_a_clear_400(project: ServiceProject, hogql: str, detail: str) -> None:
    body = project.error(hogql)
    assert body["type"] == "validation_error"
    assert body["code"]
    assert body["detail"].startswith(detail)
    assert "Syntax error" not in body["detail"] and "VarMap" not in body["detail"]


def test_variables_bind_by_code_name(project: ServiceProject, frame: pd.DataFrame) -> None:
    variables = {"0191": {"variableId": "0191", "code_name": "event_name", "value": "signup"}}
    rows = project.rows("select count() from events where event = {variables.event_name}", variables=variables)
    assert rows == [[int((frame["event"] == "signup").sum())]]


@pytest.mark.parametrize("wrapper", ["DataTableNode", "DataVisualizationNode", "InsightVizNode"])
def test_wrapper_nodes_run_their_source(project: ServiceProject, frame: pd.DataFrame, wrapper: str) -> None:
    source = {"kind": "HogQLQuery", "query": "select event, count() from events group by event order by event"}
    wrapped = project.answer({"kind": wrapper, "source": source, "full": True})
    direct = project.answer(source)
    assert wrapped["results"] == direct["results"]
    assert [(e, int(n)) for e, n in wrapped["results"]] == list(frame["event"].value_counts().sort_index().items())


def test_wrapper_without_source_is_a_400(project: ServiceProject) -> None:
    response = project.post({"kind": "DataTableNode"})
    assert response.status_code == 400
    assert response.json()["attr"] == "query__source"
