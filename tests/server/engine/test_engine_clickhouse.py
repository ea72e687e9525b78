"""ClickHouseEngine through the real clickhouse-connect client, against chshim.py (ClickHouse's HTTP protocol
over this process's chDB): no ClickHouse server can run here (engine-notes §7)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from hoglab.server.config import ServerConfig
from hoglab.server.engine import Engine, QueryCancelled, StatementFailed, TooManyRows, open_engine
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.clickhouse import ClickHouseEngine, parse_clickhouse_url
from hoglab.server.ingest import LoadError, load_file

from .chshim import ClickHouseShim


@pytest.fixture(scope="module")
def shim(engine: ChdbEngine) -> Iterator[ClickHouseShim]:
    server = ClickHouseShim(engine)
    yield server
    server.close()


@pytest.fixture(scope="module")
def ch(shim: ClickHouseShim) -> Iterator[ClickHouseEngine]:
    remote = ClickHouseEngine(shim.url)
    yield remote
    remote.close()


def test_open_engine_picks_clickhouse_for_a_url(shim: ClickHouseShim, tmp_path: Path) -> None:
    remote = open_engine(ServerConfig(data_dir=tmp_path, clickhouse_url=shim.url, max_execution_time=7))
    try:
        assert isinstance(remote, ClickHouseEngine) and isinstance(remote, Engine)
        assert remote.limits.max_execution_time == 7
        assert not (tmp_path / "events").exists()
    finally:
        remote.close()
    # It spoke the protocol: connect-time queries, then DDL, then settings as URL parameters.
    queries = [r["query"] for r in shim.requests]
    assert any(q.startswith("SELECT version(), timezone()") for q in queries)
    assert any("CREATE TABLE IF NOT EXISTS hoglab.person_overrides" in q for q in queries)


def test_same_results_as_the_embedded_engine(ch: ClickHouseEngine, engine: ChdbEngine) -> None:
    sql = ("SELECT number AS n, toString(number) AS s, toDateTime64('2026-01-02 03:04:05', 6, 'UTC') AS ts "
           "FROM numbers(1000)")  # fmt: skip
    assert ch.execute(sql).to_pylist() == engine.execute(sql).to_pylist()
    remote, local = ch.execute_json(sql), engine.execute_json(sql)
    assert (remote.columns, remote.types, remote.rows) == (local.columns, local.types, local.rows)
    assert orjson.loads(remote.data) == orjson.loads(local.data)
    assert ch.execute("SELECT currentDatabase() AS db").to_pylist() == [{"db": "hoglab"}]


def test_settings_travel_with_each_query(ch: ClickHouseEngine, shim: ClickHouseShim) -> None:
    ch.execute("SELECT 1", tag="remote-tag", settings={"max_threads": 1})
    sent = [r for r in shim.requests if r["query"].startswith("SELECT 1")][-1]["settings"]
    assert sent["readonly"] == "2" and sent["log_comment"] == "remote-tag" and sent["join_use_nulls"] == "1"
    assert sent["max_threads"] == "1"
    with pytest.raises(TooManyRows):
        ch.execute("SELECT number FROM numbers(100000)", settings={"max_result_rows": 1000})


def test_errors_map_like_the_embedded_engine(ch: ClickHouseEngine, team: int) -> None:
    with pytest.raises(StatementFailed) as syntax:
        ch.execute("SELEC 1")
    assert syntax.value.code == 62 and syntax.value.name == "SYNTAX_ERROR"
    assert "version" not in syntax.value.message and "for url" not in syntax.value.message
    with pytest.raises(StatementFailed) as unknown:
        ch.execute_json("SELECT nosuch FROM events")
    assert unknown.value.name == "UNKNOWN_IDENTIFIER"
    with pytest.raises(StatementFailed):
        ch.execute(f"INSERT INTO events (team_id) SELECT {team}")


def test_insert_and_cancel(ch: ClickHouseEngine, engine: ChdbEngine, team: int) -> None:
    ts = pa.array([1_700_000_000_000_000], pa.timestamp("us", tz="UTC"))
    ch.insert_arrow("events", pa.table({
        "team_id": pa.array([team], pa.int64()), "uuid": ["00000000-0000-4000-8000-0000000000aa"],
        "event": ["remote"], "distinct_id": ["d"], "person_id": ["00000000-0000-4000-8000-0000000000bb"],
        "timestamp": ts, "properties": ["{}"], "elements_chain": [""], "created_at": ts,
    }))  # fmt: skip
    assert engine.execute(f"SELECT event, toString(uuid) AS u FROM events WHERE team_id = {team}").to_pylist() == [
        {"event": "remote", "u": "00000000-0000-4000-8000-0000000000aa"}
    ]
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            ch.execute("SELECT sum(cityHash64(number)) FROM numbers(1000000000000)", tag="remote-slow")
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    started = time.monotonic()
    worker.start()
    time.sleep(0.5)
    assert ch.cancel("remote-slow") is True
    worker.join(10)
    assert isinstance(outcome.get("error"), QueryCancelled)
    assert time.monotonic() - started < 3


def test_load_file_uploads_when_the_server_cannot_read_the_file(
    ch: ClickHouseEngine, engine: ChdbEngine, team: int, tmp_path: Path
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"event": "a", "distinct_id": "u1", "timestamp": "2026-01-01T00:00:00Z", "properties": {"x": 1}}\n'
        "\n"
        '{"event": "b", "distinct_id": "u2", "timestamp": "2026-01-01T00:00:01Z"}\n'
    )
    report = load_file(ch, team, path)
    assert report.rows == 2 and report.persons_created == 2
    rows = engine.execute(f"SELECT event, properties FROM events WHERE team_id = {team} ORDER BY event").to_pylist()
    assert [(r["event"], orjson.loads(r["properties"])) for r in rows] == [("a", {"x": 1}), ("b", {})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "a", "distinct_id": "u1", "timestamp": "2026-01-01"}\n\n{"event": "a"}\n')
    with pytest.raises(LoadError) as excinfo:
        load_file(ch, team, bad)
    assert excinfo.value.problems == [(3, 'missing "distinct_id"')]


def test_url_parsing() -> None:
    assert parse_clickhouse_url("http://localhost")["port"] == 8123
    args = parse_clickhouse_url("clickhouses://u@h/db?compress=0&connect_timeout=3")
    assert (args["secure"], args["port"], args["username"], args["database"], args["compress"]) == (
        True, 8443, "u", "db", False,
    )  # fmt: skip
    assert args["connect_timeout"] == 3
    with pytest.raises(ValueError):
        parse_clickhouse_url("ftp://h")
    with pytest.raises(ValueError):
        parse_clickhouse_url("http://h?bogus=1")
    for hostless in ("notaurl", "http:ch.example", ""):
        with pytest.raises(ValueError, match="not a ClickHouse URL"):
            parse_clickhouse_url(hostless)


def test_materialized_properties_and_projection_through_a_server(
    ch: ClickHouseEngine, engine: ChdbEngine, team: int
) -> None:
    """The same DDL through ClickHouse's HTTP protocol: a column added there is found by a refresh on either
    engine, and answers what the JSON extraction answers."""
    from hoglab.server.engine import materialized
    from hoglab.server.engine.projections import ensure_projections

    assert materialized.materialize(ch, ["ch side key"]) == {"ch side key": materialized.column_name("ch side key")}
    column = materialized.column_name("ch side key")
    assert materialized.refresh(engine)["ch side key"] == column
    ts = pa.array([1_700_000_000_000_000] * 3, pa.timestamp("us", tz="UTC"))
    ch.insert_arrow("events", pa.table({
        "team_id": pa.array([team] * 3, pa.int64()),
        "uuid": [f"00000000-0000-4000-8000-00000000000{i}" for i in range(3)],
        "event": ["m"] * 3, "distinct_id": ["d"] * 3, "person_id": ["00000000-0000-4000-8000-0000000000bb"] * 3,
        "timestamp": ts, "properties": ['{"ch side key": "v"}', '{"ch side key": null}', "{}"],
        "elements_chain": [""] * 3, "created_at": ts,
    }))  # fmt: skip
    sql = (f"SELECT `{column}` AS m, JSONExtract(properties, 'ch side key', 'Nullable(String)') AS j "
           f"FROM hoglab.events WHERE team_id = {team} ORDER BY uuid")  # fmt: skip
    assert ch.execute(sql).to_pylist() == [{"m": "v", "j": "v"}, {"m": None, "j": None}, {"m": None, "j": None}]
    ensure_projections(ch)
    assert ensure_projections(ch) == []


def test_materialized_person_properties_through_a_server(ch: ClickHouseEngine, engine: ChdbEngine, team: int) -> None:
    """Person columns take the same DDL through ClickHouse's HTTP protocol; the persons view's tuple-argMax of the
    column answers what extracting the key from the newest version's JSON answers (NULL when it lost the key)."""
    from hoglab.server.engine import materialized

    column = materialized.column_name("ch person key", "persons")
    assert materialized.materialize(ch, ["ch person key"], "persons") == {"ch person key": column}
    assert materialized.refresh(engine, "persons")["ch person key"] == column
    assert "ch person key" not in materialized.refresh(engine)  # not an event column
    ids = ["00000000-0000-4000-8000-0000000000c1"] * 2 + ["00000000-0000-4000-8000-0000000000c2"] * 2
    ts = pa.array([1_700_000_000_000_000] * 4, pa.timestamp("us", tz="UTC"))
    ch.insert_arrow("persons", pa.table({
        "team_id": pa.array([team] * 4, pa.int64()), "id": ids, "created_at": ts,
        "properties": ['{"ch person key": "old"}', "{}", '{"ch person key": 1}', '{"ch person key": "new"}'],
        "is_identified": pa.array([1] * 4, pa.uint8()), "is_deleted": pa.array([0] * 4, pa.uint8()),
        "version": pa.array([1, 2, 1, 2], pa.uint64()),
    }))  # fmt: skip
    sql = (f"SELECT tupleElement(argMax(tuple(`{column}`), version), 1) AS m, "
           "JSONExtract(argMax(properties, version), 'ch person key', 'Nullable(String)') AS j "
           f"FROM hoglab.persons WHERE team_id = {team} GROUP BY id ORDER BY id")  # fmt: skip
    assert ch.execute(sql).to_pylist() == [{"m": None, "j": None}, {"m": "new", "j": "new"}]
    assert any(s.table == "persons" and s.column == column for s in materialized.fill_status(ch))


