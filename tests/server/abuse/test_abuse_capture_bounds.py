"""Abuse: a public capture token cannot hurt the process (issue 35, F1). A request carries at most
``capture_max_events`` events; what reading it and its events take is reserved on the memory budget, the
project's share, before it is taken (a 413 naming the bound, or a 429 while others hold the share); the warnings of
a batch's bad events are one row per cause, not one per event. Against the real service, and ``hoglab serve`` in a
subprocess where the proof is the serving process's memory."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from hoglab.server.store import Store
from served import ServedProcess

if TYPE_CHECKING:
    from conftest import TestProject

MAX_BODY = 20 * 1024 * 1024


def _empty_events(count: int) -> bytes:
    return b'{"api_key": "%s", "batch": [' + b",".join([b"{}"] * count) + b"]}"


def _rows(project: TestProject, sql: str) -> list[list[Any]]:
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert answer.status_code == 200, answer.text
    rows: list[list[Any]] = answer.json()["results"]
    return rows


def test_more_events_than_a_request_may_carry_is_a_413_and_stores_nothing(live_project: TestProject) -> None:
    body = _empty_events(200_001).replace(b"%s", live_project.api_token.encode())
    answer = live_project.http.post("/batch/", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 413, answer.text[:300]
    error = answer.json()
    assert error["code"] == "payload_too_large" and error["attr"] == "batch"
    assert "200000" in error["detail"] and "HOGLAB_CAPTURE_MAX_EVENTS" in error["detail"]
    assert _rows(live_project, "select count() from ingestion_warnings") == [[0]]


def test_the_warnings_of_a_batch_are_one_row_per_cause(live_project: TestProject) -> None:
    batch: list[Any] = [{} for _ in range(1000)]  # no name: missing_event_name, 1,000 times
    batch += [{"event": "x"} for _ in range(500)]  # no distinct id
    batch += [{"event": "late", "distinct_id": "u", "timestamp": "not a time"} for _ in range(300)]  # repaired
    batch.append({"event": "ok", "distinct_id": "u"})
    answer = live_project.http.post("/batch/", json={"api_key": live_project.api_token, "batch": batch})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert (result["kept"], result["dropped"], result["repaired"]) == (301, 1500, 300)
    rows = _rows(live_project, "select type, details.field, details.count, details.index from ingestion_warnings "
                               "order by type")  # fmt: skip
    assert rows == [
        ["ignored_invalid_timestamp", "timestamp", "300", None],
        ["missing_distinct_id", "distinct_id", "500", "1000"],
        ["missing_event_name", "event", "1000", "0"],
    ]
    # The warnings API counts the events each row stands for, as it counted rows before.
    summaries = live_project.http.get(f"/api/projects/{live_project.id}/ingestion_warnings/").json()["results"]
    assert {s["type"]: s["count"] for s in summaries} == {
        "ignored_invalid_timestamp": 300, "missing_distinct_id": 500, "missing_event_name": 1000
    }  # fmt: skip
    assert {s["type"]: sum(n for n, _ in s["sparkline"]) for s in summaries}["missing_event_name"] == 1000


def _token(served: ServedProcess, project_id: int) -> str:
    with Store.open_at(served.data_dir) as store:
        record = store.projects.get(project_id)
        assert record is not None
        return record.api_token


@pytest.mark.slow
def test_a_20_mb_body_of_empty_events_is_refused_within_the_budget(tmp_path: Path) -> None:
    """The red team's body at the 20 MB cap: before, ~7 million events, gigabytes of RSS and as many warning rows;
    now a 413 naming the memory budget before the body is parsed, the RSS flat and the CPU a fraction of a second;
    the same project's normal batch is still stored."""
    with ServedProcess(tmp_path / "data", "--memory-budget", "512MiB") as served:
        project = served.project("victim")
        token = _token(served, project.id)
        head = b'{"api_key": "' + token.encode() + b'", "batch": ['
        count = (MAX_BODY - len(head) - 2) // 3
        body = head + b",".join([b"{}"] * count) + b"]}"
        assert MAX_BODY - 3 <= len(body) <= MAX_BODY
        normal = {"api_key": token, "batch": [{"event": "ok", "distinct_id": f"u{i}"} for i in range(100)]}
        assert project.http.post("/batch/", json=normal).status_code == 200
        served.reset_peak()
        before = served.rss()
        cpu = _cpu_seconds(served)
        for _ in range(3):
            answer = httpx.post(f"{served.url}/batch/", content=body, headers={"content-type": "application/json"},
                                timeout=120)  # fmt: skip
            assert answer.status_code == 413, answer.text[:300]
            assert "memory budget" in answer.json()["detail"], answer.text
        assert _cpu_seconds(served) - cpu < 3.0
        assert served.peak_rss() - before < 100 * 1024**2, (before, served.peak_rss())
        assert project.http.post("/batch/", json=normal).status_code == 200
        rows = project.query("select count(), (select count() from ingestion_warnings) from events").json()
        assert rows["results"] == [[200, 0]]


def _cpu_seconds(served: ServedProcess) -> float:
    fields = Path(f"/proc/{served.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


@pytest.mark.slow
def test_a_project_reading_big_bodies_at_once_is_held_to_its_share(tmp_path: Path) -> None:
    """Bodies that each fit the share, sent at once: those past it wait their turn as a 429 (Retry-After), the
    others are stored, and the memory comes back after."""
    with ServedProcess(tmp_path / "data", "--memory-budget", "1GiB") as served:  # a project's share: 128 MiB
        project = served.project("a")
        token = _token(served, project.id)
        events = [{"event": "big", "distinct_id": f"u{i}", "properties": {"n": i}} for i in range(60_000)]
        body = {"api_key": token, "batch": events}
        answers: list[httpx.Response] = []

        def send() -> None:
            answers.append(httpx.post(f"{served.url}/batch/", json=body, timeout=120))

        threads = [threading.Thread(target=send) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = sorted(a.status_code for a in answers)
        assert set(statuses) <= {200, 429} and 200 in statuses, [a.text[:300] for a in answers]
        for refused in (a for a in answers if a.status_code == 429):
            assert refused.headers["Retry-After"] and refused.json()["code"] == "throttled"
        stored = statuses.count(200) * len(events)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # every request answered: nothing is held, a new one is stored
            if project.http.post("/batch/", json=body).status_code == 200:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the project's share was not given back")
        assert project.query("select count() from events").json()["results"] == [[stored + len(events)]]
