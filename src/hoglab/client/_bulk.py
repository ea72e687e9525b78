"""``all_rows`` in one answer: hoglab's Arrow bulk endpoint, and the frame built from its columns.

Against hoglab, ``client.hogql(sql, all_rows=True)`` posts the statement once to ``POST /query/arrow/``, which
answers every row as an Arrow IPC stream (no 10,000-row cap; the statement's LIMIT applies). PostHog has no such
endpoint: it answers that path with a 4xx before running anything (a kind mismatch, or not found), the client
remembers that for the connection and pages with keyset or OFFSET statements as before (``_query.hogql_pages``).

The frame has the dtypes a JSON answer of the same statement gets (``_frames/_columns.py``): each column is
converted from Arrow by its ClickHouse type (sent in the stream's schema metadata), without Python objects for
numbers, strings and times; nested columns come as JSON text and are read as a JSON answer's cells.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._frames._columns import _json_loads, convert, parse_type
from ..errors import HoglabError
from ._values import encode_values

if TYPE_CHECKING:
    import pyarrow as pa

    from ._client import Client

__all__ = ["ARROW_STREAM", "arrow_frame", "bulk_frame"]

ARROW_STREAM = "application/vnd.apache.arrow.stream"
_INTS = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"})
_FLOATS = frozenset({"Float32", "Float64", "BFloat16", "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256"})
_TEXT = frozenset({"String", "FixedString", "UUID", "Enum8", "Enum16", "Enum", "IPv4", "IPv6"})
_BIG_INTS = frozenset({"Int128", "Int256", "UInt128", "UInt256"})


def _ints(column: pa.ChunkedArray) -> Any:
    import pyarrow as pa

    try:
        return column.cast(pa.int64()).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get).array
    except pa.ArrowInvalid:  # a UInt64 past 2**63-1 (a hash): the JSON reading keeps it exact as UInt64 too
        return column.cast(pa.uint64()).to_pandas(types_mapper={pa.uint64(): pd.UInt64Dtype()}.get).array


def _floats(column: pa.ChunkedArray, nullable: bool) -> Any:
    import numpy as np
    import pyarrow as pa

    data = column.cast(pa.float64()).to_numpy()  # NULL -> NaN
    if not nullable:
        return data
    return pd.arrays.FloatingArray(data, np.isnan(data))  # a JSON answer has no NaN either: both read as NULL


def _times(column: pa.ChunkedArray, type_text: str) -> Any:
    import pyarrow as pa

    ch = parse_type(type_text)
    tz = ch.timezone or "UTC"
    if pa.types.is_integer(column.type):  # DateTime: seconds since the epoch
        column = column.cast(pa.int64()).cast(pa.timestamp("s", tz="UTC"))
    series = column.to_pandas()
    if series.dt.tz is None:
        series = series.dt.tz_localize("UTC")
    return series.dt.tz_convert(tz).dt.as_unit(ch.unit).array


def _column(column: pa.ChunkedArray, type_text: str | None) -> Any:
    import pyarrow as pa

    if type_text is None:
        return convert(column.to_pylist(), None)
    ch = parse_type(type_text)
    name = ch.name
    is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    if name in _INTS and pa.types.is_integer(column.type):
        return _ints(column)
    if name in _FLOATS and (pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)):
        return _floats(column, ch.nullable)
    if name in _TEXT and is_text:
        return column.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get).array
    if name in ("DateTime", "DateTime64") and not is_text:
        return _times(column, type_text)
    if name in ("Date", "Date32") and pa.types.is_date(column.type):
        return column.cast(pa.timestamp("s")).to_pandas().dt.as_unit("us").array
    if name == "Bool" and pa.types.is_boolean(column.type):
        return column.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get).array
    if name in _BIG_INTS and is_text:
        return convert([None if v is None else int(v) for v in column.to_pylist()], type_text)
    values = column.to_pylist()
    if is_text and name not in _TEXT:  # a nested column sent as JSON text: read it as a JSON answer's cell
        loads = _json_loads()
        values = [None if v is None else loads(v) for v in values]
    return convert(values, type_text)


def arrow_frame(table: pa.Table) -> pd.DataFrame:
    """A bulk answer's table as the DataFrame a JSON answer of the same statement gives (same dtypes)."""
    metadata = table.schema.metadata or {}
    types = json.loads(metadata.get(b"hoglab.types", b"[]"))
    type_texts = [t[1] for t in types] if len(types) == table.num_columns else [None] * table.num_columns
    arrays = {i: _column(table.column(i), type_texts[i]) for i in range(table.num_columns)}
    df = pd.DataFrame(arrays, copy=False)
    df.columns = pd.Index(table.column_names, dtype=object)
    df.attrs.update({"columns": list(table.column_names), "types": types, "hasMore": False, "pages": 1})
    return df


def _is_unsupported(error: HoglabError) -> bool:
    """The server has no bulk endpoint (PostHog): a 404/405, or PostHog reading ``arrow`` as a query kind."""
    status = getattr(error, "status", None)
    detail = str(getattr(error, "detail", "") or error)
    return status in (404, 405) or (status == 400 and "kind" in detail.lower() and "arrow" in detail.lower())


def bulk_frame(
    client: Client, sql: str, values: Mapping[str, Any] | None, *, parse_json: bool | Sequence[str] = False
) -> pd.DataFrame | None:
    """Every row of ``sql`` from hoglab's bulk endpoint; ``None`` when the server has none (then page)."""
    import pyarrow as pa

    from ..schema import HogQLQuery, QueryRequest

    if client._bulk_rows is False:
        return None
    body = QueryRequest(query=HogQLQuery(query=sql, values=encode_values(client, values) or None)).to_json_dict()
    try:
        response = client.request("POST", client.path("query/arrow/"), json=body, idempotent=True)
    except HoglabError as error:
        if not _is_unsupported(error):
            raise
        client._bulk_rows = False
        return None
    if not response.headers.get("content-type", "").startswith(ARROW_STREAM):
        client._bulk_rows = False  # a server that answered something else: page instead
        return None
    client._bulk_rows = True
    df = arrow_frame(pa.ipc.open_stream(response.content).read_all())
    if parse_json:
        from .._frames._tables import _parse_json

        _parse_json(df, parse_json)
    return df
