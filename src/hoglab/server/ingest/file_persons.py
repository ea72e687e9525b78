"""Persons for a file load: the many simple distinct ids in SQL, the few that need PostHog's rules in Python.

Most distinct ids of a file are new to the project and either take part in no ``$identify``/``$create_alias``,
or in exactly one plain ``$identify`` (an anonymous id becoming a user, neither seen anywhere else). Their
person is a new one whose properties are the ``$set``/``$set_once``/``$unset`` of its one or two ids applied in
time order (the same result as PostHog's rules give event by event, since no merge has to pick between two
persons' values), and SQL computes that for all of them at once (:data:`PROPS_SQL`), person ids included
(:func:`uuid5_sql`, the same ids as :func:`~hoglab.server.ingest.persons.person_uuid`).

Ids the project already knows are looked up in the engine (the latest ``person_distinct_ids`` row, joined
to live ``persons``), never by loading the project's persons into Python. A known id in no merge keeps its
person; if its rows ``$set``/``$set_once``/``$unset``, SQL applies them in order on top of what the person
had (:data:`KNOWN_PROPS_SQL`). The rest (ids in several merges or in aliases, known ids in a merge, ids whose
given ``person_id`` is a known person, and every file id of the known persons those touch) go through a
:class:`PersonState` holding only their persons (:meth:`PersonStore.partial_state`), row by row in timestamp
order, as captured events do. All end in the same tables; the project's cached state is dropped after the
load so it reloads what the tables hold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa

from ..engine.base import Engine
from ..engine.ddl import DATABASE
from .person_store import PersonStore
from .persons import _NAMESPACE_BYTES, PersonState, next_version, person_uuid, valid_other_id
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


def _change_rows(group: str, which: str) -> str:
    """SQL of the person-changing rows' changes, one row per change: ``grp`` (``group``), ``ts``, ``_line``,
    ``key``, ``kind`` (0 ``$set_once``, 1 ``$set``, 2 ``$unset``), ``value``; for the ids where ``which`` holds.
    ``{stage}``, ``{ids}`` and ``{changes}`` stay placeholders for the query's ``format``."""
    return f"""        SELECT grp, ts, _line, change.1 AS key, change.2 AS kind, change.3 AS value
        FROM (SELECT {group} AS grp, s.ts AS ts, s._line AS _line, s.properties AS properties
              FROM {{stage}} AS s INNER JOIN {{ids}} AS m ON s.distinct_id = m.distinct_id
              WHERE {which} AND NOT s.personless AND {{changes}})
        ARRAY JOIN arrayConcat(
            arrayMap(x -> (x.1, 0, x.2), JSONExtractKeysAndValuesRaw(properties, '$set_once')),
            arrayMap(x -> (x.1, 1, x.2), JSONExtractKeysAndValuesRaw(properties, '$set')),
            arrayMap(k -> (k, 2, ''), JSONExtract(properties, '$unset', 'Array(String)'))) AS change"""


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
{rows}
    )
    GROUP BY grp, key
)
WHERE final IS NOT NULL
GROUP BY grp""".replace("{rows}", _change_rows("m.grp", "m.bulk"))


# Known persons (group = person id) whose rows change properties, applied on top of what each person had. Per key,
# changes sorted as in PROPS_SQL; ``cut``: there is an $unset, after which the key is absent. ``final``: the value
# if the key is absent before the changes (as PROPS_SQL); ``keeps``: a key that exists keeps its value (no $unset,
# no $set: a $set_once does not apply). Then each person's JSON: its keys in place (kept, replaced or dropped),
# new keys after them in the order they first appear, as applying the events one by one orders them.
KNOWN_CHANGES_SQL = """
SELECT grp, arrayMap(x -> x.2, arraySort(groupArray((first_at, key, final, keep)))) AS keys,
       arrayMap(x -> x.3, arraySort(groupArray((first_at, key, final, keep)))) AS finals,
       arrayMap(x -> x.4, arraySort(groupArray((first_at, key, final, keep)))) AS keeps
