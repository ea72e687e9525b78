"""Abuse: capture bodies built to crash the service answer a 400 naming the event's field, never a 500 (an SDK
retries a 500 forever), and a resent batch is counted once. Against the session's real service."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

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
def test_overflowing_times_are_a_400_naming_the_field(
    live_project: TestProject, path: str, fields: dict[str, Any], attr: str
) -> None:
    good = {"event": "ok", "distinct_id": "u"}
    bad = {"event": "x", "distinct_id": "y", **fields}
    http = live_project.client()
    body: Any = {"api_key": live_project.api_token, "batch": [good, bad]} if path == "/batch/" else [good, bad]
    if path != "/batch/":
        bad.setdefault("properties", {})["token"] = live_project.api_token
        good["properties"] = {"token": live_project.api_token}
    answer = http.post(path, json=body)
    assert answer.status_code == 400, answer.text
    prefix = "batch__1__" if path == "/batch/" else "1__"
    assert answer.json()["attr"] == prefix + attr and answer.json()["type"] == "validation_error"
    # Nothing of the batch was stored: all or nothing.
    assert _count(live_project, "ok") == 0


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


def test_properties_nested_beyond_what_can_be_written_are_a_400(live_project: TestProject) -> None:
    event = {"event": "deep", "distinct_id": "u", "properties": _nested(400)}
    answer = live_project.client().post("/batch/", json={"api_key": live_project.api_token, "batch": [event]})
    assert answer.status_code == 400 and answer.json()["attr"] == "batch__0__properties"


def test_a_resent_batch_is_counted_once(make_project: Callable[..., TestProject]) -> None:
    project = make_project()
    batch = [{"event": "retry", "distinct_id": f"u{i}", "uuid": str(uuid.uuid4())} for i in range(5)]
    http = project.client()
    for _ in range(3):  # the SDK lost the answer twice
        answer = http.post("/batch/", json={"api_key": project.api_token, "batch": batch})
        assert answer.status_code == 200
    assert _count(project, "retry") == 5


def _count(project: TestProject, event: str) -> int:
    answer = project.http.post(
        f"/api/projects/{project.id}/query/",
        json={"query": {"kind": "HogQLQuery", "query": f"select count() from events where event = '{event}'"},
              "refresh": "force_blocking"},
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    return int(answer.json()["results"][0][0])


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
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 400:
        error = answer.json()
        assert error["type"] == "validation_error" and error["detail"]

