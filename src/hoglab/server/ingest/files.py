"""``load_file``: events from JSONL, CSV or Parquet in PostHog's export shape, all or nothing.

Columns: ``event``, ``distinct_id``, ``timestamp`` (required); ``uuid`` (generated if empty), ``properties`` (a
JSON object, or a string holding one), ``person_id``, ``elements_chain`` (optional). Other columns are ignored.

The work happens in the engine, vectorised: the file is parsed into a staging table (chDB reads it directly with
``file()``; for a ClickHouse server it is read with pyarrow and uploaded), each row gets a ``problem`` text, and
if any row has one the load stops with a :class:`LoadError` listing the first 20 with their line numbers
("and N more") before anything reaches ``events``. Then persons: rows that change persons (``$identify``,
``$create_alias``, ``$set``...) go through the same rules as captured events, in timestamp order; every other
distinct id gets its person (a new one, or the file's ``person_id``). Groups as capture applies them
(``groups.py``): the group types named by ``$groups`` (and ``$groupidentify``) are created in the order of the
file's lines, ``$groupidentify`` rows set their groups' properties in that order, and where a row's ``$group_N``
disagrees with the project's types (an export from a project whose types were numbered otherwise, and no
group-types file loaded first) its properties are rewritten with the project's numbering. Finally one
``INSERT ... SELECT`` joins the staged rows to their person ids. Loading the same file twice stores its events
twice.

For example (a sketch of a call and its answer, not run)::

    report = load_file(engine, 1, "export.jsonl")
    report.rows, report.persons_created
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike
from typing import Any

import orjson
import pyarrow as pa

from ..engine.base import Engine, EngineError, StatementFailed
from ..engine.ddl import DATABASE, MAX_GROUP_TYPES
from ..engine.settings import quote_string
from .errors import MAX_LISTED_PROBLEMS, LoadError
from .file_persons import resolve_file_persons
from .groups import GroupStore, group_key_text
from .person_store import PersonStore
from .sources import FileSource, describe_source, exact_source, file_and_format, read_locally, row_filter, row_select

__all__ = ["LoadReport", "load_file"]

_INTERNAL = {"max_result_rows": 0, "max_execution_time": 0}


@dataclass(frozen=True)
class LoadReport:
    """What a load stored: ``rows`` events, ``persons_created`` new persons, in ``seconds``."""

    path: str
    format: str
    rows: int
    persons_created: int
    seconds: float


def _arrow_type_to_ch(typ: pa.DataType) -> str:
    if pa.types.is_timestamp(typ):
        return "Nullable(DateTime64(6, 'UTC'))"
    if pa.types.is_unsigned_integer(typ):
        return "UInt64"
    return "Nullable(String)"


# Compressed staging tables cut a big load's peak memory (10M events: ~2.5 GiB of staged rows become ~1 GiB) for
# some 10-20% more time; a file whose rows are likely to take under ~1 GiB in memory is staged uncompressed.
_COMPRESS_FROM_BYTES = 1 << 30
_PACKED_SUFFIXES = (".gz", ".zst", ".zstd", ".xz", ".bz2", ".lz4", ".br", ".snappy")


def _worth_compressing(source: FileSource) -> bool:
    packed = source.format == "parquet" or source.path.suffix.lower() in _PACKED_SUFFIXES
    return source.path.stat().st_size * (8 if packed else 1) >= _COMPRESS_FROM_BYTES


class _Staging:
    """The load's short-lived tables, dropped however the load ends."""

    def __init__(self, engine: Engine, *, compress: bool = False) -> None:
        self.engine = engine
        self.engine_settings = " SETTINGS compress = 1" if compress else ""
        self.base = f"_load_{uuid.uuid4().hex}"
        self.created: list[str] = []

    def name(self, suffix: str = "") -> str:
        return f"{DATABASE}.{self.base}{'_' + suffix if suffix else ''}"

    def create(self, suffix: str, columns: str) -> str:
        table = self.name(suffix)
        self.engine.command(f"CREATE TABLE {table} ({columns}) ENGINE = Memory{self.engine_settings}")
        self.created.append(table)
        return table

    def insert(self, table: str, data: pa.Table) -> None:
        self.engine.insert_arrow(table.split(".", 1)[1], data)

    def drop(self) -> None:
        for table in self.created:
            with contextlib.suppress(EngineError):
                self.engine.command(f"DROP TABLE IF EXISTS {table}")


