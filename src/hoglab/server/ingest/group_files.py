"""``load_groups`` and ``load_group_types``: PostHog's export of groups and group types, all or nothing.

PostHog has no batch export of groups; its groups leave it in two shapes, and both are read (JSONL, CSV or
Parquet, the format from the name as for events):

* groups: the ``groups`` table's columns, HogQL's names (``index, key, properties, created_at[, updated_at]``) or
  ClickHouse's and the REST API's (``group_type_index, group_key, group_properties, created_at``);
  ``properties`` an object or a JSON string. An optional ``group_type`` column names each row's type, so a file
  can bring its types along; otherwise the types must exist (loaded from a group-types file, or created by
  events).
* group types: ``group_type, group_type_index[, name_singular, name_plural]`` (``/groups_types/``'s rows). The
  indexes are kept, since events' ``$group_N``, queries and flags refer to them; a type whose name or index
  is taken by another type is a bad row.

A loaded group replaces what the project had for that key (its properties and ``created_at`` are the export's).
Every row is checked first; any bad row stops the load with the lines named (``LoadError``), nothing stored.

For example (a sketch of a call and its answer, not run)::

    load_group_types(engine, 1, "group_types.jsonl").rows, load_groups(engine, 1, "groups.csv").rows
    -> (2, 340)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

import orjson

from ..engine.base import Engine
from ..engine.ddl import MAX_GROUP_TYPES
from .errors import MAX_LISTED_PROBLEMS, LoadError
from .events import parse_timestamp
from .groups import CachedGroupType, GroupState, GroupStore, group_key_text
from .sources import detect_format, file_and_format

__all__ = ["GroupLoadReport", "file_kind", "load_group_types", "load_groups", "read_records"]

_GROUP_ALIASES = {"index": "group_type_index", "key": "group_key", "properties": "group_properties",
                  "_timestamp": "updated_at"}  # fmt: skip


@dataclass(frozen=True)
class GroupLoadReport:
    """What a load stored: ``rows`` groups (or group types), in ``seconds``."""

    path: str
    format: str
    rows: int
    seconds: float


def read_records(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line, record)`` for each row of the file (``None`` for a JSONL line that is not an object)."""
    if fmt == "jsonl":
        import gzip

        opener = gzip.open if path.suffix.lower() == ".gz" else open
        with opener(path, "rb") as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    value = None
                yield line_no, value if isinstance(value, dict) else None
        return
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if fmt == "csv":
        stream = pa.input_stream(str(path), compression="detect")
        table = pcsv.read_csv(stream, parse_options=pcsv.ParseOptions(newlines_in_values=True),
                              convert_options=pcsv.ConvertOptions(strings_can_be_null=True))  # fmt: skip
        first = 2  # line 1 is the header
    else:
        table = pq.read_table(path)
        first = 1
    for i, row in enumerate(table.to_pylist()):
        yield i + first, row


def file_kind(path: Path, fmt: str | None = None) -> str:
    """``events``, ``groups`` or ``group_types`` from the first record's columns (events unless they say else)."""
    fmt = detect_format(path, fmt)
    try:
        first = next((record for _, record in read_records(path, fmt) if record is not None), None)
    except Exception:  # unreadable here: the events loader reports it with line numbers
        return "events"
    names = set(first or {})
    if "event" in names or "distinct_id" in names:
        return "events"
    if names & {"group_key", "key"}:
        return "groups"
    if {"group_type", "group_type_index"} <= names:
        return "group_types"
    return "events"


def _properties(value: Any) -> dict[str, Any] | None:
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < MAX_GROUP_TYPES else None


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return parse_timestamp(value.replace(" ", "T", 1) if isinstance(value, str) else value)


def _check(path: Path, problems: list[tuple[int, str]]) -> None:
    if problems:
        raise LoadError(path.name, problems[:MAX_LISTED_PROBLEMS], len(problems))


def _name(value: Any) -> str | None:
    return value.strip()[:400] if isinstance(value, str) and value.strip() else None


