"""load_file: JSONL, CSV and Parquet in PostHog's export shape, all or nothing, bad rows named by line."""

from __future__ import annotations

import csv
import gzip
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.ingest import IngestError, LoadError, load_file, person_uuid

PERSON = "00000000-0000-4000-8000-00000000abcd"
ROWS: list[dict[str, Any]] = [
    {"uuid": "00000000-0000-4000-8000-000000000001", "event": "$pageview", "distinct_id": "anon-1",
     "timestamp": "2026-02-01T10:00:00Z", "properties": {"$browser": "Chrome", "$set": {"plan": "free"}}},
    {"uuid": "00000000-0000-4000-8000-000000000002", "event": "$identify", "distinct_id": "user-1",
     "timestamp": "2026-02-01T10:05:00.250000+00:00", "properties": {"$anon_distinct_id": "anon-1"}},
    {"uuid": "", "event": "purchase", "distinct_id": "user-1", "timestamp": "2026-02-01 11:00:00",
     "properties": {"price": 9.5, "$feature/new-checkout": "test"}, "elements_chain": "button:nth-child=1"},
    {"uuid": "00000000-0000-4000-8000-000000000004", "event": "$pageview", "distinct_id": "exported",
     "timestamp": "2026-02-02T00:00:00Z", "properties": {}, "person_id": PERSON},
    {"uuid": "00000000-0000-4000-8000-000000000005", "event": "ping", "distinct_id": "bot",
     "timestamp": "2026-02-02T00:00:01Z", "properties": {"$process_person_profile": False}},
]  # fmt: skip


def _write(path: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        names = ["uuid", "event", "distinct_id", "timestamp", "properties", "person_id", "elements_chain", "extra"]
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            for r in rows:
                writer.writerow({**{k: r.get(k, "") for k in names}, "properties": json.dumps(r["properties"])})
    else:
        table = pa.table({
            "uuid": [r["uuid"] for r in rows], "event": [r["event"] for r in rows],
            "distinct_id": [r["distinct_id"] for r in rows], "properties": [json.dumps(r["properties"]) for r in rows],
            "timestamp": pa.array([datetime.fromisoformat(r["timestamp"]).replace(tzinfo=UTC) for r in rows],
                                  pa.timestamp("us", tz="UTC")),
            "person_id": [r.get("person_id") for r in rows],
        })  # fmt: skip
        pq.write_table(table, path)
    return path


def _events(engine: ChdbEngine, team: int) -> list[dict[str, Any]]:
    return engine.execute(f"""
        SELECT toString(uuid) AS uuid, event, distinct_id, toString(person_id) AS person_id,
               formatDateTime(timestamp, '%Y-%m-%dT%H:%i:%S.%fZ') AS ts, properties, elements_chain
        FROM events WHERE team_id = {team} ORDER BY timestamp""").to_pylist()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_each_format_loads_the_same_events_and_persons(engine: ChdbEngine, team: int, tmp_path: Path,
                                                       fmt: str) -> None:  # fmt: skip
    report = load_file(engine, team, _write(tmp_path / f"events.{fmt}", ROWS, fmt))
    assert (report.rows, report.format) == (5, fmt)
    events = _events(engine, team)
    assert [e["event"] for e in events] == ["$pageview", "$identify", "purchase", "$pageview", "ping"]
    assert events[1]["ts"] == "2026-02-01T10:05:00.250000Z" and events[2]["ts"] == "2026-02-01T11:00:00.000000Z"
    assert [json.loads(e["properties"]) for e in events] == [r["properties"] for r in ROWS]
    assert events[0]["uuid"] == ROWS[0]["uuid"] and uuid.UUID(events[2]["uuid"]).version == 4
    assert events[2]["elements_chain"] == ("" if fmt == "parquet" else "button:nth-child=1")
    # anon-1 and user-1 are one person; the file's own person id is kept; a personless id gets no person.
    assert events[0]["person_id"] == events[1]["person_id"] == events[2]["person_id"]
    assert events[3]["person_id"] == PERSON and events[4]["person_id"] == person_uuid(team, "bot")
    persons = engine.execute(f"""
        SELECT toString(id) AS id, argMax(properties, version) AS properties, argMax(is_identified, version) AS ident
        FROM persons WHERE team_id = {team} GROUP BY id HAVING argMax(is_deleted, version) = 0 ORDER BY id""")
    by_id = {p["id"]: p for p in persons.to_pylist()}
    assert set(by_id) == {events[0]["person_id"], PERSON}
    assert json.loads(by_id[events[0]["person_id"]]["properties"]) == {"plan": "free"}
    assert by_id[events[0]["person_id"]]["ident"] == 1


def test_jsonl_with_string_properties_blank_lines_and_gzip(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    rows = [{"event": "a", "distinct_id": 5, "timestamp": "2026-01-01T00:00:00Z", "properties": '{"k": "v"}'},
            {"event": "b", "distinct_id": "d", "timestamp": "2026-01-01T00:00:01Z"}]  # fmt: skip
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(json.dumps(r) for r in rows) + "\n\n   \n").encode()))
    assert load_file(engine, team, path).rows == 2
    events = _events(engine, team)
    assert [(e["distinct_id"], json.loads(e["properties"])) for e in events] == [("5", {"k": "v"}), ("d", {})]


