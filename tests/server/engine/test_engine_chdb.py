"""The chDB engine: results, types, settings per statement, error mapping, cancel, and one owner per directory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from hoglab.server.config import ServerConfig
from hoglab.server.engine import (
    Engine,
    EngineError,
    EngineInUse,
    MemoryLimitExceeded,
    QueryCancelled,
    QueryLimits,
    StatementFailed,
    StatementTimedOut,
    TooManyRows,
    chdb_path,
    open_engine,
)
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.ddl import TABLES

SLOW = "SELECT sum(cityHash64(number)) FROM numbers(1000000000000)"


def test_is_an_engine_with_every_table(engine: ChdbEngine) -> None:
    assert isinstance(engine, Engine)
    names = engine.execute("SELECT name FROM system.tables WHERE database = 'hoglab'").column("name").to_pylist()
    assert set(TABLES) <= set(names)
    assert engine.execute("SELECT currentDatabase() AS db").to_pylist() == [{"db": "hoglab"}]


def test_execute_returns_arrow_with_types(engine: ChdbEngine) -> None:
    table = engine.execute(
        "SELECT number AS n, toString(number) AS s, toDateTime64('2026-01-02 03:04:05.123456', 6, 'UTC') AS ts "
        "FROM numbers(3)"
    )
    assert table.column_names == ["n", "s", "ts"]
    assert table.schema.field("n").type == pa.uint64()
    assert pa.types.is_timestamp(table.schema.field("ts").type)
    assert table.column("s").to_pylist() == ["0", "1", "2"]
    empty = engine.execute("SELECT number AS n FROM numbers(0)")
    assert empty.num_rows == 0 and empty.column_names == ["n"]


def test_execute_json_keeps_clickhouse_types_and_raw_rows(engine: ChdbEngine) -> None:
    result = engine.execute_json(
        "SELECT toUInt64(18446744073709551615) AS big, toDateTime64('2026-01-02 03:04:05', 6, 'UTC') AS ts, "
        "nan AS f, CAST(NULL, 'Nullable(String)') AS s, 'a\\n\\t\"data\": x' AS tricky, [1, 2] AS arr"
    )
    assert result.columns == ["big", "ts", "f", "s", "tricky", "arr"]
    assert result.types == ["UInt64", "DateTime64(6, 'UTC')", "Float64", "Nullable(String)", "String", "Array(UInt8)"]
    assert result.rows == 1
    # 64-bit integers unquoted, ISO datetimes, NaN as null: the bytes go to HTTP as they are.
    assert orjson.loads(result.data) == [
        [18446744073709551615, "2026-01-02T03:04:05.000000Z", None, None, 'a\n\t"data": x', [1, 2]]
    ]


def test_json_and_arrow_agree_on_many_rows(engine: ChdbEngine) -> None:
    sql = "SELECT number AS n, toString(number * 7) AS s FROM numbers(10000)"
    rows = orjson.loads(engine.execute_json(sql).data)
    assert rows == [list(r.values()) for r in engine.execute(sql).to_pylist()]


def test_user_mistakes_are_query_errors_with_the_engine_message(engine: ChdbEngine) -> None:
    with pytest.raises(StatementFailed) as syntax:
        engine.execute("SELEC 1")
    assert syntax.value.code == 62 and syntax.value.name == "SYNTAX_ERROR"
    assert "Syntax error" in syntax.value.message and "readonly" not in syntax.value.message
    with pytest.raises(StatementFailed) as unknown:
        engine.execute("SELECT nosuch FROM events")
    assert unknown.value.name == "UNKNOWN_IDENTIFIER" and "nosuch" in unknown.value.message
    with pytest.raises(StatementFailed, match=r"ZERO|zero|Division"):
        engine.execute("SELECT intDiv(1, 0)")


def test_reads_are_readonly(engine: ChdbEngine, team: int) -> None:
    with pytest.raises(StatementFailed) as excinfo:
        engine.execute(f"INSERT INTO events (team_id) VALUES ({team})")
    assert excinfo.value.name == "READONLY"
    with pytest.raises(StatementFailed):
        engine.execute("DROP TABLE events")
    with pytest.raises(StatementFailed):  # an override cannot lift it
        engine.execute(f"INSERT INTO events (team_id) VALUES ({team})", settings={"readonly": 0})
    assert engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist() == [{"n": 0}]


def test_limits_map_to_their_errors(engine: ChdbEngine) -> None:
    with pytest.raises(TooManyRows):
        engine.execute("SELECT number FROM numbers(100000)", settings={"max_result_rows": 1000})
    with pytest.raises(MemoryLimitExceeded):
        engine.execute("SELECT groupArray(number) FROM numbers(50000000)", settings={"max_memory_usage": 20_000_000})
    started = time.monotonic()
    with pytest.raises(StatementTimedOut):
        engine.execute(SLOW, settings={"max_execution_time": 1})
    assert time.monotonic() - started < 5


def test_settings_apply_to_one_statement_only(engine: ChdbEngine) -> None:
    def current(name: str) -> str:
        rows = engine.execute(f"SELECT value FROM system.settings WHERE name = '{name}'").to_pylist()
        return str(rows[0]["value"])

    assert current("join_use_nulls") == "1" and current("readonly") == "2"
    for _ in range(3):  # whichever pooled connection runs it
        assert engine.execute(
            "SELECT value FROM system.settings WHERE name = 'max_threads'", settings={"max_threads": 1}
        ).to_pylist() == [{"value": "1"}]
    assert all(current("max_threads") != "1" or os.cpu_count() == 1 for _ in range(3))
    assert engine.execute("SELECT getSetting('log_comment') AS c", tag="req-7").to_pylist() == [{"c": "req-7"}]
    assert engine.execute("SELECT getSetting('log_comment') AS c").to_pylist() == [{"c": ""}]
    with pytest.raises(StatementFailed):
        engine.execute("SELECT 1", settings={"no_such_setting": 1})
    assert engine.execute("SELECT 1 AS one").to_pylist() == [{"one": 1}]


def test_limits_come_from_the_engine(tmp_path: Path) -> None:
    path = ChdbEngine.current_path()
    assert path is not None
    strict = ChdbEngine(path, limits=QueryLimits(max_result_rows=10))
    try:
        with pytest.raises(TooManyRows):
            strict.execute("SELECT number FROM numbers(100000)")
    finally:
        strict.close()


def test_cancel_kills_a_tagged_query_from_another_thread(engine: ChdbEngine) -> None:
    outcome: dict[str, object] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            engine.execute(SLOW, tag="cancel-me", settings={"max_execution_time": 60})
        except EngineError as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    assert engine.cancel("cancel-me") is True
    worker.join(10)
    assert isinstance(outcome.get("error"), QueryCancelled)
    assert float(outcome["seconds"]) < 2.0  # type: ignore[arg-type]
    assert engine.cancel("cancel-me") is False
    assert engine.cancel("it's ' quoted") is False


def test_concurrent_queries_run_in_parallel_threads(engine: ChdbEngine) -> None:
    results: list[int] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            rows = engine.execute(f"SELECT sum(number) AS s FROM numbers({100_000 + i})").to_pylist()
            results.append(int(rows[0]["s"]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == sorted((100_000 + i) * (100_000 + i - 1) // 2 for i in range(12))


def test_insert_arrow_and_commands(engine: ChdbEngine, team: int) -> None:
    ts = pa.array([1_700_000_000_000_000] * 2, pa.timestamp("us", tz="UTC"))
    data = pa.table({
        "team_id": pa.array([team, team], pa.int64()), "uuid": ["00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002"], "event": ["a", "b"], "distinct_id": ["d", "d"],
        "person_id": ["00000000-0000-4000-8000-0000000000ff"] * 2, "timestamp": ts,
        "properties": ['{"$session_id": "s1"}', "{}"], "elements_chain": ["", ""], "created_at": ts,
    })  # fmt: skip
    engine.insert_arrow("events", data)
    rows = engine.execute(
        f"SELECT toString(uuid) AS u, event, `$session_id` AS s FROM events WHERE team_id = {team} ORDER BY event"
    ).to_pylist()
    assert rows == [
        {"u": "00000000-0000-4000-8000-000000000001", "event": "a", "s": "s1"},
        {"u": "00000000-0000-4000-8000-000000000002", "event": "b", "s": ""},
    ]
    with pytest.raises(ValueError):
        engine.insert_arrow("system.tables", data)
    engine.command("CREATE TABLE IF NOT EXISTS hoglab.scratch (a Int64) ENGINE = Memory")
    engine.command("INSERT INTO hoglab.scratch SELECT number FROM numbers(5)", settings={"max_threads": 1})
    assert engine.query_bytes("SELECT count() FROM hoglab.scratch") == b"5\n"
    engine.command("DROP TABLE hoglab.scratch")


def test_a_second_directory_in_the_same_process_is_refused(engine: ChdbEngine, tmp_path: Path) -> None:
    with pytest.raises(EngineInUse, match="one data directory per process"):
        ChdbEngine(tmp_path / "other")
    again = ChdbEngine(engine.path)  # the same directory: a second handle on the same engine
    assert again.execute("SELECT 1 AS x").to_pylist() == [{"x": 1}]
    again.close()
    assert engine.execute("SELECT 2 AS x").to_pylist() == [{"x": 2}]


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "src")},
    )  # fmt: skip


def test_another_process_is_told_who_holds_the_directory(engine: ChdbEngine) -> None:
    done = _run(f"""
        from hoglab.server.engine.chdb import ChdbEngine
        from hoglab.server.engine import EngineInUse
        try:
            ChdbEngine({str(engine.path)!r})
        except EngineInUse as exc:
            print(exc)
    """)
    assert f"in use by process {os.getpid()}" in done.stdout, done.stderr


def test_importing_the_package_does_not_import_chdb_and_open_engine_picks_chdb(tmp_path: Path) -> None:
    done = _run(f"""
        import sys
        import hoglab.server.engine, hoglab.server.ingest, hoglab.server.http.capture, hoglab.server.demo
        assert "chdb" not in sys.modules, "chdb imported too early"
        from hoglab.server.config import ServerConfig
        from hoglab.server.engine import open_engine
        engine = open_engine(ServerConfig(data_dir={str(tmp_path)!r}))
        print(type(engine).__name__, engine.path)
        engine.close()
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ChdbEngine", str(chdb_path(tmp_path).resolve())]
    assert ServerConfig(data_dir=tmp_path).clickhouse_url is None
    assert callable(open_engine)


def test_a_forked_child_gets_an_error_instead_of_a_hang(tmp_path: Path) -> None:
    done = _run(f"""
        import os
        from hoglab.server.engine.chdb import ChdbEngine
        engine = ChdbEngine({str(tmp_path)!r})
        engine.execute("SELECT 1")
        pid = os.fork()
        if pid == 0:
            try:
                engine.execute("SELECT 1")
            except Exception as exc:
                os._exit(0 if "forked child" in str(exc) else 2)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        engine.close()
    """, timeout=60)  # fmt: skip
    assert done.stdout.strip() == "0", done.stderr
