"""The four insight kinds over HTTP on the real service: answers valid for PostHog's OpenAPI, hostile bodies a 400
naming the field (never a 500), and each project reading only its own events, HogQL fragments included."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from hoglab.server.ingest import load_file
from posthog_openapi import assert_valid

from .oracle import generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

RANGE = {"date_from": "2025-06-01", "date_to": "2025-06-14"}
EVENT = {"kind": "EventsNode", "event": "$pageview"}
QUERIES = {
    "RetentionQuery": {"kind": "RetentionQuery", "dateRange": RANGE, "retentionFilter": {"totalIntervals": 4}},
    "LifecycleQuery": {"kind": "LifecycleQuery", "dateRange": RANGE, "series": [EVENT]},
    "StickinessQuery": {"kind": "StickinessQuery", "dateRange": RANGE, "series": [EVENT],
                        "compareFilter": {"compare": True}},
    "PathsQuery": {"kind": "PathsQuery", "dateRange": RANGE, "pathsFilter": {"includeEventTypes": ["custom_event"]}},
}  # fmt: skip


def _load(project, seed: int, persons: int, tmp_path: Path) -> int:
    events = to_events(generate(seed=seed, persons=persons))
    path = tmp_path / f"events-{project.id}.jsonl"
    lines = []
    for e in events:
        stamp = e["timestamp"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines.append(json.dumps({**e, "timestamp": stamp}))
    path.write_text("\n".join(lines) + "\n")
    load_file(project.service.state.engine, project.id, path)
    return len(events)


def _post(project, query: dict):
    return project.http.post(f"/api/projects/{project.id}/query/", json={"query": query})


@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_each_kind_answers_a_valid_posthog_response(make_project, tmp_path, kind):
    project = make_project()
    _load(project, seed=3, persons=25, tmp_path=tmp_path)
    answer = _post(project, QUERIES[kind])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["results"], body
    assert_valid(body, f"{kind}Response")
    again = _post(project, QUERIES[kind]).json()
    assert again["is_cached"] is True and again["results"] == body["results"]


def test_persons_of_a_cell_over_http(make_project, tmp_path):
    project = make_project()
    _load(project, seed=4, persons=25, tmp_path=tmp_path)
    retention = _post(project, QUERIES["RetentionQuery"]).json()
    size = retention["results"][1]["values"][0]["count"]
    actors = _post(project, {"kind": "ActorsQuery", "select": ["id"], "source": {
        "kind": "InsightActorsQuery", "source": QUERIES["RetentionQuery"], "interval": 1}})  # fmt: skip
    assert actors.status_code == 200, actors.text
    assert len(actors.json()["results"]) == size > 0
    assert_valid(actors.json(), "ActorsQueryResponse")


def test_each_project_reads_only_its_own_events(make_project, tmp_path):
    mine, theirs = make_project(), make_project()
    n_mine = _load(mine, seed=5, persons=6, tmp_path=tmp_path)
    n_theirs = _load(theirs, seed=6, persons=30, tmp_path=tmp_path)
    assert n_mine != n_theirs
    # A HogQL breakdown with its own subquery over `events` still only sees this project's events.
    breakdown = {"breakdown": "toString((SELECT count() FROM events))", "breakdown_type": "hogql"}
    entities = {"totalIntervals": 2, "targetEntity": {"id": None}, "returningEntity": {"id": None}}
    query = {**QUERIES["RetentionQuery"], "retentionFilter": entities, "breakdownFilter": breakdown}
    answer = _post(mine, query)
    assert answer.status_code == 200, answer.text
    assert {c["breakdown_value"] for c in answer.json()["results"]} == {str(n_mine)}
    # A project without events sees nothing of the others' through any kind.
    empty = make_project()
    retention = _post(empty, QUERIES["RetentionQuery"]).json()["results"]
    assert retention and all(v["count"] == 0 for c in retention for v in c["values"])
    for kind in ("LifecycleQuery", "StickinessQuery"):
        items = _post(empty, QUERIES[kind]).json()["results"]
        assert items and all(not any(item["data"]) for item in items), kind
    assert _post(empty, QUERIES["PathsQuery"]).json()["results"] == []


_ACTIONS = {"kind": "ActionsNode", "id": 7}


@pytest.mark.parametrize(("query", "attr"), [
    ({"kind": "LifecycleQuery", "series": [_ACTIONS]}, "series.0.id"),
    ({"kind": "StickinessQuery", "series": [EVENT, {"kind": "DataWarehouseNode"}]}, "query__series__1"),
    ({"kind": "RetentionQuery", "retentionFilter": {"targetEntity": {"id": 7, "type": "actions"}}},
     "retentionFilter.targetEntity.id"),
    ({"kind": "RetentionQuery", "retentionFilter": {"returningEntity": {"id": 7, "kind": "ActionsNode"}}},
     "retentionFilter.returningEntity.id"),
    ({"kind": "RetentionQuery", "retentionFilter": {"period": "Year"}}, "query__retentionFilter__period"),
    ({"kind": "RetentionQuery", "retentionFilter": {"totalIntervals": -1}}, "query__retentionFilter__totalIntervals"),
    ({"kind": "RetentionQuery", "retentionFilter": {"totalIntervals": 10**9}},
     "query__retentionFilter__totalIntervals"),
    ({"kind": "RetentionQuery", "retentionFilter": {"period": "Hour"}, "dateRange": {"date_from": "-3000d"}},
     "dateRange"),
    ({"kind": "RetentionQuery", "retentionFilter": {"timeWindowMode": "24_hour_windows"}},
     "retentionFilter.timeWindowMode"),
    ({"kind": "RetentionQuery", "retentionFilter": {}, "breakdownFilter": {"breakdown": 3, "breakdown_type": "cohort"}},
     "breakdownFilter.breakdown_type"),
    ({"kind": "RetentionQuery", "retentionFilter": {}, "properties": [{"type": "hogql", "key": "1) OR (1"}]},
     "properties.0.key"),
    ({"kind": "LifecycleQuery", "series": [EVENT, EVENT]}, "query__series"),
    ({"kind": "LifecycleQuery", "series": [EVENT], "interval": "minute"}, "query__interval"),
    ({"kind": "StickinessQuery", "series": [EVENT], "intervalCount": 0}, "query__intervalCount"),
    ({"kind": "StickinessQuery", "series": [EVENT], "stickinessFilter": {"stickinessCriteria": {
        "operator": "gt", "value": 1}}}, "query__stickinessFilter__stickinessCriteria__operator"),
    ({"kind": "StickinessQuery", "series": [{**EVENT, "math": "hogql", "math_hogql": "person_id, ("}]},
     "series.0.math_hogql"),
    ({"kind": "PathsQuery", "pathsFilter": {"stepLimit": 10**6}}, "query__pathsFilter__stepLimit"),
    ({"kind": "PathsQuery", "pathsFilter": {"edgeLimit": 0}}, "query__pathsFilter__edgeLimit"),
    ({"kind": "PathsQuery", "pathsFilter": {"localPathCleaningFilters": [{"regex": "([", "alias": "x"}]}},
     "query__pathsFilter__localPathCleaningFilters__0__regex"),
    ({"kind": "PathsQuery", "pathsFilter": {"localPathCleaningFilters": [{"regex": r"(a)\1"}]}},
     "query__pathsFilter__localPathCleaningFilters__0__regex"),
    ({"kind": "PathsQuery", "pathsFilter": {"includeEventTypes": ["hogql"], "pathsHogQLExpression": "nope(("}},
     "pathsFilter.pathsHogQLExpression"),
    ({"kind": "PathsQuery", "pathsFilter": {"includeEventTypes": ["hogql"]}}, "query__pathsFilter"),
    ({"kind": "PathsQuery", "pathsFilter": {"minEdgeWeight": 5, "maxEdgeWeight": 2}}, "query__pathsFilter"),
    ({"kind": "PathsQuery", "pathsFilter": {}, "funnelPathsFilter": {"funnelStep": 1}}, "query__funnelPathsFilter"),
    ({"kind": "PathsQuery", "pathsFilter": {}, "dateRange": {"date_from": "yesterday-ish"}}, "dateRange.date_from"),
    ({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "interval": 99, "source": {
        "kind": "RetentionQuery", "retentionFilter": {}}}}, "source.interval"),
    ({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "status": "zombie", "source": {
        "kind": "LifecycleQuery", "series": [EVENT]}}}, "source.status"),
    ({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "day": "many", "source": {
        "kind": "StickinessQuery", "series": [EVENT]}}}, "source.day"),
    ({"kind": "ActorsQuery", "offset": 10**23, "source": {"kind": "InsightActorsQuery", "status": "new", "source": {
        "kind": "LifecycleQuery", "series": [EVENT]}}}, "query__offset"),
    ({"kind": "EventsQuery", "select": ["event"], "offset": 2**64}, "query__offset"),
    ({"kind": "RetentionQuery", "retentionFilter": {}, "dateRange": {"date_to": "9999-12-31"}}, "dateRange.date_to"),
    ({"kind": "RetentionQuery", "retentionFilter": {}, "dateRange": {"date_to": "0001-01-01"}}, "dateRange.date_to"),
    ({"kind": "LifecycleQuery", "series": [EVENT], "dateRange": {"date_to": "9999-12-31"}}, "dateRange.date_to"),
    ({"kind": "LifecycleQuery", "series": [EVENT], "dateRange": {"date_from": "0001-01-01", "date_to": "2025-01-05"}},
     "dateRange.date_from"),
    ({"kind": "StickinessQuery", "series": [EVENT], "compareFilter": {"compare": True},
      "dateRange": {"date_from": "1900-01-01", "date_to": "1900-01-05"}}, "dateRange.date_to"),
    ({"kind": "StickinessQuery", "series": [EVENT], "interval": "week",
      "dateRange": {"date_from": "9999-12-20", "date_to": "9999-12-30"}}, "dateRange.date_to"),
    ({"kind": "RetentionQuery", "retentionFilter": {"period": "Month"}, "dateRange": {"date_to": "9999-12-15"}},
     "dateRange.date_to"),
    ({"kind": "TrendsQuery", "series": [EVENT], "interval": "month",
      "dateRange": {"date_from": "9999-11-01", "date_to": "9999-12-15"}}, "dateRange.date_to"),
    ({"kind": "LifecycleQuery", "series": [EVENT], "interval": "hour", "dateRange": {"date_from": "-3000d"}},
     "interval"),
    ({"kind": "RetentionQuery", "retentionFilter": {"period": "Hour", "totalIntervals": 1},
      "dateRange": {"date_from": "-1000d"}}, "retentionFilter.period"),
])  # fmt: skip
def test_hostile_bodies_are_a_400_naming_the_field(make_project, query, attr):
    project = make_project()
    answer = _post(project, query)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["type"] == "validation_error" and body["attr"] == attr, body
    assert body["detail"] and "Traceback" not in body["detail"]


def test_an_insight_viz_node_runs_its_source(make_project, tmp_path):
    project = make_project()
    _load(project, seed=7, persons=15, tmp_path=tmp_path)
    bare = _post(project, QUERIES["LifecycleQuery"]).json()
    wrapped = _post(project, {"kind": "InsightVizNode", "source": QUERIES["LifecycleQuery"]})
    assert wrapped.status_code == 200, wrapped.text
    assert wrapped.json()["results"] == bare["results"] and any(bare["results"][0]["data"])


def test_persons_page_columns_over_a_cell(make_project, tmp_path):
    """PostHog's persons table asks for ``person_display_name -- Person, id, created_at``: the display name is the
    first of the person's email/name properties that is set, else the id (restated here from the person object)."""
    project = make_project()
    _load(project, seed=4, persons=25, tmp_path=tmp_path)
    source = {"kind": "InsightActorsQuery", "source": QUERIES["LifecycleQuery"], "status": "new", "day": "2025-06-02"}
    select = ["person_display_name -- Person", "id", "created_at", "person"]
    answer = _post(project, {"kind": "ActorsQuery", "select": select, "source": source})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["results"] and body["columns"] == select
    assert_valid(body, "ActorsQueryResponse")
    keys = ("email", "Email", "$email", "name", "Name", "username", "Username", "UserName")
    for shown, person_id, _, person in body["results"]:
        named = [person["properties"][k] for k in keys if person["properties"].get(k) is not None]
        assert shown == {"display_name": str(named[0]) if named else person_id, "id": person_id}


