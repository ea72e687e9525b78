"""A file into a project that already has persons: the known ids are looked up in the engine, the few persons
PostHog's rules must see are read into Python, and the result equals one file and event-by-event capture."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_ingest_persons import T0, _check, _scenario

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import Ingestor, PersonStore, files, load_file


def _persons_by_ids(engine: ChdbEngine, team: int) -> dict[frozenset[str], tuple[dict[str, Any], int]]:
    """Each live person as (its distinct ids) → (properties, is_identified)."""
    rows = engine.execute(f"""
        SELECT groupArray(pdi.distinct_id) AS ids, any(p.props) AS props, any(p.identified) AS identified FROM
          (SELECT distinct_id, argMax(person_id, version) AS pid FROM person_distinct_ids
           WHERE team_id = {team} GROUP BY distinct_id HAVING argMax(is_deleted, version) = 0) AS pdi
        INNER JOIN (SELECT id, argMax(properties, version) AS props, argMax(is_identified, version) AS identified
                    FROM persons WHERE team_id = {team} GROUP BY id
                    HAVING argMax(is_deleted, version) = 0) AS p ON pdi.pid = p.id
        GROUP BY pdi.pid""").to_pylist()
    return {frozenset(r["ids"]): (json.loads(r["props"]), r["identified"]) for r in rows}


def _write_jsonl(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.mark.parametrize(("seed", "compressed"), [(1, False), (3, False), (4, True)])
def test_two_files_equal_one_file_and_event_by_event_capture(
    engine: ChdbEngine, seed: int, compressed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second file meets persons the first made (merges across files included): the same persons, properties
    and event persons as loading both in one file, as capturing the events one by one, and as pandas says.
    ``compressed``: staged in compressed tables, as big files are."""
    if compressed:
        monkeypatch.setattr(files, "_COMPRESS_FROM_BYTES", 0)
    events = []
    step: dict[str, int] = {}
    for e in _scenario(seed, users=60):  # interleave the users, so each one's story crosses the split
        user = e["distinct_id"].rsplit("-", 1)[1]
        step[user] = step.get(user, -1) + 1
        at = T0 + timedelta(hours=step[user], seconds=int(user))
        events.append({**e, "timestamp": at.isoformat()})
    events.sort(key=lambda e: e["timestamp"])
    half = len(events) // 2
    two, one, captured = (int(x) for x in np.random.default_rng().integers(10**9, 2**62, size=3))
    load_file(engine, two, _write_jsonl(tmp_path / "first.jsonl", events[:half]))
    second = load_file(engine, two, _write_jsonl(tmp_path / "second.jsonl", events[half:][::-1]))
    load_file(engine, one, _write_jsonl(tmp_path / "all.jsonl", events))
    ingestor = Ingestor.for_engine(engine)
    for start in range(0, len(events), 23):
        ingestor.capture_batch(captured, events[start : start + 23])
    _check(engine, two, events)
    assert _persons_by_ids(engine, two) == _persons_by_ids(engine, one) == _persons_by_ids(engine, captured)
    assert second.rows == len(events) - half
    crossing = {e["distinct_id"] for e in events[:half]} & {e["distinct_id"] for e in events[half:]}
    assert len(crossing) > 10  # the second file really does meet known ids
    assert any(e["event"] == "$identify" and e["properties"]["$anon_distinct_id"] in crossing for e in events[half:])


def test_property_changes_of_known_persons_equal_event_by_event_capture(engine: ChdbEngine, tmp_path: Path) -> None:
    """Known ids whose rows only $set/$set_once/$unset are updated in SQL on top of what the person had."""
    rng = np.random.default_rng(17)

    def batch(start: datetime, ids: int, n: int) -> list[dict[str, Any]]:
        out = []
        for i in range(n):
            props: dict[str, Any] = {}
            for kind in ("$set_once", "$set", "$unset"):
                if rng.random() < 0.5:
                    keys = [f"k{k}" for k in rng.choice(5, size=int(rng.integers(1, 3)), replace=False)]
                    values = [int(rng.integers(9)), "s/é", {"n": [1, None]}, None]
                    props[kind] = keys if kind == "$unset" else {k: values[i % 4] for k in keys}
            ts = start + timedelta(seconds=int(rng.integers(0, 40)))  # ties: the file line breaks them
            out.append({"event": "e", "distinct_id": f"d{rng.integers(ids)}", "properties": props,
                        "timestamp": ts.isoformat()})  # fmt: skip
        return out

    first, second = batch(T0, 30, 200), batch(T0 + timedelta(days=1), 40, 300)  # ids d30.. are new in the second
    loaded, captured = (int(x) for x in np.random.default_rng().integers(10**9, 2**62, size=2))
    load_file(engine, loaded, _write_jsonl(tmp_path / "a.jsonl", first))
    load_file(engine, loaded, _write_jsonl(tmp_path / "b.jsonl", second))
    ingestor = Ingestor.for_engine(engine)
    for part in (first, second):
        ingestor.capture_batch(captured, sorted(part, key=lambda e: e["timestamp"]))
    persons = _persons_by_ids(engine, loaded)
    assert persons == _persons_by_ids(engine, captured)
    assert len(persons) == len({e["distinct_id"] for e in first + second})
    assert sum(len(props) > 2 for props, _ in persons.values()) > 5


