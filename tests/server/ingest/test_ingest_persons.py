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
from hoglab.server.ingest import Ingestor, PersonState, load_file, person_uuid

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

