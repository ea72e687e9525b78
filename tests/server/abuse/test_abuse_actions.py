"""Abuse: another project's action named in every place a query takes one (insight series, funnel exclusions,
retention entities, ``EventsQuery.actionId``, experiment metrics and exposure, ``matchesAction``) reads nothing of
that project: "not found" where PostHog refuses a missing action, no data where it drops or zeroes it. And a
cached answer never outlives a change of the action it used."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hoglab.server.ingest import Ingestor

if TYPE_CHECKING:
    from conftest import TestProject

SECRET = "B-ACTION-SECRET"


def _capture(project: TestProject, events: list[dict[str, Any]]) -> None:
    engine = project.service.state.engine
    assert engine is not None
    Ingestor.for_engine(engine).capture_batch(project.id, events)


def _query(project: TestProject, query: dict[str, Any]) -> Any:
    return project.http.post(f"/api/projects/{project.id}/query/", json={"query": query, "refresh": "force_blocking"})


def test_another_projects_action_reads_nothing_of_it(make_project) -> None:
    a: TestProject = make_project()
    b: TestProject = make_project()
    now = datetime.now(UTC)
    stamp = (now - timedelta(hours=2)).isoformat()
    _capture(b, [{"event": "$pageview", "distinct_id": f"b{i}", "timestamp": stamp,
                  "properties": {"secret": SECRET, "$feature/f": "test"}} for i in range(5)])  # fmt: skip
    _capture(a, [{"event": "signup", "distinct_id": "a1", "timestamp": stamp, "properties": {}}])
    theirs = b.http.post(f"/api/projects/{b.id}/actions/", json={"name": "All of B", "steps": []}).json()["id"]
    node = {"kind": "ActionsNode", "id": theirs}
    signup = {"kind": "EventsNode", "event": "signup"}

    trend = _query(a, {"kind": "TrendsQuery", "series": [node, signup]})
    assert trend.status_code == 200 and [r["label"] for r in trend.json()["results"]] == ["signup"]
    sticky = _query(a, {"kind": "StickinessQuery", "series": [node]})
    assert sticky.status_code == 200 and sticky.json()["results"] == []
    for query, attr in [
        ({"kind": "FunnelsQuery", "series": [node, signup]}, "series.0.id"),
        ({"kind": "FunnelsQuery", "series": [signup, signup], "funnelsFilter": {"exclusions": [
            {**node, "funnelFromStep": 0, "funnelToStep": 1}]}}, "funnelsFilter.exclusions.0.id"),
        ({"kind": "LifecycleQuery", "series": [node]}, "series.0.id"),
        ({"kind": "RetentionQuery", "retentionFilter": {"returningEntity": {"id": theirs, "type": "actions"}}},
         "retentionFilter.returningEntity.id"),
        ({"kind": "EventsQuery", "select": ["*"], "actionId": theirs, "after": "all"}, "actionId"),
        ({"kind": "HogQLQuery", "query": f"select * from events where matchesAction({theirs})"}, None),
        ({"kind": "HogQLQuery", "query": "select * from events where matchesAction('All of B')"}, None),
        ({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "source": {
            "kind": "LifecycleQuery", "series": [node]}, "status": "new"}}, "series.0.id"),
    ]:  # fmt: skip
        refused = _query(a, query)
        assert refused.status_code == 400, (query, refused.text)
        # The refusal names what was asked for (the id, or the name for matchesAction('...')), nothing of B's.
        detail = refused.json()["detail"].split(" (line ")[0]  # not the position's digits
        asked = "'All of B'" if "'All of B'" in str(query) else rf"\b{theirs}\b"
        assert SECRET not in refused.text and re.search(asked, detail), refused.text
        if attr is not None:
            assert refused.json()["attr"] == attr

    # Experiments: a metric or exposure naming B's action counts nothing in A (PostHog's false filter).
    experiment = a.http.post(f"/api/projects/{a.id}/experiments/", json={
        "name": "x", "feature_flag_key": "f", "start_date": (now - timedelta(days=1)).isoformat(),
        "exposure_criteria": {"exposure_config": node}}).json()  # fmt: skip
    metric = {"kind": "ExperimentMetric", "metric_type": "mean", "source": node}
    answer = _query(a, {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric})
    assert answer.status_code == 200, answer.text
    assert answer.json()["baseline"]["number_of_samples"] == 0 and SECRET not in answer.text
    exposure = _query(a, {"kind": "ExperimentExposureQuery", "experiment_id": experiment["id"]})
    assert exposure.status_code == 200 and exposure.json()["total_exposures"] == {}


def test_a_cached_answer_follows_the_actions_definition(make_project) -> None:
    project: TestProject = make_project()
    stamp = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    _capture(project, [{"event": e, "distinct_id": "u", "timestamp": stamp, "properties": {}}
                       for e in ("a", "a", "b")])  # fmt: skip
    base = f"/api/projects/{project.id}/actions/"
    action = project.http.post(base, json={"name": "A", "steps": [{"event": "a"}]}).json()
    body = {"query": {"kind": "HogQLQuery", "query": f"select count() from events where matchesAction({action['id']})"}}
    first = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    again = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert first["results"] == again["results"] == [[2]] and again["is_cached"] is True
    project.http.patch(f"{base}{action['id']}/", json={"steps": [{"event": "b"}]})
    changed = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert changed["results"] == [[1]] and changed["is_cached"] is False
    assert changed["cache_key"] != first["cache_key"]
    trend = {"query": {"kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": action["id"]}]}}
    before = project.http.post(f"/api/projects/{project.id}/query/", json=trend).json()
    project.http.patch(f"{base}{action['id']}/", json={"name": "Renamed"})
    after = project.http.post(f"/api/projects/{project.id}/query/", json=trend).json()
    assert before["results"][0]["label"] == "A" and after["results"][0]["label"] == "Renamed"


# Steps with hostile values the API accepts (quotes, LIKE wildcards, subqueries in a HogQL filter) and what each
# selects of A's three events; ``None``: the API refuses it (nothing is stored, nothing runs). The subqueries
# count A's events only: had they read B's five, the count would differ and the action would select nothing.
_A_EVENTS = [("$pageview", {"$current_url": "https://a.example/x"}),
             ("$pageview", {"$current_url": "https://a.example/50%_off"}), ("signup", {})]  # fmt: skip
B_HOST = "b-only.example"  # B's data, which no step of A names (some name SECRET, which the SQL echoes)


def _hogql(condition: str) -> list[dict[str, Any]]:
    return [{"properties": [{"type": "hogql", "key": condition}]}]


_HOSTILE_STEPS: list[tuple[list[dict[str, Any]], int | None]] = [
    ([{"event": "x' OR 1=1 --"}], 0),
    ([{"event": "$pageview\\' OR 1=1 --"}], 0),
    ([{"url": "%"}], 2),  # PostHog's contains keeps % a wildcard: every event with a URL
    ([{"url": "50%_off"}], 1),
    ([{"url": "' OR '1'='1", "url_matching": "exact"}], 0),
    ([{"url": ".*", "url_matching": "regex"}], 2),
    ([{"properties": [{"key": "secret", "value": SECRET, "type": "event"}]}], 0),
    ([{"properties": [{"key": "secret", "operator": "is_set", "type": "event"}]}], 0),
    (_hogql("(SELECT count() FROM events) = 3"), 3),
    (_hogql(f"(SELECT count() FROM events WHERE properties.secret = '{SECRET}') = 0"), 3),
    (_hogql("event IN (SELECT event FROM events WHERE properties.secret LIKE 'B-ACTION%')"), 0),
    (_hogql("(SELECT count() FROM persons) < 100"), 3),
    (_hogql("1 = 1 OR team_id != 0"), None),
    (_hogql("(SELECT count() FROM events WHERE team_id = 2) = 0"), None),
    ([{"event": "$autocapture", "tag_name": "a')||(", "text": "%", "text_matching": "contains"}], 0),
    ([{"event": None, "url": None, "properties": []}], 3),
]  # fmt: skip


def test_hostile_steps_select_only_the_callers_events_everywhere(make_project) -> None:
    a: TestProject = make_project()
    b: TestProject = make_project()
    stamp = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    _capture(b, [{"event": e, "distinct_id": f"b-person-{i}", "timestamp": stamp,
                  "properties": {"secret": SECRET, "$current_url": f"https://{B_HOST}/{SECRET}"}}
                 for i, e in enumerate(["$pageview", "$pageview", "signup", "$autocapture", "x' OR 1=1 --"])])
    _capture(a, [{"event": e, "distinct_id": f"a{i}", "timestamp": stamp, "properties": props}
                 for i, (e, props) in enumerate(_A_EVENTS)])  # fmt: skip
    ran = 0
    for i, (steps, expected) in enumerate(_HOSTILE_STEPS):
        created = a.http.post(f"/api/projects/{a.id}/actions/", json={"name": f"hostile {i}", "steps": steps})
        if expected is None:
            assert created.status_code == 400, (steps, created.text)
            assert created.json()["type"] == "validation_error" and SECRET not in created.text
            continue
        assert created.status_code == 201, (steps, created.text)
        action = created.json()["id"]
        node = {"kind": "ActionsNode", "id": action}
        answers = {
            "trend": _query(a, {"kind": "TrendsQuery", "dateRange": {"date_from": "-1d"}, "series": [node]}),
            "stickiness": _query(a, {"kind": "StickinessQuery", "dateRange": {"date_from": "-1d"},
                                     "series": [{**node, "math": "dau"}]}),
            "hogql": _query(a, {"kind": "HogQLQuery",
                                "query": f"select count() from events where matchesAction({action})"}),
            "funnel": _query(a, {"kind": "FunnelsQuery", "dateRange": {"date_from": "-1d"},
                                 "series": [node, node], "funnelsFilter": {"funnelOrderType": "unordered"}}),
        }  # fmt: skip
        for name, answer in answers.items():
            assert answer.status_code == 200, (name, steps, answer.text)
            assert B_HOST not in answer.text and "b-person" not in answer.text, (name, steps)
            assert SECRET in str(steps) or SECRET not in answer.text, (name, steps)
        trend, sticky = answers["trend"].json(), answers["stickiness"].json()
        assert sum(trend["results"][0]["data"]) == expected, (steps, trend["results"])
        persons = sum(sticky["results"][0]["data"]) if sticky["results"] else 0
        assert persons == expected, steps  # one event per person in A
        assert answers["hogql"].json()["results"] == [[expected]], steps
        assert answers["funnel"].json()["results"][0]["count"] == expected, steps
        if steps[0].get("event") or steps[0].get("url") or steps[0].get("properties"):
            events = _query(a, {"kind": "EventsQuery", "select": ["event"], "actionId": action, "after": "-1d"})
            assert events.status_code == 200 and B_HOST not in events.text and "b-person" not in events.text
            assert len(events.json()["results"]) == expected, steps
        ran += 1
    assert ran == sum(1 for _, expected in _HOSTILE_STEPS if expected is not None)
