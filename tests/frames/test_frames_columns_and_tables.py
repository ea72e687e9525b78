"""hoglab.frames columns and tables: every ClickHouse type mapping, NULLs, empty answers, time zones, metadata."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.frames import CHType, parse_type, table_frame, to_frame


def _one(values: list[Any], type_text: str, **options: Any) -> pd.Series:
    df = table_frame({"results": [[v] for v in values], "columns": ["x"], "types": [["x", type_text]]}, **options)
    return df["x"]


@pytest.mark.parametrize(
    ("type_text", "values", "dtype", "expected"),
    [
        ("UInt8", [1, 2], "Int64", [1, 2]),
        ("Int32", [-5, 7], "Int64", [-5, 7]),
        ("Int64", [2**62, None], "Int64", [2**62, pd.NA]),
        ("Nullable(UInt64)", [3, None], "Int64", [3, pd.NA]),
        ("UInt64", [2**64 - 1, 1], "UInt64", [2**64 - 1, 1]),
        ("UInt64", [2**64 - 1, None], "UInt64", [2**64 - 1, pd.NA]),
        ("Int128", [2**100, None], "object", [2**100, None]),
        ("Float64", [1.5, None], "float64", [1.5, np.nan]),
        ("Float32", [0.25], "float64", [0.25]),
        ("Nullable(Float64)", [1.5, None], "Float64", [1.5, pd.NA]),
        ("Decimal(10, 2)", ["12.34", 5], "float64", [12.34, 5.0]),
        ("Nullable(Decimal(18, 4))", [1.25, None], "Float64", [1.25, pd.NA]),
        ("Bool", [True, False, None], "boolean", [True, False, pd.NA]),
        ("String", ["a", ""], "string", ["a", ""]),
        ("Nullable(String)", ["a", None], "string", ["a", pd.NA]),
        ("LowCardinality(String)", ["x"], "string", ["x"]),
        ("LowCardinality(Nullable(String))", [None, "y"], "string", [pd.NA, "y"]),
        ("UUID", ["0190a8c0-0000-7000-8000-000000000001"], "string", ["0190a8c0-0000-7000-8000-000000000001"]),
        ("FixedString(3)", ["abc"], "string", ["abc"]),
        ("Enum8('a' = 1, 'b,c' = 2)", ["b,c"], "string", ["b,c"]),
        ("Array(String)", [["a", "b"], []], "object", [["a", "b"], []]),
        ("Array(Nullable(Int64))", [[1, None]], "object", [[1, None]]),
        ("Tuple(String, UInt8)", [["a", 1]], "object", [("a", 1)]),
        ("Tuple(name String, n UInt8)", [["a", 1]], "object", [("a", 1)]),
        ("Map(String, String)", [{"k": "v"}], "object", [{"k": "v"}]),
        ("Nothing", [None], "object", [None]),
        ("Nullable(Nothing)", [None], "object", [None]),
        ("SomeFutureType", [{"a": 1}], "object", [{"a": 1}]),
    ],
)
def test_type_mapping(type_text: str, values: list[Any], dtype: str, expected: list[Any]) -> None:
    col = _one(values, type_text)
    assert str(col.dtype) == dtype
    for got, want in zip(col.tolist(), expected, strict=True):
        if want is pd.NA:
            assert got is pd.NA
        elif isinstance(want, float) and np.isnan(want):
            assert np.isnan(got)
        else:
            assert (got == want and type(got) is type(want)) or (isinstance(want, float) and got == want)


@pytest.mark.parametrize(
    ("type_text", "values", "dtype", "first"),
    [
        (
            "DateTime64(6, 'UTC')",
            ["2025-06-01T12:00:00.123456Z", None],
            "datetime64[us, UTC]",
            "2025-06-01 12:00:00.123456+00:00",
        ),
        (
            "DateTime('Europe/Paris')",
            ["2025-06-01T14:00:00+02:00"],
            "datetime64[us, Europe/Paris]",
            "2025-06-01 14:00:00+02:00",
        ),
        (
            "DateTime('Europe/Paris')",
            ["2025-06-01 14:00:00"],
            "datetime64[us, Europe/Paris]",
            "2025-06-01 14:00:00+02:00",
        ),
        (
            "DateTime64(9, 'UTC')",
            ["2025-06-01T12:00:00.123456789Z"],
            "datetime64[ns, UTC]",
            "2025-06-01 12:00:00.123456789+00:00",
        ),
        ("DateTime", ["2025-06-01T12:00:00Z"], "datetime64[us, UTC]", "2025-06-01 12:00:00+00:00"),
        (
            "Nullable(DateTime64(3, 'America/New_York'))",
            ["2025-01-01T00:00:00Z", None],
            "datetime64[us, America/New_York]",
            "2024-12-31 19:00:00-05:00",
        ),
        ("Date", ["2025-06-01", None], "datetime64[us]", "2025-06-01 00:00:00"),
        ("Date32", ["1960-01-02"], "datetime64[us]", "1960-01-02 00:00:00"),
    ],
)
def test_datetime_mapping(type_text: str, values: list[Any], dtype: str, first: str) -> None:
    col = _one(values, type_text)
    assert str(col.dtype) == dtype
    assert str(col.iloc[0]) == first
    if len(values) > 1:
        assert col.isna().iloc[1]


def test_parse_type_unwraps_and_keeps_arguments() -> None:
    assert parse_type("Nullable(LowCardinality(String))") == CHType("String", (), True)
    t = parse_type("Array(Nullable(DateTime64(6, 'UTC')))")
    assert t.name == "Array" and t.args[0] == CHType("DateTime64", ("6", "'UTC'"), True)
    assert parse_type("Map(String, Array(UInt8))").args == (CHType("String"), CHType("Array", (CHType("UInt8"),)))


def test_empty_answer_keeps_columns_and_dtypes() -> None:
    df = table_frame(
        {
            "results": [],
            "columns": ["t", "n", "s"],
            "types": [["t", "DateTime64(6, 'UTC')"], ["n", "UInt64"], ["s", "String"]],
        }
    )
    assert df.shape == (0, 3)
    assert df.dtypes.astype(str).tolist() == ["datetime64[us, UTC]", "Int64", "string"]


def test_duplicate_column_names_survive() -> None:
    df = table_frame({"results": [[1, "a"]], "columns": ["x", "x"], "types": [["x", "UInt8"], ["x", "String"]]})
    assert df.columns.tolist() == ["x", "x"] and df.dtypes.astype(str).tolist() == ["Int64", "string"]


def test_plain_type_strings_of_events_and_actors_queries() -> None:
    answer = {
        "results": [["e", {"uuid": "u", "properties": {"a": 1}}]],
        "columns": ["event", "person"],
        "types": ["String", "Tuple(UUID, String)"],
    }
    df = to_frame(answer, "EventsQuery", flatten=True)
    assert df.columns.tolist() == ["event", "person.uuid", "person.properties"]
    assert df["person.properties"].iloc[0] == {"a": 1}


def test_parse_json_decodes_json_text_columns_only() -> None:
    answer = {
        "results": [['{"a": 1}', "plain", "[1]"], [None, "text", "[]"]],
        "columns": ["p", "s", "l"],
        "types": [["p", "String"], ["s", "String"], ["l", "String"]],
    }
    kept = table_frame(answer)
    assert kept["p"].iloc[0] == '{"a": 1}'
    df = table_frame(answer, parse_json=True)
    assert df["p"].tolist() == [{"a": 1}, None] and df["l"].tolist() == [[1], []]
    assert str(df["s"].dtype) == "string"
    assert table_frame(answer, parse_json=["l"])["p"].iloc[0] == '{"a": 1}'


def test_attrs_hold_the_metadata_but_not_the_rows() -> None:
    answer = {
        "results": [[1]],
        "columns": ["x"],
        "types": [["x", "UInt8"]],
        "hogql": "SELECT 1",
        "clickhouse": "SELECT 1",
        "timings": [{"k": ".", "t": 0.1}],
        "hasMore": True,
        "limit": 100,
        "offset": 0,
    }
    attrs = table_frame(answer).attrs
    assert attrs["hogql"] == "SELECT 1" and attrs["hasMore"] is True and attrs["types"] == [["x", "UInt8"]]
    assert attrs["timings"] == [{"k": ".", "t": 0.1}] and "results" not in attrs


def test_model_input_gives_the_same_frame() -> None:
    from hoglab.schema import HogQLQueryResponse

    answer = {
        "results": [["2025-06-01T00:00:00Z", 3]],
        "columns": ["t", "n"],
        "types": [["t", "DateTime64(6, 'UTC')"], ["n", "UInt64"]],
    }
    pd.testing.assert_frame_equal(
        table_frame(HogQLQueryResponse.model_validate(answer)), table_frame(answer), check_like=True
    )


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="WebOverviewQuery"):
        to_frame({"results": []}, "WebOverviewQuery")
