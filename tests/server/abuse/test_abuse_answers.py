"""Abuse: answers too large to send. Over ``max_result_bytes`` a query is a 400 naming the limit, blocking or
async, and the service does not keep the memory the engine used for the partial result. A second app on the
session's data dir (one chDB per process) with a 1 MB cap."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hoglab.local import LocalService, start_local_service

CAP = 1024 * 1024
HUGE = "select repeat('x', 20000) as blob from numbers(10000) limit 10000"  # 200 MB of answer


def _rss() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096


@pytest.fixture(scope="module")
def capped(hoglab_service: LocalService) -> Iterator[tuple[LocalService, httpx.Client, int]]:
    limits = {"max_result_bytes": CAP, "max_bulk_bytes": CAP}
    with start_local_service(hoglab_service.data_dir, config_overrides=limits) as service:
        store = service.state.store
        project = store.projects.create("capped answers")
        _, key = store.keys.create(store.users.default().id, ["*"], [project.id])
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            yield service, http, project.id


def _query(http: httpx.Client, project_id: int, sql: str, refresh: str = "force_blocking") -> httpx.Response:
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": refresh}
    return http.post(f"/api/projects/{project_id}/query/", json=body)


def test_a_huge_answer_is_a_400_naming_the_limit(capped) -> None:
    _, http, project_id = capped
    before = _rss()
    answer = _query(http, project_id, HUGE)
    assert answer.status_code == 400, answer.text[:300]
    body = answer.json()
    assert body["type"] == "validation_error" and body["code"] == "max_result_bytes_exceeded"
    assert "max_result_bytes" in body["detail"] and str(CAP) in body["detail"]
    assert len(answer.content) < 2000
    # The failed query's memory went back: the process did not keep anything like the gigabyte it refused. The
    # allocator hands pages back to the system in its own time (slower on a busy machine): allowed 20 s.
    deadline = time.monotonic() + 20
    while _rss() - before >= 512 * 1024**2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _rss() - before < 512 * 1024**2


def test_an_answer_under_the_limit_is_whole(capped) -> None:
    _, http, project_id = capped
    answer = _query(http, project_id, "select repeat('x', 1000) as blob from numbers(900) limit 900")
    assert answer.status_code == 200
    assert len(answer.json()["results"]) == 900 and CAP / 2 < len(answer.content) < CAP


def test_an_answer_whose_json_outgrows_the_engine_count_is_refused_too(capped) -> None:
    # Escaped JSON is larger than the engine's own column bytes: the service checks the answer's real size.
    _, http, project_id = capped
    answer = _query(http, project_id, "select repeat('\"', 1000) as q from numbers(600) limit 600")
    assert answer.status_code == 400 and answer.json()["code"] == "max_result_bytes_exceeded"


def test_an_async_huge_answer_fails_with_the_same_message(capped) -> None:
    _, http, project_id = capped
    started = _query(http, project_id, HUGE, refresh="force_async")
    assert started.status_code == 202
    query_id = started.json()["query_status"]["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status = http.get(f"/api/projects/{project_id}/query/{query_id}/")
        except (httpx.ReadError, httpx.RemoteProtocolError):  # a kept-alive connection closed as it was reused
            continue
        if status.status_code != 202:
            break
        time.sleep(0.2)
    assert status.status_code == 400
    query_status = status.json()["query_status"]
    assert query_status["error"] is True and "max_result_bytes" in query_status["error_message"]


def test_a_cached_answer_over_the_limit_is_refused_too(hoglab_service: LocalService) -> None:
    # An answer cached under a larger limit (the service restarted with a smaller one): refused when served.
    from hoglab.server.query.cache import QueryCache, data_version
    from hoglab.server.query.failures import AnswerTooLarge
    from hoglab.server.query.request import prepare
    from hoglab.server.query.service import QueryService
    from hoglab.server.store.db import utcnow

    state = hoglab_service.state
    project = state.store.projects.create("cached answers")
    cache = QueryCache()
    prepared = prepare({"query": {"kind": "HogQLQuery", "query": "select 1"}}, team_id=project.id, timezone="UTC")
    assert state.engine is not None and state.query_jobs is not None
    cache.put(prepared.cache_key, b'"results":[["' + b"x" * 5000 + b'"]]', version=data_version(state.engine),
              now=utcnow())  # fmt: skip
    service = QueryService(state.engine, state.query_jobs, cache, {"max_result_bytes": 1000}, state.store)
    version = data_version(state.engine)
    with pytest.raises(AnswerTooLarge, match="max_result_bytes limit \\(1000 bytes\\)"):
        service.answer(project, prepared)
    assert data_version(state.engine) == version  # giving memory back is no write: no cache is invalidated
    roomy = QueryService(state.engine, state.query_jobs, cache, {"max_result_bytes": 100_000}, state.store)
    status, body = roomy.answer(project, prepared)
    assert status == 200 and b'"is_cached":true' in body


def test_an_all_rows_arrow_answer_has_its_own_cap(capped) -> None:
    _, http, project_id = capped
    body = {"query": {"kind": "HogQLQuery", "query": HUGE}}
    refused = http.post(f"/api/projects/{project_id}/query/arrow/", json=body)
    assert refused.status_code == 400 and refused.json()["code"] == "max_result_bytes_exceeded"
    assert "max_bulk_bytes" in refused.json()["detail"]
    body = {"query": {"kind": "HogQLQuery", "query": "select number from numbers(50000)"}}
    many = http.post(f"/api/projects/{project_id}/query/arrow/", json=body)
    assert many.status_code == 200  # more rows than a JSON answer's 10,000, under the byte cap
    import pyarrow as pa

    assert pa.ipc.open_stream(many.content).read_all().num_rows == 50000
