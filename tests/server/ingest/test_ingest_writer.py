"""The group-commit writer: posthog-python's exact request body stored, shared INSERTs, failures reported, one
project's big requests cut into slices so another's small one is not held behind them, warnings written."""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import posthog
import pyarrow as pa
import pytest
from posthog import request as posthog_request
from test_ingest_persons import _check, _scenario

from hoglab.server.engine import EngineError
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import CapturedEvent, Ingestor, decode_payload, normalize_batch, normalize_event
from hoglab.server.ingest.warnings import IngestionWarning


class _Recorder:
    """Stands in for posthog-python's requests session: keeps what it would have sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, dict[str, str]]] = []

    def post(self, url: str, data: Any = None, headers: Any = None, timeout: Any = None) -> Any:
        self.sent.append((url, data if isinstance(data, bytes) else data.encode(), dict(headers or {})))

        class _Response:
            status_code = 200

            def json(self) -> dict[str, int]:
                return {"status": 1}

        return _Response()


def test_posthog_python_request_body_is_stored(engine: ChdbEngine, team: int, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(posthog_request, "_session", recorder)
    sdk = posthog.Posthog("phc_sdk", host="http://hoglab.test", sync_mode=True, gzip=True)
    sdk.capture("$feature_flag_called", distinct_id="p1",
                properties={"$feature_flag": "new-checkout", "$feature_flag_response": "test"})  # fmt: skip
    sdk.capture("purchase", distinct_id="p1", properties={"$feature/new-checkout": "test", "price": 3})
    sdk.set_once(distinct_id="p1", properties={"first_seen": "today"})
    assert len(recorder.sent) == 3
    url, body, headers = recorder.sent[0]
    assert url == "http://hoglab.test/batch/" and headers["Content-Encoding"] == "gzip"
    stored = 0
    for _, body, headers in recorder.sent:
        payload = decode_payload(body, content_encoding=headers.get("Content-Encoding"))
        assert payload.token == "phc_sdk" and payload.attr_prefix == "batch__"
        events = normalize_batch(payload.events, sent_at=payload.sent_at, attr_prefix=payload.attr_prefix)
        stored += Ingestor.for_engine(engine).submit(team, events).result()
    assert stored == 3
    rows = engine.execute(f"SELECT event, JSONExtractString(properties, '$lib') AS lib FROM events "
                          f"WHERE team_id = {team} ORDER BY timestamp").to_pylist()  # fmt: skip
    assert [r["event"] for r in rows] == ["$feature_flag_called", "purchase", "$set_once"]
    assert {r["lib"] for r in rows} == {"posthog-python"}
    persons = engine.execute(f"SELECT argMax(properties, version) AS p FROM persons WHERE team_id = {team} GROUP BY id")
    assert persons.column("p").to_pylist() == ['{"first_seen":"today"}']


def test_capture_batch_validates_everything_first(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    assert ingestor.capture_batch(team, [{"event": "a", "distinct_id": "x"}], now=datetime(2026, 1, 1, tzinfo=UTC)) == 1
    with pytest.raises(ValueError):
        ingestor.capture_batch(team, [{"event": "a", "distinct_id": "x"}, {"event": "b"}])
    assert engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist() == [{"n": 1}]


def test_concurrent_submits_are_grouped(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor(engine, window=0.02)
    try:
        raw = [{"event": "e", "distinct_id": f"g{i}"} for i in range(3)]
        events = normalize_batch(raw)
        futures = []
        barrier = threading.Barrier(16)

        def go() -> None:
            mine = normalize_batch(raw)  # fresh uuids: the same uuids would be stored once
            barrier.wait()
            futures.append(ingestor.submit(team, mine))

        threads = [threading.Thread(target=go) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(f.result(30) for f in futures) == 48
        assert ingestor.commits <= 4
    finally:
        ingestor.close()
    with pytest.raises(RuntimeError):
        ingestor.submit(team, events)


class _FailingEngine:
    """The real engine, except that inserting events fails (a full disk, say): after ``fail_after`` good inserts,
    ``times`` times (``None``: from then on)."""

    name = "chdb"

    def __init__(self, engine: ChdbEngine, fail_after: int = 0, times: int | None = None) -> None:
        self.inner = engine
        self.good = fail_after
        self.times = times

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        if table == "events":
            if self.good > 0:
                self.good -= 1
            elif self.times is None or self.times > 0:
                self.times = None if self.times is None else self.times - 1
                raise EngineError("Cannot reserve 1.00 MiB, not enough space", code=243)
        self.inner.insert_arrow(table, data)


def test_a_failed_insert_fails_every_request_of_the_group(engine: ChdbEngine, team: int) -> None:
    failing = _FailingEngine(engine)
    ingestor = Ingestor(failing)  # type: ignore[arg-type]
    try:
        events = normalize_batch([{"event": "e", "distinct_id": "z", "properties": {"$set": {"a": 1}}}])
        future = ingestor.submit(team, events)
        with pytest.raises(EngineError, match="not enough space"):
            future.result(30)
        assert team not in ingestor.persons._states  # cached persons dropped: reloaded from the tables next time
    finally:
        ingestor.close()
    assert engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist() == [{"n": 0}]


# -- fairness: per-project queues, slices of big requests ----------------------------------------------------------


def _events(n: int, prefix: str = "u") -> list[CapturedEvent]:
    now = datetime.now(UTC)
    return [normalize_event({"event": "e", "distinct_id": f"{prefix}{i % 500}"}, now=now) for i in range(n)]


def _count(engine: ChdbEngine, team: int, table: str = "events") -> int:
    return int(engine.execute(f"SELECT count() AS n FROM {table} WHERE team_id = {team}").to_pylist()[0]["n"])


def test_a_small_request_is_not_held_behind_big_ones(engine: ChdbEngine, team: int) -> None:
    """Project A queues three 20,000-event requests, then B one event: B is stored while A's first request is
    still being written (first come, first served would have made it wait for all 60,000)."""
    ingestor = Ingestor(engine, window=0, slice_events=1000)
    other = team + 1
    try:
        big = [_events(20_000, "a") for _ in range(3)]
        small = _events(1, "b")
        done_when_b_done: list[bool] = []
        a_futures = [ingestor.submit(team, events) for events in big]
        start = time.perf_counter()
        b_future = ingestor.submit(other, small)
        b_future.add_done_callback(lambda _: done_when_b_done.append(a_futures[0].done()))
        assert b_future.result(60) == 1
        waited = time.perf_counter() - start
        assert [f.result(600) for f in a_futures] == [20_000] * 3
    finally:
        ingestor.close()
    assert done_when_b_done == [False]  # B finished before A's first request did
    assert waited < 10  # generous: about two slices of 1,000 events on a loaded machine
    assert _count(engine, team) == 60_000 and _count(engine, other) == 1


def test_big_requests_cut_into_slices_keep_each_projects_order(engine: ChdbEngine, team: int) -> None:
    """One request of a whole merge scenario, cut into 7-event slices, interleaved with another project's small
    requests: each project's persons come out as pandas says, and a uuid repeated across slices is stored once."""
    events = _scenario(3)
    other = team + 1
    other_events = _scenario(5)
    ingestor = Ingestor(engine, window=0, slice_events=7)
    try:
        events[0] = dict(events[0], uuid=str(uuid.uuid4()))
        whole = normalize_batch([*events, events[0]])  # the first event again at the end: a later slice
        futures = [ingestor.submit(team, whole)]
        for start in range(0, len(other_events), 3):
            futures.append(ingestor.submit(other, normalize_batch(other_events[start : start + 3])))
        assert futures[0].result(120) == len(events)
        assert sum(f.result(120) for f in futures[1:]) == len(other_events)
        assert ingestor.commits > len(events) // 7
    finally:
        ingestor.close()
    _check(engine, team, events)
    _check(engine, other, other_events)


