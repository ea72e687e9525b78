"""Materialized properties: hot JSON properties as their own columns (PostHog's ``mat_$browser``, ``pmat_email``).

An event property ``key`` becomes a column of ``events``, a person property a column of ``persons``; the comment
says which kind of property the column holds and for which exact key::

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

**Names** (:func:`column_name`). A key of lower-case letters, digits, ``_`` and ``$`` (at most 100) is named as
PostHog names it, ``mat_<key>``; any other key gets a readable slug and 16 hex digits of the SHA-256 of its exact
text, ``mat_utm_source_<hash>``. The two forms never meet (a plain name never ends in ``_`` and 16 hex digits:
such a key is hashed too), names of different keys differ even ignoring case (a case-insensitive file system keeps
``mat_Plan`` and ``mat_plan`` in one file), and two hashed names are equal only if 64 bits of SHA-256 are.

**Registration.** Names are not trusted: a column is read for a key only if the column itself says it was made
for that exact key. The registry is rebuilt from ``system.columns`` (:func:`refresh`): a column is registered for
``K`` only if its comment is exactly ``hoglab:properties:K``, it is ``MATERIALIZED``, of one of the two types the
views read, and its expression is ``extraction(K)`` as the engine prints it. Before a column is added its name is
checked against every column of the table (ignoring case); a name already taken (by a column of an older
version, another process, or the operator) moves the key to its next name (the hash salted, 8 names in all), and
the new column must register for the key before anything reads it (else it is dropped and the key refused). So
data dirs of older versions, whose names followed other rules, keep being read correctly: by their comments.

Adding the column is a metadata change (``ALTER TABLE ... ADD COLUMN``, no data rewritten, nothing blocked); its
values are then written by a background mutation (``MATERIALIZE COLUMN``) while queries and inserts go on. Until a
part has been rewritten, ClickHouse computes the column from its expression when that part is read, so answers are
the same before, during and after the fill; only the speed changes. New rows get the column as they are inserted.
The statements are the same on chDB and on a ClickHouse server; a column added by another process on the same
server is found at the next refresh. The registry is process-wide (the compiler has no engine at hand); a
process opens one chDB directory, or one ClickHouse database, at a time.

Which keys: by hand (``hoglab materialize --project ID '$browser' --person email``, :func:`materialize`), and
automatically: every property the compiler reads is counted for the project reading it (:func:`lookup`), and
:class:`~.autoprops.AutoMaterializer` materializes the keys most used in filters and group-bys, within each
project's budget. A key that cannot be a column (:func:`refusal`: empty, over 400 characters, not valid Unicode)
is neither counted nor materialized; its reads extract it from the JSON, as every read can.

>>> column_name("$browser"), column_name("utm source"), column_name("email", "persons")
('mat_$browser', 'mat_utm_source_bd387b4342242a20', 'pmat_email')
>>> column_name("utm_source_bd387b4342242a20")  # shaped like a hashed name: hashed itself
'mat_utm_source_bd387b4342242a20_220b198857b90526'
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .base import EngineError
from .ddl import DATABASE
from .settings import quote_identifier, quote_string

__all__ = [
    "COLUMN_TYPE",
    "COMMENT_PREFIX",
    "MAX_KEY_LENGTH",
    "PERSON_COMMENT_PREFIX",
    "PROPERTY_TABLES",
    "FillStatus",
    "MaterializeError",
    "candidate_names",
    "column_name",
    "fill_status",
    "lookup",
    "materialize",
    "materialized_columns",
    "refresh",
    "refusal",
    "registry_version",
    "suspended",
    "take_usage",
]

log = logging.getLogger("hoglab.engine")

COMMENT_PREFIX = "hoglab:properties:"
COLUMN_TYPE = "LowCardinality(Nullable(String))"
"""How a materialized property is stored: a dictionary per part and one small index per row. Hot properties
(browsers, plans, countries) have few values, and a filter or group-by then reads a byte or two per row instead
of the text (4-6x faster than ``Nullable(String)`` at 10M events); the views read it back as
``Nullable(String)`` (hogql/tables.py), so answers and their types are those of the JSON extraction."""
_READABLE_TYPES = (COLUMN_TYPE, "Nullable(String)")  # older data dirs' columns are plain Nullable(String)
PERSON_COMMENT_PREFIX = "hoglab:person_properties:"
MAX_KEY_LENGTH = 400
"""The longest key (in characters) that can become a column."""


class MaterializeError(EngineError):
    """A key could not become a column: every name it may take is in use, or the column would not register."""


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

_PLAIN = re.compile(r"[a-z0-9_$]{1,100}")
_HASHED_TAIL = re.compile(r"_[0-9a-f]{16}\Z")
_UNREADABLE = re.compile(r"[^a-z0-9_$]+")
_NAMES_PER_KEY = 8
# Distinct keys counted per project and table between two rounds of the automatic job: a project reading an endless
# stream of new keys costs bounded memory, and only its own keys past the bound go uncounted (until the next round),
# never another project's.
_MAX_COUNTED = 2_000

_lock = threading.Lock()
_ddl_lock = threading.Lock()  # one materialize() at a time in this process: names are checked, then taken
_columns: dict[tuple[str, str], dict[str, str]] = {}  # (database, table) -> {property key -> column name}
_version = 0
_usage: dict[str, dict[int, Counter[str]]] = {table: {} for table in _TABLES}  # table -> project -> key -> uses
_suspended = False
_printed: dict[str, str | None] = {}  # key -> its extraction as the engine prints it (None: cannot be printed)
_unchecked_expressions = False  # the engine cannot print expressions (a server without formatQuery): comments only
_warned: set[tuple[str, str]] = set()  # (table, column) already logged as not registering


def _table(table: str) -> _PropertyTable:
    if table not in _TABLES:
        raise ValueError(f"only {' and '.join(_TABLES)} properties can be materialized, not {table!r}")
    return _TABLES[table]


def refusal(key: object) -> str | None:
    """Why ``key`` cannot become a column, or ``None`` when it can. Any other text can: quotes, backticks, NUL,
    dots, ``$``, any Unicode.

    >>> refusal("$browser") is None, refusal("it's a `key`\\x00.") is None
    (True, True)
    >>> refusal(""), refusal("a\\ud800")
    ('the empty key cannot be materialized', 'the key is not valid Unicode')
    """
    if not isinstance(key, str):
        return "a property key is text"
    if not key:
        return "the empty key cannot be materialized"
    if len(key) > MAX_KEY_LENGTH:
        return f"keys longer than {MAX_KEY_LENGTH} characters are not materialized"
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "the key is not valid Unicode"
    return None


def candidate_names(key: str, table: str = "events") -> list[str]:
    """The names ``key``'s column may take, in order: the first free one is used (see "Names" above).

    >>> candidate_names("plan")[:2]
    ['mat_plan', 'mat_plan_64879f7d6b960a01']
    >>> len(set(candidate_names("Plan"))), candidate_names("Plan")[0].startswith("mat_plan_")
    (8, True)
    """
    return list(_names(key, table))


def _names(key: str, table: str) -> Iterator[str]:
    prefix = _table(table).column_prefix
    plain = _PLAIN.fullmatch(key) is not None and _HASHED_TAIL.search(key) is None
    if plain:
        yield prefix + key
    slug = _UNREADABLE.sub("_", key.lower())[:48].rstrip("_")
    text = key.encode("utf-8")
    for n in range(_NAMES_PER_KEY - plain):
        salt = f"{n}\0".encode() if n else b""
        yield f"{prefix}{slug}_{hashlib.sha256(salt + text).hexdigest()[:16]}"


def column_name(key: str, table: str = "events") -> str:
    """The name ``key``'s column gets when it is free: ``mat_<key>`` (``pmat_<key>`` for persons) for a key of
    lower-case letters, digits, ``_`` and ``$``; else a readable part and a hash of the exact key."""
    return next(_names(key, table))


def extraction(key: str) -> str:
    """The column's expression: the compiler's ``properties.<key>`` (hogql/props.py ``json_access``)."""
    return f"JSONExtract(properties, {quote_string(key)}, 'Nullable(String)')"


def lookup(key: str, database: str = DATABASE, table: str = "events", team_id: int | None = None) -> str | None:
    """The column holding ``<database>.<table>.properties.<key>``, if there is one. Every call with a ``team_id``
    counts as one use of the key by that project (the compiler calls it for each property it reads), which is what
    automatic materialization ranks by; keys that cannot be columns (:func:`refusal`) are not counted."""
    countable = team_id is not None and database == DATABASE and refusal(key) is None
    with _lock:
        if countable:
            counted = _usage[table].setdefault(int(team_id or 0), Counter())
            if key in counted or len(counted) < _MAX_COUNTED:
                counted[key] += 1
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
    """Grows whenever the registry changes (compiled statements are cached by it)."""
    return _version


def take_usage(table: str = "events") -> Counter[tuple[int, str]]:
    """The uses of ``table``'s properties counted since the last call, by ``(project id, key)`` (and reset them)."""
    with _lock:
        taken, _usage[table] = _usage[table], {}
    return Counter({(team, key): n for team, counted in taken.items() for key, n in counted.items()})