def test_persons_modal_actor_column_over_a_cell(make_project, tmp_path):
    """PostHog's persons modal asks lifecycle and stickiness cells for ``select: ["actor"]``: the person object,
    the same persons as the ``id`` column gives."""
    project = make_project()
    _load(project, seed=4, persons=25, tmp_path=tmp_path)
    source = {"kind": "InsightActorsQuery", "source": QUERIES["StickinessQuery"], "day": 1}
    actors = _post(project, {"kind": "ActorsQuery", "select": ["actor"], "orderBy": [], "source": source})
    assert actors.status_code == 200, actors.text
    body = actors.json()
    assert_valid(body, "ActorsQueryResponse")
    ids = _post(project, {"kind": "ActorsQuery", "select": ["id"], "source": source}).json()["results"]
    assert body["columns"] == ["actor"] and body["results"]
    assert {actor["id"] for (actor,) in body["results"]} == {i for (i,) in ids}
    assert all(actor["distinct_ids"] and "properties" in actor for (actor,) in body["results"])


@pytest.mark.parametrize("order", ["ordered", "strict", "unordered"])
def test_a_step_no_event_can_match_counts_zero(make_project, tmp_path, order):
    # A condition ClickHouse folds to a constant false (an IN over a subquery that finds nothing) once made the
    # step-index expression log2(0) and a 400 from the engine; the funnel simply has nobody at that step.
    project = make_project()
    _load(project, seed=7, persons=30, tmp_path=tmp_path)
    never = {"kind": "EventsNode", "event": "$pageview", "properties": [
        {"type": "hogql", "key": "event IN (SELECT event FROM events WHERE event = 'no such event')"}]}  # fmt: skip
    answer = _post(project, {"kind": "FunnelsQuery", "dateRange": RANGE, "series": [never, EVENT],
                             "funnelsFilter": {"funnelOrderType": order}})  # fmt: skip
    assert answer.status_code == 200, answer.text
    counts = [step["count"] for step in answer.json()["results"]]
    if order != "unordered":
        assert counts == [0, 0]
        return
    # Unordered: the first step counts whoever did either step (here, anyone with a $pageview), the second nobody.
    alone = _post(project, {"kind": "FunnelsQuery", "dateRange": RANGE, "series": [EVENT, EVENT],
                            "funnelsFilter": {"funnelOrderType": "unordered"}}).json()["results"]  # fmt: skip
    assert counts == [alone[0]["count"], 0] and counts[0] > 0
