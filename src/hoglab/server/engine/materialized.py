"""Materialized properties: hot JSON properties as their own columns (PostHog's ``mat_$browser``, ``pmat_email``).

An event property ``key`` becomes the column ``mat_<key>`` of ``events``, a person property the column
``pmat_<key>`` of ``persons``; the comment says which kind of property the column holds::

    `mat_$browser` LowCardinality(Nullable(String)) MATERIALIZED JSONExtract(properties, '$browser',
        'Nullable(String)') COMMENT 'hoglab:properties:$browser'
    `pmat_email` LowCardinality(Nullable(String)) MATERIALIZED JSONExtract(properties, 'email', 'Nullable(String)')
        COMMENT 'hoglab:person_properties:email'

Its expression is exactly the one the HogQL compiler prints for ``properties.$browser`` (hogql/props.py), and the
views read it back ``CAST`` to that expression's type, so a query reading the column answers what the JSON
extraction answers, by construction: the same type, ``NULL`` for a
missing key and for a JSON ``null``, a number as its JSON text, ``''`` for an empty string. That is why the
compiler may swap one for the other wherever it reads ``properties`` with one key (:func:`lookup`). A person
column is read through the persons view, which collapses a person's versions to the newest; it carries the column
through that ``argMax`` as a tuple (hogql/tables.py), since ``argMax`` would skip a newest ``NULL``.

Adding the column is a metadata change (``ALTER TABLE ... ADD COLUMN``, no data rewritten, nothing blocked); its
values are then written by a background mutation (``MATERIALIZE COLUMN``) while queries and inserts go on. Until a
part has been rewritten, ClickHouse computes the column from its expression when that part is read, so answers are
the same before, during and after the fill; only the speed changes. New rows get the column as they are inserted.
The statements are the same on chDB and on a ClickHouse server.

The comment records the key, so the registry is rebuilt from ``system.columns`` when an engine opens
(:func:`refresh`): chDB and a ClickHouse server alike, and a column added by another process on the same server is
found at the next refresh. The registry is process-wide (the compiler has no engine at hand); a process opens one
chDB directory, or one ClickHouse database, at a time.

Which keys: by hand (``hoglab materialize --project ID '$browser' --person email``, :func:`materialize`), and
automatically: every property the compiler reads is counted (:func:`lookup`), and
:class:`~.autoprops.AutoMaterializer` materializes the keys most used in filters and group-bys.

>>> column_name("$browser"), column_name("utm source"), column_name("a`b"), column_name("email", "persons")
('mat_$browser', 'mat_utm_source_29477461', 'mat_a_b_1c557992', 'pmat_email')
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .ddl import DATABASE
from .settings import quote_identifier, quote_string

__all__ = [
    "COLUMN_TYPE",
    "COMMENT_PREFIX",
    "PERSON_COMMENT_PREFIX",
    "PROPERTY_TABLES",
    "FillStatus",
    "column_name",
    "fill_status",
    "lookup",
    "materialize",
    "materialized_columns",
    "refresh",
    "registry_version",
    "suspended",
    "take_usage",
]

COMMENT_PREFIX = "hoglab:properties:"
COLUMN_TYPE = "LowCardinality(Nullable(String))"
"""How a materialized property is stored: a dictionary per part and one small index per row. Hot properties
(browsers, plans, countries) have few values, and a filter or group-by then reads a byte or two per row instead
of the text (4-6x faster than ``Nullable(String)`` at 10M events); the views read it back as
``Nullable(String)`` (hogql/tables.py), so answers and their types are those of the JSON extraction."""
PERSON_COMMENT_PREFIX = "hoglab:person_properties:"


@dataclass(frozen=True)
class _PropertyTable:
    column_prefix: str
    comment_prefix: str


_TABLES = {
    "events": _PropertyTable("mat_", COMMENT_PREFIX),
    "persons": _PropertyTable("pmat_", PERSON_COMMENT_PREFIX),
}
PROPERTY_TABLES = tuple(_TABLES)
"""The tables whose ``properties`` keys can be materialized: ``events`` and ``persons``."""

_SAFE = re.compile(r"^[A-Za-z0-9_$]{1,100}$")

_lock = threading.Lock()
_columns: dict[tuple[str, str], dict[str, str]] = {}  # (database, table) -> {property key -> column name}
_version = 0
_usage: dict[str, Counter[str]] = {table: Counter() for table in _TABLES}
_suspended = False


def _table(table: str) -> _PropertyTable:
    if table not in _TABLES:
        raise ValueError(f"only {' and '.join(_TABLES)} properties can be materialized, not {table!r}")
    return _TABLES[table]


def column_name(key: str, table: str = "events") -> str:
    """``mat_<key>`` (``pmat_<key>`` for persons) when the key is made of letters, digits, ``_`` and ``$``; else a
    readable part and a hash."""
    prefix = _table(table).column_prefix
    if _SAFE.match(key):
        return f"{prefix}{key}"
    readable = re.sub(r"[^A-Za-z0-9_$]+", "_", key)[:60]
    return f"{prefix}{readable}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def extraction(key: str) -> str:
    """The column's expression: the compiler's ``properties.<key>`` (hogql/props.py ``json_access``)."""
    return f"JSONExtract(properties, {quote_string(key)}, 'Nullable(String)')"


def lookup(key: str, database: str = DATABASE, table: str = "events") -> str | None:
    """The column holding ``<database>.<table>.properties.<key>``, if there is one. Every call counts as one use of
    the key (the compiler calls it for each property it reads), which is what automatic materialization ranks by."""
    with _lock:
        if database == DATABASE:
            _usage[table][key] += 1
        return None if _suspended else _columns.get((database, table), {}).get(key)


@contextmanager
def suspended() -> Iterator[None]:
    """Compile as if nothing were materialized (the plan a materialized one is checked against)."""
    global _suspended, _version
    with _lock:
        _suspended, _version = True, _version + 1
    try:
        yield
    finally:
        with _lock:
            _suspended, _version = False, _version + 1


def materialized_columns(database: str = DATABASE, table: str = "events") -> dict[str, str]:
    """Every materialized ``key -> column`` of ``<database>.<table>`` known to this process (none while
    :func:`suspended`: the views then carry no column, as before any was added)."""
    with _lock:
        return {} if _suspended else dict(_columns.get((database, table), {}))


def registry_version() -> int:
    """Grows whenever a column is added to the registry (compiled statements are cached by it)."""
    return _version


def take_usage(table: str = "events") -> Counter[str]:
    """The uses of ``table``'s properties counted since the last call (and reset them)."""
    with _lock:
        taken, _usage[table] = _usage[table], Counter()
        return taken


