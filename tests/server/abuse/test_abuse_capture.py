"""Abuse: capture bodies built to crash the service never get a 500 (an SDK retries a 500 forever) and never cost
the other events of their batch: a hostile time is stored at the capture time with an ingestion warning naming
the field, unwritable properties drop their event alone; a resent batch is counted once; one project's
150,000-event batches do not hold up another project's one-event batch. Against the session's real service."""

from __future__ import annotations

import gzip
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.ingest.warnings import WARNING_TYPES

if TYPE_CHECKING:  # the session conftest's type; tests/ is not a package, so only for readers and checkers
    from conftest import TestProject

HOSTILE_EVENTS: list[tuple[dict[str, Any], str]] = [
    ({"offset": 1e15}, "offset"),
    ({"offset": -1e300}, "offset"),
    ({"offset": 2**70}, "offset"),
    ({"timestamp": "9999-12-30T00:00:00Z", "sent_at": "0001-01-02T00:00:00Z"}, "timestamp"),
    ({"timestamp": "0001-01-01T00:00:00Z"}, "timestamp"),
    ({"timestamp": "2026-01-01T00:00:00Z", "sent_at": "9999-12-31T00:00:00Z"}, "timestamp"),
]


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


@pytest.mark.parametrize("path", ["/batch/", "/e/", "/capture/", "/i/v0/e/"])
@pytest.mark.parametrize(("fields", "attr"), HOSTILE_EVENTS)
def test_overflowing_times_are_stored_at_the_capture_time_with_a_warning(
    make_project: Callable[..., TestProject], path: str, fields: dict[str, Any], attr: str
) -> None:
    project = make_project()
    good = {"event": "ok", "distinct_id": "u"}
    bad = {"event": "x", "distinct_id": "y", "uuid": str(uuid.uuid4()), **fields}
    http = project.client()
    body: Any = {"api_key": project.api_token, "batch": [good, bad]} if path == "/batch/" else [good, bad]
    if path != "/batch/":
        bad.setdefault("properties", {})["token"] = project.api_token
        good["properties"] = {"token": project.api_token}
    before = datetime.now(UTC)
    answer = http.post(path, json=body)
    assert answer.status_code == 200, answer.text
    prefix = "batch__1__" if path == "/batch/" else "1__"
    assert answer.json()["kept"] == 2 and answer.json()["repaired"] == 1
    assert [(p["attr"], p["type"]) for p in answer.json()["problems"]] == [(prefix + attr, "ignored_invalid_timestamp")]
    # Both events are stored, the bad one at the capture time; its warning names the field.
    assert _count(project, "ok") == 1
    (stored,) = _rows(project, f"select timestamp from events where uuid = '{bad['uuid']}'")
    assert before <= datetime.fromisoformat(stored[0]) <= datetime.now(UTC)
    warnings = _rows(project, "select type, details.field, details.eventUuid from ingestion_warnings")
    assert warnings == [["ignored_invalid_timestamp", attr, bad["uuid"]]]


@pytest.mark.parametrize(
    "properties",
    [{"big": 2**80, "$set": {"n": -(2**90)}}, {"deep": _nested(200)}, {"huge_float": 1e308}],
)
def test_awkward_properties_are_stored(live_project: TestProject, properties: dict[str, Any]) -> None:
    http = live_project.client()
    event = {"event": "odd", "distinct_id": "u", "properties": properties}
    answer = http.post("/batch/", json={"api_key": live_project.api_token, "batch": [event]})
    assert answer.status_code == 200, answer.text
    assert _count(live_project, "odd") == 1


def test_properties_nested_beyond_what_can_be_written_drop_their_event_alone(live_project: TestProject) -> None:
    events = [{"event": "deep", "distinct_id": "u", "properties": _nested(400)}, {"event": "flat", "distinct_id": "u"}]
    answer = live_project.client().post("/batch/", json={"api_key": live_project.api_token, "batch": events})
    assert answer.status_code == 200 and answer.json()["kept"] == 1
    assert [(p["attr"], p["type"]) for p in answer.json()["problems"]] == [
        ("batch__0__properties", "malformed_event_properties")
    ]
    assert _count(live_project, "deep") == 0 and _count(live_project, "flat") == 1
    assert _rows(live_project, "select type, details.eventName from ingestion_warnings") == [
        ["malformed_event_properties", "deep"]
    ]


