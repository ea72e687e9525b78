"""Persons: PostHog's identify/alias/merge/$set rules, and the stored state checked against an independent
pandas computation, for captured events and for the same events loaded from a file."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import Ingestor, PersonState, PersonStore, load_file, person_uuid

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_identify_joins_an_anonymous_person_and_alias_adds_an_id() -> None:
    state = PersonState(1)
    anon = state.process("$pageview", "anon", {}, T0)
    assert anon == person_uuid(1, "anon")
    user = state.process("$identify", "user", {"$anon_distinct_id": "anon"}, T0)
    assert user == anon and state.persons[anon].is_identified
    assert state.process("$create_alias", "user", {"alias": "crm-7"}, T0) == anon
    assert state.pdi["crm-7"] == anon and state.persons[anon].distinct_ids == {"anon", "user", "crm-7"}
    assert not state.overrides


def test_merge_records_a_flat_override_and_refuses_two_identified_persons() -> None:
    state = PersonState(1)
    a = state.process("$pageview", "a", {"$set": {"k": "from-a", "only_a": 1}}, T0)
    b = state.process("$pageview", "b", {"$set": {"k": "from-b"}}, T0 + timedelta(days=1))
    assert state.process("$identify", "b", {"$anon_distinct_id": "a"}, T0) == b
    assert state.overrides == {a: b} and a not in state.persons
    assert state.persons[b].properties == {"k": "from-b", "only_a": 1}  # the survivor's values win
    assert state.persons[b].created_at == T0  # the earlier person's creation
    c = state.process("$pageview", "c", {}, T0)
    state.process("$identify", "c", {"$anon_distinct_id": "b"}, T0)  # b's person is identified: no merge
    assert state.pdi["b"] == b and state.persons[c].distinct_ids == {"c"}
    state.process("$merge_dangerously", "c", {"alias": "b"}, T0)  # ...unless forced
    assert state.overrides == {a: c, b: c}  # flat: a now points at the final survivor
    rows = state.take_rows(7)
    assert {r[1] for r in rows.persons if r[5] == 1} == {a, b}
    assert sorted(rows.overrides) == sorted([(1, a, c, 7), (1, b, c, 7)])
    assert not state.take_rows(8)


def test_property_updates_and_ids_never_merged_on() -> None:
    state = PersonState(2)
    pid = state.process("e", "u", {"$set_once": {"first": 1}, "$set": {"first": 2, "x": 1}}, T0)
    assert state.persons[pid].properties == {"first": 2, "x": 1}
    state.process("e", "u", {"$set_once": {"first": 3, "y": 1}, "$unset": ["x"]}, T0)
    assert state.persons[pid].properties == {"first": 2, "y": 1}
    state.process("$identify", "u", {"$anon_distinct_id": "anonymous"}, T0)
    state.process("$identify", "undefined", {"$anon_distinct_id": "u"}, T0)
    assert "anonymous" not in state.pdi and state.pdi["undefined"] != pid
    ghost = state.process("e", "ghost", {}, T0, personless=True)
    assert ghost == person_uuid(2, "ghost") and "ghost" not in state.pdi
    assert state.process("e", "u", {}, T0, personless=True) == pid


# -- the stored result against pandas ---------------------------------------------------------------------------


def _scenario(seed: int, users: int = 40) -> list[dict[str, Any]]:
    """Random sessions: anonymous browsing, $identify (maybe from a second anonymous device), aliases, $set and
    $set_once. The two anonymous ids set ``a_*``/``b_*`` keys and identified ids (an alias only once created)
    ``u_*``/``o_*`` keys, so merges never have to pick between two values of a key and the expected properties
    are a plain "last $set / first $set_once per key" over each person's events."""
    rng = np.random.default_rng(seed)
    events: list[dict[str, Any]] = []
    clock = T0
    for user in rng.permutation(users):
        anon, second, ident, alias = f"anon-{user}", f"dev2-{user}", f"user-{user}", f"crm-{user}"
        identified = aliased = False
        for step in range(int(rng.integers(3, 9))):
            clock += timedelta(seconds=int(rng.integers(1, 600)))
            roll = rng.random()
            props: dict[str, Any] = {}
            if not identified and roll < 0.6:
                did, name = (anon if rng.random() < 0.8 else second), "$pageview"
                if rng.random() < 0.5:
                    props["$set"] = {f"{'a' if did == anon else 'b'}_{rng.integers(3)}": int(rng.integers(100))}
            elif not identified:
                did, name, identified = ident, "$identify", True
                props["$anon_distinct_id"] = anon
            elif roll < 0.15:
                did, name = ident, "$identify"
                props["$anon_distinct_id"] = second
            elif roll < 0.25:
                did, name, aliased = ident, "$create_alias", True
                props["alias"] = alias
            else:
                did, name = (alias if aliased and rng.random() < 0.2 else ident), "purchase"
                if rng.random() < 0.5:
                    props["$set"] = {f"u_{rng.integers(3)}": int(rng.integers(100))}
                if rng.random() < 0.3:
                    props["$set_once"] = {f"o_{rng.integers(2)}": int(rng.integers(100))}
            if step == 0 and name == "$pageview":
                props.setdefault("$set_once", {})[f"first_{did}"] = str(did)
            events.append({"event": name, "distinct_id": did, "properties": props, "timestamp": clock.isoformat(),
                           "uuid": str(uuid.UUID(int=int(rng.integers(2**62)) + len(events)))})  # fmt: skip
    return events


