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
    # Each merge row with the first person-changing row of its two ids (both had a person before it, or not?).
    merges = _rows(engine, f"""
        WITH firsts AS (SELECT distinct_id, min((ts, _line)) AS first FROM {stage}
                        WHERE NOT personless AND {_CHANGES} GROUP BY distinct_id)
        SELECT m.event AS event, m.distinct_id AS distinct_id, m.anon AS anon, m.alias AS alias, m.given AS given,
               ifNull(fu.first < (m.ts, m._line), 0) AS user_before,
               ifNull(fa.first < (m.ts, m._line), 0) AS anon_before
        FROM (SELECT event, distinct_id, JSONExtractString(properties, '$anon_distinct_id') AS anon,
                     JSONExtractString(properties, 'alias') AS alias, ts, _line, person_id IS NOT NULL AS given
              FROM {stage} WHERE NOT personless AND event IN {_MERGE_EVENTS}) AS m
        LEFT JOIN firsts AS fu ON m.distinct_id = fu.distinct_id
        LEFT JOIN firsts AS fa ON m.anon = fa.distinct_id""")  # fmt: skip
    involvement: Counter[str] = Counter()
    for distinct_id, anon, alias in zip(merges["distinct_id"], merges["anon"], merges["alias"], strict=True):
        involvement.update({distinct_id, anon, alias} - {""})
    groups: dict[str, tuple[str, str]] = {}
    for event, user, anon, given, user_before, anon_before in zip(
        merges["event"], merges["distinct_id"], merges["anon"], merges["given"], merges["user_before"],
        merges["anon_before"], strict=True,
    ):  # fmt: skip
        if (event != "$identify" or given or not anon or anon == user or involvement[user] != 1
                or involvement[anon] != 1 or user in state.pdi or anon in state.pdi
                or _valid_other_id(anon) is None or _valid_other_id(user) is None):  # fmt: skip
            continue
        if user_before and anon_before:
            continue  # both had a person already: a real merge, where the survivor's values win
        # The person is the anonymous id's if it existed first, else the one made for the user at $identify.
        pid = person_uuid(team, anon if anon_before else user)
        groups[user] = groups[anon] = (user, pid)
    return groups, set(involvement)


def _known_in_file(engine: Engine, state: PersonState, stage: str) -> dict[str, tuple[str | None, int]]:
    """File ids the project knows, or whose given person id it has: ``{id: (given person id, first µs)}``."""
    if not state.pdi and not state.persons:
        return {}  # a new project (the usual first load): nothing to look up
    rows = _rows(engine, f"""
        SELECT distinct_id, argMax(person_id, ts) AS given, toUnixTimestamp64Micro(min(ts)) AS first
        FROM {stage} GROUP BY distinct_id""")  # fmt: skip
    known: dict[str, tuple[str | None, int]] = {}
    for distinct_id, given, first in zip(rows["distinct_id"], rows["given"], rows["first"], strict=True):
        given = str(uuid.UUID(given)) if given else None
        if distinct_id in state.pdi or given in state.persons:
            known[distinct_id] = (given, first)
    return known


def resolve_file_persons(
    engine: Engine, state: PersonState, stage: str, create_table: Any, insert: Any, version: int
) -> FilePersons:
    """Give every distinct id of the staged rows a person; write the persons. Call with the store's lock held.

    ``create_table(suffix, columns) -> name`` makes a staging table, ``insert(name, arrow)`` fills one.
    """
    team = state.team_id
    groups, involved = _plain_identifies(engine, state, stage)
    # Python's share: ids in merges SQL cannot resolve, and ids the project knows. Apply their rows in order.
    known = _known_in_file(engine, state, stage)
    sequential = sorted({d for d in involved if d not in groups} | set(known))
    seq_table = create_table("seq", "distinct_id String")
    insert(seq_table, pa.table({"distinct_id": pa.array(sequential, pa.string())}))
    before = len(state.persons)
    _apply_in_order(engine, state, stage, seq_table)
    resolved: dict[str, str] = {}
    for distinct_id in sequential:
        pid = state.pdi.get(distinct_id)
        given, first = known.get(distinct_id, (None, 0))
        if pid is None and given in state.persons:  # a given person id the project has: attach to it
            pid = state.add_person(str(given), _at(first), [distinct_id]).id
        if pid is not None:
            resolved[distinct_id] = pid
    python_map = create_table("py", "distinct_id String, person_id String")
    insert(python_map, pa.table({"distinct_id": pa.array(list(resolved), pa.string()),
                                 "person_id": pa.array(list(resolved.values()), pa.string())}))  # fmt: skip
    group_map = create_table("grp", "distinct_id String, grp String, person_id String")
    insert(group_map, pa.table({
        "distinct_id": pa.array(list(groups), pa.string()),
        "grp": pa.array([g for g, _ in groups.values()], pa.string()),
        "person_id": pa.array([pid for _, pid in groups.values()], pa.string()),
    }))  # fmt: skip

    # Every distinct id's person: Python's, else its plain $identify group's, else the file's person_id, else
    # the derived id. Bulk (persons made here, in SQL) = not Python's and not only personless rows.
    mapping = create_table("map", "distinct_id String, person_id String, bulk UInt8, grp String, "
                                  "first DateTime64(6, 'UTC')")  # fmt: skip
    engine.command(f"""
        INSERT INTO {mapping}
        SELECT a.distinct_id,
               coalesce(p.person_id, g.person_id, a.given, {uuid5_sql(team, 'a.distinct_id')}),
               p.person_id IS NULL AND (a.personful OR g.person_id IS NOT NULL),
               coalesce(g.grp, a.distinct_id), a.first
        FROM (SELECT distinct_id, min(ts) AS first, argMax(person_id, ts) AS given,
                     max(NOT personless) AS personful
              FROM {stage} GROUP BY distinct_id) AS a
        LEFT JOIN {python_map} AS p ON a.distinct_id = p.distinct_id
        LEFT JOIN {group_map} AS g ON a.distinct_id = g.distinct_id""")  # fmt: skip
    # An anonymous id named by a plain $identify but without rows of its own still joins the person.
    engine.command(f"""
        INSERT INTO {mapping}
        SELECT g.distinct_id, g.person_id, 1, g.grp, f.first FROM {group_map} AS g
        INNER JOIN (SELECT grp, min(first) AS first FROM {mapping} GROUP BY grp) AS f ON g.grp = f.grp
        WHERE g.distinct_id NOT IN (SELECT distinct_id FROM {mapping})""")  # fmt: skip

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
    return FilePersons(mapping, created + int(counted["n"][0]))