def test_bad_rows_are_reported_by_line_and_nothing_is_loaded(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    good = {"event": "e", "distinct_id": "u", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [
        json.dumps(good),
        "",
        json.dumps({**good, "event": ""}),
        "{not json",
        json.dumps({**good, "timestamp": "last tuesday"}),
        json.dumps({**good, "uuid": "nope"}),
        json.dumps({**good, "properties": "[1, 2]"}),
        json.dumps({**good, "person_id": "x"}),
        json.dumps([1]),
        json.dumps({"event": "e", "timestamp": "2026-01-01"}),
        json.dumps({"event": "e", "distinct_id": "u"}),
    ] + [json.dumps({**good, "event": None})] * 25
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LoadError) as excinfo:
        load_file(engine, team, path)
    error = excinfo.value
    assert error.problems[:10] == [
        (3, 'missing "event"'), (4, "not valid JSON"), (5, 'invalid "timestamp": last tuesday'),
        (6, 'invalid "uuid"'), (7, '"properties" is not a JSON object'), (8, 'invalid "person_id"'),
        (9, "not a JSON object"), (10, 'missing "distinct_id"'), (11, 'missing "timestamp"'), (12, 'missing "event"'),
    ]  # fmt: skip
    assert len(error.problems) == 20 and error.count == 34
    assert str(error).endswith("and 14 more") and "line 4: not valid JSON" in str(error)
    assert engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist() == [{"n": 0}]
    assert engine.execute(f"SELECT count() AS n FROM persons WHERE team_id = {team}").to_pylist() == [{"n": 0}]
    tables = engine.execute("SELECT name FROM system.tables WHERE database = 'hoglab' AND name LIKE '\\_load\\_%'")
    assert tables.num_rows == 0  # staging tables are dropped


def test_csv_and_parquet_line_numbers(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    rows = [dict(ROWS[0]), {**ROWS[0], "distinct_id": ""}, dict(ROWS[0]), {**ROWS[0], "timestamp": "soon"}]
    with pytest.raises(LoadError) as csv_error:
        load_file(engine, team, _write(tmp_path / "e.csv", rows, "csv"))
    assert csv_error.value.problems == [(3, 'missing "distinct_id"'), (5, 'invalid "timestamp": soon')]
    table = pa.table({"event": ["a", None, "c"], "distinct_id": ["1", "2", "3"],
                      "timestamp": ["2026-01-01", "2026-01-01", "2026-01-01"]})  # fmt: skip
    pq.write_table(table, tmp_path / "e.parquet")
    with pytest.raises(LoadError) as parquet_error:
        load_file(engine, team, tmp_path / "e.parquet")
    assert parquet_error.value.problems == [(2, 'missing "event"')]
    broken = tmp_path / "broken.csv"
    broken.write_text('event,distinct_id,timestamp\na,1,2026-01-01\n"b,2,2026-01-01\n')
    with pytest.raises(LoadError):
        load_file(engine, team, broken)
    assert engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist() == [{"n": 0}]


def test_files_that_cannot_be_loaded(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        load_file(engine, team, tmp_path / "missing.jsonl")
    (tmp_path / "events.txt").write_text("x")
    with pytest.raises(IngestError, match="cannot tell the format"):
        load_file(engine, team, tmp_path / "events.txt")
    with pytest.raises(IngestError, match="Unknown format"):
        load_file(engine, team, tmp_path / "events.txt", format="xml")
    (tmp_path / "noheader.csv").write_text("event,when\na,b\n")
    with pytest.raises(IngestError, match="'distinct_id', 'timestamp'"):
        load_file(engine, team, tmp_path / "noheader.csv")
    pq.write_table(pa.table({"event": ["a"], "distinct_id": [1], "timestamp": ["x"]}), tmp_path / "typed.parquet")
    with pytest.raises(IngestError, match="'distinct_id' is int64"):
        load_file(engine, team, tmp_path / "typed.parquet")
    (tmp_path / "empty.jsonl").write_text("\n")
    assert load_file(engine, team, tmp_path / "empty.jsonl", format="ndjson").rows == 0


def test_a_second_load_reuses_known_persons(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    first = load_file(engine, team, _write(tmp_path / "a.jsonl", ROWS[:3], "jsonl"))
    again = load_file(engine, team, _write(tmp_path / "b.jsonl", [{**ROWS[2], "uuid": ""}], "jsonl"))
    assert (first.persons_created, again.persons_created) == (1, 0)
    assert engine.execute(f"SELECT uniqExact(person_id) AS n FROM events WHERE team_id = {team}").to_pylist() == [
        {"n": 1}
    ]


def test_ids_named_only_by_identify_and_given_known_persons(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    first = [{"event": "$identify", "distinct_id": "u", "timestamp": "2026-01-01T00:00:00Z",
              "properties": {"$anon_distinct_id": "ghost-anon", "$set": {"a": 1}}},
             {"event": "e", "distinct_id": "x", "timestamp": "2026-01-01T00:00:00Z", "person_id": PERSON}]  # fmt: skip
    load_file(engine, team, _write(tmp_path / "first.jsonl", first, "jsonl"))
    second = [{"event": "e", "distinct_id": "x2", "timestamp": "2026-01-02T00:00:00Z", "person_id": PERSON}]
    assert load_file(engine, team, _write(tmp_path / "second.jsonl", second, "jsonl")).persons_created == 0
    pdi = engine.execute(f"""
        SELECT distinct_id, toString(argMax(person_id, version)) AS p FROM person_distinct_ids
        WHERE team_id = {team} GROUP BY distinct_id ORDER BY distinct_id""").to_pylist()
    by_id = {r["distinct_id"]: r["p"] for r in pdi}
    assert set(by_id) == {"ghost-anon", "u", "x", "x2"}
    assert by_id["ghost-anon"] == by_id["u"] == person_uuid(team, "u")
    assert by_id["x"] == by_id["x2"] == PERSON
    person = engine.execute(f"""SELECT argMax(properties, version) AS p, argMax(is_identified, version) AS i
                                FROM persons WHERE team_id = {team} AND id = '{by_id["u"]}' GROUP BY id""")  # fmt: skip
    assert person.to_pylist() == [{"p": '{"a":1}', "i": 1}]


def _arrow_typed_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """ROWS as DuckDB and pyarrow write them: ``arrow.uuid`` ids (16 bytes) and ``arrow.json`` properties."""

    def ids(key: str) -> pa.Array:
        return pa.array([uuid.UUID(r[key]).bytes if r.get(key) else None for r in rows], pa.uuid())

    table = pa.table({
        "uuid": ids("uuid"), "event": [r["event"] for r in rows], "distinct_id": [r["distinct_id"] for r in rows],
        "properties": pa.array([json.dumps(r["properties"]) for r in rows], pa.json_()),
        "timestamp": pa.array([datetime.fromisoformat(r["timestamp"]).replace(tzinfo=UTC) for r in rows],
                              pa.timestamp("us", tz="UTC")),
        "person_id": ids("person_id"),
    })  # fmt: skip
    pq.write_table(table, path)
    assert str(pq.read_schema(path).field("uuid").type) == "extension<arrow.uuid>"
    return path


def test_parquet_with_arrow_uuid_and_json_extension_types(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    path = _arrow_typed_parquet(tmp_path / "typed.parquet", ROWS)
    assert load_file(engine, team, path).rows == len(ROWS)
    events = _events(engine, team)
    assert [e["uuid"] for e in events if e["event"] != "purchase"] == [r["uuid"] for r in ROWS if r["uuid"]]
    assert uuid.UUID(events[2]["uuid"]).version == 4  # a null uuid is generated, as an empty string is
    assert events[3]["person_id"] == PERSON
    assert [json.loads(e["properties"]) for e in events] == [r["properties"] for r in ROWS]


def test_parquet_extension_types_read_locally_for_a_clickhouse_server(tmp_path: Path) -> None:
    from hoglab.server.ingest.sources import describe_source, read_locally

    path = _arrow_typed_parquet(tmp_path / "typed.parquet", ROWS)
    table = read_locally(describe_source(path, "parquet"))
    assert table.column("uuid").to_pylist() == [r["uuid"] or None for r in ROWS]
    assert table.column("person_id").to_pylist() == [r.get("person_id") for r in ROWS]
    assert table.schema.field("properties").type == pa.string()


def test_parquet_written_by_duckdb(engine: ChdbEngine, team: int, tmp_path: Path) -> None:
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"""COPY (SELECT uuid() AS uuid, '$pageview' AS event, 'd-' || i AS distinct_id,
                        TIMESTAMPTZ '2026-02-01 10:00:00+00' + INTERVAL (i) SECOND AS timestamp,
                        ('{{"i": ' || i || '}}')::JSON AS properties
                 FROM range(3) t(i)) TO '{path}' (FORMAT parquet)""")
    assert load_file(engine, team, path).rows == 3
    events = _events(engine, team)
    assert [json.loads(e["properties"])["i"] for e in events] == [0, 1, 2]
    assert len({e["uuid"] for e in events}) == 3 and all(uuid.UUID(e["uuid"]).version == 4 for e in events)
