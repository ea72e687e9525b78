"""Persons for a file load: the many simple distinct ids in SQL, the few that need PostHog's rules in Python.

Most distinct ids of a file are new to the project and take part in no ``$identify``/``$create_alias``: their
person is a new one whose properties are just their own ``$set``/``$set_once``/``$unset`` applied in order, and
SQL computes that for all of them at once (:data:`PROPS_SQL`), person ids included (:func:`uuid5_sql`, the
same ids as :func:`~hoglab.server.ingest.persons.person_uuid`). The rest (ids in a merge, ids the project
already knows, ids whose given ``person_id`` is a known person) go through :class:`PersonState` row by row in
timestamp order, as captured events do. Both end in the same tables; the project's cached state is dropped after
a bulk write so it reloads what the tables hold.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa

from ..engine.base import Engine
from ..engine.ddl import DATABASE
from .persons import _NAMESPACE_BYTES, PersonState

__all__ = ["FilePersons", "resolve_file_persons", "uuid5_sql"]

_INTERNAL = {"max_result_rows": 0, "max_execution_time": 0}
_MERGE_EVENTS = ("$identify", "$create_alias", "$merge_dangerously")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CHANGES = "(position(properties, '\"$set') > 0 OR position(properties, '\"$unset') > 0)"


def uuid5_sql(team_id: int, column: str) -> str:
    """SQL computing ``person_uuid(team_id, <column>)``: uuid5 from SHA1, version and variant bits set."""
    h = f"SHA1(concat(unhex('{_NAMESPACE_BYTES.hex()}'), '{int(team_id)}:', {column}))"
    return f"""lower(concat(
        hex(substring({h}, 1, 4)), '-', hex(substring({h}, 5, 2)), '-',
        hex(bitOr(bitAnd(reinterpretAsUInt8(substring({h}, 7, 1)), 15), 80)), hex(substring({h}, 8, 1)), '-',
        hex(bitOr(bitAnd(reinterpretAsUInt8(substring({h}, 9, 1)), 63), 128)), hex(substring({h}, 10, 1)), '-',
        hex(substring({h}, 11, 6))))"""


# Each bulk distinct id's final properties as JSON: per key, the changes sorted by (time, line, kind) with kind
# 0 $set_once, 1 $set, 2 $unset (one event applies them in that order); after the last $unset, the last $set
# wins, else the first $set_once; otherwise the key is absent. That is what applying events one by one gives.
PROPS_SQL = """
SELECT distinct_id,
       concat('{{', arrayStringConcat(groupArray(concat(toJSONString(key), ':', final)), ','), '}}') AS props
FROM (
    SELECT distinct_id, key, arraySort(groupArray((ts, _line, kind, value))) AS ops,
           arraySlice(ops, arrayLastIndex(x -> x.3 = 2, ops) + 1) AS after,
           arrayFilter(x -> x.3 = 1, after) AS sets, arrayFilter(x -> x.3 = 0, after) AS onces,
           if(notEmpty(sets), sets[-1].4, if(notEmpty(onces), onces[1].4, NULL)) AS final
    FROM (
        SELECT distinct_id, ts, _line, change.1 AS key, change.2 AS kind, change.3 AS value
        FROM {stage}
        ARRAY JOIN arrayConcat(
            arrayMap(x -> (x.1, 0, x.2), JSONExtractKeysAndValuesRaw(properties, '$set_once')),
            arrayMap(x -> (x.1, 1, x.2), JSONExtractKeysAndValuesRaw(properties, '$set')),
            arrayMap(k -> (k, 2, ''), JSONExtract(properties, '$unset', 'Array(String)'))) AS change
        WHERE NOT personless AND {changes} AND distinct_id IN (SELECT distinct_id FROM {ids} WHERE bulk)
    )
    GROUP BY distinct_id, key
)
WHERE final IS NOT NULL
GROUP BY distinct_id"""


@dataclass
class FilePersons:
    """The result: the ``(distinct_id, person_id)`` table to join events to, and how many persons were new."""

    mapping_table: str
    created: int


def _rows(engine: Engine, sql: str) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = engine.execute(sql, settings=_INTERNAL).to_pydict()
    return columns


def _at(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _apply_in_order(engine: Engine, state: PersonState, stage: str, only: str | None) -> None:
    """Person-changing rows (of the ids in table ``only``, or all merges), through PostHog's rules in order."""
    scope = f"distinct_id IN (SELECT distinct_id FROM {only})" if only else "0"
    rows = _rows(engine, f"""
        SELECT event, distinct_id, toUnixTimestamp64Micro(ts) AS us, properties FROM {stage}
        WHERE NOT personless AND (event IN {_MERGE_EVENTS} OR ({_CHANGES} AND {scope}))
        ORDER BY ts, _line""")  # fmt: skip
    for event, distinct_id, micros, properties in zip(
        rows["event"], rows["distinct_id"], rows["us"], rows["properties"], strict=True
    ):
        state.process(event, distinct_id, orjson.loads(properties), _at(micros))