def test_a_load_reads_only_the_persons_its_merges_touch(engine: ChdbEngine, tmp_path: Path) -> None:
    """A project of many persons: the second file's known ids take their person in the engine; Python holds only
    the persons of the ids in merges, and the whole-project state is never built."""
    team = int(np.random.default_rng().integers(10**9, 2**62))
    first = [{"event": "e", "distinct_id": f"u{i}", "timestamp": (T0 + timedelta(seconds=i)).isoformat(),
              "properties": {"$set": {"n": i}}} for i in range(3000)]  # fmt: skip
    load_file(engine, team, _write_jsonl(tmp_path / "first.jsonl", first))
    later = T0 + timedelta(days=1)
    second = [{"event": "e", "distinct_id": f"u{i}", "timestamp": later.isoformat(),
               "properties": {"$set": {"m": i}} if i % 2 else {}} for i in range(3000)]  # fmt: skip
    second += [{"event": "$identify", "distinct_id": "u1", "timestamp": later.isoformat(),
                "properties": {"$anon_distinct_id": "u2"}},
               {"event": "$identify", "distinct_id": "new-user", "timestamp": later.isoformat(),
                "properties": {"$anon_distinct_id": "u4"}}]  # fmt: skip
    store = PersonStore.for_engine(engine)
    store.invalidate(team)
    read_before = store.persons_read
    report = load_file(engine, team, _write_jsonl(tmp_path / "second.jsonl", second))
    assert report.rows == 3002 and report.persons_created == 0
    assert store.persons_read - read_before <= 3  # u1's, u2's and u4's persons: not the project's 3,000
    assert not store.is_cached(team)
    persons = _persons_by_ids(engine, team)
    assert len(persons) == 2999  # u2 merged into u1; new-user joined u4
    assert persons[frozenset({"u1", "u2"})] == ({"n": 1, "m": 1}, 1)  # u2 (anonymous) merged into u1
    assert persons[frozenset({"u4", "new-user"})] == ({"n": 4}, 1)
    assert persons[frozenset({"u7"})] == ({"n": 7, "m": 7}, 0) and persons[frozenset({"u8"})] == ({"n": 8}, 0)


def test_a_new_id_given_a_known_person_and_that_persons_known_id_in_one_file(
    engine: ChdbEngine, team: int, tmp_path: Path
) -> None:
    """x2 joins x's person (its given person_id) by PostHog's rules while x's row $sets: one person row, both."""
    person = "5f0c6a1e-3a53-4c1b-9a43-0a7d1cbb7d11"
    first = [{"event": "e", "distinct_id": "x", "timestamp": T0.isoformat(), "person_id": person,
              "properties": {"$set": {"a": 1}}}]  # fmt: skip
    load_file(engine, team, _write_jsonl(tmp_path / "first.jsonl", first))
    later = (T0 + timedelta(days=1)).isoformat()
    earlier = (T0 - timedelta(days=1)).isoformat()  # x2 makes the person older: Python writes its row
    second = [{"event": "e", "distinct_id": "x2", "timestamp": earlier, "person_id": person},
              {"event": "e", "distinct_id": "x", "timestamp": later, "properties": {"$set": {"b": 2}}}]  # fmt: skip
    assert load_file(engine, team, _write_jsonl(tmp_path / "second.jsonl", second)).persons_created == 0
    assert _persons_by_ids(engine, team) == {frozenset({"x", "x2"}): ({"a": 1, "b": 2}, 0)}
    # one row per load, never two at one version (a background merge may already have kept only the newest)
    rows = engine.execute(f"SELECT count() AS n, any(toString(created_at)) AS created FROM persons "
                          f"WHERE team_id = {team} GROUP BY id, version ORDER BY version").to_pylist()  # fmt: skip
    assert {r["n"] for r in rows} == {1} and rows[-1]["created"] == "2026-02-28 00:00:00.000000"
