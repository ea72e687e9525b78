"""Persons for a file load: the many simple distinct ids in SQL, the few that need PostHog's rules in Python.

Most distinct ids of a file are new to the project and either take part in no ``$identify``/``$create_alias``,
or in exactly one plain ``$identify`` (an anonymous id becoming a user, neither seen anywhere else). Their
person is a new one whose properties are the ``$set``/``$set_once``/``$unset`` of its one or two ids applied in
time order (the same result as PostHog's rules give event by event, since no merge has to pick between two
persons' values), and SQL computes that for all of them at once (:data:`PROPS_SQL`), person ids included
(:func:`uuid5_sql`, the same ids as :func:`~hoglab.server.ingest.persons.person_uuid`). The rest (ids in
several merges or in aliases, ids the project already knows, ids whose given ``person_id`` is a known person)
go through :class:`PersonState` row by row in timestamp order, as captured events do. Both end in the same
tables; the project's cached state is dropped after a bulk write so it reloads what the tables hold.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa

from ..engine.base import Engine
from ..engine.ddl import DATABASE
from .persons import _NAMESPACE_BYTES, PersonState, _valid_other_id, person_uuid
from .rows import person_tables

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


# Each bulk person's (group's) final properties as JSON: per key, the changes sorted by (time, line, kind) with kind
# 0 $set_once, 1 $set, 2 $unset (one event applies them in that order); after the last $unset, the last $set
# wins, else the first $set_once; otherwise the key is absent. That is what applying events one by one gives.
PROPS_SQL = """
SELECT grp, concat('{{', arrayStringConcat(groupArray(concat(toJSONString(key), ':', final)), ','), '}}') AS props
FROM (
    SELECT grp, key, arraySort(groupArray((ts, _line, kind, value))) AS ops,
           arraySlice(ops, arrayLastIndex(x -> x.3 = 2, ops) + 1) AS after,
           arrayFilter(x -> x.3 = 1, after) AS sets, arrayFilter(x -> x.3 = 0, after) AS onces,
           if(notEmpty(sets), sets[-1].4, if(notEmpty(onces), onces[1].4, NULL)) AS final
    FROM (
        SELECT grp, ts, _line, change.1 AS key, change.2 AS kind, change.3 AS value
        FROM (SELECT m.grp AS grp, s.ts AS ts, s._line AS _line, s.properties AS properties
              FROM {stage} AS s INNER JOIN {ids} AS m ON s.distinct_id = m.distinct_id
              WHERE m.bulk AND NOT s.personless AND {changes})
        ARRAY JOIN arrayConcat(
            arrayMap(x -> (x.1, 0, x.2), JSONExtractKeysAndValuesRaw(properties, '$set_once')),
            arrayMap(x -> (x.1, 1, x.2), JSONExtractKeysAndValuesRaw(properties, '$set')),
            arrayMap(k -> (k, 2, ''), JSONExtract(properties, '$unset', 'Array(String)'))) AS change
    )
    GROUP BY grp, key
)
WHERE final IS NOT NULL
GROUP BY grp"""


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


def _apply_in_order(engine: Engine, state: PersonState, stage: str, only: str) -> None:
    """Person-changing rows of the ids in table ``only``, through PostHog's rules in time order."""
    rows = _rows(engine, f"""
        SELECT event, distinct_id, toUnixTimestamp64Micro(ts) AS us, properties FROM {stage}
        WHERE NOT personless AND (event IN {_MERGE_EVENTS} OR {_CHANGES})
          AND distinct_id IN (SELECT distinct_id FROM {only})
        ORDER BY ts, _line""")  # fmt: skip
    for event, distinct_id, micros, properties in zip(
        rows["event"], rows["distinct_id"], rows["us"], rows["properties"], strict=True
    ):
        state.process(event, distinct_id, orjson.loads(properties), _at(micros))


def _plain_identifies(engine: Engine, state: PersonState, stage: str) -> tuple[dict[str, tuple[str, str]], set[str]]:
    """The ``$identify`` events SQL can resolve (``{id: (group, person id)}``) and every id in any merge."""
    team = state.team_id
    merges = _rows(engine, f"""
        SELECT event, distinct_id, JSONExtractString(properties, '$anon_distinct_id') AS anon,
               JSONExtractString(properties, 'alias') AS alias, toUnixTimestamp64Micro(ts) AS us, _line,
               person_id IS NOT NULL AS given
        FROM {stage} WHERE NOT personless AND event IN {_MERGE_EVENTS}""")  # fmt: skip
    involvement: Counter[str] = Counter()
    for distinct_id, anon, alias in zip(merges["distinct_id"], merges["anon"], merges["alias"], strict=True):
        involvement.update({distinct_id, anon, alias} - {""})
    if not involvement:
        return {}, set()
    firsts = _rows(engine, f"""
        SELECT distinct_id, tupleElement(first, 1) AS us, tupleElement(first, 2) AS line
        FROM (SELECT distinct_id, min((toUnixTimestamp64Micro(ts), _line)) AS first FROM {stage}
              WHERE NOT personless AND {_CHANGES} GROUP BY distinct_id)""")  # fmt: skip
    first_change = {
        d: (us, line) for d, us, line in zip(firsts["distinct_id"], firsts["us"], firsts["line"], strict=True)
    }
    groups: dict[str, tuple[str, str]] = {}
    for event, user, anon, micros, line, given in zip(
        merges["event"], merges["distinct_id"], merges["anon"], merges["us"], merges["_line"], merges["given"],
        strict=True,
    ):  # fmt: skip
        if (event != "$identify" or given or not anon or anon == user or involvement[user] != 1
                or involvement[anon] != 1 or user in state.pdi or anon in state.pdi
                or _valid_other_id(anon) is None or _valid_other_id(user) is None):  # fmt: skip
            continue
        at = (micros, line)
        user_before = first_change.get(user, at) < at
        anon_before = first_change.get(anon, at) < at
        if user_before and anon_before:
            continue  # both had a person already: a real merge, where the survivor's values win
        # The person is the anonymous id's if it existed first, else the one made for the user at $identify.
        pid = person_uuid(team, anon if anon_before else user)
        groups[user] = groups[anon] = (user, pid)
    return groups, set(involvement)


