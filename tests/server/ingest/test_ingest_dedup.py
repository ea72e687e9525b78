"""Events are stored once per ``(project, uuid)``: an SDK's resent batch, a uuid twice in one request, and a retry
whose recomputed timestamp moved across midnight."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import Ingestor
from hoglab.server.ingest.events import normalize_event

NOW = datetime(2026, 3, 1, 23, 59, 59, 900000, tzinfo=UTC)


def _stored(engine: ChdbEngine, team: int) -> list[str]:
    table = engine.execute(f"SELECT toString(uuid) AS u FROM hoglab.events WHERE team_id = {team} ORDER BY u")
    return [str(u) for u in table.column("u").to_pylist()]


def test_a_resent_event_is_stored_once(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    ids = [str(uuid.uuid4()) for _ in range(3)]
    batch = [{"event": "signup", "distinct_id": f"u{i}", "uuid": u} for i, u in enumerate(ids)]
    assert ingestor.capture_batch(team, batch, now=NOW) == 3
    # The retry: same uuids, one new event, and a timestamp recomputed a moment later (now past midnight).
    later = NOW + timedelta(seconds=1)
    extra = {"event": "signup", "distinct_id": "u9", "uuid": str(uuid.uuid4())}
    assert ingestor.capture_batch(team, [*batch, extra], now=later) == 1
    assert _stored(engine, team) == sorted([*ids, extra["uuid"]])


def test_a_uuid_twice_in_one_group_is_stored_once(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    same = str(uuid.uuid4())
    events = [normalize_event({"event": "x", "distinct_id": "a", "uuid": same}, now=NOW) for _ in range(2)]
    futures = [ingestor.submit(team, events[:1]), ingestor.submit(team, events[1:]), ingestor.submit(team, events)]
    assert sum(f.result() for f in futures) == 1
    assert _stored(engine, team) == [same]


def test_the_same_uuid_in_two_projects_is_two_events(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    same = str(uuid.uuid4())
    event = {"event": "x", "distinct_id": "a", "uuid": same}
    assert ingestor.capture_batch(team, [event], now=NOW) == 1
    assert ingestor.capture_batch(team + 1, [event], now=NOW) == 1
    assert _stored(engine, team) == [same] and _stored(engine, team + 1) == [same]


def test_event_names_with_quotes_and_nul_bytes_do_not_break_the_lookup(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    events = [{"event": name, "distinct_id": "a"} for name in ("it's", "back\\slash", "nul\x00byte", "ünï")]
    assert ingestor.capture_batch(team, events, now=NOW) == 4
    assert ingestor.capture_batch(team, events, now=NOW) == 4  # fresh uuids: new events
    assert len(_stored(engine, team)) == 8
