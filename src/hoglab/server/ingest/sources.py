"""Where a file load reads from: the file's format, its columns, and SQL that parses each row.

On chDB the engine parses the file itself (``file(path, format, structure)``, multi-threaded C++); on a
ClickHouse server the file is not on the server's disk, so it is read here with pyarrow and uploaded to a
staging table first. Either way the same SQL (``row_select``) turns rows into typed columns and a ``problem``
text per row; ``_row_number`` (0-based; ClickHouse's virtual column for ``file()``) gives line numbers.

JSONL is read with ClickHouse's ``JSONEachRow`` parser (parallel; objects are read as their JSON text, so
``properties`` may be an object or a JSON string). That parser stops at a malformed line and numbers rows, not
lines, so when a JSONL file has any problem it is read again the exact way (:func:`exact_source`): one string
per line (``LineAsString``) parsed with ``JSONExtract`` into a named tuple, blank lines keeping their numbers,
every bad line found.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

import pyarrow as pa

from .errors import IngestError

__all__ = ["FIELDS", "REQUIRED", "FileSource", "describe_source", "detect_format", "exact_source", "file_and_format",
           "read_locally", "row_filter", "row_select"]

FIELDS = ("uuid", "event", "distinct_id", "timestamp", "properties", "person_id", "elements_chain")
REQUIRED = ("event", "distinct_id", "timestamp")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet",
             ".pq": "parquet"}  # fmt: skip
_COMPRESSED = {".gz", ".zst", ".zstd", ".bz2", ".xz", ".lz4"}


def detect_format(path: Path, given: str | None = None) -> str:
    """``jsonl``, ``csv`` or ``parquet`` from ``given`` or the file name (a compression suffix is skipped)."""
    if given:
        fmt = given.lower().lstrip(".")
        fmt = {"ndjson": "jsonl", "json": "jsonl", "pq": "parquet"}.get(fmt, fmt)
        if fmt not in {"jsonl", "csv", "parquet"}:
            raise IngestError(f"Unknown format {given!r}: use jsonl, csv or parquet.", code="invalid_file")
        return fmt
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise IngestError(f"{path.name}: cannot tell the format from the name; give it: jsonl, csv or parquet "
                      "(hoglab load --format, load_file(format=...)).", code="invalid_file")  # fmt: skip


def file_and_format(path: str | PathLike[str], given: str | None = None) -> tuple[Path, str]:
    """The file a load reads (``~`` expanded, absolute) and its format (:func:`detect_format`); a missing file is
    an ``invalid_file`` error before anything is read."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise IngestError(f"{path}: no such file.", code="invalid_file")
    return file, detect_format(file, given)


@dataclass
class FileSource:
    """How to read one file: ``structure`` for ``file()``, the columns present, and the line-number offset."""

    path: Path
    format: str
    clickhouse_format: str
    structure: str
    columns: dict[str, str] = field(default_factory=dict)  # field -> ClickHouse type of the source column
    line_offset: int = 1
    exact: bool = True  # are _row_number + line_offset line numbers, and is every bad row found?
    settings: dict[str, int] = field(default_factory=dict)  # input format settings for reading it

    def line_expr(self) -> str:
        return f"_row_number + {self.line_offset}"


def _csv_header(path: Path) -> list[str]:
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        line = handle.readline()
    try:
        return next(csv.reader(io.StringIO(line)))
    except StopIteration:
        return []


# DuckDB and pyarrow write UUID and JSON columns as Arrow extension types (arrow.uuid over 16 bytes, arrow.json
# over a string); both mean the text the other writers store, and ClickHouse reads either as a String column.
_UUID_FIELDS = ("uuid", "person_id")


def _is_uuid(typ: pa.DataType) -> bool:
    return isinstance(typ, pa.BaseExtensionType) and typ.extension_name == "arrow.uuid"


def _is_text(typ: pa.DataType) -> bool:
    if isinstance(typ, pa.BaseExtensionType) and typ.extension_name == "arrow.json":
        typ = typ.storage_type
    return bool(pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ))


