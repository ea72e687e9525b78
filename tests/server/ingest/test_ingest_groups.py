"""Groups as capture and file loads apply them, PostHog's rules: types in first-seen order (at most five),
``$groups`` -> ``$group_N``, ``$groupidentify`` merging ``$group_set`` in arrival order, resends not applied twice,
a failed write leaving nothing half-cached; and PostHog's export of groups and group types loaded all or nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import GroupStore, Ingestor, LoadError, load_file
from hoglab.server.ingest.group_files import file_kind, load_group_types, load_groups

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _rows(engine: ChdbEngine, sql: str) -> list[dict[str, Any]]:
    return engine.execute(sql).to_pylist()


def _types(engine: ChdbEngine, team: int) -> list[tuple[int, str]]:
    rows = _rows(engine, f"""SELECT group_type_index AS i, argMax(group_type, version) AS name FROM hoglab.group_type_mapping
                             WHERE team_id = {team} GROUP BY i ORDER BY i""")  # noqa: E501
    return [(r["i"], r["name"]) for r in rows]


def _groups(engine: ChdbEngine, team: int) -> dict[tuple[int, str], tuple[dict[str, Any], datetime]]:
    rows = _rows(engine, f"""SELECT group_type_index AS i, group_key AS k, argMax(group_properties, version) AS p,
                                    argMax(created_at, version) AS c
                             FROM hoglab.groups WHERE team_id = {team} GROUP BY i, k""")
    return {(r["i"], r["k"]): (json.loads(r["p"]), r["c"].replace(tzinfo=UTC)) for r in rows}


def _event_groups(engine: ChdbEngine, team: int) -> list[tuple[str, ...]]:
    rows = _rows(engine, f"""SELECT event, `$group_0` AS g0, `$group_1` AS g1, `$group_4` AS g4
                             FROM hoglab.events WHERE team_id = {team} ORDER BY timestamp, event""")
    return [(r["event"], r["g0"], r["g1"], r["g4"]) for r in rows]


def _at(minutes: int) -> str:
    return (NOW + timedelta(minutes=minutes)).isoformat()


def test_groups_on_events_become_group_columns_in_first_seen_order(engine: ChdbEngine, team: int) -> None:
    types = ["company", "project", "team", "region", "plan", "sixth"]
    events = [
        {"event": "a", "distinct_id": "u", "timestamp": _at(1), "properties": {"$groups": {"project": 42}}},
        {"event": "b", "distinct_id": "u", "timestamp": _at(2),
         "properties": {"$groups": {t: f"{t}-key" for t in types}}},
        {"event": "c", "distinct_id": "u", "timestamp": _at(3), "properties": {"$groups": ["not", "an object"]}},
        {"event": "d", "distinct_id": "u", "timestamp": _at(4), "properties": {"$groups": {"company": ""}}},
    ]  # fmt: skip
    assert Ingestor.for_engine(engine).capture_batch(team, events, now=NOW) == 4
    # project was seen first (index 0); a sixth type is dropped, not an error.
    assert _types(engine, team) == [(0, "project"), (1, "company"), (2, "team"), (3, "region"), (4, "plan")]
    assert _event_groups(engine, team) == [
        ("a", "42", "", ""), ("b", "project-key", "company-key", "plan-key"), ("c", "", "", ""), ("d", "", "", "")]
    props = json.loads(_rows(engine, f"SELECT properties FROM hoglab.events WHERE team_id = {team} AND event = 'b'")
                       [0]["properties"])  # fmt: skip
    assert props["$group_1"] == "company-key" and "$group_5" not in props and props["$groups"]["sixth"] == "sixth-key"
    assert _groups(engine, team) == {}  # events with $groups but no $groupidentify make no group row


def test_groupidentify_merges_in_arrival_order(engine: ChdbEngine, team: int) -> None:
    ingestor = Ingestor.for_engine(engine)

    def identify(minutes: int, key: Any, updates: dict[str, Any], group_type: Any = "company") -> dict[str, Any]:
        return {"event": "$groupidentify", "distinct_id": "admin", "timestamp": _at(minutes), "uuid": str(uuid.uuid4()),
                "properties": {"$group_type": group_type, "$group_key": key, "$group_set": updates}}  # fmt: skip

    first = identify(10, "acme", {"name": "Acme", "plan": "free"})
    ingestor.capture_batch(team, [first], now=NOW)
    # Sent later with an earlier timestamp: still applied after the first (PostHog ignores the timestamps).
    ingestor.capture_batch(team, [identify(5, "acme", {"plan": "pro", "seats": 10}), identify(6, 7, {"x": 1}),
                                  identify(7, "", {"y": 1}), identify(8, "beta", {"z": 1}, group_type="")],
                           now=NOW)  # fmt: skip
    ingestor.capture_batch(team, [first], now=NOW)  # a resend: its $group_set is not applied again
    groups = _groups(engine, team)
    assert groups[(0, "acme")] == ({"name": "Acme", "plan": "pro", "seats": 10}, NOW + timedelta(minutes=10))
    assert groups[(0, "7")][0] == {"x": 1}  # a number key is kept as its text
    assert set(groups) == {(0, "acme"), (0, "7")}  # an empty key or type makes nothing
    # The cache is the tables: a fresh store reads the same group.
    store = GroupStore(engine)
    assert store.group(team, 0, "acme").properties == {"name": "Acme", "plan": "pro", "seats": 10}


def test_a_failed_write_caches_nothing(engine: ChdbEngine, team: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ingestor = Ingestor.for_engine(engine)
    event = {"event": "x", "distinct_id": "u", "properties": {"$groups": {"company": "acme"}}}
    original = engine.insert_arrow

    def failing(table: str, data: Any) -> None:
        if table == "events":
            raise RuntimeError("disk full")
        original(table, data)

    monkeypatch.setattr(engine, "insert_arrow", failing)
    with pytest.raises(RuntimeError):
        ingestor.capture_batch(team, [event], now=NOW)
    monkeypatch.setattr(engine, "insert_arrow", original)
    # The type was written before the events (as PostHog creates types before the event), and the retry lands.
    assert ingestor.capture_batch(team, [{**event, "properties": {"$groups": {"other": "x", "company": "acme"}}}],
                                  now=NOW) == 1  # fmt: skip
    assert _types(engine, team) == [(0, "company"), (1, "other")]
    assert _event_groups(engine, team) == [("x", "acme", "x", "")]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_posthog_export_of_types_groups_and_events_loads(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    types = _jsonl(tmp_path / "types.jsonl", [{"group_type": "company", "group_type_index": 1},
                                               {"group_type": "project", "group_type_index": 0,
                                                "name_plural": "projects"}])  # fmt: skip
    groups = tmp_path / "groups.csv"
    groups.write_text('index,key,properties,created_at\n1,acme,"{""plan"": ""pro""}",2025-01-02 03:04:05\n'
                      '0,p1,,2025-01-03T00:00:00Z\n')  # fmt: skip
    assert (file_kind(types), file_kind(groups)) == ("group_types", "groups")
    assert load_group_types(engine, team, types).rows == 2
    assert load_groups(engine, team, groups).rows == 2
    assert _types(engine, team) == [(0, "project"), (1, "company")]
    assert _groups(engine, team) == {(1, "acme"): ({"plan": "pro"}, datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)),
                                     (0, "p1"): ({}, datetime(2025, 1, 3, tzinfo=UTC))}  # fmt: skip
    # Events exported by that project carry its numbering: loaded as they are.
    events = _jsonl(tmp_path / "events.jsonl", [
        {"event": "e", "distinct_id": "u", "timestamp": _at(1),
         "properties": {"$groups": {"company": "acme"}, "$group_1": "acme"}},
        # This one was numbered otherwise at its source: rewritten with the project's indexes.
        {"event": "f", "distinct_id": "u", "timestamp": _at(2),
         "properties": {"$groups": {"company": "beta", "team": "t1"}, "$group_0": "beta"}},
        {"event": "$groupidentify", "distinct_id": "u", "timestamp": _at(3),
         "properties": {"$group_type": "company", "$group_key": "acme", "$group_set": {"seats": 3}}},
    ])  # fmt: skip
    assert load_file(engine, team, events).rows == 3
    assert _event_groups(engine, team) == [("e", "", "acme", ""), ("f", "", "beta", ""), ("$groupidentify", "", "", "")]
    assert _types(engine, team) == [(0, "project"), (1, "company"), (2, "team")]
    assert _rows(engine, f"SELECT `$group_2` AS g FROM hoglab.events WHERE team_id = {team} AND event = 'f'") == [
        {"g": "t1"}]
    assert _groups(engine, team)[(1, "acme")][0] == {"plan": "pro", "seats": 3}


def test_bad_group_files_load_nothing(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    load_group_types(engine, team, _jsonl(tmp_path / "t.jsonl", [{"group_type": "company", "group_type_index": 0}]))
    bad_types = _jsonl(tmp_path / "bad-types.jsonl", [
        {"group_type": "region", "group_type_index": 1}, {"group_type": "team", "group_type_index": 0},
        {"group_type": "company", "group_type_index": 2}, {"group_type": "", "group_type_index": 3},
        {"group_type": "x", "group_type_index": 9}])  # fmt: skip
    with pytest.raises(LoadError) as caught:
        load_group_types(engine, team, bad_types)
    assert [line for line, _ in caught.value.problems] == [2, 3, 4, 5]
    assert _types(engine, team) == [(0, "company")]  # the good first row was not stored either
    bad_groups = _jsonl(tmp_path / "bad-groups.jsonl", [
        {"group_type_index": 0, "group_key": "ok"}, {"group_type_index": 0, "group_key": ""},
        {"group_type_index": 0, "group_key": "k", "group_properties": "[1]"},
        {"group_type_index": 0, "group_key": "k", "created_at": "yesterday"},
        {"group_type_index": 3, "group_key": "k"}])  # fmt: skip
    with pytest.raises(LoadError) as caught:
        load_groups(engine, team, bad_groups)
    assert [line for line, _ in caught.value.problems] == [2, 3, 4]
    with pytest.raises(LoadError, match="load the group types first"):
        load_groups(engine, team, _jsonl(tmp_path / "g.jsonl", [{"group_type_index": 3, "group_key": "k"}]))
    assert _groups(engine, team) == {}
