"""Asynchronous queries: 202 + status, GET /query/:id (202/200/400/404), DELETE (204) really stopping the
engine, idempotent ids, project isolation, expiry after the status TTL."""

from __future__ import annotations

import threading
import time
import uuid

from querytesting import SLOW_HOGQL, Seeded, new_project, running_tags

from hoglab.server.query.jobs import tag_for

STATUS_FIELDS = {
    "id", "team_id", "query_async", "complete", "error", "error_message", "results", "start_time", "end_time",
    "pickup_time", "expiration_time", "query_progress", "task_id", "dashboard_id", "insight_id", "labels",
}  # fmt: skip


def _running(seeded: Seeded, query_id: str) -> None:
    """Wait until the slow query really runs in the engine."""
    tag = tag_for(seeded.a.id, query_id)
    deadline = time.monotonic() + 10
    while running_tags(seeded.a.service, tag) == 0:
        assert time.monotonic() < deadline, "the slow query never started"
        time.sleep(0.02)


def test_async_answer_equals_the_sync_one(seeded: Seeded) -> None:
    hogql = "select event, count() as c, uniq(distinct_id) as u from events group by event order by event"
    query_id = uuid.uuid4().hex
    submitted = seeded.a.query(hogql, refresh="force_async", client_query_id=query_id)
    assert submitted.status_code == 202
    status = submitted.json()["query_status"]
    assert set(status) == STATUS_FIELDS
    assert (status["id"], status["team_id"], status["complete"], status["error"]) == (
        query_id, seeded.a.id, False, False
    )  # fmt: skip
    assert status["start_time"].endswith("Z") and status["expiration_time"] > status["start_time"]
    done = seeded.a.wait(query_id)
    assert done.status_code == 200
    final = done.json()["query_status"]
    assert final["complete"] is True and final["error"] is False and final["end_time"] >= final["pickup_time"]
    sync = seeded.a.query(hogql, refresh="force_blocking").json()
    answer = final["results"]
    for name in ("results", "columns", "types", "hogql", "clickhouse", "hasMore", "limit", "offset"):
        assert answer[name] == sync[name], name
    assert answer["is_cached"] is False and answer["cache_key"] == sync["cache_key"]


def test_a_failed_async_query_is_a_400_with_its_message(seeded: Seeded) -> None:
    status = seeded.a.query("select nope from events", refresh="force_async").json()["query_status"]
    done = seeded.a.wait(status["id"])
    assert done.status_code == 400
    failed = done.json()["query_status"]
    assert failed["complete"] is True and failed["error"] is True and failed["results"] is None
    assert "nope" in failed["error_message"] and "line 1" in failed["error_message"]


def test_delete_kills_the_running_query_in_the_engine(seeded: Seeded) -> None:
    query_id = uuid.uuid4().hex
    assert seeded.a.query(SLOW_HOGQL, refresh="force_async", client_query_id=query_id).status_code == 202
    _running(seeded, query_id)
    progress = seeded.a.http.get(seeded.a.path(f"{query_id}/"), params={"show_progress": "true"})
    assert progress.status_code == 202
    assert progress.json()["query_status"]["query_progress"]["rows_read"] >= 0

    started = time.monotonic()
    deleted = seeded.a.http.delete(seeded.a.path(f"{query_id}/"))
    assert deleted.status_code == 204 and deleted.content == b""
    while running_tags(seeded.a.service, tag_for(seeded.a.id, query_id)):
        assert time.monotonic() - started < 2.0, "the engine still runs the cancelled query"
        time.sleep(0.02)
    after = seeded.a.http.get(seeded.a.path(f"{query_id}/"))
    assert after.status_code == 400
    status = after.json()["query_status"]
    assert (status["complete"], status["error"], status["error_message"]) == (True, True, "Query cancelled.")
    time.sleep(0.2)  # the worker's own ending must not overwrite the cancelled status
    assert seeded.a.http.get(seeded.a.path(f"{query_id}/")).json()["query_status"] == status