def _rows(engine: Any, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = engine.execute(sql, settings={"max_result_rows": 0}).to_pylist()
    return rows


@dataclass
class _Scan:
    """What ``system.columns`` says of the property tables: the registered columns and every name in use."""

    found: dict[str, dict[str, str]] = field(default_factory=lambda: {t: {} for t in _TABLES})
    taken: dict[str, set[str]] = field(default_factory=lambda: {t: set() for t in _TABLES})  # lower-cased names


def _print_expressions(engine: Any, keys: list[str]) -> None:
    """Learn how the engine prints each key's extraction (what ``system.columns`` shows as its expression)."""
    global _unchecked_expressions
    wanted = [k for k in dict.fromkeys(keys) if k not in _printed]
    if not wanted or _unchecked_expressions:
        return
    texts = ", ".join(quote_string(f"SELECT {extraction(k)}") for k in wanted)
    try:
        rows = _rows(engine, f"SELECT arrayMap(q -> formatQuerySingleLineOrNull(q), [{texts}]) AS printed")
    except EngineError as exc:
        if exc.name != "UNKNOWN_FUNCTION" and exc.code != 46:
            raise
        # A server too old to print queries: comments, kinds and types are still checked.
        log.warning("cannot check materialized columns' expressions on this engine (%s); checking comments", exc)
        _unchecked_expressions = True
        return
    for key, printed in zip(wanted, rows[0]["printed"], strict=True):
        _printed[key] = printed.removeprefix("SELECT ") if isinstance(printed, str) else None


def _scan(engine: Any) -> _Scan:
    rows = _rows(
        engine,
        "SELECT table, name, type, default_kind, default_expression, comment FROM system.columns "
        f"WHERE database = {quote_string(DATABASE)} AND table IN ({', '.join(quote_string(t) for t in _TABLES)}) "
        "ORDER BY table, name",
    )
    scan = _Scan()
    claims: list[tuple[dict[str, Any], str]] = []
    for row in rows:
        table, comment = str(row["table"]), str(row["comment"] or "")
        scan.taken[table].add(str(row["name"]).lower())
        prefix = _TABLES[table].comment_prefix
        if comment.startswith(prefix) and refusal(key := comment[len(prefix) :]) is None:
            claims.append((row, key))
    _print_expressions(engine, [key for _, key in claims])
    for row, key in claims:
        table, name = str(row["table"]), str(row["name"])
        expression = str(row["default_expression"] or "")
        problem = (
            "it is not MATERIALIZED" if row["default_kind"] != "MATERIALIZED"
            else f"its type is {row['type']}" if row["type"] not in _READABLE_TYPES
            else f"its expression is {expression!r}"
            if not _unchecked_expressions and (_printed.get(key) is None or expression != _printed[key])
            else "another column already holds the key" if key in scan.found[table]
            else None
        )  # fmt: skip
        if problem is None:
            scan.found[table][key] = name
        elif (table, name) not in _warned:
            _warned.add((table, name))
            log.warning("column %s.%s says it holds %r but %s: it is not read", table, name, key, problem)
    return scan


def _register(scan: _Scan) -> None:
    global _version
    with _lock:
        for table, found in scan.found.items():
            if _columns.get((DATABASE, table)) != found:
                _columns[(DATABASE, table)] = dict(found)
                _version += 1


def _refresh_all(engine: Any) -> _Scan:
    scan = _scan(engine)
    _register(scan)
    return scan


def refresh(engine: Any, table: str = "events") -> dict[str, str]:
    """Read the materialized columns of ``events`` and ``persons`` from the engine into the registry (only
    columns that register for their key: see "Registration" above); ``table``'s ``key -> column`` map."""
    _table(table)
    return dict(_refresh_all(engine).found[table])


def materialize(engine: Any, keys: Iterable[str], table: str = "events") -> dict[str, str]:
    """Add a materialized column to ``table`` (``events`` or ``persons``) for each key (idempotent) and start
    filling it in the background.

    Returns ``key -> column`` for the keys asked. Adding is a metadata change; the fill is a mutation that runs
    while queries and inserts go on (``mutations_sync=0``); answers are the same whether or not it is done.
    Raises ``ValueError`` before any change if a key cannot be a column (:func:`refusal`), and
    :class:`MaterializeError` (or the engine's error) for the key that could not be added; keys before it are
    materialized.
    """
    _table(table)
    asked = list(dict.fromkeys(keys))
    for key in asked:
        if (why := refusal(key)) is not None:
            raise ValueError(f"cannot materialize the key {key!r}: {why}")
    with _ddl_lock:
        scan = _refresh_all(engine)
        made: dict[str, str] = {}
        for key in asked:
            made[key] = scan.found[table].get(key) or _add(engine, table, key, scan)
        return made


def _add(engine: Any, table: str, key: str, scan: _Scan) -> str:
    """Add ``key``'s column under its first free name and check it registers; ``scan`` is updated."""
    where = f"{DATABASE}.{table}"
    for name in candidate_names(key, table):
        if name.lower() in scan.taken[table]:
            continue
        try:
            engine.command(
                f"ALTER TABLE {where} ADD COLUMN {quote_identifier(name)} {COLUMN_TYPE} MATERIALIZED "
                f"{extraction(key)} COMMENT {quote_string(_TABLES[table].comment_prefix + key)}"
            )
        except EngineError:
            # Another process may have added this key, or taken this name, in the meantime; else it is a failure.
            fresh = _refresh_all(engine)
            scan.found, scan.taken = fresh.found, fresh.taken
            if key in scan.found[table]:
                return scan.found[table][key]
            if name.lower() in scan.taken[table]:
                continue
            raise
        fresh = _refresh_all(engine)
        scan.found, scan.taken = fresh.found, fresh.taken
        if scan.found[table].get(key) != name:
            # Never leave a column nobody reads: it was made a moment ago and is not in the registry.
            engine.command(f"ALTER TABLE {where} DROP COLUMN IF EXISTS {quote_identifier(name)}")
            raise MaterializeError(f"the column {name} made for {key!r} does not register for it; dropped")
        fill = f"ALTER TABLE {where} MATERIALIZE COLUMN {quote_identifier(name)}"
        engine.command(fill, settings={"mutations_sync": 0})
        return name
    raise MaterializeError(f"every column name for the key {key!r} is in use by other columns of {table}")


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
    for table, columns in _refresh_all(engine).found.items():
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
