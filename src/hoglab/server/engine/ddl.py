"""Tables of event data, the same DDL on chDB and on a ClickHouse server.

Every table leads its sort key with ``team_id`` so a project's scan reads only its own parts, and every
HogQL table reference is guarded with ``team_id = <project>`` by the compiler.
Persons and distinct ids are versioned (``ReplacingMergeTree``): the newest version of a row wins, and readers
go through the compiler's view of them (argMax by version), never the raw table.

Groups (PostHog's group analytics): ``group_type_mapping`` holds a project's group types (at most five, indexes
0-4, created by ingestion in the order it first sees them) and ``groups`` each group's properties, both versioned
like persons. An event's groups are the ``$group_0..4`` keys ingestion writes into its properties from ``$groups``;
the events table derives the columns ``$group_0..4`` from them (``MATERIALIZED``, as PostHog's), so a count of
distinct groups reads a small column instead of parsing the properties.

``person_overrides`` (added by the event store) records person merges: when ``$identify``/``$create_alias``
joins two existing persons, events already stamped with the absorbed person's id resolve to the survivor
through it. Overrides are kept flat (an override never points at an id that is itself overridden), so one
lookup suffices; see docs/engine.md for how the compiler resolves ``events.person_id``.
"""

from __future__ import annotations

import re

from .sessions_ddl import session_statements

__all__ = [
    "BOOKKEEPING_TABLES",
    "DATABASE",
    "GROUP_COLUMNS",
    "MAX_GROUP_TYPES",
    "PERSON_USAGE_TABLE",
    "STAGING_PREFIX",
    "TABLES",
    "USAGE_TABLE",
    "create_statements",
    "is_insertable",
]

DATABASE = "hoglab"
# File loads stage rows in short-lived tables named "_load_<hex>[_suffix]" (ingest/files.py), dropped afterwards.
STAGING_PREFIX = "_load_"
_STAGING = re.compile(r"^_load_[0-9a-f]{32}(_[a-z]+)?$")

USAGE_TABLE = "property_usage_by_project"
"""How often each project's queries read each event property (``autoprops.py``): the service's own, no query reads
it. (Older versions counted without the project, in ``property_usage``; that table is no longer read.)"""
PERSON_USAGE_TABLE = "person_property_usage_by_project"
"""How often each project's queries read each person property (``autoprops.py``; formerly
``person_property_usage``): the service's own, no query reads it."""
BOOKKEEPING_TABLES = (USAGE_TABLE, PERSON_USAGE_TABLE)
"""Tables whose writes are not data changes: result caches ignore them (``query/cache.py``'s ``data_version``)."""

MAX_GROUP_TYPES = 5
"""Group types a project can have (PostHog's ``MAX_GROUP_TYPES_PER_TEAM``): indexes 0 to 4."""


def _group_column(index: int) -> str:
    # PostHog's expression (JSONExtractRaw without its quotes: a number key reads as its text), behind a substring
    # test so that an event without groups (most of them) costs a memchr at insert, not a JSON parse.
    key = f"'$group_{index}'"
    return (
        f"`$group_{index}` String MATERIALIZED if(position(properties, {key}) = 0, '', "
        f"replaceRegexpAll(JSONExtractRaw(properties, {key}), '^\"|\"$', ''))"
    )


GROUP_COLUMNS = tuple(f"$group_{i}" for i in range(MAX_GROUP_TYPES))
"""The events' group columns: ``$group_N`` is the key of the event's group of type N, ``''`` without one."""

TABLES: dict[str, str] = {
    "events": """
        CREATE TABLE IF NOT EXISTS {db}.events (
            team_id Int64,
            uuid UUID,
            event LowCardinality(String),
            distinct_id String,
            person_id UUID,
            timestamp DateTime64(6, 'UTC'),
            properties String CODEC(ZSTD(3)),
            elements_chain String CODEC(ZSTD(3)),
            created_at DateTime64(6, 'UTC'),
            `$session_id` String MATERIALIZED JSONExtractString(properties, '$session_id'),
            {group_columns}
        ) ENGINE = MergeTree
        PARTITION BY toYYYYMM(timestamp)
        ORDER BY (team_id, toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid))
    """,
    "persons": """
        CREATE TABLE IF NOT EXISTS {db}.persons (
            team_id Int64,
            id UUID,
            created_at DateTime64(6, 'UTC'),
            properties String CODEC(ZSTD(3)),
            is_identified UInt8,
            is_deleted UInt8,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, id)
    """,
    "person_distinct_ids": """
        CREATE TABLE IF NOT EXISTS {db}.person_distinct_ids (
            team_id Int64,
            distinct_id String,
            person_id UUID,
            is_deleted UInt8,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, distinct_id)
    """,
    "groups": """
        CREATE TABLE IF NOT EXISTS {db}.groups (
            team_id Int64,
            group_type_index UInt8,
            group_key String,
            created_at DateTime64(6, 'UTC'),
            group_properties String CODEC(ZSTD(3)),
            updated_at DateTime64(6, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, group_type_index, group_key)
    """,
    "group_type_mapping": """
        CREATE TABLE IF NOT EXISTS {db}.group_type_mapping (
            team_id Int64,
            group_type_index UInt8,
            group_type String,
            name_singular Nullable(String),
            name_plural Nullable(String),
            default_columns Nullable(String),
            created_at DateTime64(6, 'UTC'),
            is_deleted UInt8,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, group_type_index)
    """,
    "person_overrides": """
        CREATE TABLE IF NOT EXISTS {db}.person_overrides (
            team_id Int64,
            old_person_id UUID,
            override_person_id UUID,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, old_person_id)
    """,
    # PostHog's ingestion_warnings (capture's dropped and repaired events, ingest/warnings.py); details is JSON.
    "ingestion_warnings": """
        CREATE TABLE IF NOT EXISTS {db}.ingestion_warnings (
            team_id Int64,
            source LowCardinality(String),
            type String,
            details String CODEC(ZSTD(3)),
            timestamp DateTime64(6, 'UTC')
        ) ENGINE = MergeTree
        PARTITION BY toYYYYMM(timestamp)
        ORDER BY (team_id, toHour(timestamp), type, source, timestamp)
    """,
    "cohort_people": """
        CREATE TABLE IF NOT EXISTS {db}.cohort_people (
            team_id Int64,
            cohort_id Int64,
            person_id UUID,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (team_id, cohort_id, person_id)
    """,
}


def create_statements(database: str = DATABASE) -> list[str]:
    """``CREATE DATABASE``, every ``CREATE TABLE`` and the sessions table's view and backfill, idempotent."""
    group_columns = ", ".join(_group_column(i) for i in range(MAX_GROUP_TYPES))
    return [
        f"CREATE DATABASE IF NOT EXISTS {database}",
        *(" ".join(sql.split()).format(db=database, group_columns=group_columns) for sql in TABLES.values()),
        # Data dirs made before groups: the columns are added (old parts compute them when read).
        *(
            f"ALTER TABLE {database}.events ADD COLUMN IF NOT EXISTS {_group_column(i)}"
            for i in range(MAX_GROUP_TYPES)
        ),
        *session_statements(database),
    ]


def is_insertable(table: str) -> bool:
    """Whether ``insert_arrow`` may write to ``table``: one of ``TABLES`` or a load's staging table."""
    return table in TABLES or bool(_STAGING.match(table))
