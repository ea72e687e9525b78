"""The pieces below the endpoint, alone: the job pool (with a fake engine), the result cache, row trimming,
execution modes, engine-message scrubbing, status expiry and orphans in SQLite."""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from querytesting import Seeded

from hoglab.schema import QueryRequest
from hoglab.server.query.cache import QueryCache
from hoglab.server.query.failures import scrub_engine_message
from hoglab.server.query.jobs import (
    CANCELLED_MESSAGE,
    ORPHAN_MESSAGE,
    STOPPED_MESSAGE,
    QueryJobs,
    TooManyQueries,
    tag_for,
)
from hoglab.server.query.request import execution_mode
from hoglab.server.query.runners.hogql import drop_last_row
from hoglab.server.store import Store


class FakeEngine:
    name = "fake"

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def cancel(self, tag: str) -> bool:
        self.cancelled.append(tag)
        return True


@pytest.fixture
def store(tmp_path):
    with Store.open_at(tmp_path) as store:
        yield store


@pytest.fixture
def team(store) -> int:
    return int(store.projects.create("units").id)


def _jobs(store, engine, **kwargs) -> QueryJobs:
    jobs = QueryJobs(store.async_queries, engine, **{"workers": 1, "ttl_seconds": 60, **kwargs})
    jobs.start()
    return jobs


def _wait_complete(jobs: QueryJobs, team: int, query_id: str) -> dict:
    deadline = time.monotonic() + 5
    while True:
        status, _ = jobs.status(team, query_id)
        if status["complete"] or time.monotonic() > deadline:
            return status
        time.sleep(0.01)


def test_a_queued_job_is_dequeued_and_never_runs(store, team) -> None:
    engine, release, ran = FakeEngine(), threading.Event(), []
    jobs = _jobs(store, engine)
    try:
        jobs.submit(team, "busy", lambda tag, cancelled: (release.wait(5), b"{}")[1])
        jobs.submit(team, "waiting", lambda tag, cancelled: ran.append(tag) or b"{}")
        assert jobs.cancel(team, "waiting") is True
        status, results = jobs.status(team, "waiting")
        assert (status["complete"], status["error"], status["error_message"]) == (True, True, CANCELLED_MESSAGE)
        assert results is None and engine.cancelled == []  # dequeued: nothing to kill
        release.set()
        assert _wait_complete(jobs, team, "busy")["error"] is False
        assert ran == []
    finally:
        release.set()
        jobs.close()


def test_a_running_job_is_killed_by_its_tag_and_keeps_the_cancelled_status(store, team) -> None:
    engine, started = FakeEngine(), threading.Event()

    def work(tag: str, cancelled: threading.Event) -> bytes:
        started.set()
        cancelled.wait(5)
        return b'{"results": []}'  # finishing after the cancel must not overwrite the status

    jobs = _jobs(store, engine)
    try:
        jobs.submit(team, "q", work)
        assert started.wait(5)
        jobs.cancel(team, "q")
        assert engine.cancelled and set(engine.cancelled) == {tag_for(team, "q")}
        time.sleep(0.1)
        status, results = jobs.status(team, "q")
        assert status["error_message"] == CANCELLED_MESSAGE and results is None
    finally:
        jobs.close()


def test_results_round_trip_and_resubmits_are_idempotent(store, team) -> None:
    engine, gate = FakeEngine(), threading.Event()
    body = orjson.dumps({"results": [[i, "x" * 20] for i in range(10_000)]})
    jobs = _jobs(store, engine)
    try:
        first = jobs.submit(team, "same", lambda tag, cancelled: (gate.wait(5), body)[1])
        second = jobs.submit(team, "same", lambda tag, cancelled: b"{}")
        assert second["task_id"] == first["task_id"]
        gate.set()
        assert _wait_complete(jobs, team, "same")["complete"] is True
        assert jobs.status(team, "same")[1] == body
        rerun = jobs.submit(team, "same", lambda tag, cancelled: b'{"again": 1}')
        assert rerun["task_id"] != first["task_id"]
        _wait_complete(jobs, team, "same")
        assert jobs.status(team, "same")[1] == b'{"again": 1}'
        assert jobs.status(team + 1, "same") is None  # another project never sees it
    finally:
        gate.set()
        jobs.close()