def resolve_file_persons(
    engine: Engine, state: PersonState, stage: str, create_table: Any, insert: Any, version: int
) -> FilePersons:
    """Give every distinct id of the staged rows a person; write the persons. Call with the store's lock held.

    ``create_table(suffix, columns) -> name`` makes a staging table, ``insert(name, arrow)`` fills one.
    """
    team = state.team_id
    merges = _rows(engine, f"""
        SELECT distinct_id, JSONExtractString(properties, '$anon_distinct_id') AS anon,
               JSONExtractString(properties, 'alias') AS alias
        FROM {stage} WHERE NOT personless AND event IN {_MERGE_EVENTS}""")  # fmt: skip
    involved = set(merges["distinct_id"]) | set(merges["anon"]) | set(merges["alias"])
    ids = _rows(engine, f"""
        SELECT distinct_id, toUnixTimestamp64Micro(min(ts)) AS first, argMax(person_id, ts) AS given,
               max(NOT personless) AS personful
        FROM {stage} GROUP BY distinct_id""")  # fmt: skip
    sequential = [
        d for d, given in zip(ids["distinct_id"], ids["given"], strict=True)
        if d in involved or d in state.pdi or (given and str(uuid.UUID(given)) in state.persons)
    ]  # fmt: skip
    seq_table = None
    if sequential:
        seq_table = create_table("seq", "distinct_id String")
        insert(seq_table, pa.table({"distinct_id": pa.array(sequential, pa.string())}))
    before = len(state.persons)
    _apply_in_order(engine, state, stage, seq_table)

    # Every distinct id's person: known (or just made) in Python, none for personless ids, else bulk (SQL).
    person_ids: list[str | None] = []
    bulk: list[bool] = []
    for distinct_id, first, given, personful in zip(
        ids["distinct_id"], ids["first"], ids["given"], ids["personful"], strict=True
    ):
        pid = state.pdi.get(distinct_id)
        if pid is None and given and str(uuid.UUID(given)) in state.persons:
            pid = state.add_person(str(uuid.UUID(given)), _at(first), [distinct_id]).id
        if pid is None and not personful:
            pid = state.person_id_for(distinct_id)
        person_ids.append(pid if pid is not None else (str(uuid.UUID(given)) if given else None))
        bulk.append(pid is None)
    raw = create_table("ids", "distinct_id String, person_id Nullable(String), bulk UInt8, "
                              "first DateTime64(6, 'UTC')")  # fmt: skip
    insert(raw, pa.table({
        "distinct_id": pa.array(ids["distinct_id"], pa.string()), "person_id": pa.array(person_ids, pa.string()),
        "bulk": pa.array(bulk, pa.bool_()).cast(pa.uint8()),
        "first": pa.array(ids["first"], pa.timestamp("us", tz="UTC")),
    }))  # fmt: skip
    mapping = create_table("map", "distinct_id String, person_id String, bulk UInt8, first DateTime64(6, 'UTC')")
    engine.command(f"INSERT INTO {mapping} SELECT distinct_id, ifNull(person_id, {uuid5_sql(team, 'distinct_id')}),"
                   f" bulk, first FROM {raw}")  # fmt: skip

    # A person id the file gives that ends up with no distinct id (merged away in the source) is overridden to
    # the person its distinct id has now, so its events stay with the right person.
    orphans = _rows(engine, f"""
        SELECT DISTINCT s.person_id AS given, m.person_id AS target FROM {stage} AS s
        INNER JOIN {mapping} AS m ON s.distinct_id = m.distinct_id
        WHERE s.person_id IS NOT NULL AND toUUID(s.person_id) != toUUID(m.person_id)
          AND toUUID(s.person_id) NOT IN (SELECT toUUID(person_id) FROM {mapping})""")  # fmt: skip
    for given, target in zip(orphans["given"], orphans["target"], strict=True):
        if str(uuid.UUID(given)) not in state.persons:
            state.add_override(str(uuid.UUID(given)), target)

    created = len(state.persons) - before
    from .rows import person_tables  # local: rows imports persons, keep this module's imports light

    for table, data in person_tables(state.take_rows(version)).items():
        engine.insert_arrow(table, data)
    if any(bulk):
        props = create_table("props", "distinct_id String, props String")
        engine.command(f"INSERT INTO {props} " + PROPS_SQL.format(stage=stage, ids=mapping, changes=_CHANGES))
        engine.command(f"""
            INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)
            SELECT {team}, toUUID(m.person_id), min(m.first),
                   argMax(ifNull(p.props, '{{}}'), length(ifNull(p.props, ''))), 0, 0, {version}
            FROM {mapping} AS m LEFT JOIN {props} AS p ON m.distinct_id = p.distinct_id
            WHERE m.bulk GROUP BY m.person_id""")  # fmt: skip
        engine.command(f"""
            INSERT INTO {DATABASE}.person_distinct_ids (team_id, distinct_id, person_id, is_deleted, version)
            SELECT {team}, distinct_id, toUUID(person_id), 0, {version} FROM {mapping} WHERE bulk""")
        counted = _rows(engine, f"SELECT uniqExact(person_id) AS n FROM {mapping} WHERE bulk")
        created += int(counted["n"][0])
    return FilePersons(mapping, created)
