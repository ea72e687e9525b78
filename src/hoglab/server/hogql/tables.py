"""The tables HogQL can read, and the guarded views that stand in for them.

Every reference to a table is replaced by a *view*: a subquery over the physical table in database ``hoglab``
whose WHERE starts with ``equals(<raw alias>.team_id, <team_id>)``. The view selects named columns only, so
``team_id`` is not even visible outside it; the persons-like tables are collapsed to their newest version
(argMax by ``version``) and deleted rows dropped inside the view. DateTime columns are converted to the project
time zone inside the view (``toTimeZone``), so every function applied to them works in that zone, as PostHog's
printer does by wrapping fields.

>>> [f.name for f in TABLES["events"].fields][:4]
['uuid', 'event', 'properties', 'timestamp']
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

from hoglab.translate.values import call

from .catalog import NO_MATERIALIZED, Catalog
from .query_log import QUERY_LOG_FIELDS, QUERY_LOG_UNRECORDED
from .sessions import OTHER_NAMES, SESSION_FIELDS, session_view_items

__all__ = [
    "GROUP_TYPES",
    "GUARD_META",
    "PERSON_DISPLAY_NAME_PROPERTIES",
    "PERSON_OVERRIDES_DDL",
    "PERSON_OVERRIDES_TABLE",
    "TABLES",
    "Field",
    "LazyJoin",
    "TableSchema",
    "ViewOptions",
    "build_view",
]

PERSON_OVERRIDES_TABLE = "person_overrides"
"""Physical table of person merges (old person id -> the id it was merged into). One place to rename it."""

PERSON_OVERRIDES_DDL = """
CREATE TABLE IF NOT EXISTS {db}.person_overrides (
    team_id Int64,
    old_person_id UUID,
    override_person_id UUID,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY (team_id, old_person_id)
"""
"""The table the compiler expects for ``person_overrides=True`` (kept flat: an old id maps to its final id)."""

GUARD_META = "hq_view"
"""``Select.meta`` key set on every view; its value is the raw table alias the guard is written against."""

FieldKind = Literal["plain", "json", "datetime", "virtual"]


@dataclass(frozen=True)
class Field:
    """A field of a HogQL table; a ``virtual`` one is the HogQL ``expression`` (``{table}`` is the table's alias)."""

    name: str
    kind: FieldKind = "plain"
    expression: str = ""


PERSON_DISPLAY_NAME_PROPERTIES = ("email", "Email", "$email", "name", "Name", "username", "Username", "UserName")
"""The person properties PostHog's app shows a person by, in order (its default; hoglab has no per-project list)."""


def _display_name(person_properties: str, fallback: str) -> str:
    keys = ", ".join(f"toString({person_properties}.`{key}`)" for key in PERSON_DISPLAY_NAME_PROPERTIES)
    return f"coalesce({keys}, {fallback})"


# PostHog's "person_display_name -- Person" column: (display name, person id, distinct id).
_EVENTS_DISPLAY_NAME = Field(
    "person_display_name",
    "virtual",
    f"tuple({_display_name('{table}.person.properties', '{table}.distinct_id')}, "
    "toString({table}.person_id), {table}.distinct_id)",
)
_PERSONS_DISPLAY_NAME = Field(
    "person_display_name",
    "virtual",
    f"tuple({_display_name('{table}.properties', 'toString({table}.id)')}, toString({{table}}.id))",
)


@dataclass(frozen=True)
class LazyJoin:
    """``events.person`` -> persons view joined on ``persons.id = events.person_id``. ``group_index``: the join
    reads the groups of that type only (``events.group_2`` is the group whose key is ``events.$group_2``)."""

    target: str
    from_field: str
    to_field: str
    group_index: int | None = None


@dataclass(frozen=True)
class TableSchema:
    name: str
    fields: tuple[Field, ...]
    star: tuple[str, ...]
    joins: dict[str, LazyJoin] = field(default_factory=dict)
    unserved: dict[str, str] = field(default_factory=dict)  # PostHog's fields hoglab has not: name -> why

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


_PERSON_JOIN = LazyJoin(target="persons", from_field="person_id", to_field="id")

GROUP_TYPES = 5
"""Group types a project can have (indexes 0-4): the events' ``$group_N`` fields and ``group_N`` joins."""
_GROUP_FIELDS = tuple(Field(f"$group_{i}") for i in range(GROUP_TYPES))
_GROUP_JOINS = {
    f"group_{i}": LazyJoin(target="groups", from_field=f"$group_{i}", to_field="key", group_index=i)
    for i in range(GROUP_TYPES)
}

TABLES: dict[str, TableSchema] = {
    "events": TableSchema(
        name="events",
        fields=(
            Field("uuid"),
            Field("event"),
            Field("properties", "json"),
            Field("timestamp", "datetime"),
            Field("distinct_id"),
            Field("elements_chain"),
            Field("created_at", "datetime"),
            Field("$session_id"),
            Field("$window_id"),
            Field("person_id"),
            *_GROUP_FIELDS,
            _EVENTS_DISPLAY_NAME,
        ),
        # PostHog's ``*`` on events: database columns except team_id; person_id is a join in PostHog.
        star=(
            "uuid",
            "event",
            "properties",
            "timestamp",
            "distinct_id",
            "elements_chain",
            "created_at",
            "$session_id",
            "$window_id",
        ),
        joins={
            "person": _PERSON_JOIN,
            # PostHog's person-on-events fields (poe.id, poe.properties, poe.created_at): its person as stored on
            # the event; here the event's person as it is now (the same until the person's properties change)
            "poe": _PERSON_JOIN,
            "pdi": LazyJoin(target="person_distinct_ids", from_field="distinct_id", to_field="distinct_id"),
            "session": LazyJoin(target="sessions", from_field="$session_id", to_field="session_id"),
            **_GROUP_JOINS,
        },
    ),
    # PostHog's groups: one row per group (the newest version of its properties), ``index`` its type's index.
    "groups": TableSchema(
        name="groups",
        fields=(
            Field("index"),
            Field("key"),
            Field("created_at", "datetime"),
            Field("updated_at", "datetime"),
            Field("properties", "json"),
        ),
        star=("index", "key", "created_at", "updated_at", "properties"),
    ),
    "query_log": TableSchema(
        name="query_log",
        fields=tuple(
            Field(name, "datetime" if name in ("query_start_time", "event_time") else "plain")
            for name in QUERY_LOG_FIELDS
        ),
        star=QUERY_LOG_FIELDS,
        unserved=QUERY_LOG_UNRECORDED,
    ),
    "sessions": TableSchema(
        name="sessions",
        fields=tuple(
            Field(name, "datetime" if name in ("$start_timestamp", "$end_timestamp") else "plain")
            for name in SESSION_FIELDS
        ),
        star=tuple(name for name in SESSION_FIELDS if name not in OTHER_NAMES),
    ),
    "persons": TableSchema(
        name="persons",
        fields=(
            Field("id"),
            Field("created_at", "datetime"),
            Field("properties", "json"),
            Field("is_identified"),
            _PERSONS_DISPLAY_NAME,
        ),
        star=("id", "created_at", "properties", "is_identified"),
    ),
    "person_distinct_ids": TableSchema(
        name="person_distinct_ids",
        fields=(Field("distinct_id"), Field("person_id")),
        star=("distinct_id", "person_id"),
        joins={"person": _PERSON_JOIN},
    ),
    # PostHog's raw_person_distinct_ids: every stored (distinct id, person) row with its version and deletion mark,
    # before person_distinct_ids keeps each distinct id's newest
    "raw_person_distinct_ids": TableSchema(
        name="raw_person_distinct_ids",
        fields=(Field("distinct_id"), Field("person_id"), Field("is_deleted"), Field("version")),
        star=("distinct_id", "person_id", "is_deleted", "version"),
        joins={"person": _PERSON_JOIN},
    ),
    "cohort_people": TableSchema(
        name="cohort_people",
        fields=(Field("cohort_id"), Field("person_id")),
        star=("cohort_id", "person_id"),
        joins={"person": _PERSON_JOIN},
    ),
    "person_overrides": TableSchema(
        name="person_overrides",
        fields=(Field("old_person_id"), Field("override_person_id")),
        star=("old_person_id", "override_person_id"),
    ),
    # PostHog's ingestion_warnings: capture's dropped and repaired events (ingest/warnings.py).
    "ingestion_warnings": TableSchema(
        name="ingestion_warnings",
        fields=(Field("source"), Field("type"), Field("details", "json"), Field("timestamp", "datetime")),
        star=("source", "type", "details", "timestamp"),
    ),
}


@dataclass(frozen=True)
class ViewOptions:
    team_id: int
    database: str
    timezone: str
    person_overrides: bool = False
    # Only the events view: whether person_id must go through the overrides join.
    needs_person_id: bool = False
    # Only the events view: keep a deterministic fraction of distinct ids (SAMPLE k).
    sample: float | None = None
    sample_offset: float = 0.0
    # Only the groups view: the groups of this type (a ``group_N`` join of events).
    group_index: int | None = None


def _col(table: str, name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(table))


def _lit(value: str | int) -> exp.Literal:
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def guard(alias: str, team_id: int) -> exp.Anonymous:
    """``equals(<alias>.team_id, <team_id>)``: the team isolation predicate."""
    return call("equals", _col(alias, "team_id"), _lit(team_id))


def _in_zone(node: exp.Expr, opts: ViewOptions) -> exp.Expr:
    # The physical columns are DateTime64(6, 'UTC'); converting them in the view keeps UTC projects on the fast
    # path (no conversion, full use of the toDate(timestamp) sort key).
    if opts.timezone == "UTC":
        return node
    return call("toTimeZone", node, _lit(opts.timezone))


def _select(raw: str, table: str, opts: ViewOptions, items: list[exp.Expr]) -> exp.Select:
    source = exp.Table(
        this=exp.to_identifier(table),
        db=exp.to_identifier(opts.database),
        alias=exp.TableAlias(this=exp.to_identifier(raw)),
    )
    select = exp.Select(expressions=items).from_(source, copy=False).where(guard(raw, opts.team_id), copy=False)
    select.meta[GUARD_META] = raw
    return select


def _argmax(raw: str, name: str) -> exp.Expr:
    return call("argMax", _col(raw, name), _col(raw, "version"))


def _as_text(column: exp.Expr) -> exp.Expr:
    """A materialized property as the JSON extraction types it (stored ``LowCardinality``; older data dirs' plain
    ``Nullable(String)`` columns pass through unchanged)."""
    return call("CAST", column, _lit("Nullable(String)"))


def _argmax_of_tuple(raw: str, name: str) -> exp.Expr:
    return call("argMax", call("tuple", _col(raw, name)), _col(raw, "version"))


def _not_deleted(raw: str) -> exp.Expr:
    return call("equals", _argmax(raw, "is_deleted"), _lit(0))


def _events_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_e"
    person_id: exp.Expr = _col(raw, "person_id")
    if opts.person_overrides and opts.needs_person_id:
        # if() over a "matched" marker instead of coalesce(): correct whatever join_use_nulls is set to.
        person_id = call(
            "if",
            call("equals", _col("__hq_o", "matched"), _lit(1)),
            call("assumeNotNull", _col("__hq_o", "override_person_id")),
            person_id,
        )
    items = [
        exp.alias_(_col(raw, "uuid"), "uuid", quoted=True),
        exp.alias_(_col(raw, "event"), "event", quoted=True),
        exp.alias_(_col(raw, "properties"), "properties", quoted=True),
        exp.alias_(_in_zone(_col(raw, "timestamp"), opts), "timestamp", quoted=True),
        exp.alias_(_col(raw, "distinct_id"), "distinct_id", quoted=True),
        exp.alias_(_col(raw, "elements_chain"), "elements_chain", quoted=True),
        exp.alias_(_in_zone(_col(raw, "created_at"), opts), "created_at", quoted=True),
        exp.alias_(_col(raw, "$session_id"), "$session_id", quoted=True),
        exp.alias_(call("JSONExtractString", _col(raw, "properties"), _lit("$window_id")), "$window_id", quoted=True),
        exp.alias_(person_id, "person_id", quoted=True),
        *(exp.alias_(_col(raw, f.name), f.name, quoted=True) for f in _GROUP_FIELDS),
        # materialized properties (the catalog's): read only where props.use_materialized puts them
        *(exp.alias_(_as_text(_col(raw, c)), c, quoted=True) for c in materialized),
    ]
    select = _select(raw, "events", opts, items)
    if opts.person_overrides and opts.needs_person_id:
        overrides = _overrides_view(opts, ())
        overrides.select(exp.alias_(_lit(1), "matched", quoted=True), copy=False)
        select.join(
            exp.Subquery(this=overrides, alias=exp.TableAlias(this=exp.to_identifier("__hq_o"))),
            on=call("equals", _col("__hq_o", "old_person_id"), _col(raw, "person_id")),
            join_type="LEFT",
            copy=False,
        )
    if opts.sample is not None and (opts.sample < 1 or opts.sample_offset > 0):
        buckets = 1_000_000
        low = round(opts.sample_offset * buckets)
        high = min(buckets, low + max(1, round(opts.sample * buckets)))  # OFFSET 1 samples nothing
        # PostHog samples by cityHash64(distinct_id); the events table here has no SAMPLE BY, so filter instead
        # (SAMPLE k OFFSET m: the hashes from m to m + k of the range, as ClickHouse's, clipped at its end).
        bucket = call("modulo", call("cityHash64", _col(raw, "distinct_id")), _lit(buckets))
        condition = call("less", bucket, _lit(high))
        if low > 0:
            condition = exp.And(this=call("greaterOrEquals", bucket.copy(), _lit(low)), expression=condition)
        select.where(condition, copy=False)
    return select


def _persons_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_p"
    items = [
        exp.alias_(_col(raw, "id"), "id", quoted=True),
        exp.alias_(_in_zone(_argmax(raw, "created_at"), opts), "created_at", quoted=True),
        exp.alias_(_argmax(raw, "properties"), "properties", quoted=True),
        exp.alias_(_argmax(raw, "is_identified"), "is_identified", quoted=True),
        # materialized person properties, from the same newest version as ``properties``: argMax over a tuple,
        # because argMax(column, version) skips NULLs and would answer an older version's value for a newest
        # version without the key (engine/materialized.py). Read only where props.use_materialized puts them.
        *(
            exp.alias_(_as_text(call("tupleElement", _argmax_of_tuple(raw, c), _lit(1))), c, quoted=True)
            for c in materialized
        ),
    ]
    select = _select(raw, "persons", opts, items).group_by(_col(raw, "id"), copy=False)
    return select.having(_not_deleted(raw), copy=False)


def _pdi_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_d"
    items = [
        exp.alias_(_col(raw, "distinct_id"), "distinct_id", quoted=True),
        exp.alias_(_argmax(raw, "person_id"), "person_id", quoted=True),
    ]
    select = _select(raw, "person_distinct_ids", opts, items).group_by(_col(raw, "distinct_id"), copy=False)
    return select.having(_not_deleted(raw), copy=False)


def _raw_pdi_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_r"
    names = ("distinct_id", "person_id", "is_deleted", "version")
    items = [exp.alias_(_col(raw, name), name, quoted=True) for name in names]
    return _select(raw, "person_distinct_ids", opts, items)


def _cohort_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    # Rows of a cohort's newest calculation (its highest version) are its members; older versions are history.
    raw, inner = "__hq_c", "__hq_cv"
    latest = _select(inner, "cohort_people", opts, [_col(inner, "cohort_id"), call("max", _col(inner, "version"))])
    latest.group_by(_col(inner, "cohort_id"), copy=False)
    items = [
        exp.alias_(_col(raw, "cohort_id"), "cohort_id", quoted=True),
        exp.alias_(_col(raw, "person_id"), "person_id", quoted=True),
    ]
    select = _select(raw, "cohort_people", opts, items)
    select.where(
        exp.In(
            this=exp.Tuple(expressions=[_col(raw, "cohort_id"), _col(raw, "version")]), query=exp.Subquery(this=latest)
        ),
        copy=False,
    )
    return select.group_by(_col(raw, "cohort_id"), _col(raw, "person_id"), copy=False)


def _groups_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    # Each (type, key) once, at its newest version, as PostHog's lazy groups table (argMax over its versions).
    raw = "__hq_g"
    items = [
        exp.alias_(_col(raw, "group_type_index"), "index", quoted=True),
        exp.alias_(_col(raw, "group_key"), "key", quoted=True),
        exp.alias_(_in_zone(_argmax(raw, "created_at"), opts), "created_at", quoted=True),
        exp.alias_(_in_zone(_argmax(raw, "updated_at"), opts), "updated_at", quoted=True),
        exp.alias_(_argmax(raw, "group_properties"), "properties", quoted=True),
    ]
    select = _select(raw, "groups", opts, items)
    if opts.group_index is not None:
        select.where(call("equals", _col(raw, "group_type_index"), _lit(opts.group_index)), copy=False)
    return select.group_by(_col(raw, "group_type_index"), _col(raw, "group_key"), copy=False)


def _overrides_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_v"
    items = [
        exp.alias_(_col(raw, "old_person_id"), "old_person_id", quoted=True),
        exp.alias_(_argmax(raw, "override_person_id"), "override_person_id", quoted=True),
    ]
    return _select(raw, PERSON_OVERRIDES_TABLE, opts, items).group_by(_col(raw, "old_person_id"), copy=False)


def _warnings_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_w"
    items = [
        exp.alias_(_col(raw, "source"), "source", quoted=True),
        exp.alias_(_col(raw, "type"), "type", quoted=True),
        exp.alias_(_col(raw, "details"), "details", quoted=True),
        exp.alias_(_in_zone(_col(raw, "timestamp"), opts), "timestamp", quoted=True),
    ]
    return _select(raw, "ingestion_warnings", opts, items)


def _sessions_view(opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    raw = "__hq_s"
    select = _select(raw, "sessions", opts, session_view_items(raw, opts.timezone))
    return select.group_by(_col(raw, "session_id"), copy=False)


_BUILDERS = {
    "sessions": _sessions_view,
    "events": _events_view,
    "persons": _persons_view,
    "person_distinct_ids": _pdi_view,
    "raw_person_distinct_ids": _raw_pdi_view,
    "cohort_people": _cohort_view,
    "person_overrides": _overrides_view,
    "ingestion_warnings": _warnings_view,
    "groups": _groups_view,
}


_MATERIALIZABLE = ("events", "persons")


@functools.lru_cache(maxsize=256)
def _cached_view(table: str, opts: ViewOptions, materialized: tuple[str, ...]) -> exp.Select:
    return _BUILDERS[table](opts, materialized)


def build_view(table: str, opts: ViewOptions, catalog: Catalog = NO_MATERIALIZED) -> exp.Select:
    """The guarded subquery standing in for HogQL table ``table`` (a key of ``TABLES``); the events and persons
    views also carry the ``catalog``'s materialized columns.

    >>> sql = build_view("persons", ViewOptions(team_id=7, database="hoglab", timezone="UTC")).sql("clickhouse")
    >>> sql[sql.index("FROM") : sql.index("GROUP")]
    'FROM hoglab.persons AS __hq_p WHERE equals(__hq_p."team_id", 7) '
    """
    # Built once per (table, options) and copied: copying a tree is about twice as fast as building it.
    # The cached tree is never handed out, so no caller can change what later queries get.
    # Keyed on the columns themselves, so a view is never reused for another set of columns.
    materialized = tuple(catalog.columns(opts.database, table).values()) if table in _MATERIALIZABLE else ()
    template = _cached_view(table, opts, materialized)
    view = template.copy()
    view.meta[GUARD_META] = template.meta[GUARD_META]
    return view