def test_warnings_are_written_with_their_events(engine: ChdbEngine, team: int) -> None:
    """A request whose events were all dropped still writes its warnings; a repaired event's warning is written
    with the event, and not again when the SDK resends it (the copy is a duplicate)."""
    ingestor = Ingestor(engine, window=0)
    try:
        dropped = [IngestionWarning("missing_distinct_id", {"index": 0}), IngestionWarning("invalid_event", {})]
        assert ingestor.submit(team, [], dropped).result(30) == 0
        late = {"event": "e", "distinct_id": "d", "timestamp": "later", "uuid": str(uuid.uuid4())}
        repaired = normalize_batch([late])
        assert ingestor.submit(team, repaired).result(30) == 1
        assert ingestor.submit(team, repaired).result(30) == 0  # the retry
    finally:
        ingestor.close()
    rows = engine.execute(f"SELECT source, type, details FROM ingestion_warnings WHERE team_id = {team} ORDER BY type")
    stored = [(r["source"], r["type"], json.loads(r["details"])) for r in rows.to_pylist()]
    assert [(s, t) for s, t, _ in stored] == [("capture", "ignored_invalid_timestamp"), ("capture", "invalid_event"),
                                              ("capture", "missing_distinct_id")]  # fmt: skip
    assert stored[0][2]["eventUuid"] == repaired[0].uuid and stored[2][2] == {"index": 0}


def test_a_failed_slice_fails_its_request_and_drops_the_rest(engine: ChdbEngine, team: int) -> None:
    """The second slice of a big request fails: the request gets the error and its remaining slices are not
    written; the project's next request is stored as usual."""
    failing = _FailingEngine(engine, fail_after=1, times=1)
    ingestor = Ingestor(failing, window=0, slice_events=100)  # type: ignore[arg-type]
    try:
        big = ingestor.submit(team, _events(1000))
        with pytest.raises(EngineError, match="not enough space"):
            big.result(60)
        assert ingestor.submit(team, _events(5, "z")).result(60) == 5
    finally:
        ingestor.close()
    assert _count(engine, team) == 100 + 5  # the first slice stays: a retry with the same uuids adds the rest


def test_a_resend_queued_behind_its_big_original_is_stored_once(engine: ChdbEngine, team: int) -> None:
    """An SDK resends a 1,050-event batch (plus ten new events) while the original is still being written in
    100-event slices: the resend's first slice shares a group with the original's last, and every later slice
    relies on what the writer remembers instead of a lookup of its own. Only the ten new events are added."""
    ingestor = Ingestor(engine, window=0.2, slice_events=100)
    try:
        now = datetime.now(UTC)
        raw = [{"event": "e", "distinct_id": f"r{i % 40}", "uuid": str(uuid.uuid4())} for i in range(1050)]
        new = [{"event": "e", "distinct_id": "n", "uuid": str(uuid.uuid4())} for _ in range(10)]
        resend = [*raw[:500], *new, *raw[500:]]
        first = ingestor.submit(team, normalize_batch(raw, now=now))
        again = ingestor.submit(team, normalize_batch(resend, now=now))  # queued within the first group's window
        assert (first.result(120), again.result(120)) == (1050, 10)
    finally:
        ingestor.close()
    table = engine.execute(f"SELECT toString(uuid) AS u, count() AS n FROM events WHERE team_id = {team} GROUP BY u")
    counts = {r["u"]: r["n"] for r in table.to_pylist()}
    assert set(counts) == {e["uuid"] for e in resend} and set(counts.values()) == {1}