def test_resubmitting_a_running_id_returns_its_status(seeded: Seeded) -> None:
    query_id = uuid.uuid4().hex
    first = seeded.a.query(SLOW_HOGQL, refresh="force_async", client_query_id=query_id).json()["query_status"]
    again = seeded.a.query(SLOW_HOGQL, refresh="force_async", client_query_id=query_id)
    assert again.status_code == 202 and again.json()["query_status"]["task_id"] == first["task_id"]
    assert seeded.a.http.delete(seeded.a.path(f"{query_id}/")).status_code == 204
    rerun = seeded.a.query("select 1", refresh="force_async", client_query_id=query_id).json()["query_status"]
    assert rerun["task_id"] != first["task_id"]
    assert seeded.a.wait(query_id).json()["query_status"]["results"]["results"] == [[1]]


def test_unknown_ids_and_other_projects_queries_are_404(seeded: Seeded) -> None:
    missing = seeded.a.http.get(seeded.a.path("no-such-query/"))
    assert missing.status_code == 404
    assert missing.json() == {
        "type": "invalid_request",
        "code": "not_found",
        "detail": f"Query no-such-query not found for team {seeded.a.id}",
        "attr": None,
    }
    assert seeded.a.http.delete(seeded.a.path("no-such-query/")).status_code == 404
    assert seeded.a.http.get(seeded.a.path("bad%20id/")).status_code == 404

    query_id = uuid.uuid4().hex
    seeded.b.query(SLOW_HOGQL, refresh="force_async", client_query_id=query_id)
    try:
        # B's query under B's id: A's key reaches neither B's URL (403) nor, on its own URL, B's query (404).
        assert seeded.a.http.get(seeded.b.path(f"{query_id}/")).status_code == 403
        assert seeded.a.http.delete(seeded.b.path(f"{query_id}/")).status_code == 403
        assert seeded.a.http.get(seeded.a.path(f"{query_id}/")).status_code == 404
        assert seeded.a.http.delete(seeded.a.path(f"{query_id}/")).status_code == 404
        assert seeded.b.http.get(seeded.b.path(f"{query_id}/")).status_code == 202  # still running, untouched
    finally:
        assert seeded.b.http.delete(seeded.b.path(f"{query_id}/")).status_code == 204


def test_delete_of_a_finished_query_drops_its_status(seeded: Seeded) -> None:
    status = seeded.a.query("select 2", refresh="force_async").json()["query_status"]
    assert seeded.a.wait(status["id"]).status_code == 200
    assert seeded.a.http.delete(seeded.a.path(f"{status['id']}/")).status_code == 204
    assert seeded.a.http.get(seeded.a.path(f"{status['id']}/")).status_code == 404


def test_delete_cancels_a_synchronous_query_by_its_client_query_id(seeded: Seeded) -> None:
    query_id = uuid.uuid4().hex
    answers = []
    thread = threading.Thread(
        target=lambda: answers.append(seeded.a.query(SLOW_HOGQL, refresh="force_blocking", client_query_id=query_id))
    )
    thread.start()
    _running(seeded, query_id)
    assert seeded.a.client(seeded.a.key).delete(seeded.a.path(f"{query_id}/")).status_code == 204
    thread.join(10)
    assert answers[0].status_code == 400 and answers[0].json()["code"] == "query_cancelled"


def test_a_waiting_query_is_dequeued(tight) -> None:
    project = new_project(tight, "dequeue")  # the tight app has one worker, and a 1 s time limit
    try:
        busy = project.query(SLOW_HOGQL, refresh="force_async").json()["query_status"]
        waiting = project.query("select 3", refresh="force_async").json()["query_status"]
        assert project.http.delete(project.path(f"{waiting['id']}/")).status_code == 204
        status = project.http.get(project.path(f"{waiting['id']}/")).json()["query_status"]
        assert status["error_message"] == "Query cancelled." and status["pickup_time"] is None
        project.http.delete(project.path(f"{busy['id']}/"))
        time.sleep(0.3)
        assert project.http.get(project.path(f"{waiting['id']}/")).json()["query_status"] == status  # never ran
    finally:
        project.close()


def test_statuses_expire_after_the_ttl(tight) -> None:
    project = new_project(tight, "ttl")  # the tight app keeps statuses 2 s
    try:
        status = project.query("select 4", refresh="force_async").json()["query_status"]
        done = project.wait(status["id"])
        assert done.status_code == 200
        expires = done.json()["query_status"]["expiration_time"]
        assert expires > done.json()["query_status"]["end_time"]
        time.sleep(2.1)
        assert project.http.get(project.path(f"{status['id']}/")).status_code == 404
    finally:
        project.close()
