"""Capture bodies and events as the SDKs send them: normalised, repaired or dropped with the ingestion warning PostHog
would record (nothing here touches the engine)."""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest

from hoglab.server.ingest import (
    EventDropped,
    IngestError,
    decode_payload,
    normalize_batch,
    normalize_event,
    triage_batch,
)
from hoglab.server.ingest.payload import MAX_BODY_BYTES
from hoglab.server.ingest.warnings import clip

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
EVENT = {"event": "$pageview", "distinct_id": "u1", "properties": {"$browser": "Chrome"}}


def test_posthog_python_batch_body() -> None:
    body = json.dumps({"batch": [EVENT, EVENT], "api_key": "phc_abc", "sent_at": "2026-05-01T11:59:59+00:00"})
    payload = decode_payload(body.encode(), content_type="application/json")
    assert (payload.token, len(payload.events), payload.sent_at, payload.attr_prefix) == (
        "phc_abc", 2, "2026-05-01T11:59:59+00:00", "batch__",
    )  # fmt: skip


def test_single_event_and_posthog_js_array_with_token_in_properties() -> None:
    single = decode_payload(json.dumps({**EVENT, "api_key": "phc_1"}).encode())
    assert (single.token, single.attr_prefix, len(single.events)) == ("phc_1", None, 1)
    js = [{**EVENT, "properties": {"token": "phc_js", "distinct_id": "u2"}}]
    array = decode_payload(json.dumps(js).encode())
    assert (array.token, array.attr_prefix) == ("phc_js", "")
    assert decode_payload(json.dumps(EVENT).encode(), query={"token": "phc_q"}).token == "phc_q"
    assert decode_payload(json.dumps(EVENT).encode()).token is None


def test_compressed_and_encoded_bodies() -> None:
    raw = json.dumps({"api_key": "phc_z", "batch": [EVENT]}).encode()
    assert decode_payload(gzip.compress(raw), content_encoding="gzip").token == "phc_z"
    assert decode_payload(gzip.compress(raw), query={"compression": "gzip-js"}).token == "phc_z"
    assert decode_payload(gzip.compress(raw)).token == "phc_z"  # recognised by its magic bytes
    form = urlencode({"data": base64.b64encode(raw).decode()}).encode()
    assert decode_payload(form, content_type="application/x-www-form-urlencoded").token == "phc_z"
    assert decode_payload(base64.b64encode(raw).rstrip(b"=")).token == "phc_z"