def test_failures_keep_a_message_only_when_described(store, team) -> None:
    def boom(tag: str, cancelled: threading.Event) -> bytes:
        raise RuntimeError("internal detail")

    jobs = _jobs(store, FakeEngine(), describe=lambda exc: "told" if isinstance(exc, ValueError) else None)
    try:
        jobs.submit(team, "internal", boom)
        jobs.submit(team, "told", lambda tag, cancelled: (_ for _ in ()).throw(ValueError("x")))
        assert _wait_complete(jobs, team, "internal")["error_message"] is None
        assert _wait_complete(jobs, team, "told")["error_message"] == "told"
    finally:
        jobs.close()


def test_close_stops_running_jobs_and_says_so(store, team) -> None:
    engine, started = FakeEngine(), threading.Event()

    def work(tag: str, cancelled: threading.Event) -> bytes:
        started.set()
        cancelled.wait(5)
        raise RuntimeError("killed")

    jobs = _jobs(store, engine)
    jobs.submit(team, "long", work)
    assert started.wait(5)
    jobs.close()
    status, _ = jobs.status(team, "long")
    assert status["error_message"] == STOPPED_MESSAGE and engine.cancelled


def test_too_many_waiting_jobs_are_refused(store, team) -> None:
    gate = threading.Event()
    jobs = _jobs(store, FakeEngine(), max_waiting=2)
    try:
        for name in ("a", "b"):
            jobs.submit(team, name, lambda tag, cancelled: (gate.wait(5), b"{}")[1])
        with pytest.raises(TooManyQueries):
            jobs.submit(team, "c", lambda tag, cancelled: b"{}")
    finally:
        gate.set()
        jobs.close()


def test_statuses_expire_and_orphans_are_failed(store, team) -> None:
    repo = store.async_queries
    now = datetime.now(UTC)
    repo.save(team, "old", {"id": "old", "complete": True}, expires_at=now - timedelta(seconds=1))
    repo.save(team, "orphan", {"id": "orphan", "complete": False}, expires_at=now + timedelta(minutes=5), owner_pid=1)
    mine = {"id": "mine", "complete": False}
    repo.save(team, "mine", mine, expires_at=now + timedelta(minutes=5), owner_pid=os.getpid())
    assert repo.get(team, "old") is None
    jobs = _jobs(store, FakeEngine())
    jobs.close()
    orphan = repo.get(team, "orphan")
    assert orphan is not None and orphan.status["error_message"] == ORPHAN_MESSAGE and orphan.complete
    assert repo.get(team, "mine").status == mine  # this process's own rows are not orphans
    with store.db.read() as conn:
        assert conn.execute("SELECT count(*) FROM async_queries WHERE id = 'old'").fetchone()[0] == 0


def test_a_failed_status_without_message_is_a_500(seeded: Seeded) -> None:
    repo = seeded.a.service.state.store.async_queries
    status = {"id": "internal-failure", "team_id": seeded.a.id, "complete": True, "error": True, "error_message": None}
    repo.save(seeded.a.id, "internal-failure", status, expires_at=datetime.now(UTC) + timedelta(minutes=1))
    response = seeded.a.http.get(seeded.a.path("internal-failure/"))
    assert response.status_code == 500 and response.json()["query_status"]["error"] is True


def test_the_cache_is_bounded_and_versioned() -> None:
    now = datetime.now(UTC)
    cache = QueryCache(max_entries=3, max_bytes=100, max_entry_bytes=60)
    for key in ("a", "b", "c", "d"):
        cache.put(key, b"x" * 10, version=1, now=now)
    assert len(cache) == 3 and cache.get("a", version=1) is None  # least recently used went first
    assert cache.get("b", version=1) is not None
    cache.put("e", b"y" * 50, version=1, now=now)
    assert cache.size_bytes <= 100 and cache.get("b", version=1) is not None  # b was used: c went
    assert cache.get("c", version=1) is None
    cache.put("huge", b"z" * 61, version=1, now=now)
    assert cache.get("huge", version=1) is None
    assert cache.get("b", version=2) is None and cache.get("b", version=1) is None  # data changed: dropped
    calls: list[int] = []
    assert cache.person_overrides(1, 5, lambda: calls.append(1) or True) is True
    assert cache.person_overrides(1, 5, lambda: calls.append(1) or False) is True and calls == [1]
    assert cache.person_overrides(1, 6, lambda: False) is False