def _register(table: str, found: dict[str, str]) -> None:
    global _version
    with _lock:
        known = _columns.setdefault((DATABASE, table), {})
        if any(known.get(k) != v for k, v in found.items()):
            known.update(found)
            _version += 1


def _rows(engine: Any, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = engine.execute(sql, settings={"max_result_rows": 0}).to_pylist()
    return rows


def refresh(engine: Any, table: str = "events") -> dict[str, str]:
    """Read the materialized columns of ``events`` and ``persons`` from the engine into the registry; ``table``'s
    ``key -> column`` map."""
    _table(table)
    return _refresh_all(engine)[table]


def _refresh_all(engine: Any) -> dict[str, dict[str, str]]:
    rows = _rows(
        engine,
        f"SELECT table, name, comment FROM system.columns WHERE database = {quote_string(DATABASE)} "
        f"AND table IN ({', '.join(quote_string(t) for t in _TABLES)}) AND startsWith(comment, 'hoglab:')",
    )
    found: dict[str, dict[str, str]] = {t: {} for t in _TABLES}
    for row in rows:
        prefix = _TABLES[str(row["table"])].comment_prefix
        if str(row["comment"]).startswith(prefix):
            found[str(row["table"])][str(row["comment"])[len(prefix) :]] = str(row["name"])
    for name, columns in found.items():
        _register(name, columns)
    return found


def materialize(engine: Any, keys: Iterable[str], table: str = "events") -> dict[str, str]:
    """Add a materialized column to ``table`` (``events`` or ``persons``) for each key (idempotent) and start
    filling it in the background.

    Returns ``key -> column`` for the keys asked. Adding is a metadata change; the fill is a mutation that runs
    while queries and inserts go on (``mutations_sync=0``); answers are the same whether or not it is done.
    """
    comment_prefix = _table(table).comment_prefix
    known = refresh(engine, table)
    made: dict[str, str] = {}
    for key in keys:
        if not isinstance(key, str) or not key or len(key) > 400:
            raise ValueError(f"a property key is 1 to 400 characters, got {key!r}")
        column = known.get(key) or column_name(key, table)
        if key not in known:
            engine.command(
                f"ALTER TABLE {DATABASE}.{table} ADD COLUMN IF NOT EXISTS {quote_identifier(column)} {COLUMN_TYPE} "
                f"MATERIALIZED {extraction(key)} COMMENT {quote_string(comment_prefix + key)}"
            )
            engine.command(
                f"ALTER TABLE {DATABASE}.{table} MATERIALIZE COLUMN {quote_identifier(column)}",
                settings={"mutations_sync": 0},
            )
        made[key] = column
    _register(table, made)
    return made


@dataclass(frozen=True)
class FillStatus:
    """How far the background fill of one column is: ``done`` once every part of its table holds its values."""

    key: str
    column: str
    done: bool
    parts_to_do: int
    table: str = "events"


def fill_status(engine: Any) -> list[FillStatus]:
    """The fill of every materialized column, events' then persons', from ``system.mutations``."""
    rows = _rows(
        engine,
        f"SELECT table, command, is_done, parts_to_do FROM system.mutations WHERE database = {quote_string(DATABASE)} "
        f"AND table IN ({', '.join(quote_string(t) for t in _TABLES)}) AND position(command, 'MATERIALIZE COLUMN') > 0",
    )
    out = []
    for table, columns in _refresh_all(engine).items():
        for key, column in sorted(columns.items()):
            mine = [r for r in rows if r["table"] == table and _fills(str(r["command"]), column)]
            done = all(bool(r["is_done"]) for r in mine)
            out.append(FillStatus(key, column, done, sum(int(r["parts_to_do"]) for r in mine), table))
    return out


def _fills(command: str, column: str) -> bool:
    """Whether a mutation's command (as ``system.mutations`` shows it, in parentheses) fills ``column``.

    >>> _fills("(MATERIALIZE COLUMN mat_a)", "mat_a"), _fills("(MATERIALIZE COLUMN `mat_$a b`)", "mat_$a b")
    (True, True)
    >>> _fills("(MATERIALIZE COLUMN pmat_a)", "mat_a"), _fills("(MATERIALIZE COLUMN mat_ab)", "mat_a")
    (False, False)
    """
    text = command.strip().removeprefix("(").removesuffix(")").strip()
    return text.endswith((f" {column}", f" {quote_identifier(column)}"))