def test_materialization_is_checked_contained_and_budgeted_through_a_server(
    ch: ClickHouseEngine, engine: ChdbEngine, team: int
) -> None:
    """The automatic job over ClickHouse's HTTP protocol: keys with quotes, backticks, NUL, dots and ``$`` become
    columns that register for exactly their key, a key whose name the operator took gets another, a key whose
    every name is taken fails alone, and the project gets no more than its budget (its five most used keys)."""
    import uuid

    from hoglab.server.engine import materialized
    from hoglab.server.engine.autoprops import AutoMaterializer
    from hoglab.server.engine.settings import quote_identifier, quote_string

    tag = uuid.uuid4().hex[:6]
    taken, blocked = f"ch_taken_{tag}", f"ch blocked {tag}"
    ch.command(f"ALTER TABLE hoglab.events ADD COLUMN {quote_identifier(materialized.column_name(taken))} String")
    for name in materialized.candidate_names(blocked):
        ch.command(f"ALTER TABLE hoglab.events ADD COLUMN {quote_identifier(name)} Nullable(String)")
    nul, quotes = f"ch nul\x00{tag}", f"ch it's `{tag}`"
    keys = [f"ch cold {tag}", nul, quotes, f"ch.dot.{tag}", f"$ch_{tag}", taken, blocked]
    materialized.take_usage("events")
    for uses, key in enumerate(keys, start=5):  # what the compiler counts for each read: the most used last
        for _ in range(uses):
            materialized.lookup(key, team_id=team)
    job = AutoMaterializer(ch, interval=3600, min_uses=5, max_columns=10_000, project_columns=5)
    mine = lambda made: [k for k in made if k in keys]  # noqa: E731 (other tests' projects may have hot keys too)
    made = mine(job.run_once()["events"])
    assert made == [taken, f"$ch_{tag}", f"ch.dot.{tag}", quotes]  # the blocked one then holds no slot of the five
    assert mine(k for _, k in job.failed) == [blocked] and "in use" in job.failed["events", blocked]
    assert mine(job.run_once()["events"]) == [nul]  # the fifth slot; the cold key is over the budget
    assert mine(k for _, k in job.failed) == [blocked]  # not tried again
    columns = materialized.refresh(engine)  # the embedded engine reads the same registrations
    assert columns[taken] != materialized.column_name(taken) and keys[0] not in columns
    rows = [{k: f"{k}={i}" for k in keys if i % 3 or k != taken} for i in range(6)]
    ts = pa.array([1_700_000_000_000_000] * len(rows), pa.timestamp("us", tz="UTC"))
    ch.insert_arrow("events", pa.table({
        "team_id": pa.array([team] * len(rows), pa.int64()),
        "uuid": [f"00000000-0000-4000-8000-0000000001{i:02d}" for i in range(len(rows))],
        "event": ["m"] * len(rows), "distinct_id": ["d"] * len(rows),
        "person_id": ["00000000-0000-4000-8000-0000000000bb"] * len(rows),
        "timestamp": ts, "properties": [orjson.dumps(r).decode() for r in rows],
        "elements_chain": [""] * len(rows), "created_at": ts,
    }))  # fmt: skip
    for key in [*made, nul]:
        comment = ch.execute(f"SELECT comment FROM system.columns WHERE database = 'hoglab' AND table = 'events' "
                             f"AND name = {quote_string(columns[key])}").to_pylist()  # fmt: skip
        assert comment == [{"comment": materialized.COMMENT_PREFIX + key}]
        sql = (f"SELECT {quote_identifier(columns[key])} AS m, {materialized.extraction(key)} AS j "
               f"FROM hoglab.events WHERE team_id = {team} ORDER BY uuid")  # fmt: skip
        read = ch.execute(sql).to_pylist()
        assert [r["m"] for r in read] == [r["j"] for r in read] == [r.get(key) for r in rows]
