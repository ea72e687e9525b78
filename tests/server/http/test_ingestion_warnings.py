"""Ingestion warnings end to end, on the session's real service: a mixed batch sent with raw HTTP and with the
official ``posthog`` SDK keeps its good events, and the warnings of the bad ones are readable by their project,
and by no other, in HogQL (``ingestion_warnings``) and at ``GET /api/projects/:id/ingestion_warnings/`` (PostHog's
answer shape)."""

from __future__ import annotations

import importlib.util
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the session conftest's type; tests/ is not a package, so only for readers and checkers
    from conftest import TestProject


def _hogql(project: TestProject, sql: str, key: str | None = None) -> list[list[Any]]:
    http = project.client(key) if key else project.http
    answer = http.post(f"/api/projects/{project.id}/query/",
                       json={"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    rows: list[list[Any]] = answer.json()["results"]
    return rows


def _warnings_api(project: TestProject, **params: str) -> list[dict[str, Any]]:
    answer = project.http.get(f"/api/projects/{project.id}/ingestion_warnings/", params=params)
    assert answer.status_code == 200, answer.text
    assert set(answer.json()) == {"results"}
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


def _good(n: int, prefix: str) -> list[dict[str, Any]]:
    return [{"event": "$pageview", "distinct_id": f"{prefix}{i}", "uuid": str(uuid.uuid4())} for i in range(n)]


def test_a_mixed_batch_over_http_keeps_its_good_events_and_its_warnings_are_readable(
    make_project: Callable[..., TestProject],
) -> None:
    project = make_project()
    good = _good(9, "u")
    no_id = {"event": "signup", "uuid": str(uuid.uuid4())}
    bad_time = {"event": "late", "distinct_id": "u0", "timestamp": "not a time", "uuid": str(uuid.uuid4())}
    batch = [*good[:3], no_id, *good[3:6], bad_time, *good[6:]]
    answer = project.http.post("/batch/", json={"api_key": project.api_token, "batch": batch})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["status"], body["kept"], body["dropped"], body["repaired"]) == (1, 10, 1, 1)
    assert [(p["index"], p["type"]) for p in body["problems"]] == [(3, "missing_distinct_id"),
                                                                   (7, "ignored_invalid_timestamp")]  # fmt: skip

    stored = {row[0] for row in _hogql(project, "select toString(uuid) from events")}
    assert stored == {e["uuid"] for e in good} | {bad_time["uuid"]}
    rows = _hogql(project, "select type, source, details.eventUuid, details.field, details.value, details.index "
                           "from ingestion_warnings order by type")  # fmt: skip
    assert rows == [
        ["ignored_invalid_timestamp", "capture", bad_time["uuid"], "timestamp", "not a time", None],
        ["missing_distinct_id", "capture", no_id["uuid"], "distinct_id", None, "3"],
    ]

    summaries = _warnings_api(project)
    assert [s["type"] for s in summaries] == ["ignored_invalid_timestamp", "missing_distinct_id"] or [
        s["type"] for s in summaries
    ] == ["missing_distinct_id", "ignored_invalid_timestamp"]  # same capture time: either is the latest
    by_type = {s["type"]: s for s in summaries}
    today = datetime.now(UTC).date().isoformat()
    for summary in summaries:
        assert set(summary) == {"type", "lastSeen", "sparkline", "warnings", "count"}
        assert summary["count"] == 1 and summary["sparkline"] == [[1, today]]
        (warning,) = summary["warnings"]
        assert warning["timestamp"] == summary["lastSeen"] and warning["type"] == summary["type"]
        assert abs(datetime.fromisoformat(warning["timestamp"]) - datetime.now(UTC)).total_seconds() < 600
    assert by_type["missing_distinct_id"]["warnings"][0]["details"] == {
        "eventUuid": no_id["uuid"], "eventName": "signup", "distinctId": "", "field": "distinct_id",
        "reason": 'Invalid payload: All events must have the event field "distinct_id"!', "index": 3, "count": 1,
    }  # fmt: skip
    assert by_type["ignored_invalid_timestamp"]["warnings"][0]["details"] == {
        "eventUuid": bad_time["uuid"], "field": "timestamp", "value": "not a time",
        "reason": "not an ISO 8601 date-time", "count": 1,
    }  # fmt: skip
    # ?q= keeps the warnings whose type or details hold the text (PostHog's search)
    assert [s["type"] for s in _warnings_api(project, q="not a time")] == ["ignored_invalid_timestamp"]
    assert [s["type"] for s in _warnings_api(project, q="missing_distinct")] == ["missing_distinct_id"]
    assert _warnings_api(project, q="nothing like this") == []


def test_the_api_counts_and_orders_like_posthog(make_project: Callable[..., TestProject]) -> None:
    """Several requests: per type, the count of every warning, the 50 most recent (newest first), and the types
    by their latest warning. The oracle is what was sent, counted here."""
    project = make_project()
    sent: Counter[str] = Counter()
    rows: Counter[str] = Counter()  # a batch writes one warning per cause, with its count
    for round_ in range(3):
        batch: list[Any] = [*_good(2, f"r{round_}-"), *([{"event": "x"}] * (30 * round_)), "junk"]
        sent.update({"missing_distinct_id": 30 * round_, "invalid_event": 1})
        rows.update({"missing_distinct_id": int(round_ > 0), "invalid_event": 1})
        answer = project.http.post("/batch/", json={"api_key": project.api_token, "batch": batch})
        assert answer.json()["dropped"] == 30 * round_ + 1
    summaries = _warnings_api(project)
    assert {s["type"]: s["count"] for s in summaries} == dict(sent)
    for summary in summaries:
        times = [w["timestamp"] for w in summary["warnings"]]
        assert times == sorted(times, reverse=True) and len(times) == min(50, rows[summary["type"]])
        assert sum(n for n, _ in summary["sparkline"]) == sent[summary["type"]]
    latest = [s["lastSeen"] for s in summaries]
    assert latest == sorted(latest, reverse=True)


def test_one_project_cannot_read_anothers_warnings(make_project: Callable[..., TestProject]) -> None:
    owner, other = make_project(), make_project()
    secret = f"secret-{uuid.uuid4()}"
    owner.http.post("/batch/", json={"api_key": owner.api_token, "batch": [{"event": secret}]})
    assert _hogql(owner, f"select count() from ingestion_warnings where details.eventName = '{secret}'") == [[1]]
    # the other project's HogQL sees its own (none), whatever it tries
    joined = "select count() from ingestion_warnings w join events e on toString(e.uuid) = w.details.eventUuid"
    for sql in ("select count() from ingestion_warnings",
                f"select count() from ingestion_warnings where details like '%{secret}%'", joined):  # fmt: skip
        assert _hogql(other, sql) == [[0]], sql
    answer = other.http.post(f"/api/projects/{other.id}/query/", json={
        "query": {"kind": "HogQLQuery", "query": "select team_id from ingestion_warnings"}})  # fmt: skip
    assert answer.status_code == 400
    # the API: the other project's own list is empty; the owner's list is refused to the other's key
    assert _warnings_api(other) == []
    refused = other.http.get(f"/api/projects/{owner.id}/ingestion_warnings/")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    # and a key of the owner without query:read may not list them
    flags_only = owner.new_key(["feature_flag:read"])
    denied = owner.client(flags_only).get(f"/api/projects/{owner.id}/ingestion_warnings/")
    assert denied.status_code == 403 and "query:read" in denied.json()["detail"]


@pytest.mark.skipif(importlib.util.find_spec("posthog") is None, reason="the posthog SDK is not installed")
def test_the_official_sdk_sends_a_mixed_batch_and_treats_the_answer_as_success(
    make_project: Callable[..., TestProject],
) -> None:
    """posthog-python queues ten events and sends them as one ``/batch/``; its ``before_send`` hook (as an
    application's may) spoils two: one loses its distinct id, one gets a timestamp that is not a time. The SDK
    reports no error; the eight good events and the repaired one are stored; both warnings are readable."""
    import posthog

    project = make_project()
    errors: list[Any] = []

    def spoil(event: dict[str, Any]) -> dict[str, Any]:
        if event["event"] == "no-id":
            event.pop("distinct_id", None)
        if event["event"] == "bad-time":
            event["timestamp"] = "not a time"
        return event

    sdk = posthog.Posthog(project.api_token, host=project.service.url, capture_mode="v0", flush_at=100,
                          flush_interval=60, max_retries=0, before_send=spoil,
                          on_error=lambda exc, batch: errors.append((exc, len(batch))))  # fmt: skip
    try:
        for i in range(8):
            sdk.capture("purchase", distinct_id=f"sdk-{i}", properties={"price": i})
        sdk.capture("no-id", distinct_id="sdk-0")
        sdk.capture("bad-time", distinct_id="sdk-1")
        sdk.flush()
    finally:
        sdk.shutdown()
    assert errors == []
    counts = dict((name, n) for name, n in _hogql(project, "select event, count() from events group by event"))
    assert counts == {"purchase": 8, "bad-time": 1}
    rows = _hogql(project, "select type, details.eventName, details.field from ingestion_warnings order by type")
    assert rows == [["ignored_invalid_timestamp", None, "timestamp"], ["missing_distinct_id", "no-id", "distinct_id"]]
    assert {s["type"]: s["count"] for s in _warnings_api(project)} == {
        "ignored_invalid_timestamp": 1, "missing_distinct_id": 1
    }  # fmt: skip
