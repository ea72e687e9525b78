"""Arrow on both sides of a frame: Arrow answers read into DataFrames, and DataFrames written out as Arrow.

An Arrow answer (hoglab's bulk rows) is read into a typed DataFrame, and a typed DataFrame is written out as a
``pyarrow.Table`` or a polars frame.

An Arrow answer's columns get the dtypes a JSON answer of the same statement gets: each column is converted by
the kind of its ClickHouse type (:func:`hoglab.frames.columns.column_kind`, sent in the stream's schema metadata
``hoglab.types``), without Python objects for numbers, strings and times; the server sends nested columns as JSON
text and the string-like types Arrow cannot carry (UUID, Enum, IPv4, big integers) as text, read as a JSON
answer's cells.

>>> import pyarrow as pa
>>> table = pa.table({"n": pa.array([1, None], pa.int64())}).replace_schema_metadata(
...     {"hoglab.types": '[["n", "Nullable(Int64)"]]'})
>>> arrow_frame(table).dtypes.astype(str).tolist()
['Int64']
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

from .columns import column_kind, convert, json_loads, parse_type
from .tables import frame_metadata

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_frame", "to_arrow", "to_polars"]


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
    kind = column_kind(ch)
    is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    if kind == "int" and pa.types.is_integer(column.type):
        return _ints(column)
    if kind == "float" and (pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)):
        return _floats(column, ch.nullable)
    if kind == "string" and is_text:
        return column.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get).array
    if kind == "datetime" and not is_text:
        return _times(column, type_text)
    if kind == "date" and pa.types.is_date(column.type):
        return column.cast(pa.timestamp("s")).to_pandas().dt.as_unit("us").array
    if kind == "bool" and pa.types.is_boolean(column.type):
        return column.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get).array
    if kind == "big_int" and is_text:
        return convert([None if v is None else int(v) for v in column.to_pylist()], type_text)
    values = column.to_pylist()
    if is_text and kind != "string":  # a nested column sent as JSON text: read it as a JSON answer's cell
        loads = json_loads()
        values = [None if v is None else loads(v) for v in values]
    return convert(values, type_text)


def arrow_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow answer's table as the DataFrame a JSON answer of the same statement gives (same dtypes)."""
    metadata = table.schema.metadata or {}
    types = json.loads(metadata.get(b"hoglab.types", b"[]"))
    type_texts = [t[1] for t in types] if len(types) == table.num_columns else [None] * table.num_columns
    arrays = {i: _column(table.column(i), type_texts[i]) for i in range(table.num_columns)}
    df = pd.DataFrame(arrays, copy=False)
    df.columns = pd.Index(table.column_names, dtype=object)
    df.attrs.update({"columns": list(table.column_names), "types": types, "hasMore": False, "pages": 1})
    if b"hoglab.warnings" in metadata:  # as a JSON answer's metadata.warnings (frame_metadata keeps the messages)
        df.attrs.update(frame_metadata({"metadata": {"warnings": json.loads(metadata[b"hoglab.warnings"])}}))
    return df


def to_arrow(df: pd.DataFrame) -> Any:
    """A typed frame as a ``pyarrow.Table`` (needs pyarrow), column by column so every dtype carries over.

    Object columns become Arrow lists, structs (tuples, as ``f0, f1...``) or maps where Arrow can type them, and
    JSON text where it cannot (cells of mixed types).

    >>> to_arrow(pd.DataFrame({"n": pd.array([1, None], dtype="Int64")})).schema.field("n").type
    DataType(int64)
    """
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - exercised only without pyarrow
        raise ImportError("to_arrow needs pyarrow: pip install 'hoglab[polars]' or pip install pyarrow") from exc
    arrays = []
    for i in range(df.shape[1]):
        col = df.iloc[:, i]
        arrays.append(_object_to_arrow(pa, col) if col.dtype == object else pa.Array.from_pandas(col))
    return pa.Table.from_arrays(arrays, names=[str(name) for name in df.columns])


def _object_to_arrow(pa: Any, col: pd.Series) -> Any:
    values = [{f"f{j}": item for j, item in enumerate(v)} if isinstance(v, tuple) else v for v in col.tolist()]
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else json.dumps(v, default=str) for v in values], type=pa.string())


def to_polars(df: pd.DataFrame) -> Any:
    """A typed frame as a ``polars.DataFrame`` (needs polars and pyarrow), through :func:`to_arrow`.

    Polars needs unique column names: a repeated name gets ``_1``, ``_2``... appended.
    """
    try:
        import polars as pl
    except ImportError as exc:  # pragma: no cover - exercised only without polars
        raise ImportError("to_polars needs polars: pip install 'hoglab[polars]'") from exc
    table = to_arrow(df)
    names: list[str] = []
    for name in table.column_names:
        unique, n = name, 0
        while unique in names:
            n += 1
            unique = f"{name}_{n}"
        names.append(unique)
    return pl.from_arrow(table.rename_columns(names))
