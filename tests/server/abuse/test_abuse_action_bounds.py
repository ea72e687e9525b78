"""Abuse: actions cannot buy unbounded compile work (issue 35, F3). An action is at most 50 steps, 50 filters a
step and 200 of both in all, checked before any work and compiled within the queries' compile budget when it is
stored; the actions one query names expand to at most ``max_action_filters`` steps and filters, whatever its
kind; action writes have their own rate. Each refusal is PostHog's 400 body naming the bound, in seconds, not the
minutes the red team measured (timed in bench/bench_action_attack.py, not here). Against the session's real
service, and ``hoglab serve`` for the rate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from served import ServedProcess

if TYPE_CHECKING:
    from conftest import TestProject


def _step(filters: int, event: str = "purchase") -> dict[str, Any]:
    return {"event": event, "properties": [{"key": f"p{i}", "value": f"v{i}", "operator": "exact", "type": "event"}
                                           for i in range(filters)]}  # fmt: skip


def _post(project: TestProject, path: str, body: dict[str, Any]) -> Any:
    return project.http.post(f"/api/projects/{project.id}/{path}", json=body, timeout=120)


def test_an_action_of_100_steps_of_100_filters_is_refused_at_once(live_project: TestProject) -> None:
    answer = _post(live_project, "actions/", {"name": "huge", "steps": [_step(100)] * 100})
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()
    assert error["code"] == "action_too_complex" and error["attr"] == "steps" and "50 steps" in error["detail"]
    # Before: accepted after 64 s of compiling. Now refused before validation (bench_action_attack.py times it).
    answer = _post(live_project, "actions/", {"name": "wide", "steps": [_step(60)]})
    assert answer.status_code == 400 and answer.json()["attr"] == "steps__0__properties", answer.text[:300]
    answer = _post(live_project, "actions/", {"name": "big", "steps": [_step(49)] * 5})
    assert answer.status_code == 400 and "200 in all" in answer.json()["detail"], answer.text[:300]


def _any_of(action: int, times: int) -> str:
    return " or ".join([f"matchesAction({action})"] * times)


@pytest.fixture
def biggest_action(live_project: TestProject) -> int:
    """An action at the caps: 4 steps of 49 filters, 200 steps and filters in all."""
    answer = _post(live_project, "actions/", {"name": "at the caps", "steps": [_step(49)] * 4})
    assert answer.status_code == 201, answer.text[:300]
    return int(answer.json()["id"])


@pytest.mark.parametrize(
    "query",
    [
        lambda a: {"kind": "FunnelsQuery", "series": [{"kind": "ActionsNode", "id": a}] * 20},
        lambda a: {"kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": a}] * 6},
        lambda a: {"kind": "HogQLQuery", "query": "select count() from events where " + _any_of(a, 6)},
        lambda a: {"kind": "EventsQuery", "select": ["event"], "actionId": a, "where": [f"matchesAction({a})"] * 5},
    ],
    ids=["funnel-20-steps", "trends-6-series", "hogql-matchesAction", "events-actionId"],
)
def test_a_query_naming_an_action_too_often_is_refused_naming_the_bound(
    live_project: TestProject, biggest_action: int, query: Any
) -> None:
    body = {"query": query(biggest_action), "refresh": "force_blocking"}
    for path in ("query/", "query/arrow/") if body["query"]["kind"] == "HogQLQuery" else ("query/",):
        answer = _post(live_project, path, body)
        assert answer.status_code == 400, answer.text[:300]
        error = answer.json()
        assert error["code"] == "query_too_complex" and "max_action_filters (1000)" in error["detail"], error


def test_a_query_naming_the_action_within_the_bound_runs(live_project: TestProject, biggest_action: int) -> None:
    body = {"query": {"kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": biggest_action}] * 2}}
    answer = _post(live_project, "query/", body)
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.slow
def test_action_writes_have_their_own_rate(tmp_path: Path) -> None:
    env = {"HOGLAB_RATE_LIMITS": "on", "HOGLAB_ACTION_WRITE_RATE_LIMIT": "3/minute"}
    with ServedProcess(tmp_path / "data", env=env) as served:
        project = served.project("a")
        path = f"/api/projects/{project.id}/actions/"
        statuses = [project.http.post(path, json={"name": f"a{i}", "steps": [{"event": "e"}]}).status_code
                    for i in range(4)]  # fmt: skip
        assert statuses == [201, 201, 201, 429]
        refused = project.http.post(path, json={"name": "again", "steps": [{"event": "e"}]})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["type"] == "throttled_error"
        # Reading, and the other endpoints, are the default bucket's: still served.
        assert project.http.get(path).status_code == 200
        assert project.query("select 1").status_code == 200
