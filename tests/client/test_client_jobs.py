"""Async queries against a scripted REMOTE PostHog: 202 -> polling -> complete/failed, cancel, Ctrl-C, timeouts.

PostHog's async flow (force_async, 202 + query_status, GET/DELETE /query/:id) is mocked with httpx.MockTransport;
the waits run on a fake clock.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from clienttesting import FakeClock, Remote, hogql_answer

import hoglab
from hoglab.client import Client

QUERY = "/api/projects/2/query/"
TYPES = [("event", "String"), ("c", "UInt64")]


def _status(query_id: str, *, complete: bool = False, error: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "query_status": {
            "id": query_id,
            "team_id": 2,
            "query_async": True,
            "complete": complete,
            "error": error,
            "error_message": None,
            "results": None,
            "start_time": "2025-06-01T12:00:00Z",
            "query_progress": None,
            **extra,
        }
    }


def _accept(request: httpx.Request) -> httpx.Response:
    import json

    query_id = json.loads(request.content)["client_query_id"]
    return httpx.Response(202, json=_status(query_id))


def test_submit_polls_until_complete(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.hogql("select event, count() as c from events group by event", run_async=True)
    body = remote.json_bodies("POST")[0]
    assert body["refresh"] == "force_async" and body["client_query_id"] == job.id
    answer = hogql_answer([["$pageview", 3]], TYPES)
    path = f"{QUERY}{job.id}/"
    remote.add(
        "GET",
        path,
        httpx.Response(202, json=_status(job.id, query_progress={"rows_read": 10})),
        httpx.Response(202, json=_status(job.id)),
        httpx.Response(200, json=_status(job.id, complete=True, results=answer)),
    )
    df = job.result()
    assert df["c"].tolist() == [3] and str(df["c"].dtype) == "Int64"
    assert len(clock.sleeps) == 2 and clock.sleeps[1] > clock.sleeps[0]  # backing off
    assert job.done and "complete" in repr(job)
    assert remote.requests[-1].url.params["show_progress"] == "true"


def test_already_complete_answer_needs_no_polling(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer([["a", 1]], TYPES)))
    job = client.submit(hoglab.events(["event"]))
    assert job.done
    assert job.result()["event"].tolist() == ["a"]
    assert len(remote.requests) == 1


def test_failed_query_raises_query_error(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.submit("select nope from events")
    remote.add(
        "GET",
        f"{QUERY}{job.id}/",
        httpx.Response(400, json=_status(job.id, complete=True, error=True, error_message="Unknown field nope")),
    )
    with pytest.raises(hoglab.QueryError, match="Unknown field nope"):
        job.result()
    assert len([r for r in remote.requests if r.method == "GET"]) == 1  # a failure is not retried


def test_failed_without_message_is_a_server_error(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.submit("select 1")
    remote.add("GET", f"{QUERY}{job.id}/", httpx.Response(500, json=_status(job.id, complete=True, error=True)))
    with pytest.raises(hoglab.ServerError, match="failed on the server"):
        job.status()


def test_cancel_deletes_on_the_server(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.submit("select 1")
    remote.add("DELETE", f"{QUERY}{job.id}/", httpx.Response(200, json={"message": "Query task revoked"}))
    job.cancel()
    assert remote.requests[-1].method == "DELETE"


def test_cancel_of_an_expired_query_is_quiet(client: Client, remote: Remote) -> None:
    job = client.job("gone")
    job.cancel()  # the remote answers 404 for unknown routes
    assert remote.requests[-1].method == "DELETE"


def test_ctrl_c_while_waiting_cancels_then_reraises(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.submit("select sleep(3)")
    remote.add("GET", f"{QUERY}{job.id}/", httpx.Response(202, json=_status(job.id)))
    remote.add("DELETE", f"{QUERY}{job.id}/", httpx.Response(200, json={"message": "Cancelled query on clickhouse"}))

    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    clock.on_sleep = interrupt
    with pytest.raises(KeyboardInterrupt):
        job.result()
    assert [r.method for r in remote.requests] == ["POST", "GET", "DELETE"]


def test_timeout_leaves_the_query_running(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("POST", QUERY, _accept)
    job = client.submit("select 1")
    remote.add("GET", f"{QUERY}{job.id}/", httpx.Response(202, json=_status(job.id)))
    with pytest.raises(hoglab.QueryTimeout) as info:
        job.result(timeout=3)
    assert info.value.job is job and isinstance(info.value, TimeoutError)
    assert sum(clock.sleeps) <= 3
    assert "DELETE" not in [r.method for r in remote.requests]


def test_sync_query_answered_with_202_is_waited_for(client: Client, remote: Remote) -> None:
    """A server may choose async on its own; the blocking call then polls transparently."""
    remote.add("POST", QUERY, _accept)
    answer = hogql_answer([["x", 5]], TYPES)

    def finished(request: httpx.Request) -> httpx.Response:
        query_id = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        return httpx.Response(200, json=_status(query_id, complete=True, results=answer))

    remote.add("GET", f"{QUERY}*", finished)
    assert client.hogql("select 1")["c"].tolist() == [5]
    assert [r.method for r in remote.requests] == ["POST", "GET"]


def test_response_model_of_a_job(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer([["a", 1]], TYPES)))
    response = client.submit("select 1").response()
    assert type(response).__name__ == "HogQLQueryResponse" and response.results == [["a", 1]]
