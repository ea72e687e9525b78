"""Materialized properties: hot JSON properties of ``events`` as their own columns (PostHog's ``mat_$browser``).

A property ``key`` becomes the column ``mat_<key>``::

    `mat_$browser` Nullable(String) MATERIALIZED JSONExtract(properties, '$browser', 'Nullable(String)')
        COMMENT 'hoglab:properties:$browser'

Its expression is exactly the one the HogQL compiler prints for ``properties.$browser`` (hogql/props.py), so a
query reading the column answers what the JSON extraction answers, by construction: the same type, ``NULL`` for a
missing key and for a JSON ``null``, a number as its JSON text, ``''`` for an empty string. That is why the
compiler may swap one for the other wherever it reads ``events.properties`` with one key (:func:`lookup`).

Adding the column is a metadata change (``ALTER TABLE ... ADD COLUMN``, no data rewritten, nothing blocked); its
values are then written by a background mutation (``MATERIALIZE COLUMN``) while queries and inserts go on. Until a
part has been rewritten, ClickHouse computes the column from its expression when that part is read, so answers are
the same before, during and after the fill; only the speed changes. New rows get the column as they are inserted.

The comment records the key, so the registry is rebuilt from ``system.columns`` when an engine opens
(:func:`refresh`): chDB and a ClickHouse server alike, and a column added by another process on the same server is
found at the next refresh. The registry is process-wide (the compiler has no engine at hand); a process opens one
chDB directory, or one ClickHouse database, at a time.

Which keys: by hand (``hoglab materialize --project ID '$browser' plan``, :func:`materialize`), and automatically:
every property the compiler reads is counted (:func:`lookup`), and :class:`~.autoprops.AutoMaterializer`
materializes the keys most used in filters and group-bys.

>>> column_name("$browser"), column_name("utm source"), column_name("a`b")
('mat_$browser', 'mat_utm_source_29477461', 'mat_a_b_1c557992')
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
    "COMMENT_PREFIX",
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
_SAFE = re.compile(r"^[A-Za-z0-9_$]{1,100}$")

_lock = threading.Lock()
_columns: dict[str, dict[str, str]] = {}  # database -> {property key -> column name} of its events table
_version = 0
_usage: Counter[str] = Counter()
_suspended = False


def column_name(key: str) -> str:
    """``mat_<key>`` when the key is made of letters, digits, ``_`` and ``$``; else a readable part and a hash."""
    if _SAFE.match(key):
        return f"mat_{key}"
    readable = re.sub(r"[^A-Za-z0-9_$]+", "_", key)[:60]
    return f"mat_{readable}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def extraction(key: str) -> str:
    """The column's expression: the compiler's ``properties.<key>`` (hogql/props.py ``json_access``)."""
    return f"JSONExtract(properties, {quote_string(key)}, 'Nullable(String)')"


def lookup(key: str, database: str = DATABASE) -> str | None:
    """The column holding ``<database>.events.properties.<key>``, if there is one. Every call counts as one use of
    the key (the compiler calls it for each property it reads), which is what automatic materialization ranks by."""
    with _lock:
        if database == DATABASE:
            _usage[key] += 1
        return None if _suspended else _columns.get(database, {}).get(key)


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


def materialized_columns(database: str = DATABASE) -> dict[str, str]:
    """Every materialized ``key -> column`` of ``<database>.events`` known to this process."""
    with _lock:
        return dict(_columns.get(database, {}))


def registry_version() -> int:
    """Grows whenever a column is added to the registry (compiled statements are cached by it)."""
    return _version


def take_usage() -> Counter[str]:
    """The uses counted since the last call (and reset them)."""
    global _usage
    with _lock:
        taken, _usage = _usage, Counter()
        return taken


def _register(found: dict[str, str]) -> None:
    global _version
    with _lock:
        known = _columns.setdefault(DATABASE, {})
        if any(known.get(k) != v for k, v in found.items()):
            known.update(found)
            _version += 1


def _rows(engine: Any, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = engine.execute(sql, settings={"max_result_rows": 0}).to_pylist()
    return rows


def refresh(engine: Any) -> dict[str, str]:
    """Read the materialized columns of ``events`` from the engine into the registry; the ``key -> column`` map."""
    rows = _rows(
        engine,
        f"SELECT name, comment FROM system.columns WHERE database = {quote_string(DATABASE)} "
        f"AND table = 'events' AND startsWith(comment, {quote_string(COMMENT_PREFIX)})",
    )
    found = {str(r["comment"])[len(COMMENT_PREFIX) :]: str(r["name"]) for r in rows}
    _register(found)
    return found


def materialize(engine: Any, keys: Iterable[str]) -> dict[str, str]:
    """Add a materialized column for each key (idempotent) and start filling it in the background.

    Returns ``key -> column`` for the keys asked. Adding is a metadata change; the fill is a mutation that runs
    while queries and inserts go on (``mutations_sync=0``); answers are the same whether or not it is done.
    """
    known = refresh(engine)
    made: dict[str, str] = {}
    for key in keys:
        if not isinstance(key, str) or not key or len(key) > 400:
            raise ValueError(f"a property key is 1 to 400 characters, got {key!r}")
        column = known.get(key) or column_name(key)
        if key not in known:
            engine.command(
                f"ALTER TABLE {DATABASE}.events ADD COLUMN IF NOT EXISTS {quote_identifier(column)} Nullable(String) "
                f"MATERIALIZED {extraction(key)} COMMENT {quote_string(COMMENT_PREFIX + key)}"
            )
            engine.command(
                f"ALTER TABLE {DATABASE}.events MATERIALIZE COLUMN {quote_identifier(column)}",
                settings={"mutations_sync": 0},
            )
        made[key] = column
    _register(made)
    return made


@dataclass(frozen=True)
class FillStatus:
    """How far the background fill of one column is: ``done`` once every part holds its values."""

    key: str
    column: str
    done: bool
    parts_to_do: int


def fill_status(engine: Any) -> list[FillStatus]:
    """The fill of every materialized column, from ``system.mutations``."""
    columns = refresh(engine)
    rows = _rows(
        engine,
        f"SELECT command, is_done, parts_to_do FROM system.mutations WHERE database = {quote_string(DATABASE)} "
        "AND table = 'events' AND position(command, 'MATERIALIZE COLUMN') > 0",
    )
    out = []
    for key, column in sorted(columns.items()):
        mine = [r for r in rows if str(r["command"]).rstrip().endswith((column, quote_identifier(column)))]
        out.append(
            FillStatus(key, column, all(bool(r["is_done"]) for r in mine), sum(int(r["parts_to_do"]) for r in mine))
        )
    return out
