"""The group-commit writer: posthog-python's exact request body stored, shared INSERTs, failures reported."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import posthog
import pyarrow as pa
import pytest
from posthog import request as posthog_request

from hoglab.server.engine import EngineError
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import Ingestor, decode_payload, normalize_batch


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
    """The real engine, except that inserting events fails (a full disk, say)."""

    name = "chdb"

    def __init__(self, engine: ChdbEngine) -> None:
        self.inner = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        if table == "events":
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