FROM (
    SELECT grp, key, arraySort(groupArray((ts, _line, kind, value))) AS ops, (ops[1].1, ops[1].2) AS first_at,
           arrayLastIndex(x -> x.3 = 2, ops) AS cut, arraySlice(ops, cut + 1) AS after,
           arrayFilter(x -> x.3 = 1, after) AS sets, arrayFilter(x -> x.3 = 0, after) AS onces,
           if(notEmpty(sets), sets[-1].4, if(notEmpty(onces), onces[1].4, '')) AS final,
           cut = 0 AND empty(sets) AS keep
    FROM (
{rows}
    )
    GROUP BY grp, key
)
GROUP BY grp""".replace("{rows}", _change_rows("m.person_id", "m.known_sql"))

KNOWN_PROPS_SQL = """
SELECT {team}, toUUID(c.pid), c.created_at,
       concat('{{', arrayStringConcat(arrayConcat(
           arrayFilter(x -> x != '', arrayMap(e -> if(indexOf(k.keys, e.1) = 0 OR k.keeps[indexOf(k.keys, e.1)],
                   concat(toJSONString(e.1), ':', e.2),
                   if(k.finals[indexOf(k.keys, e.1)] = '', '',
                      concat(toJSONString(e.1), ':', k.finals[indexOf(k.keys, e.1)]))),
               JSONExtractKeysAndValuesRaw(c.props))),
           arrayMap(i -> concat(toJSONString(k.keys[i]), ':', k.finals[i]),
               arrayFilter(i -> k.finals[i] != '' AND NOT JSONHas(c.props, k.keys[i]), arrayEnumerate(k.keys)))),
           ','), '}}'),
       c.identified, 0, {version}
