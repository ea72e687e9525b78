"""hoglab.frames.arrow: typed frames out to Arrow and polars with their dtypes; Arrow answers in with the dtypes a
JSON answer of the same ClickHouse types gets."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, get_args

import pandas as pd
import pyarrow as pa
import pytest

from hoglab.client import Client
from hoglab.frames import parse_type, table_frame, to_arrow, to_polars
from hoglab.frames.arrow import arrow_frame
from hoglab.frames.columns import ColumnKind, column_kind


def test_arrow_and_polars_keep_dtypes() -> None:
    answer = {
        "results": [["2025-06-01T00:00:00Z", None, ["a"], ["x", 1]]],
        "columns": ["t", "n", "arr", "tup"],
        "types": [
            ["t", "DateTime64(6, 'UTC')"],
            ["n", "Nullable(UInt64)"],
            ["arr", "Array(String)"],
            ["tup", "Tuple(String, UInt8)"],
        ],
    }
    df = table_frame(answer)
    table = to_arrow(df)
    assert [str(f.type) for f in table.schema] == [
        "timestamp[us, tz=UTC]",
        "int64",
        "list<item: string>",
        "struct<f0: string, f1: int64>",
    ]
    assert table.column("n").null_count == 1
    frame = to_polars(df)
    assert str(frame.schema["t"]) == "Datetime(time_unit='us', time_zone='UTC')"


def test_arrow_falls_back_to_json_text_and_polars_dedupes_names() -> None:
    answer = {
        "results": [[1, {"a": 1}], [2, [1, "x"]]],
        "columns": ["x", "x"],
        "types": [["x", "UInt8"], ["x", "JSON"]],
    }
    table = to_arrow(table_frame(answer))
    assert table.column(1).to_pylist() == ['{"a": 1}', '[1, "x"]']
    assert to_polars(table_frame(answer)).columns == ["x", "x_1"]


# One column of each kind of the one ClickHouse-type table, as a JSON answer holds it and as hoglab's bulk
# endpoint sends it in Arrow (server/query/bulk.py: native Arrow types where Arrow means what JSON means, text for
# UUID/FixedString/Enum/IP/big integers, JSON text for nested types).
_BOTH_WAYS: list[tuple[str, list[Any], Any]] = [
    ("Int8", [-1, 5], pa.array([-1, 5], pa.int8())),
    ("UInt32", [7, None], pa.array([7, None], pa.uint32())),
    ("UInt64", [2**64 - 1, 1], pa.array([2**64 - 1, 1], pa.uint64())),
    ("Int128", [2**100, None], pa.array([str(2**100), None], pa.string())),
    ("Float32", [0.25, 1.5], pa.array([0.25, 1.5], pa.float32())),
    ("Nullable(Float64)", [1.5, None], pa.array([1.5, None], pa.float64())),
    ("Decimal(10, 2)", [12.34, 5.0], pa.array([Decimal("12.34"), Decimal("5.00")], pa.decimal128(10, 2))),
    ("Bool", [True, None], pa.array([True, None], pa.bool_())),
    ("String", ["a", None], pa.array(["a", None], pa.string())),
    ("LowCardinality(Nullable(String))", [None, "y"], pa.array([None, "y"], pa.string())),
    ("UUID", ["0190a8c0-0000-7000-8000-000000000001"], pa.array(["0190a8c0-0000-7000-8000-000000000001"])),
    ("FixedString(3)", ["abc"], pa.array(["abc"], pa.string())),
    ("Enum8('a' = 1, 'b' = 2)", ["b"], pa.array(["b"], pa.string())),
    ("IPv4", ["10.0.0.1"], pa.array(["10.0.0.1"], pa.string())),
    ("DateTime('Europe/Paris')", ["2025-06-01 12:00:00"], pa.array([1748772000], pa.uint32())),
    ("DateTime64(6, 'UTC')", ["2025-06-01T10:00:00.123456Z"],
     pa.array([datetime(2025, 6, 1, 10, 0, 0, 123456, tzinfo=UTC)], pa.timestamp("us", tz="UTC"))),
    ("Date", ["2025-06-01"], pa.array([date(2025, 6, 1)], pa.date32())),
    ("Date32", ["1900-01-02"], pa.array([date(1900, 1, 2)], pa.date32())),
    ("Array(Int64)", [[1, 2], []], pa.array(["[1,2]", "[]"], pa.string())),
    ("Tuple(String, UInt8)", [["a", 1]], pa.array(['["a",1]'], pa.string())),
    ("Map(String, String)", [{"k": "v"}], pa.array(['{"k":"v"}'], pa.string())),
    ("Nothing", [None], pa.array([None], pa.null())),
]  # fmt: skip


@pytest.mark.parametrize(("type_text", "json_values", "arrow_values"), _BOTH_WAYS, ids=[t for t, *_ in _BOTH_WAYS])
def test_json_and_arrow_answers_give_the_same_column(type_text: str, json_values: list[Any], arrow_values: Any) -> None:
    from_json = table_frame({"results": [[v] for v in json_values], "columns": ["x"], "types": [["x", type_text]]})
    table = pa.table({"x": arrow_values}).replace_schema_metadata({"hoglab.types": json.dumps([["x", type_text]])})
    from_arrow = arrow_frame(table)
    assert str(from_arrow["x"].dtype) == str(from_json["x"].dtype)
    pd.testing.assert_series_equal(from_arrow["x"], from_json["x"])


def test_every_kind_of_the_table_is_read_both_ways() -> None:
    # The list above covers the whole table: a kind added to columns.py without an Arrow reading fails here.
    covered = {column_kind(parse_type(type_text)) for type_text, *_ in _BOTH_WAYS}
    assert covered == set(get_args(ColumnKind))


LIVE_TYPES = """
    select toInt8(-1) as i8, toUInt32(7) as u32, toUInt64(18446744073709551615) as u64, toInt64OrNull('x') as i_null,
           toInt128(170141183460469231731687303715884105727) as i128, toFloat32(0.25) as f32,
           toFloat64OrNull('x') as f_null, toDecimal64(12.345, 3) as dec, 'text' as s, toFixedString('abc', 3) as fs,
           toUUID('0190a8c0-0000-7000-8000-000000000001') as id, toIPv4('10.0.0.1') as ip,
           toDateTime('2025-06-01 10:00:00', 'Europe/Paris') as dt, toDateTime64('2025-06-01 10:00:00.5', 3) as dt3,
           toDate('2025-06-01') as d, toDate32('2025-06-01') as d32, true as b, [1, 2] as arr, tuple('a', 1) as tup,
           map('k', 'v') as m, NULL as nothing
"""


def test_the_service_json_and_arrow_answers_have_the_same_dtypes(live_client: Client) -> None:
    # The real service answers both ways: the JSON answer (/query/) and the Arrow one (/query/arrow/).
    from_json = live_client.hogql(LIVE_TYPES)
    from_arrow = live_client.hogql(LIVE_TYPES, all_rows=True)
    assert live_client._bulk_rows is True  # it was the Arrow endpoint, not pages of JSON
    assert from_arrow.dtypes.astype(str).to_dict() == from_json.dtypes.astype(str).to_dict()
    assert len(from_json.columns) == 21
