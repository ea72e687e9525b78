"""Refusals carry a message and the position of the offending text."""

from __future__ import annotations

import pytest

from hoglab.server.hogql import HogQLError, compile_hogql
from hoglab.server.hogql.functions import is_aggregate, is_allowed_function, split_combinators


def _error(query: str, **kwargs: object) -> HogQLError:
    with pytest.raises(HogQLError) as info:
        compile_hogql(query, team_id=1, **kwargs)  # type: ignore[arg-type]
    assert not info.value.internal, info.value
    return info.value


@pytest.mark.parametrize(
    ("query", "fragment", "message"),
    [
        ("SELECT * FROM file('x')", "file('x')", "Table function 'file' is not allowed"),
        ("SELECT file('x')", "file", "Function 'file' is not allowed"),
        ("SELECT hostName() FROM events", "hostName", "Function 'hostName' is not allowed"),
        ("SELECT * FROM system.tables", "system.tables", "Database-qualified tables are not allowed"),
        ("SELECT * FROM foo", "foo", "Unknown table 'foo'"),
        ("SELECT team_id FROM events", "team_id", "'team_id' is reserved"),
        ("SELECT 1 FROM events SETTINGS max_threads = 1", "SETTINGS", "SETTINGS is not allowed"),
        ("SELECT 1 FROM events FORMAT JSON", "FORMAT", "FORMAT is not allowed"),
        ("SELECT 1 INTO OUTFILE 'x'", "INTO", "INTO is not allowed"),
        ("SELECT 1; SELECT 2", ";", "Only one statement is allowed"),
        ("DROP TABLE events", "DROP", "DROP statements are not allowed"),
        ("SELECT {x:UInt8}", "{x:UInt8}", "ClickHouse query parameters"),
        ("SELECT {nope}", "{nope}", "Placeholder {nope} has no value"),
        ("SELECT foo FROM events", "foo", "Unknown field 'foo'"),
        ("SELECT properties.a FROM events e JOIN persons p ON 1", "properties.a", "Ambiguous name 'properties'"),
        ("SELECT event.x FROM events", "event.x", "Field 'event' has no sub-fields"),
        ("SELECT person FROM events", "person", "'person' is a join"),
        ("SELECT person.nope FROM events", "person.nope", "Field 'nope' not found on table 'persons'"),
        ("SELECT x.y FROM events", "x.y", "Unknown table or field 'x'"),
        ("SELECT * FROM events FINAL", "events", "FINAL is not supported"),
        ("SELECT * FROM persons SAMPLE 0.1", "SAMPLE", "SAMPLE applies to the events table only"),
        ("SELECT * FROM events SAMPLE 1000", "SAMPLE", "SAMPLE <rows> is not supported"),
        ("SELECT * FROM events SAMPLE 1/10 OFFSET 999", "SAMPLE", "SAMPLE ... OFFSET needs a fraction from 0 to 1"),
        ("SELECT properties.a.0 FROM events", "properties.a.0", "SQL indexes start from one"),
        ("SELECT 1; -- a comment\nSELECT 2", ";", "Only one statement is allowed"),
        ("SELECT number FROM numbers(10) LIMIT -1", "-1", "LIMIT must not be negative"),
        ("SELECT count() AS events FROM events", "count() AS events", "Alias 'events' is also a table alias"),
    ],
)
def test_refusal_points_at_the_problem(query: str, fragment: str, message: str) -> None:
    err = _error(query)
    assert message in err.message
    assert err.start is not None and err.end is not None, err
    assert fragment in query[err.start : err.end] or query[err.start : err.end] in fragment, (
        query[err.start : err.end],
        fragment,
    )
    assert f"(line 1, column {err.start + 1})" in str(err)


def test_position_on_a_later_line() -> None:
    err = _error("select event\nfrom events\nwhere  hostName() = 'x'")
    assert (err.line, err.column) == (3, 8)
    assert str(err) == "Function 'hostName' is not allowed (line 3, column 8)"
    assert err.to_dict()["line"] == 3


def test_syntax_errors_have_a_position() -> None:
    err = _error("select event from events where (")
    assert err.message.startswith("Syntax error")
    err = _error("select 'unterminated")
    assert err.message.startswith("Syntax error")


@pytest.mark.parametrize("query", ["", "   ", "-- just a comment", ";"])
def test_empty_queries(query: str) -> None:
    _error(query)


def test_too_deep_and_too_long() -> None:
    _error("select " + "(" * 5000 + "1" + ")" * 5000)
    _error("select 1 " + " " * 100_001)


def test_union_without_all_or_distinct() -> None:
    assert "DISTINCT or ALL" in _error("select 1 union select 2").message


def test_function_allow_list() -> None:
    for name in ("count", "countIf", "uniqExactIf", "sumState", "avgMerge", "quantilesExact", "windowFunnel",
                 "retention", "sequenceMatch", "JSONExtractString", "toStartOfDay", "arrayMap", "now", "today",
                 "COUNT", "lower", "LOWER", "multiIf", "row_number", "lagInFrame", "toFloat", "toInt"):  # fmt: skip
        assert is_allowed_function(name), name
    for name in ("file", "url", "remote", "dictGet", "joinGet", "sleep", "sleepEachRow", "throwIf", "getSetting",
                 "hostName", "version", "currentDatabase", "currentUser", "input", "executable", "in", "globalIn",
                 "nullIn", "formatRow", "getMacro", "filesystemAvailable", "sumFile", "fileIf"):  # fmt: skip
        assert not is_allowed_function(name), name
    assert split_combinators("uniqIfMerge") == ("uniq", ["If", "Merge"])
    assert is_aggregate("groupArrayIf") and not is_aggregate("lower")


def test_aggregates_combinators_and_windows_compile() -> None:
    compiled = compile_hogql(
        "select countIf(event = 'a'), sumIf(1, 1), uniqExactIf(person_id, 1), quantile(0.9)(1), "
        "quantiles(0.1, 0.5)(1), windowFunnel(86400)(timestamp, event = 'a', event = 'b'), "
        "retention(event = 'a', event = 'b'), sequenceMatch('(?1)(?2)')(timestamp, event = 'a', event = 'b'), "
        "row_number() over (partition by distinct_id order by timestamp) from events group by distinct_id, timestamp",
        team_id=1,
    )
    assert "windowFunnel(86400)" in compiled.sql


def test_with_alias_named_like_a_table() -> None:
    assert "WITH alias 'events'" in _error("with 5 as events select count() from events").message
    assert "WITH alias 'e'" in _error("with 5 as e select count() from (select 1) as e").message


def test_lone_surrogates_are_refused() -> None:
    assert "Unicode" in _error("select 'a\ud800b'").message
    with pytest.raises(HogQLError):
        compile_hogql("select {v}", team_id=1, values={"v": "\udfff"})


@pytest.mark.parametrize(
    "query",
    [
        "select 1 from events where timestamp > now() - interval 7 ＳＥＬＥＣＴday",  # found by test_fuzz
        "select extract(éday from now())",
        "select now() - interval 1 dáy",
        "select interval 7 😀",
    ],
)
def test_non_ascii_interval_and_extract_units_are_a_users_mistake(query: str) -> None:
    assert "Unexpected word" in _error(query).message


def test_ascii_units_and_frame_bounds_still_compile() -> None:
    compiled = compile_hogql(
        "select now() - interval 7 day, extract(year from now()), "
        "count() over (order by timestamp rows between unbounded preceding and current row) from events",
        team_id=1,
    )
    assert "INTERVAL '7' DAY" in compiled.sql and "EXTRACT(YEAR" in compiled.sql