def _expected(events: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Distinct id → group, and group → properties, computed without the ingestion code."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    for e in events:
        find(e["distinct_id"])
        other = e["properties"].get("$anon_distinct_id") or e["properties"].get("alias")
        if other is not None:
            parent[find(other)] = find(e["distinct_id"])
    group = {did: find(did) for did in parent}
    frame = pd.DataFrame(events)
    frame["group"] = frame["distinct_id"].map(group)
    frame["ts"] = pd.to_datetime(frame["timestamp"])
    updates = []
    for kind in ("$set", "$set_once"):
        part = frame[frame["properties"].map(lambda p, k=kind: k in p)]
        for _, row in part.iterrows():
            for key, value in row["properties"][kind].items():
                updates.append({"group": row["group"], "ts": row["ts"], "kind": kind, "key": key, "value": value})
    upd = pd.DataFrame(updates).sort_values("ts", kind="stable")
    last_set = upd[upd.kind == "$set"].groupby(["group", "key"])["value"].last()
    first_once = upd[upd.kind == "$set_once"].groupby(["group", "key"])["value"].first()
    props: dict[str, dict[str, Any]] = {g: {} for g in set(group.values())}
    for (g, key), value in first_once.items():
        props[g][key] = value
    for (g, key), value in last_set.items():
        props[g][key] = value
    return group, props


def _stored(engine: ChdbEngine, team: int) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Each event's person as the compiler resolves it (override, else events.person_id), and the persons."""
    events = engine.execute(f"""
        SELECT e.distinct_id AS distinct_id, toString(e.uuid) AS uuid,
               toString(if(o.override_person_id IS NULL, e.person_id, o.override_person_id)) AS person,
               toString(pdi.person_id) AS via_pdi
        FROM events AS e
        LEFT JOIN (SELECT old_person_id, argMax(override_person_id, version) AS override_person_id
                   FROM person_overrides WHERE team_id = {team} GROUP BY old_person_id) AS o
               ON e.person_id = o.old_person_id
        LEFT JOIN (SELECT distinct_id, argMax(person_id, version) AS person_id
                   FROM person_distinct_ids WHERE team_id = {team} GROUP BY distinct_id
                   HAVING argMax(is_deleted, version) = 0) AS pdi
               ON e.distinct_id = pdi.distinct_id
        WHERE e.team_id = {team}""").to_pandas()  # fmt: skip
    persons = engine.execute(f"""
        SELECT toString(id) AS id, argMax(properties, version) AS properties FROM persons
        WHERE team_id = {team} GROUP BY id HAVING argMax(is_deleted, version) = 0""").to_pylist()
    return events, {p["id"]: json.loads(p["properties"]) for p in persons}


def _check(engine: ChdbEngine, team: int, events: list[dict[str, Any]]) -> None:
    group, props = _expected(events)
    stored, persons = _stored(engine, team)
    assert len(stored) == len(events)
    assert (stored["person"] == stored["via_pdi"]).all()  # both resolutions agree
    stored["group"] = stored["distinct_id"].map(group)
    # One person per expected group and one group per person: the same partition of the events.
    assert (stored.groupby("group")["person"].nunique() == 1).all()
    assert (stored.groupby("person")["group"].nunique() == 1).all()
    person_of = stored.groupby("group")["person"].first()
    assert {g: persons[p] for g, p in person_of.items()} == {g: props[g] for g in person_of.index}
    assert set(persons) == set(person_of)  # no live person without events


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_captured_persons_match_pandas(engine: ChdbEngine, team: int, seed: int) -> None:
    events = _scenario(seed)
    ingestor = Ingestor.for_engine(engine)
    for start in range(0, len(events), 17):  # several requests, in time order
        ingestor.capture_batch(team, events[start : start + 17])
    _check(engine, team, events)
    assert engine.execute(f"SELECT count() AS n FROM person_overrides WHERE team_id = {team}").to_pylist()[0]["n"] > 0


@pytest.mark.parametrize("seed", [1, 3])
def test_loaded_persons_match_pandas(engine: ChdbEngine, team: int, seed: int, tmp_path: Path) -> None:
    events = _scenario(seed)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in reversed(events)))  # file order does not matter
    report = load_file(engine, team, path)
    assert report.rows == len(events)
    _check(engine, team, events)


