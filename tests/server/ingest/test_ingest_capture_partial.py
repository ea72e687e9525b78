"""Capture without a project's whole person state: each batch reads only the persons of the ids it names, and
the persons come out as with one continuous state, as a file load makes them, and as pandas says."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from test_ingest_load_known import _persons_by_ids, _write_jsonl
from test_ingest_persons import T0, _check, _scenario

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import Ingestor, PersonStore, load_file


@pytest.fixture(autouse=True)
def only_the_ids_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every project here counts as big: capture reads only the persons of the ids it names."""
    monkeypatch.setattr(PersonStore, "whole_state_max_ids", 0)


@pytest.mark.parametrize("seed", [2, 5])
def test_capture_after_every_restart_equals_one_continuous_capture(engine: ChdbEngine, seed: int, tmp_path) -> None:
    """Project A forgets its cached persons before every batch (a restart each time: every id is looked up in the
    engine again, merges meet persons only the tables hold); B keeps its cache; C is one file load."""
    events = []
    step: dict[str, int] = {}
    for e in _scenario(seed, users=60):  # interleaved users: merges cross batches
        user = e["distinct_id"].rsplit("-", 1)[1]
        step[user] = step.get(user, -1) + 1
        events.append({**e, "timestamp": (T0 + timedelta(hours=step[user], seconds=int(user))).isoformat()})
    events.sort(key=lambda e: e["timestamp"])
    restarted, continuous, loaded = (int(x) for x in np.random.default_rng().integers(10**9, 2**62, size=3))
    ingestor, store = Ingestor.for_engine(engine), PersonStore.for_engine(engine)
    for start in range(0, len(events), 17):
        store.invalidate(restarted)
        ingestor.capture_batch(restarted, events[start : start + 17])
        ingestor.capture_batch(continuous, events[start : start + 17])
    load_file(engine, loaded, _write_jsonl(tmp_path / "all.jsonl", events))
    _check(engine, restarted, events)
    assert _persons_by_ids(engine, restarted) == _persons_by_ids(engine, continuous) == _persons_by_ids(engine, loaded)
    assert not store.is_cached(restarted) and not store.is_cached(continuous)
    assert any(e["event"] in ("$identify", "$create_alias") for e in events)


def test_capture_reads_only_the_persons_of_the_ids_it_names(engine: ChdbEngine, tmp_path) -> None:
    """A project of 3,000 persons: a batch naming four of them (one merge) reads those, not the project."""
    team = int(np.random.default_rng().integers(10**9, 2**62))
    first = [{"event": "e", "distinct_id": f"u{i}", "timestamp": (T0 + timedelta(seconds=i)).isoformat(),
              "properties": {"$set": {"n": i}}} for i in range(3000)]  # fmt: skip
    load_file(engine, team, _write_jsonl(tmp_path / "first.jsonl", first))
    store = PersonStore.for_engine(engine)
    store.invalidate(team)
    before = store.persons_read
    later = (T0 + timedelta(days=1)).isoformat()
    Ingestor.for_engine(engine).capture_batch(team, [
        {"event": "e", "distinct_id": "u1", "timestamp": later, "properties": {"$set": {"m": 1}}},
        {"event": "e", "distinct_id": "u2", "timestamp": later, "properties": {"$set_once": {"n": 99, "o": 2}}},
        {"event": "$create_alias", "distinct_id": "u3", "timestamp": later, "properties": {"alias": "u4"}},
        {"event": "e", "distinct_id": "new-id", "timestamp": later, "properties": {"$set": {"fresh": True}}},
    ])  # fmt: skip
    assert store.persons_read - before <= 4  # u1..u4's persons (new-id has none yet)
    # the cached state meets a known id it has not looked up yet: it finds u5's person, not a new one
    Ingestor.for_engine(engine).capture_batch(
        team, [{"event": "e", "distinct_id": "u5", "timestamp": later, "properties": {"$set": {"m": 5}}}]
    )
    assert store.persons_read - before <= 5
    assert not store.is_cached(team)
    persons = _persons_by_ids(engine, team)
    assert persons[frozenset({"u1"})][0] == {"n": 1, "m": 1}
    assert persons[frozenset({"u2"})][0] == {"n": 2, "o": 2}
    assert persons[frozenset({"u3", "u4"})][0]["n"] in (3, 4)
    assert persons[frozenset({"new-id"})][0] == {"fresh": True}
    assert persons[frozenset({"u5"})][0] == {"n": 5, "m": 5}
    assert len(persons) == 3000  # u3 and u4 are one person now, new-id is a new one