@pytest.mark.parametrize(
    "rows",
    [
        [[1], [2], [3]],
        [["a],\n\t\t[b", "x"], ["c", None], ["\u2028", {"k": [1, 2]}]],
        [["line\nbreak"], ["tab\tstop"], [",\n\t\t["]],
    ],
)
def test_drop_last_row_on_clickhouse_layout(rows: list) -> None:
    text = "[\n" + ",\n".join("\t\t" + json.dumps(r) for r in rows) + "\n\t]"
    assert json.loads(drop_last_row(text.encode())) == rows[:-1]
    assert json.loads(drop_last_row(json.dumps(rows).encode())) == rows[:-1]  # another layout: parsed


@pytest.mark.parametrize(
    ("body", "mode"),
    [
        ({}, "blocking"),
        ({"refresh": False}, "blocking"),
        ({"refresh": True}, "force_blocking"),
        ({"refresh": "force_cache"}, "blocking"),
        ({"refresh": "lazy_async"}, "lazy_async"),
        ({"refresh": "force_blocking", "async": True}, "async"),
        ({"refresh": "force_async"}, "force_async"),
    ],
)
def test_execution_modes(body: dict, mode: str) -> None:
    request = QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}, **body})
    assert execution_mode(request) == mode


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Unknown function foo: In scope SELECT foo() FROM (SELECT __hq_e.x FROM hoglab.events AS __hq_e "
         "WHERE equals(__hq_e.team_id, 7)) AS events", "Unknown function foo."),
        ("Missing columns: 'x' while processing query: 'SELECT x FROM hoglab.events'", "Missing columns: 'x'."),
        ("Cannot read hoglab.events column __hq_e.team_id", "Cannot read events column."),
        ("In scope SELECT 1", "The engine could not run the query."),
        ("Division by zero", "Division by zero."),
    ],
)  # fmt: skip
def test_engine_messages_are_scrubbed(message: str, expected: str) -> None:
    assert scrub_engine_message(message) == expected


def test_the_same_request_is_compiled_once(seeded: Seeded, monkeypatch) -> None:
    import hoglab.server.query.runners.base as runner  # RunContext.compile keeps compiled statements (COMPILED)

    calls: list[str] = []
    real = runner.compile_hogql

    def counting(query: str, **kwargs):
        calls.append(query)
        return real(query, **kwargs)

    monkeypatch.setattr(runner, "compile_hogql", counting)
    hogql = "select count() from events where event = {e} and 1 = 1"
    for _ in range(3):
        assert seeded.a.rows(hogql, values={"e": "signup"}) == [[int((seeded.frame.event == "signup").sum())]]
    assert seeded.a.rows(hogql, values={"e": "purchase"}) == [[int((seeded.frame.event == "purchase").sum())]]
    seeded.b.rows(hogql, values={"e": "signup"})  # another project: its own compilation (its own guard)
    assert calls == [hogql] * 3


def test_values_that_compile_differently_never_share_a_compiled_statement() -> None:
    # Each value, compiled after the others on the same text, must give what the compiler alone gives it: a tuple
    # is not a list, a UUID not its text, a datetime not its ISO text, and NaN (refused) is not NULL.
    from types import SimpleNamespace

    from hoglab.server.hogql import HogQLError, compile_hogql
    from hoglab.server.query.runners import RunContext

    project = SimpleNamespace(id=424242, timezone="Europe/Paris")
    ctx = RunContext(project=project, engine=None, now=datetime.now(UTC), tag="t")
    text = "select {x} as x"
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    for value in ([1, 2], (1, 2), "00000000-0000-0000-0000-000000000005", uuid.UUID(int=5), None, float("nan"),
                  when.isoformat(), when, {"$datetime": when.isoformat()}, 1, 1.0, True, 0.0, -0.0):  # fmt: skip
        try:
            expected = compile_hogql(text, team_id=project.id, values={"x": value}, timezone=project.timezone,
                                     default_limit=None, max_limit=ctx.max_rows).sql  # fmt: skip
        except HogQLError as exc:
            with pytest.raises(HogQLError, match=re.escape(exc.message)):
                ctx.compile(text, values={"x": value})
        else:
            assert ctx.compile(text, values={"x": value}).sql == expected, value


def test_answers_with_huge_integers_are_still_written() -> None:
    from hoglab.server.query.answers import dumps

    assert json.loads(dumps({"n": 10**30, "at": datetime(2025, 1, 1, tzinfo=UTC)})) == {
        "n": 10**30,
        "at": "2025-01-01T00:00:00Z",
    }