def test_a_restarted_process_continues_from_the_stored_persons(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)
    ingestor.capture_batch(team, [{"event": "e", "distinct_id": "a", "properties": {"$set": {"p": 1}}}])
    ingestor.persons.invalidate(team)  # as if the service had restarted: state comes back from the tables
    ingestor.capture_batch(team, [{"event": "e", "distinct_id": "b", "properties": {"$set": {"q": 2}}},
                                  {"event": "$identify", "distinct_id": "b", "properties": {"$anon_distinct_id": "a"}}])
    ingestor.persons.invalidate(team)
    state = ingestor.persons.state(team)
    (person,) = state.persons.values()
    assert person.properties == {"p": 1, "q": 2} and person.distinct_ids == {"a", "b"} and person.is_identified
    assert state.overrides == {person_uuid(team, "a"): person.id}


def test_bulk_properties_of_a_load_equal_event_by_event_capture(engine: ChdbEngine, tmp_path: Path) -> None:
    """A load computes most persons' properties in SQL; they must equal applying the events one by one."""
    rng = np.random.default_rng(11)
    events = []
    for i in range(300):
        props: dict[str, Any] = {}
        for kind in ("$set_once", "$set", "$unset"):
            if rng.random() < 0.5:
                keys = [f"k{k}" for k in rng.choice(4, size=int(rng.integers(1, 3)), replace=False)]
                values = [int(rng.integers(9)), "s", {"n": 1}]
                props[kind] = keys if kind == "$unset" else {k: values[i % 3] for k in keys}
        ts = T0 + timedelta(seconds=int(rng.integers(0, 50)))  # ties on purpose: the file line breaks them
        events.append({"event": "e", "distinct_id": f"d{rng.integers(25)}", "properties": props,
                       "timestamp": ts.isoformat()})  # fmt: skip
    ordered = sorted(events, key=lambda e: e["timestamp"])  # stable: file order within a timestamp
    loaded_team, captured_team = (int(x) for x in np.random.default_rng().integers(10**9, 2**62, size=2))
    path = tmp_path / "props.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    load_file(engine, loaded_team, path)
    Ingestor.for_engine(engine).capture_batch(captured_team, ordered)

    def persons(team: int) -> dict[str, dict[str, Any]]:
        rows = engine.execute(f"""
            SELECT pdi.distinct_id AS d, p.props AS props FROM
              (SELECT distinct_id, argMax(person_id, version) AS pid FROM person_distinct_ids
               WHERE team_id = {team} GROUP BY distinct_id) AS pdi
            INNER JOIN (SELECT id, argMax(properties, version) AS props FROM persons
                        WHERE team_id = {team} GROUP BY id) AS p ON pdi.pid = p.id""").to_pylist()
        return {r["d"]: json.loads(r["props"]) for r in rows}

    loaded, captured = persons(loaded_team), persons(captured_team)
    assert len(loaded) == 25 and loaded == captured
    assert any(len(p) > 1 for p in loaded.values())


