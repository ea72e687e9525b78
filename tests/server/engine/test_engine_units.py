"""Pure parts of the engine package: settings, error classification, JSONCompact splitting, DDL names."""

from __future__ import annotations

import orjson
import pytest

from hoglab.server.engine import EngineError, MemoryLimitExceeded, QueryCancelled, StatementFailed, StatementTimedOut
from hoglab.server.engine.ddl import create_statements, is_insertable
from hoglab.server.engine.errors import error_from_message
from hoglab.server.engine.jsonfmt import split_json_compact
from hoglab.server.engine.settings import QueryLimits, quote_string, settings_clause, user_query_settings


def test_user_settings_force_readonly_and_carry_the_tag() -> None:
    settings = user_query_settings(QueryLimits(max_execution_time=9), tag="t", overrides={"readonly": 0, "x": 1})
    assert settings["readonly"] == 2 and settings["max_execution_time"] == 9 and settings["log_comment"] == "t"
    assert settings["join_use_nulls"] == 1 and settings["result_overflow_mode"] == "throw" and settings["x"] == 1
    assert "log_comment" not in user_query_settings(QueryLimits())


def test_settings_clause_quotes_values_and_checks_names() -> None:
    assert settings_clause({}) == ""
    assert settings_clause({"a": 1, "b": True, "c": "x'y\\z"}) == "SETTINGS a=1, b=1, c='x\\'y\\\\z'"
    assert quote_string("'; DROP TABLE events; --") == "'\\'; DROP TABLE events; --'"
    with pytest.raises(ValueError):
        settings_clause({"a=1, readonly": 0})


@pytest.mark.parametrize(
    ("text", "cls", "code", "name", "message"),
    [
        ("Code: 62. DB::Exception: Syntax error: failed at position 1. (SYNTAX_ERROR)", StatementFailed, 62,
         "SYNTAX_ERROR", "Syntax error: failed at position 1."),
        ("Received ClickHouse exception, code: 159, server response: Code: 159. DB::Exception: Timeout exceeded. "
         "(TIMEOUT_EXCEEDED) (version 26.9.2.1) (for url http://h:8123)", StatementTimedOut, 159, "TIMEOUT_EXCEEDED",
         "Timeout exceeded."),
        ("Code: 241. DB::Exception: Memory limit (for query) exceeded. (MEMORY_LIMIT_EXCEEDED)",
         MemoryLimitExceeded, 241, "MEMORY_LIMIT_EXCEEDED", "Memory limit (for query) exceeded."),
        ("Code: 394. DB::Exception: Query was cancelled. (QUERY_WAS_CANCELLED)", QueryCancelled, 394,
         "QUERY_WAS_CANCELLED", "Query was cancelled."),
        ("Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)", EngineError,
         243, "NOT_ENOUGH_SPACE", "Cannot reserve 1.00 MiB, not enough space."),
        ("connection refused", EngineError, None, None, "connection refused"),
    ],
)  # fmt: skip
def test_error_classification(text: str, cls: type, code: int | None, name: str | None, message: str) -> None:
    error = error_from_message(text)
    assert type(error) is cls
    assert (error.code, error.name, error.message) == (code, name, message)


def test_split_json_compact_leaves_rows_untouched() -> None:
    raw = (
        b'{\n\t"meta":\n\t[\n\t\t{\n\t\t\t"name": "s",\n\t\t\t"type": "String"\n\t\t}\n\t],\n\n'
        b'\t"data":\n\t[\n\t\t["\\n\\t\\"rows\\": 9"],\n\t\t["b"]\n\t],\n\n\t"rows": 2,\n\n'
        b'\t"statistics":\n\t{\n\t\t"elapsed": 0.5,\n\t\t"rows_read": 3,\n\t\t"bytes_read": 4\n\t}\n}\n'
    )
    result = split_json_compact(raw)
    assert (result.columns, result.types, result.rows) == (["s"], ["String"], 2)
    assert (result.elapsed, result.rows_read, result.bytes_read) == (0.5, 3, 4)
    assert orjson.loads(result.data) == [['\n\t"rows": 9'], ["b"]]
    with pytest.raises(EngineError):
        split_json_compact(b"not json")


def test_ddl() -> None:
    statements = create_statements("other")
    assert statements[0] == "CREATE DATABASE IF NOT EXISTS other"
    backfills = [s for s in statements if s.startswith("INSERT")]
    alters = [s for s in statements if s.startswith("ALTER")]
    creates = [s for s in statements[1:] if s not in backfills and s not in alters]
    assert all("IF NOT EXISTS other." in s for s in creates)
    # data dirs made before groups get the events' $group_N columns, once
    assert [s.split(" String")[0] for s in alters] == [
        f"ALTER TABLE other.events ADD COLUMN IF NOT EXISTS `$group_{i}`" for i in range(5)]  # fmt: skip
    # the sessions backfill runs only before the view that feeds sessions exists, so running it again is harmless
    assert [s.split("SELECT")[0] for s in backfills] == ["INSERT INTO other.sessions "]
    assert "(SELECT count() FROM system.tables WHERE database = 'other' AND name = 'sessions_mv') = 0" in backfills[0]
    assert statements.index(backfills[0]) < next(i for i, s in enumerate(statements) if "other.sessions_mv" in s)
    assert is_insertable("events") and is_insertable("_load_" + "0" * 32 + "_map")
    assert not is_insertable("system.tables") and not is_insertable("_load_x; DROP")
