"""Hostile HogQL in every fragment the retention, lifecycle, stickiness and paths queries accept: each is a 400
(naming the field) or an answer that holds nothing of another project, never a 500.

Another project holds ``T2SECRET`` as an event name and a property value; the caller's project has ordinary
events. Fragments: a ``hogql`` property filter (query-wide and on an entity or series), a HogQL retention
breakdown, stickiness ``math_hogql`` and ``pathsHogQLExpression``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from hoglab.server.ingest import load_file

pytestmark = pytest.mark.xdist_group("insights")

SECRET = "T2SECRET"
RANGE = {"date_from": "2025-06-01", "date_to": "2025-06-07"}
PAYLOADS = [
    "(SELECT groupArray(event) FROM events)",
    "(SELECT count() FROM system.tables)",
    "(SELECT any(event) FROM hoglab.events)",
    "(SELECT any(event) FROM default.events)",
    "(SELECT any(event) FROM events_local)",
    "(SELECT count() FROM file('/etc/passwd'))",
    "(SELECT count() FROM url('http://127.0.0.1:1/'))",
    "1) OR (1",
    "1 -- ) OR event = 'T2SECRET'",
    "event) UNION ALL SELECT event FROM events --",
    "sleep(3)",
    "(SELECT any(properties) FROM persons)",
    "(SELECT any(distinct_id) FROM person_distinct_ids)",
    "getSetting('max_threads')",
]


def _events(distinct: str, event: str, props: dict) -> list[dict]:
    start = datetime(2025, 6, 2, 10, tzinfo=UTC)
    return [
        {"event": event if i % 2 else "$pageview", "distinct_id": f"{distinct}-{i % 3}",
         "timestamp": (start + timedelta(hours=7 * i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
         "properties": {**props, "$current_url": f"https://x.io/{i % 4}"}}
        for i in range(12)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def projects(hoglab_service, tmp_path_factory):
    import httpx

    store, engine = hoglab_service.state.store, hoglab_service.state.engine
    folder = tmp_path_factory.mktemp("hostile-insights")
    mine = store.projects.create("hostile insights: mine")
    theirs = store.projects.create("hostile insights: theirs")
    for project, events in ((mine, _events("me", "signup", {"plan": "free"})),
                            (theirs, _events(SECRET, SECRET, {"plan": SECRET}))):  # fmt: skip
        path = folder / f"{project.id}.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
        load_file(engine, project.id, path)
    _, key = store.keys.create(store.users.default().id, ("*",), [mine.id], label="hostile insights")
    with httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        yield http, mine.id


def _places(fragment: str) -> dict[str, dict]:
    hogql_filter = [{"type": "hogql", "key": fragment}]
    event = {"kind": "EventsNode", "event": "$pageview"}
    return {
        "retention.properties": {"kind": "RetentionQuery", "dateRange": RANGE, "properties": hogql_filter,
                                 "retentionFilter": {"totalIntervals": 3}},
        "retention.targetEntity": {"kind": "RetentionQuery", "dateRange": RANGE, "retentionFilter": {
            "totalIntervals": 3, "targetEntity": {"id": "$pageview", "properties": hogql_filter}}},
        "retention.breakdown": {"kind": "RetentionQuery", "dateRange": RANGE, "retentionFilter": {"totalIntervals": 3},
                                "breakdownFilter": {"breakdown": fragment, "breakdown_type": "hogql"}},
        "lifecycle.series": {"kind": "LifecycleQuery", "dateRange": RANGE,
                             "series": [{**event, "properties": hogql_filter}]},
        "stickiness.math_hogql": {"kind": "StickinessQuery", "dateRange": RANGE,
                                  "series": [{**event, "math": "hogql", "math_hogql": fragment}]},
        "paths.expression": {"kind": "PathsQuery", "dateRange": RANGE, "pathsFilter": {
            "includeEventTypes": ["hogql"], "pathsHogQLExpression": fragment}},
    }  # fmt: skip


@pytest.mark.parametrize("fragment", PAYLOADS)
def test_fragment_is_refused_or_reads_only_the_callers_rows(projects, fragment):
    http, project_id = projects
    outcomes = {}
    for place, query in _places(fragment).items():
        answer = http.post(f"/api/projects/{project_id}/query/", json={"query": query})
        assert answer.status_code in (200, 400), (place, answer.status_code, answer.text[:300])
        assert SECRET not in answer.text, place
        if answer.status_code == 400:
            # The fragment parses alone (so no attr names it) but the compiler refuses what it reads: its message.
            assert answer.json()["type"] == "validation_error" and answer.json()["detail"], place
        outcomes[place] = (answer.status_code, answer.json().get("detail", "")[:90])
    assert len(outcomes) == 6


def test_the_callers_own_subquery_answers_from_its_own_events(projects):
    http, project_id = projects
    query = _places("toString((SELECT count() FROM events))")["retention.breakdown"]
    answer = http.post(f"/api/projects/{project_id}/query/", json={"query": query})
    assert answer.status_code == 200, answer.text
    assert {c["breakdown_value"] for c in answer.json()["results"]} == {"12"}