def test_a_load_of_plain_identifies_equals_event_by_event_capture(engine: ChdbEngine, tmp_path: Path) -> None:
    """Loads resolve the common "anonymous id becomes a user" $identify in SQL; it must match capture."""
    rng = np.random.default_rng(5)
    events: list[dict[str, Any]] = []
    for user in range(120):
        clock = T0 + timedelta(minutes=int(rng.integers(0, 10_000)))
        anon, ident = f"a{user}", f"u{user}"
        shape = user % 4  # 0: plain; 1: user seen before; 2: both had properties before; 3: anonymous only
        if shape in (1, 2):
            events.append({"event": "x", "distinct_id": ident, "timestamp": clock.isoformat(),
                           "properties": {"$set": {"k": "user-early"}} if shape == 2 else {}})  # fmt: skip
        for _ in range(int(rng.integers(1, 4))):
            clock += timedelta(seconds=30)
            props = {"$set_once": {"first": anon}} if rng.random() < 0.6 else {}
            if rng.random() < 0.5:
                props["$set"] = {"k": f"anon-{int(rng.integers(9))}"}
            events.append({"event": "$pageview", "distinct_id": anon, "timestamp": clock.isoformat(),
                           "properties": props})  # fmt: skip
        if shape == 3:
            continue
        clock += timedelta(seconds=30)
        events.append({"event": "$identify", "distinct_id": ident, "timestamp": clock.isoformat(),
                       "properties": {"$anon_distinct_id": anon, "$set": {"email": f"{ident}@x"}}})  # fmt: skip
        clock += timedelta(seconds=30)
        late = {"$set": {"k": "late"}, "$unset": ["first"] if user % 5 == 0 else []}
        events.append({"event": "buy", "distinct_id": ident if user % 3 else anon, "timestamp": clock.isoformat(),
                       "properties": late})  # fmt: skip
    ordered = sorted(events, key=lambda e: e["timestamp"])
    loaded_team, captured_team = (int(x) for x in np.random.default_rng().integers(10**9, 2**62, size=2))
    path = tmp_path / "identify.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    load_file(engine, loaded_team, path)
    Ingestor.for_engine(engine).capture_batch(captured_team, ordered)

    def persons(team: int) -> dict[frozenset[str], tuple[dict[str, Any], int]]:
        rows = engine.execute(f"""
            SELECT groupArray(pdi.distinct_id) AS ids, any(p.props) AS props, any(p.identified) AS identified FROM
              (SELECT distinct_id, argMax(person_id, version) AS pid FROM person_distinct_ids
               WHERE team_id = {team} GROUP BY distinct_id) AS pdi
            INNER JOIN (SELECT id, argMax(properties, version) AS props, argMax(is_identified, version) AS identified
                        FROM persons WHERE team_id = {team} GROUP BY id
                        HAVING argMax(is_deleted, version) = 0) AS p ON pdi.pid = p.id
            GROUP BY pdi.pid""").to_pylist()
        return {frozenset(r["ids"]): (json.loads(r["props"]), r["identified"]) for r in rows}

    loaded, captured = persons(loaded_team), persons(captured_team)
    assert loaded == captured
    assert sum(len(ids) == 2 for ids in loaded) == 90 and sum(flag for _, flag in loaded.values()) == 90


# -- a second file into a project that already has persons -------------------------------------------------------


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


@pytest.mark.parametrize("seed", [1, 3])
def test_two_files_equal_one_file_and_event_by_event_capture(engine: ChdbEngine, seed: int, tmp_path: Path) -> None:
    """The second file meets persons the first made (merges across files included): the same persons, properties
    and event persons as loading both in one file, as capturing the events one by one, and as pandas says."""
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
