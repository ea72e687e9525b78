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
