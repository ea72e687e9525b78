"""Arrow tables in the shape of the engine's tables (``engine/ddl.py``), for ``Engine.insert_arrow``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pyarrow as pa

from .persons import PersonRows

__all__ = ["EVENT_SCHEMA", "events_table", "person_tables", "warnings_table"]

TS = pa.timestamp("us", tz="UTC")

EVENT_SCHEMA = pa.schema(
    [
        ("team_id", pa.int64()),
        ("uuid", pa.string()),
        ("event", pa.string()),
        ("distinct_id", pa.string()),
        ("person_id", pa.string()),
        ("timestamp", TS),
        ("properties", pa.string()),
        ("elements_chain", pa.string()),
        ("created_at", TS),
    ]
)
_WARNINGS = pa.schema(
    [
        ("team_id", pa.int64()),
        ("source", pa.string()),
        ("type", pa.string()),
        ("details", pa.string()),
        ("timestamp", TS),
    ]
)
_PERSONS = pa.schema(
    [
        ("team_id", pa.int64()),
        ("id", pa.string()),
        ("created_at", TS),
        ("properties", pa.string()),
        ("is_identified", pa.uint8()),
        ("is_deleted", pa.uint8()),
        ("version", pa.uint64()),
    ]
)
_PDI = pa.schema(
    [
        ("team_id", pa.int64()),
        ("distinct_id", pa.string()),
        ("person_id", pa.string()),
        ("is_deleted", pa.uint8()),
        ("version", pa.uint64()),
    ]
)
_OVERRIDES = pa.schema(
    [
        ("team_id", pa.int64()),
        ("old_person_id", pa.string()),
        ("override_person_id", pa.string()),
        ("version", pa.uint64()),
    ]
)


def _columns(rows: Sequence[tuple[object, ...]], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.table([pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)], schema=schema)


def events_table(rows: Sequence[tuple[int, str, str, str, str, datetime, str, str, datetime]]) -> pa.Table:
    """``(team_id, uuid, event, distinct_id, person_id, timestamp, properties, elements_chain, created_at)``."""
    return _columns(rows, EVENT_SCHEMA)


def person_tables(rows: PersonRows) -> dict[str, pa.Table]:
    """The non-empty tables of one commit's person changes, keyed by table name."""
    tables = {
        "persons": _columns(rows.persons, _PERSONS),
        "person_distinct_ids": _columns(rows.distinct_ids, _PDI),
        "person_overrides": _columns(rows.overrides, _OVERRIDES),
    }
    return {name: table for name, table in tables.items() if table.num_rows}


def warnings_table(rows: Sequence[tuple[int, str, str, str, datetime]]) -> pa.Table:
    """``(team_id, source, type, details, timestamp)``: rows of ``ingestion_warnings``."""
    return _columns(rows, _WARNINGS)