@pytest.mark.parametrize(
    ("body", "kwargs", "code"),
    [
        (b"", {}, "no_data"),
        (b"{not json", {}, "invalid_payload"),
        (b"\x1f\x8bnot really gzip", {}, "invalid_payload"),
        (b'{"batch": {}}', {}, "invalid_payload"),
        (b'{"batch": []}', {}, "no_data"),
        (b"42", {}, "invalid_payload"),
        (b"xyz", {"query": {"compression": "lz64"}}, "invalid_payload"),
        (b"x" * (MAX_BODY_BYTES + 1), {}, "payload_too_large"),
        (gzip.compress(b"[" + b"1," * (MAX_BODY_BYTES // 2) + b"1]"), {}, "payload_too_large"),
    ],
)
def test_malformed_bodies(body: bytes, kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(IngestError) as excinfo:
        decode_payload(body, **kwargs)  # type: ignore[arg-type]
    assert excinfo.value.code == code


def test_event_normalisation() -> None:
    event = normalize_event(
        {"event": "e", "properties": {"distinct_id": 42, "$set": {"a": 1}}, "$set": {"b": 2}, "$set_once": {"c": 3},
         "uuid": "0190C5D4-0000-7000-8000-000000000001", "elements_chain": "a:nth-child=1"}, now=NOW,
    )  # fmt: skip
    assert event.distinct_id == "42"
    assert event.properties["$set"] == {"a": 1, "b": 2} and event.properties["$set_once"] == {"c": 3}
    assert event.uuid == "0190c5d4-0000-7000-8000-000000000001" and event.timestamp == NOW
    assert json.loads(event.properties_json) == event.properties and not event.personless
    assert normalize_event({**EVENT, "properties": {"$process_person_profile": False}}, now=NOW).personless
    generated = {normalize_event(EVENT, now=NOW).uuid for _ in range(3)}
    assert len(generated) == 3
    assert len(normalize_event({**EVENT, "distinct_id": "x" * 500}, now=NOW).distinct_id) == 200


def test_clock_skew_is_corrected_with_sent_at_as_posthog_does() -> None:
    ts = "2026-05-01T10:00:00Z"
    skewed = normalize_event({**EVENT, "timestamp": ts}, sent_at="2026-05-01T10:00:30Z", now=NOW)
    assert skewed.timestamp == NOW - timedelta(seconds=30)
    ignored = normalize_event({**EVENT, "timestamp": ts, "properties": {"$ignore_sent_at": True}},
                              sent_at="2026-05-01T10:00:30Z", now=NOW)  # fmt: skip
    assert ignored.timestamp == datetime(2026, 5, 1, 10, tzinfo=UTC)
    assert normalize_event({**EVENT, "offset": 1500}, now=NOW).timestamp == NOW - timedelta(milliseconds=1500)
    assert normalize_event({**EVENT, "timestamp": "2026-05-03T00:00:00Z"}, now=NOW).timestamp == NOW
    naive = normalize_event({**EVENT, "timestamp": "2026-04-01 08:00:00"}, now=NOW)
    assert naive.timestamp == datetime(2026, 4, 1, 8, tzinfo=UTC)
    per_event = normalize_event({**EVENT, "timestamp": ts, "sent_at": "2026-05-01T10:00:10Z"}, now=NOW)
    assert per_event.timestamp == NOW - timedelta(seconds=10)


BAD_EVENTS = [
    ({"distinct_id": "u"}, "batch__1__event", "missing_event_name"),
    ({"event": "", "distinct_id": "u"}, "batch__1__event", "missing_event_name"),
    ({"event": 7, "distinct_id": "u"}, "batch__1__event", "missing_event_name"),
    ({"event": "e"}, "batch__1__distinct_id", "missing_distinct_id"),
    ({"event": "e", "distinct_id": {"a": 1}}, "batch__1__distinct_id", "missing_distinct_id"),
    ({"event": "e", "distinct_id": "  "}, "batch__1__distinct_id", "missing_distinct_id"),
    ({"event": "e", "distinct_id": True}, "batch__1__distinct_id", "missing_distinct_id"),
    ({"event": "e", "distinct_id": "u", "properties": []}, "batch__1__properties", "malformed_event_properties"),
    ({"event": "e", "distinct_id": "u", "$set": "x"}, "batch__1__$set", "malformed_event_properties"),
    ({"event": "e", "distinct_id": "u", "$set_once": [1]}, "batch__1__$set_once", "malformed_event_properties"),
    ({"event": "e", "distinct_id": "u", "uuid": "nope"}, "batch__1__uuid", "invalid_event_uuid"),
    ({"event": "e", "distinct_id": "u", "elements_chain": 5}, "batch__1__elements_chain", "invalid_event"),
    ("not an event", "batch__1", "invalid_event"),
]


@pytest.mark.parametrize(("event", "attr", "warning"), BAD_EVENTS)
def test_a_bad_event_is_dropped_alone_with_its_warning(event: object, attr: str, warning: str) -> None:
    good = [{**EVENT, "uuid": str(uuid.uuid4())} for _ in range(2)]
    triage = triage_batch([good[0], event, good[1]], now=NOW)
    assert [e.uuid for e in triage.events] == [g["uuid"] for g in good]
    (dropped,) = triage.dropped.rows()
    assert dropped.type == warning and dropped.details["index"] == 1
    assert dropped.details["field"] == (attr.removeprefix("batch__1__") if attr != "batch__1" else "")
    (problem,) = triage.problems
    assert problem["index"] == 1 and problem["result"] == "drop" and problem["type"] == warning
    assert problem["attr"] == attr and problem["detail"].startswith("Invalid payload")
    # All or nothing, for Python callers: the same fault is an IngestError naming the field.
    with pytest.raises(IngestError) as excinfo:
        normalize_batch([EVENT, event, EVENT], now=NOW)
    assert excinfo.value.attr == attr and excinfo.value.code == "invalid_payload"
    assert isinstance(excinfo.value, EventDropped) and excinfo.value.warning == warning


def test_a_dropped_events_warning_names_what_identifies_it() -> None:
    raw = {"event": "signup", "properties": {"distinct_id": "x" * 500}, "uuid": "not-a-uuid" * 50}
    (warning,) = triage_batch([raw], now=NOW).dropped.rows()
    details = warning.details
    assert details["eventName"] == "signup" and details["distinctId"] == "x" * 200
    assert details["eventUuid"] == ("not-a-uuid" * 50)[:200] and details["field"] == "uuid"
    assert details["reason"] == 'Invalid payload: "uuid" is not a valid UUID.'
    assert json.loads(warning.details_json()) == details


# (fields, the warning's details that matter) -> stored at NOW with the warning, as PostHog's ingestion does
REPAIRED_TIMES = [
    ({"timestamp": "not a time"}, {"field": "timestamp", "value": "not a time"}),
    ({"timestamp": 1714560000}, {"field": "timestamp", "value": 1714560000}),
    ({"timestamp": "1200-01-01T00:00:00"}, {"field": "timestamp", "reason": "out of bounds", "parsed_year": 1200}),
    ({"timestamp": "9999-12-30T00:00:00Z", "sent_at": "0001-01-02T00:00:00Z"},
     {"field": "timestamp", "reason": "out of bounds"}),
    ({"offset": 1e15}, {"field": "offset", "reason": "out of bounds", "offset": 1e15}),
    ({"offset": 2**70}, {"field": "offset", "reason": "out of bounds", "offset": str(2**70)}),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "expected"), REPAIRED_TIMES)
def test_an_unusable_time_is_stored_as_the_capture_time_with_a_warning(
    fields: dict[str, object], expected: dict[str, object]
) -> None:
    event = normalize_event({**EVENT, **fields}, now=NOW)
    assert event.timestamp == NOW
    (warning,) = event.warnings
    assert warning.type == "ignored_invalid_timestamp" and warning.details["eventUuid"] == event.uuid
    assert {k: warning.details[k] for k in expected} == expected
    if "value" not in expected:
        assert warning.details["value"] == clip(fields.get(str(warning.details["field"]), ""))


def test_a_time_in_the_future_and_a_bad_sent_at_are_warned_about() -> None:
    ahead = normalize_event({**EVENT, "event": "later", "timestamp": "2026-05-03T00:00:00Z"}, now=NOW)
    assert ahead.timestamp == NOW
    (warning,) = ahead.warnings
    assert warning.type == "event_timestamp_in_future"
    assert warning.details == {
        "timestamp": "2026-05-03T00:00:00Z", "sentAt": "", "offset": "", "now": NOW.isoformat(),
        "result": "2026-05-03T00:00:00+00:00", "eventUuid": ahead.uuid, "eventName": "later",
    }  # fmt: skip
    # An unparseable sent_at is ignored (no skew correction): the event keeps its own time.
    skew = normalize_event({**EVENT, "timestamp": "2026-05-01T10:00:00Z"}, sent_at="soon", now=NOW)
    assert skew.timestamp == datetime(2026, 5, 1, 10, tzinfo=UTC)
    assert [(w.type, w.details["field"], w.details["value"]) for w in skew.warnings] == [
        ("ignored_invalid_timestamp", "sent_at", "soon")
    ]
    ignored = normalize_event({**EVENT, "properties": {"$ignore_sent_at": True}}, sent_at="soon", now=NOW)
    assert ignored.warnings == ()
    assert normalize_event({**EVENT, "timestamp": "2026-05-01T10:00:00Z"}, now=NOW).warnings == ()


def test_triage_counts_repaired_events_and_lists_the_first_problems() -> None:
    raws = [EVENT, {**EVENT, "timestamp": "nope"}, *([{"event": "x"}] * 30)]
    triage = triage_batch(raws, now=NOW, attr_prefix="")
    assert len(triage.events) == 2 and triage.repaired == 1 and len(triage.dropped) == 30
    assert len(triage.problems) == 20
    assert triage.problems[0] == {
        "index": 1, "result": "warning", "type": "ignored_invalid_timestamp", "attr": "1__timestamp",
        "detail": '"timestamp" is not an ISO 8601 date-time: stored at the capture time.',
    }  # fmt: skip
    assert triage.problems[1]["attr"] == "2__distinct_id"


def test_attr_prefixes_for_arrays_and_single_events() -> None:
    with pytest.raises(IngestError) as array:
        normalize_batch([{"distinct_id": "u"}], now=NOW, attr_prefix="")
    assert array.value.attr == "0__event"
    with pytest.raises(IngestError) as single:
        normalize_batch([{"distinct_id": "u"}], now=NOW, attr_prefix=None)
    assert single.value.attr == "event"