FROM {changes} AS k
INNER JOIN (
    SELECT toString(id) AS pid, argMax(properties, version) AS props, argMax(created_at, version) AS created_at,
           argMax(is_identified, version) AS identified
    FROM {db}.persons WHERE team_id = {team} AND id IN (SELECT toUUID(grp) FROM {changes})
    GROUP BY id HAVING argMax(is_deleted, version) = 0
) AS c ON k.grp = c.pid"""


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


def _merge_involvement(engine: Engine, stage: str) -> tuple[dict[str, list[Any]], Counter[str]]:
    """Each merge row with the first person-changing row of its two ids, and how many merges name each id."""
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
    return merges, involvement


def _plain_identifies(
    team: int, merges: dict[str, list[Any]], involvement: Counter[str], known: set[str]
) -> dict[str, tuple[str, str]]:
    """The ``$identify`` events SQL can resolve: ``{id: (group, person id)}``. ``known``: involved ids the project
    has (a merge with a known person is PostHog's rules' work)."""
    groups: dict[str, tuple[str, str]] = {}
    for event, user, anon, given, user_before, anon_before in zip(
        merges["event"], merges["distinct_id"], merges["anon"], merges["given"], merges["user_before"],
        merges["anon_before"], strict=True,
    ):  # fmt: skip
        if (event != "$identify" or given or not anon or anon == user or involvement[user] != 1
                or involvement[anon] != 1 or user in known or anon in known
                or valid_other_id(anon) is None or valid_other_id(user) is None):  # fmt: skip
            continue
        if user_before and anon_before:
            continue  # both had a person already: a real merge, where the survivor's values win
        # The person is the anonymous id's if it existed first, else the one made for the user at $identify.
        pid = person_uuid(team, anon if anon_before else user)
        groups[user] = groups[anon] = (user, pid)
    return groups


def _known_ids(engine: Engine, team: int, stage: str, named: str, create_table: Any) -> str | None:
    """The file's ids (with rows, or ``named`` by merges) the project knows: a table of ``(distinct_id, person_id,
    live)``; None for a new project."""
    exists = _rows(engine, f"""
        SELECT count() > 0 AS any FROM (
            SELECT 1 FROM {DATABASE}.person_distinct_ids WHERE team_id = {team} LIMIT 1
            UNION ALL SELECT 1 FROM {DATABASE}.persons WHERE team_id = {team} LIMIT 1)""")  # fmt: skip
    if not exists["any"][0]:
        return None  # a new project (the usual first load): nothing to look up
    known: str = create_table("known", "distinct_id String, person_id String, live UInt8")
    engine.command(f"""
        INSERT INTO {known}
        SELECT distinct_id, toString(person_id), person_id IN (
                   SELECT id FROM {DATABASE}.persons WHERE team_id = {team}
                   GROUP BY id HAVING argMax(is_deleted, version) = 0)
        FROM (SELECT distinct_id, argMax(person_id, version) AS person_id FROM {DATABASE}.person_distinct_ids
              WHERE team_id = {team}
                AND distinct_id IN (SELECT distinct_id FROM {stage} UNION ALL SELECT distinct_id FROM {named})
              GROUP BY distinct_id HAVING argMax(is_deleted, version) = 0)""", settings=_INTERNAL)  # fmt: skip
    return known


def _given_known_persons(engine: Engine, team: int, stage: str, known: str) -> dict[str, tuple[str, int]]:
    """Ids new to the project whose file ``person_id`` is a live person of it: ``{id: (person id, first µs)}``."""
    any_given = _rows(engine, f"SELECT count() AS n FROM (SELECT 1 FROM {stage} WHERE person_id IS NOT NULL LIMIT 1)")
    if not any_given["n"][0]:
        return {}  # the file gives no person ids (the usual export)
    rows = _rows(engine, f"""
        SELECT distinct_id, toString(toUUID(given)) AS given, first FROM (
            SELECT distinct_id, argMax(person_id, ts) AS given, toUnixTimestamp64Micro(min(ts)) AS first
            FROM {stage} GROUP BY distinct_id HAVING given IS NOT NULL)
        WHERE distinct_id NOT IN (SELECT distinct_id FROM {known})
          AND toUUID(given) IN (SELECT id FROM {DATABASE}.persons WHERE team_id = {team}
                                GROUP BY id HAVING argMax(is_deleted, version) = 0)""")  # fmt: skip
    return {d: (g, f) for d, g, f in zip(rows["distinct_id"], rows["given"], rows["first"], strict=True)}


def _python_share(
    engine: Engine, stage: str, known: str | None, involved: set[str], groups: dict[str, tuple[str, str]],
    given: dict[str, tuple[str, int]], create_table: Any, insert: Any,
) -> list[str]:  # fmt: skip
    """The ids PostHog's rules must see one row at a time: merges SQL cannot resolve, new ids given a known
    person, known ids whose person row is gone, and every file id of the known persons these touch (so no person
    is changed both by these rules and by :data:`KNOWN_PROPS_SQL`)."""
    seed = sorted({d for d in involved if d not in groups} | set(given))
    if known is None:
        return seed
    ids = create_table("seed", "distinct_id String")
    insert(ids, pa.table({"distinct_id": pa.array(seed, pa.string())}))
    persons = create_table("seedp", "person_id String")
    insert(persons, pa.table({"person_id": pa.array(sorted({g for g, _ in given.values()}), pa.string())}))
    rows = _rows(engine, f"""
        SELECT distinct_id FROM {known}
        WHERE NOT live OR toUUID(person_id) IN (
            SELECT toUUID(person_id) FROM {known} WHERE distinct_id IN (SELECT distinct_id FROM {ids})
            UNION ALL SELECT toUUID(person_id) FROM {persons})
        UNION DISTINCT SELECT distinct_id FROM {ids}""")  # fmt: skip
    return sorted(rows["distinct_id"])


def resolve_file_persons(
    engine: Engine, store: PersonStore, team: int, stage: str, create_table: Any, insert: Any
) -> FilePersons:
    """Give every distinct id of the staged rows a person; write the persons. Call with the store's lock held.

    ``create_table(suffix, columns) -> name`` makes a staging table, ``insert(name, arrow)`` fills one.
    """
    merges, involvement = _merge_involvement(engine, stage)
    inv = create_table("inv", "distinct_id String")
    insert(inv, pa.table({"distinct_id": pa.array(sorted(involvement), pa.string())}))
    known = _known_ids(engine, team, stage, inv, create_table)
    known_involved: set[str] = set()
    given: dict[str, tuple[str, int]] = {}
    if known is not None:
        known_involved = set(_rows(engine, f"SELECT distinct_id FROM {known} WHERE distinct_id IN "
                                           f"(SELECT distinct_id FROM {inv})")["distinct_id"])  # fmt: skip
        given = _given_known_persons(engine, team, stage, known)
    groups = _plain_identifies(team, merges, involvement, known_involved)
    sequential = _python_share(engine, stage, known, set(involvement), groups, given, create_table, insert)
    state = store.partial_state(team, sequential, [g for g, _ in given.values()])
    seq_table = create_table("seq", "distinct_id String")
    insert(seq_table, pa.table({"distinct_id": pa.array(sequential, pa.string())}))
    before = set(state.persons)
    _apply_in_order(engine, state, stage, seq_table)
    resolved: dict[str, str] = {}
    for distinct_id in sequential:
        pid = state.pdi.get(distinct_id)
        person, first = given.get(distinct_id, (None, 0))
        if pid is None and person in state.persons:  # a given person id the project has: attach to it
            pid = state.add_person(str(person), _at(first), [distinct_id]).id
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
    known_table = known or create_table("known", "distinct_id String, person_id String, live UInt8")

    # Every distinct id's person: Python's, else its plain $identify group's, else the one the project knows, else
    # the file's person_id, else the derived id. Bulk (persons made here, in SQL) = none of the first three
    # and not only personless rows. known_sql: a known person whose property changes SQL applies.
    mapping = create_table("map", "distinct_id String, person_id String, bulk UInt8, known_sql UInt8, grp String, "
                                  "first DateTime64(6, 'UTC')")  # fmt: skip
    engine.command(f"""
        INSERT INTO {mapping}
        SELECT a.distinct_id,
               coalesce(p.person_id, g.person_id, k.person_id, a.given, {uuid5_sql(team, 'a.distinct_id')}),
               p.person_id IS NULL AND k.person_id IS NULL AND (a.personful OR g.person_id IS NOT NULL),
               p.person_id IS NULL AND k.person_id IS NOT NULL,
               coalesce(g.grp, a.distinct_id), a.first
        FROM (SELECT distinct_id, min(ts) AS first, argMax(person_id, ts) AS given,
                     max(NOT personless) AS personful
              FROM {stage} GROUP BY distinct_id) AS a
        LEFT JOIN {python_map} AS p ON a.distinct_id = p.distinct_id
        LEFT JOIN {group_map} AS g ON a.distinct_id = g.distinct_id
        LEFT JOIN {known_table} AS k ON a.distinct_id = k.distinct_id""", settings=_INTERNAL)  # fmt: skip
    # An anonymous id named by a plain $identify but without rows of its own still joins the person.
    engine.command(f"""
        INSERT INTO {mapping}
        SELECT g.distinct_id, g.person_id, 1, 0, g.grp, f.first FROM {group_map} AS g
        INNER JOIN (SELECT grp, min(first) AS first FROM {mapping} GROUP BY grp) AS f ON g.grp = f.grp
        WHERE g.distinct_id NOT IN (SELECT distinct_id FROM {mapping})""")  # fmt: skip

    # A person id the file gives that ends up with no distinct id (merged away in the source) is overridden to
    # the person its distinct id has now, so its events stay with the right person.
    orphans = _rows(engine, f"""
        SELECT DISTINCT toString(toUUID(s.person_id)) AS given, m.person_id AS target FROM {stage} AS s
        INNER JOIN {mapping} AS m ON s.distinct_id = m.distinct_id
        WHERE s.person_id IS NOT NULL AND toUUID(s.person_id) != toUUID(m.person_id)
          AND toUUID(s.person_id) NOT IN (SELECT toUUID(person_id) FROM {mapping})""")  # fmt: skip
    store.extend(state, orphans["given"])  # which of them are persons of the project, and overrides into them
    for orphan, target in zip(orphans["given"], orphans["target"], strict=True):
        if orphan not in state.persons:
            state.add_override(orphan, target)

    created = len(state.persons.keys() - before)  # new ones (a merge removes one: not a negative count)
    version = next_version(state.max_version)
    for table, data in person_tables(state.take_rows(version)).items():
        engine.insert_arrow(table, data)
    props = create_table("props", "grp String, props String")
    engine.command(f"INSERT INTO {props} " + PROPS_SQL.format(stage=stage, ids=mapping, changes=_CHANGES),
                   settings=_INTERNAL)  # fmt: skip
    # A group of two ids is a plain $identify: that person is identified.
    identified = f"m.grp IN (SELECT grp FROM {mapping} WHERE grp != distinct_id)"
    engine.command(f"""
        INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)
        SELECT {team}, toUUID(m.person_id), min(m.first),
               argMax(ifNull(p.props, '{{}}'), length(ifNull(p.props, ''))), max({identified}), 0, {version}
        FROM {mapping} AS m LEFT JOIN {props} AS p ON m.grp = p.grp
        WHERE m.bulk GROUP BY m.person_id""", settings=_INTERNAL)  # fmt: skip
    engine.command(f"""
        INSERT INTO {DATABASE}.person_distinct_ids (team_id, distinct_id, person_id, is_deleted, version)
        SELECT {team}, distinct_id, toUUID(person_id), 0, {version} FROM {mapping} WHERE bulk""",
                   settings=_INTERNAL)  # fmt: skip
    if known is not None:
        changes = create_table("kchg", "grp String, keys Array(String), finals Array(String), keeps Array(UInt8)")
        engine.command(f"INSERT INTO {changes} " + KNOWN_CHANGES_SQL.format(stage=stage, ids=mapping, changes=_CHANGES),
                       settings=_INTERNAL)  # fmt: skip
        engine.command(
            f"INSERT INTO {DATABASE}.persons (team_id, id, created_at, properties, is_identified, is_deleted, version)"
            + KNOWN_PROPS_SQL.format(team=team, version=version, changes=changes, db=DATABASE),
            settings=_INTERNAL,
        )  # fmt: skip
    counted = _rows(engine, f"SELECT uniqExact(person_id) AS n FROM {mapping} WHERE bulk")
    return FilePersons(mapping, created + int(counted["n"][0]))