def _uuid_text(column: pa.ChunkedArray) -> pa.Array:
    """An ``arrow.uuid`` column as canonical UUID text (nulls kept), for engines that are sent Arrow."""
    import uuid

    raw = [b for chunk in column.chunks for b in chunk.storage.to_pylist()]  # the 16 bytes of each id
    return pa.array([None if b is None else str(uuid.UUID(bytes=b)) for b in raw], pa.string())


def _parquet_columns(path: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise IngestError(f"{path.name}: not a readable Parquet file ({exc}).", code="invalid_file") from None
    columns: dict[str, str] = {}
    for name in FIELDS:
        if name not in schema.names:
            continue
        typ = schema.field(name).type
        if _is_text(typ) or (name in _UUID_FIELDS and _is_uuid(typ)):
            columns[name] = "Nullable(String)"
        elif name == "timestamp" and pa.types.is_timestamp(typ):
            columns[name] = "Nullable(DateTime64(6, 'UTC'))"
        else:
            expected = "a string or a timestamp" if name == "timestamp" else "a string"
            raise IngestError(f"{path.name}: column {name!r} is {typ}; expected {expected}.", code="invalid_file")
    return columns


_JSON_INPUT = {
    "input_format_json_read_objects_as_strings": 1,
    "input_format_json_read_arrays_as_strings": 1,
    "input_format_json_read_numbers_as_strings": 1,
    "input_format_json_read_bools_as_strings": 1,
    "input_format_skip_unknown_fields": 1,
}


def exact_source(source: FileSource) -> FileSource:
    """The line-by-line reading of a JSONL file (exact line numbers, every bad line); other formats as they are."""
    if source.exact:
        return source
    return FileSource(source.path, source.format, "LineAsString", "line String", {n: "json" for n in FIELDS}, 1)


def describe_source(path: Path, fmt: str) -> FileSource:
    """The columns a file has (CSV header, Parquet schema; JSONL keys are found per line) and its structure."""
    if fmt == "jsonl":
        columns = {name: "Nullable(String)" for name in FIELDS}
        structure = ", ".join(f"`{name}` {typ}" for name, typ in columns.items())
        return FileSource(path, fmt, "JSONEachRow", structure, columns, 1, exact=False, settings=_JSON_INPUT)
    if fmt == "csv":
        header = _csv_header(path)
        names = list(dict.fromkeys(h.strip() for h in header))
        missing = [name for name in REQUIRED if name not in names]
        if missing:
            raise IngestError(f"{path.name}: the header has no {', '.join(repr(m) for m in missing)} column "
                              f"(found {', '.join(names) or 'nothing'}).", code="invalid_file")  # fmt: skip
        structure = ", ".join(f"`{name.replace('`', '')}` Nullable(String)" for name in names)
        columns = {name: "Nullable(String)" for name in FIELDS if name in names}
        # Line 1 is the header; a record's line is its number + 2 (exact unless a quoted value spans lines).
        return FileSource(path, fmt, "CSVWithNames", structure, columns, 2)
    columns = _parquet_columns(path)
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise IngestError(f"{path.name}: no {', '.join(repr(m) for m in missing)} column.", code="invalid_file")
    structure = ", ".join(f"`{name}` {typ}" for name, typ in columns.items())
    return FileSource(path, fmt, "Parquet", structure, columns, 1)


def row_filter(source: FileSource) -> str:
    """``WHERE`` condition on source rows: blank JSONL lines are skipped (their line numbers still count)."""
    return "notEmpty(trimBoth(line))" if source.clickhouse_format == "LineAsString" else "1"


def row_select(source: FileSource) -> str:
    """``SELECT`` list turning one source row into staging columns and a ``problem`` text ('' if none)."""
    if source.clickhouse_format == "LineAsString":
        tuple_type = ", ".join(
            f"{name} Nullable(String)" for name in ("uuid", "event", "distinct_id", "timestamp", "properties",
                                                    "person_id", "elements_chain")
        )  # fmt: skip
        values = {name: f"tupleElement(t, '{name}')" for name in FIELDS}
        prefix = f"JSONExtract(line, 'Tuple({tuple_type})') AS t, "
        checks = ["NOT isValidJSON(line), 'not valid JSON'", "JSONType(line) != 'Object', 'not a JSON object'"]
    else:
        values = {name: (f"`{name}`" if name in source.columns else "CAST(NULL, 'Nullable(String)')")
                  for name in FIELDS}  # fmt: skip
        prefix, checks = "", []
    typed_ts = source.columns.get("timestamp", "").startswith("Nullable(DateTime64")
    ts = values["timestamp"] if typed_ts else f"parseDateTime64BestEffortOrNull({values['timestamp']}, 6, 'UTC')"
    v = values
    checks += [
        f"ifNull({v['event']}, '') = '', 'missing \"event\"'",
        f"ifNull({v['distinct_id']}, '') = '', 'missing \"distinct_id\"'",
        f"{v['timestamp']} IS NULL, 'missing \"timestamp\"'",
        f"ts IS NULL, concat('invalid \"timestamp\": ', substring(toString({v['timestamp']}), 1, 40))",
        f"ifNull({v['uuid']}, '') != '' AND toUUIDOrNull({v['uuid']}) IS NULL, 'invalid \"uuid\"'",
        f"ifNull({v['person_id']}, '') != '' AND toUUIDOrNull({v['person_id']}) IS NULL, 'invalid \"person_id\"'",
        f"ifNull({v['properties']}, '') != '' AND NOT (isValidJSON({v['properties']}) "
        f"AND JSONType({v['properties']}) = 'Object'), '\"properties\" is not a JSON object'",
    ]
    problem = "multiIf(" + ", ".join(checks) + ", '')"
    props = f"ifNull(nullIf({v['properties']}, ''), '{{}}')"
    return (
        f"{source.line_expr()} AS _line, {prefix}"
        f"nullIf({v['uuid']}, '') AS uuid, ifNull({v['event']}, '') AS event, "
        f"ifNull({v['distinct_id']}, '') AS distinct_id, {ts} AS ts, {props} AS properties, "
        f"nullIf({v['person_id']}, '') AS person_id, ifNull({v['elements_chain']}, '') AS elements_chain, "
        # position() first: only the rare rows that mention the key pay for a JSON parse
        f"position({props}, '$process_person_profile') > 0 "
        f"AND JSONExtractRaw({props}, '$process_person_profile') = 'false' AS personless, {problem} AS problem"
    )


def read_locally(source: FileSource) -> pa.Table:
    """The file as an Arrow table of the source columns plus ``_row_number`` (for engines without ``file()``)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    stream = pa.input_stream(str(source.path), compression="detect")
    if source.clickhouse_format == "LineAsString":
        table = pcsv.read_csv(
            stream,
            read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
            parse_options=pcsv.ParseOptions(
                delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False),
        )
        table = table.set_column(0, "line", table.column(0).fill_null(""))
    elif source.format == "csv":
        names = [name for name in FIELDS if name in source.columns]
        table = pcsv.read_csv(
            stream,
            parse_options=pcsv.ParseOptions(newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                include_columns=names, column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=True
            ),
        )
    else:
        table = pq.read_table(source.path, columns=list(source.columns))
        for name, typ in source.columns.items():
            i = table.schema.get_field_index(name)
            arrow_type = table.schema.field(name).type
            if typ.startswith("Nullable(DateTime64"):
                table = table.set_column(i, name, table.column(name).cast(pa.timestamp("us", tz="UTC")))
            elif _is_uuid(arrow_type):
                table = table.set_column(i, name, _uuid_text(table.column(name)))
            elif isinstance(arrow_type, pa.BaseExtensionType):
                table = table.set_column(i, name, table.column(name).cast(arrow_type.storage_type))
    return table.append_column("_row_number", pa.array(range(table.num_rows), pa.uint64()))