def resolve_file_persons(
    engine: Engine, state: PersonState, stage: str, create_table: Any, insert: Any, version: int
) -> FilePersons:
    """Give every distinct id of the staged rows a person; write the persons. Call with the store's lock held.

    ``create_table(suffix, columns) -> name`` makes a staging table, ``insert(name, arrow)`` fills one.
    """
    team = state.team_id
    groups, involved = _plain_identifies(engine, state, stage)
    ids = _rows(engine, f"""
        SELECT distinct_id, toUnixTimestamp64Micro(min(ts)) AS first, argMax(person_id, ts) AS given,
               max(NOT personless) AS personful
        FROM {stage} GROUP BY distinct_id""")  # fmt: skip
    sequential = [
        d for d, given in zip(ids["distinct_id"], ids["given"], strict=True)
        if (d in involved and d not in groups) or d in state.pdi or (given and str(uuid.UUID(given)) in state.persons)
    ]  # fmt: skip
    seq_table = create_table("seq", "distinct_id String")
    insert(seq_table, pa.table({"distinct_id": pa.array(sequential, pa.string())}))
    before = len(state.persons)
    _apply_in_order(engine, state, stage, seq_table)

    # Every distinct id's person: known (or just made) in Python, none for personless ids, else bulk (SQL), in
    # a group of its own or of a plain $identify.
    person_ids: list[str | None] = []
    bulk: list[bool] = []
    group_keys: list[str] = []
    for distinct_id, first, given, personful in zip(
        ids["distinct_id"], ids["first"], ids["given"], ids["personful"], strict=True
    ):
        pid = state.pdi.get(distinct_id)
        if pid is None and given and str(uuid.UUID(given)) in state.persons:
            pid = state.add_person(str(uuid.UUID(given)), _at(first), [distinct_id]).id
        if pid is None and not personful and distinct_id not in groups:
            pid = state.person_id_for(distinct_id)
        bulk.append(pid is None)
        group, group_pid = groups.get(distinct_id, (distinct_id, None))
        group_keys.append(group)
        person_ids.append(pid or group_pid or (str(uuid.UUID(given)) if given else None))
    raw = create_table("ids", "distinct_id String, person_id Nullable(String), bulk UInt8, grp String, "
                              "first DateTime64(6, 'UTC')")  # fmt: skip
    insert(raw, pa.table({
        "distinct_id": pa.array(ids["distinct_id"], pa.string()), "person_id": pa.array(person_ids, pa.string()),
        "bulk": pa.array(bulk, pa.bool_()).cast(pa.uint8()), "grp": pa.array(group_keys, pa.string()),
        "first": pa.array(ids["first"], pa.timestamp("us", tz="UTC")),
    }))  # fmt: skip
    mapping = create_table("map", "distinct_id String, person_id String, bulk UInt8, grp String, "
                                  "first DateTime64(6, 'UTC')")  # fmt: skip
    engine.command(f"INSERT INTO {mapping} SELECT distinct_id, ifNull(person_id, {uuid5_sql(team, 'distinct_id')}),"
                   f" bulk, grp, first FROM {raw}")  # fmt: skip

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
    for table, data in person_tables(state.take_rows(version)).items():
        engine.insert_arrow(table, data)
    if any(bulk):
        props = create_table("props", "grp String, props String")
        engine.command(f"INSERT INTO {props} " + PROPS_SQL.format(stage=stage, ids=mapping, changes=_CHANGES))
        # A group of two ids is a plain $identify: that person is identified.
        identified = f"m.grp IN (SELECT grp FROM {mapping} WHERE grp != distinct_id)"
        engine.command(f"""
            INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)
            SELECT {team}, toUUID(m.person_id), min(m.first),
                   argMax(ifNull(p.props, '{{}}'), length(ifNull(p.props, ''))), max({identified}), 0, {version}
            FROM {mapping} AS m LEFT JOIN {props} AS p ON m.grp = p.grp
            WHERE m.bulk GROUP BY m.person_id""")  # fmt: skip
        engine.command(f"""
            INSERT INTO {DATABASE}.person_distinct_ids (team_id, distinct_id, person_id, is_deleted, version)
            SELECT {team}, distinct_id, toUUID(person_id), 0, {version} FROM {mapping} WHERE bulk""")
        counted = _rows(engine, f"SELECT uniqExact(person_id) AS n FROM {mapping} WHERE bulk")
        created += int(counted["n"][0])
    return FilePersons(mapping, created)