def load_group_types(engine: Engine, project_id: int, path: str | PathLike[str], *,
                     format: str | None = None) -> GroupLoadReport:  # fmt: skip
    """Load group types (their indexes kept) into project ``project_id``: all of them, or a ``LoadError``."""
    started = time.perf_counter()
    file, fmt = file_and_format(path, format)
    store = GroupStore.for_engine(engine)
    problems: list[tuple[int, str]] = []
    rows: list[CachedGroupType] = []
    with store.lock:
        state = store.state(int(project_id))
        by_index = {t.index: t.name for t in state.types.values()}
        by_name = {t.name: t.index for t in state.types.values()}
        for line, record in read_records(file, fmt):
            if record is None:
                problems.append((line, "not a JSON object"))
                continue
            name, index = _name(record.get("group_type")), _index(record.get("group_type_index"))
            if name is None:
                problems.append((line, 'missing "group_type"'))
            elif index is None:
                problems.append((line, '"group_type_index" is not 0 to 4'))
            elif by_index.get(index, name) != name:
                problems.append((line, f"index {index} is the project's type {by_index[index]!r}"))
            elif by_name.get(name, index) != index:
                problems.append((line, f"type {name!r} has index {by_name[name]} in the project"))
            else:
                by_index[index], by_name[name] = name, index
                created = _time(record.get("created_at")) or datetime.now(UTC)
                rows.append(CachedGroupType(index, name, created, _name(record.get("name_singular")),
                                      _name(record.get("name_plural"))))  # fmt: skip
        _check(file, problems)
        for group_type in rows:
            state.put_type(group_type)
        store.commit(state)
    return GroupLoadReport(str(file), fmt, len(rows), time.perf_counter() - started)


def load_groups(engine: Engine, project_id: int, path: str | PathLike[str], *,
                format: str | None = None) -> GroupLoadReport:  # fmt: skip
    """Load groups into project ``project_id``: all of them, or a ``LoadError`` naming the bad lines."""
    started = time.perf_counter()
    file, fmt = file_and_format(path, format)
    store = GroupStore.for_engine(engine)
    problems: list[tuple[int, str]] = []
    groups: list[tuple[int, int, str, dict[str, Any], datetime | None, datetime | None, str | None]] = []
    for line, record in read_records(file, fmt):
        if record is None:
            problems.append((line, "not a JSON object"))
            continue
        row = {_GROUP_ALIASES.get(k, k): v for k, v in record.items()}
        index, key = _index(row.get("group_type_index")), group_key_text(row.get("group_key"))
        properties = _properties(row.get("group_properties"))
        created = _time(row.get("created_at")) if row.get("created_at") not in (None, "") else None
        if index is None:
            problems.append((line, '"group_type_index" is not 0 to 4'))
        elif key is None:
            problems.append((line, 'missing "group_key"'))
        elif properties is None:
            problems.append((line, '"group_properties" is not a JSON object'))
        elif row.get("created_at") not in (None, "") and created is None:
            problems.append((line, f'invalid "created_at": {str(row.get("created_at"))[:40]}'))
        else:
            updated = _time(row.get("updated_at"))
            groups.append((line, index, key, properties, created, updated, _name(row.get("group_type"))))
    _check(file, problems)
    with store.lock:
        state: GroupState = store.with_groups(int(project_id), [(g[1], g[2]) for g in groups])
        now = datetime.now(UTC)
        for line, index, _, _, created, _, name in groups:
            known = state.by_index(index)
            if known is None and name is not None and name not in state.types:
                state.put_type(CachedGroupType(index, name, created or now))
            elif known is None or (name is not None and known.name != name):
                problems.append((line, f"group type {index} ({name or 'unnamed'}) is not the project's: "
                                       "load the group types first"))  # fmt: skip
        if problems:
            store.invalidate(int(project_id))  # types put above are not written
            raise LoadError(file.name, problems[:MAX_LISTED_PROBLEMS], len(problems))
        for _, index, key, properties, created, updated, _ in groups:
            state.upsert(index, key, properties, created or now, replace=True, created_at=created, updated_at=updated)
        store.commit(state, now)
    return GroupLoadReport(str(file), fmt, len(groups), time.perf_counter() - started)
