"""Abuse: one project saturating the engine delays only itself. While project A runs eight heavy queries at once
(blocking) or fills the async queue, project B's small queries are answered, A never holds more than its share
of the engine's read sessions, and A alone gets the 429s. Ordering, not speed, is asserted: B is done while A's
heavy queries are still running."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx
import pytest

from hoglab.local import LocalService
from hoglab.server.query.fairness import FairGate

if TYPE_CHECKING:  # the session conftest's type; tests/ is not a package, so only for readers and checkers
    from conftest import TestProject

HEAVY = "select count() from numbers(10000000) where sipHash64(number + {i}) % 7 = 3"


def _body(sql: str, refresh: str, query_id: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": refresh}
    if query_id:
        body["client_query_id"] = query_id
    return body


def _cancel_all(project: TestProject, ids: list[str]) -> None:
    for query_id in ids:
        project.http.delete(f"/api/projects/{project.id}/query/{query_id}/")


@pytest.fixture
def gate(hoglab_service: LocalService) -> FairGate:
    state = hoglab_service.state
    return FairGate.for_engine(state.engine, state.config)


def test_blocking_heavy_queries_of_one_project_do_not_hold_up_another(
    make_project: Callable[..., TestProject], gate: FairGate
) -> None:
    a, b = make_project(), make_project()
    ids = [f"heavy-{a.id}-{i}" for i in range(8)]
    finished: dict[int, tuple[int, float]] = {}
    peak = [0]
    stop = threading.Event()

    def heavy(i: int) -> None:
        with httpx.Client(base_url=str(a.http.base_url), headers=dict(a.http.headers), timeout=600) as http:
            answer = http.post(f"/api/projects/{a.id}/query/", json=_body(HEAVY.format(i=i), "force_blocking", ids[i]))
        finished[i] = (answer.status_code, time.monotonic())

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], gate.running(a.id))
            time.sleep(0.01)

    threads = [threading.Thread(target=heavy, args=(i,)) for i in range(8)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while gate.running(a.id) < gate.slots and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gate.running(a.id) == gate.slots  # A holds its whole share and queues the rest
        for _ in range(5):
            small = b.http.post(f"/api/projects/{b.id}/query/", json=_body("select 1", "force_blocking"))
            assert small.status_code == 200 and small.json()["results"] == [[1]]
        b_done = time.monotonic()
        assert gate.running(a.id) > 0 or len(finished) < 8  # A is still busy: B did not wait for it
        for t in threads:
            t.join(600)
    finally:
        stop.set()
        watcher.join()
        _cancel_all(a, ids)
    assert {status for status, _ in finished.values()} == {200}  # A's extra queries waited, none failed
    assert max(at for _, at in finished.values()) > b_done
    assert peak[0] == gate.slots  # never more than its share


def test_one_project_filling_the_async_queue_gets_the_429_alone(
    make_project: Callable[..., TestProject], hoglab_service: LocalService
) -> None:
    a, b = make_project(), make_project()
    quota = hoglab_service.state.config.project_async_queue
    ids = [f"async-{a.id}-{i}" for i in range(3 * quota)]
    try:
        # A's jobs may finish while it sends more (a loaded machine is slow to send too): send until refused.
        refused = None
        for i, query_id in enumerate(ids):
            answer = a.http.post(f"/api/projects/{a.id}/query/", json=_body(HEAVY.format(i=i), "force_async", query_id))
            if answer.status_code != 202:
                refused = answer
                break
        assert refused is not None and i >= quota
        assert refused.status_code == 429 and refused.headers["Retry-After"]
        assert refused.json()["type"] == "throttled_error" and "share of the queue" in refused.json()["detail"]
        # B's async query is taken by a worker A cannot use (A runs on half of them at most) and completes.
        started = b.http.post(f"/api/projects/{b.id}/query/", json=_body("select 2", "force_async"))
        assert started.status_code in (200, 202)
        query_id = started.json()["query_status"]["id"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = b.http.get(f"/api/projects/{b.id}/query/{query_id}/")
            if status.status_code != 202:
                break
            time.sleep(0.1)
        assert status.status_code == 200 and status.json()["query_status"]["results"]["results"] == [[2]]
        pending = [q for q in ids[:i] if a.http.get(f"/api/projects/{a.id}/query/{q}/").status_code == 202]
        assert pending  # B finished while A's queue was still being worked through
    finally:
        _cancel_all(a, ids)