def test_a_resent_batch_is_counted_once(make_project: Callable[..., TestProject]) -> None:
    project = make_project()
    batch = [{"event": "retry", "distinct_id": f"u{i}", "uuid": str(uuid.uuid4())} for i in range(5)]
    http = project.client()
    for _ in range(3):  # the SDK lost the answer twice
        answer = http.post("/batch/", json={"api_key": project.api_token, "batch": batch})
        assert answer.status_code == 200
    assert _count(project, "retry") == 5


def _rows(project: TestProject, sql: str) -> list[list[Any]]:
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert answer.status_code == 200, answer.text
    rows: list[list[Any]] = answer.json()["results"]
    return rows


def _count(project: TestProject, event: str) -> int:
    return int(_rows(project, f"select count() from events where event = '{event}'")[0][0])


_scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30)
    | st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59+14:00", "2026-02-30", "", "1e400", "NaN",
                       "00000000-0000-0000-0000-000000000000", "\x00", "\ud7ff"])
)  # fmt: skip
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=8), inner, max_size=3), max_leaves=10)  # fmt: skip
_FIELDS = ["event", "distinct_id", "properties", "uuid", "timestamp", "sent_at", "offset", "$set", "$set_once",
           "elements_chain"]  # fmt: skip


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(fields=st.dictionaries(st.sampled_from(_FIELDS), _values, max_size=6), batch_sent_at=_values)
def test_any_event_fields_are_stored_or_refused_never_a_500(
    live_project: TestProject, fields: dict[str, Any], batch_sent_at: Any
) -> None:
    capture_project = live_project  # one project for all the examples
    event = {"event": "fuzz", "distinct_id": "u", **fields}
    body = {"api_key": capture_project.api_token, "batch": [event], "sent_at": batch_sent_at}
    answer = capture_project.http.post("/batch/", json=body)
    assert answer.status_code == 200, answer.text  # one event's fault is never the request's
    result = answer.json()
    assert result["kept"] + result["dropped"] == 1 and result["repaired"] <= result["kept"]
    problems = result["problems"]
    assert sum(p["result"] == "drop" for p in problems) == result["dropped"]
    assert len({p["index"] for p in problems if p["result"] == "warning"}) == result["repaired"]
    assert all(p["type"] in WARNING_TYPES and p["attr"].startswith("batch__0") for p in result["problems"])



def test_a_big_batch_does_not_hold_up_another_projects_small_one(make_project: Callable[..., TestProject]) -> None:
    """Project A posts a 150,000-event batch; project B keeps posting one-event batches meanwhile. Each of B's is
    answered while A's is still being written (before, B waited for all of A's), within a generous bound.
    The ratio to B's unloaded latency is measured in bench/bench_capture_fairness.py."""
    a, b = make_project(), make_project()
    events = [{"event": "big", "distinct_id": f"a{i % 5000}", "uuid": str(uuid.uuid4())} for i in range(150_000)]
    body = gzip.compress(orjson.dumps({"api_key": a.api_token, "batch": events}), compresslevel=1)
    a_answer: list[Any] = []
    b_times: list[float] = []

    def send_big() -> None:
        with a.client() as http:
            a_answer.append(http.post("/batch/", content=body, headers={"Content-Encoding": "gzip"}, timeout=600))

    sender = threading.Thread(target=send_big)
    sender.start()
    http = b.client()
    while _rows(a, "select count() from events")[0][0] == 0 and sender.is_alive():
        time.sleep(0.05)  # A's batch is read and its first slices are being written
    while sender.is_alive() and len(b_times) < 20:
        start = time.perf_counter()
        answer = http.post("/batch/", json={"api_key": b.api_token, "batch": [{"event": "small", "distinct_id": "b"}]})
        b_times.append(time.perf_counter() - start)
        assert answer.status_code == 200 and answer.json()["kept"] == 1
    a_still_writing = sender.is_alive()
    sender.join()
    assert a_answer[0].status_code == 200 and a_answer[0].json()["kept"] == 150_000
    assert b_times and a_still_writing  # B was answered (up to 20 times) while A's batch was being written
    assert max(b_times) < 15  # generous: a slice is ~0.2 s on an idle machine
    assert _count(b, "small") == len(b_times) and _count(a, "big") == 150_000