def _fill_stage(engine: Engine, staging: _Staging, source: FileSource, suffix: str = "") -> str:
    stage = staging.name(suffix)
    staging.created.append(stage)
    if engine.name == "chdb":
        origin = f"file({quote_string(str(source.path))}, {source.clickhouse_format}, {quote_string(source.structure)})"
    else:
        table = read_locally(source)
        columns = ", ".join(f"`{f.name}` {_arrow_type_to_ch(f.type)}" for f in table.schema)
        origin = staging.create("raw", columns)
        engine.insert_arrow(origin.split(".", 1)[1], table)
    rows = f"SELECT {row_select(source)} FROM {origin} WHERE {row_filter(source)}"
    if source.clickhouse_format == "LineAsString":
        rows = f"SELECT * EXCEPT t FROM ({rows})"
    engine.command(f"CREATE TABLE {stage} ENGINE = Memory{staging.engine_settings} AS {rows}",
                   settings=source.settings or None)
    return stage


def _parse_failure(source: FileSource, exc: StatementFailed) -> LoadError:
    # The engine stopped on a row it could not read at all (a broken CSV quote): it names the row.
    match = re.search(r"at row (\d+)", exc.message)
    line = int(match.group(1)) - 1 + source.line_offset if match else 0
    return LoadError(source.path.name, [(line, exc.message.split("\n")[0][:300])], 1)


def _rows(engine: Engine, sql: str) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = engine.execute(sql, settings=_INTERNAL).to_pydict()
    return columns


def _count(engine: Engine, stage: str) -> tuple[int, int]:
    counts = _rows(engine, f"SELECT count() AS n, countIf(problem != '') AS bad FROM {stage}")
    return int(counts["n"][0]), int(counts["bad"][0])


def _stage_checked(engine: Engine, staging: _Staging, source: FileSource) -> tuple[str, int]:
    """The staged, fully valid rows and their count; or a :class:`LoadError` naming the bad lines."""
    if engine.name != "chdb":
        source = exact_source(source)  # uploaded from here, where pyarrow reads JSONL as lines
    try:
        stage = _fill_stage(engine, staging, source)
        total, bad = _count(engine, stage)
    except StatementFailed as exc:
        if source.exact:
            raise _parse_failure(source, exc) from None
        total, bad = 0, 1  # the fast JSON reader stopped at a malformed line: read it line by line
    if bad and not source.exact:
        source = exact_source(source)
        try:
            stage = _fill_stage(engine, staging, source, "exact")
        except StatementFailed as exc:
            raise _parse_failure(source, exc) from None
        total, bad = _count(engine, stage)
    if bad:
        first = _rows(engine, f"SELECT _line, problem FROM {stage} WHERE problem != '' "
                              f"ORDER BY _line LIMIT {MAX_LISTED_PROBLEMS}")  # fmt: skip
        raise LoadError(source.path.name, list(zip(first["_line"], first["problem"], strict=True)), bad)
    return stage, total


def _text_at(path: str) -> str:
    """SQL of a JSON value of ``properties`` as a group key's text (a string unquoted, anything else raw)."""
    return f"if(JSONType(properties, {path}) = 'String', JSONExtractString(properties, {path}), " \
           f"JSONExtractRaw(properties, {path}))"  # fmt: skip


def _apply_file_groups(engine: Engine, staging: _Staging, stage: str, team: int) -> str | None:
    """Group types and ``$groupidentify`` of the staged rows, stored; the table of rewritten properties
    (``_line, properties``) for rows whose ``$group_N`` disagree with the project's types, or ``None``."""
    has = "position(properties, '\"$groups\"') > 0"
    counts = _rows(engine, f"SELECT countIf({has}) AS g, countIf(event = '$groupidentify') AS i FROM {stage}")
    if not counts["g"][0] and not counts["i"][0]:
        return None
    store = GroupStore.for_engine(engine)
    with store.lock:
        try:
            state = store.state(team)
            names = _rows(engine, f"""
                SELECT name FROM (
                    SELECT _line, arrayJoin(JSONExtractKeys(properties, '$groups')) AS name FROM {stage} WHERE {has}
                    UNION ALL
                    SELECT _line, JSONExtractString(properties, '$group_type') AS name FROM {stage}
                    WHERE event = '$groupidentify')
                WHERE name != '' GROUP BY name ORDER BY min(_line), name""")["name"]
            now = datetime.now(UTC)
            for name in names:
                state.type_index(name, now)
            fixed = None
            # A row is numbered as the project numbers its groups when each $group_N is the key $groups gives
            # the project's type N (and absent without one).
            tests = []
            for index in range(MAX_GROUP_TYPES):
                found = state.by_index(index)
                expected = "''" if found is None else _text_at(f"'$groups', {quote_string(found.name)}")
                tests.append(f"{expected} != {_text_at(quote_string(f'$group_{index}'))}")
            wrong = _rows(engine, f"SELECT _line, properties FROM {stage} WHERE {has} AND ({' OR '.join(tests)})")
            if wrong["_line"]:
                lines, texts = [], []
                for line, text in zip(wrong["_line"], wrong["properties"], strict=True):
                    properties = orjson.loads(text)
                    for index in range(MAX_GROUP_TYPES):
                        properties.pop(f"$group_{index}", None)
                    state.enrich(properties, now)
                    lines.append(line)
                    texts.append(orjson.dumps(properties).decode())
                fixed = staging.create("groups", "_line UInt64, properties String")
                staging.insert(fixed, pa.table({"_line": pa.array(lines, pa.uint64()),
                                                "properties": pa.array(texts, pa.string())}))  # fmt: skip
            identified = _rows(engine, f"SELECT ts, properties FROM {stage} WHERE event = '$groupidentify' "
                                       "ORDER BY _line")  # fmt: skip
            events = [(ts, orjson.loads(text)) for ts, text in zip(identified["ts"], identified["properties"],
                                                                   strict=True)]  # fmt: skip
            keys = []
            for _, properties in events:
                known = state.type_index(properties.get("$group_type"), now, create=False)
                key = group_key_text(properties.get("$group_key"))
                if known is not None and key is not None:
                    keys.append((known, key))
            state = store.with_groups(team, keys)
            for ts, properties in events:
                state.identify(properties, ts if ts.tzinfo else ts.replace(tzinfo=UTC))
            store.commit(state, now)
        except BaseException:
            store.invalidate(team)
            raise
    return fixed


def load_file(
    engine: Engine, project_id: int, path: str | PathLike[str], *, format: str | None = None
) -> LoadReport:
    """Load one file of events into project ``project_id``: all of it, or nothing and a :class:`LoadError`."""
    started = time.perf_counter()
    file, fmt = file_and_format(path, format)
    source = describe_source(file, fmt)
    team = int(project_id)
    store = PersonStore.for_engine(engine)
    staging = _Staging(engine, compress=_worth_compressing(source))
    try:
        stage, total = _stage_checked(engine, staging, source)
        if total == 0:
            return LoadReport(str(file), source.format, 0, 0, time.perf_counter() - started)
        with store.lock:
            try:
                persons = resolve_file_persons(engine, store, team, stage, staging.create, staging.insert)
            finally:
                # Capture's cached state (if any) does not hold what the load wrote: reload on next use.
                store.invalidate(team)
        mapping_table, created = persons.mapping_table, persons.created
        fixed = _apply_file_groups(engine, staging, stage, team)
        properties, fixes = "s.properties", ""
        if fixed is not None:
            properties = "if(f._line = 0, s.properties, f.properties)"
            fixes = f" LEFT JOIN {fixed} AS f ON s._line = f._line"
        engine.command(f"""
            INSERT INTO {DATABASE}.events
                (team_id, uuid, event, distinct_id, person_id, timestamp, properties, elements_chain, created_at)
            SELECT {team}, if(s.uuid IS NULL, generateUUIDv4(), toUUID(s.uuid)), s.event, s.distinct_id,
                   toUUID(if(s.person_id IS NULL, m.person_id, s.person_id)), s.ts, {properties}, s.elements_chain,
                   now64(6, 'UTC')
            FROM {stage} AS s ANY LEFT JOIN {mapping_table} AS m ON s.distinct_id = m.distinct_id{fixes}""",
            settings={"join_use_nulls": 0})
        return LoadReport(str(file), source.format, total, created, time.perf_counter() - started)
    finally:
        staging.drop()
