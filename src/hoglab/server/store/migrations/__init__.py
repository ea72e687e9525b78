"""Versioned schema migrations of the metadata store, applied in order and recorded in ``schema_version``.

Adding one is a one-file change: drop ``vNNNN_what_it_does.py`` in this package with either a ``STATEMENTS``
sequence of SQL statements or an ``upgrade(conn)`` function. The number is its version; versions only grow and an
applied migration is never edited (write a new one). Each migration runs inside the same write transaction as
its ``schema_version`` row, so a failed migration leaves the file as it was.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..db import Database, StoreError, to_db_time, utcnow

__all__ = ["Migration", "available_migrations", "migrate"]

_NAME = re.compile(r"^v(\d{4})_\w+$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def _statements_runner(statements: Sequence[str]) -> Callable[[sqlite3.Connection], None]:
    def run(conn: sqlite3.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return run


def available_migrations() -> list[Migration]:
    """Every migration module of this package, by version.

    >>> available_migrations()[0].version
    1
    """
    found: list[Migration] = []
    for info in pkgutil.iter_modules(__path__):
        match = _NAME.match(info.name)
        if not match:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        upgrade = getattr(module, "upgrade", None)
        if upgrade is None:
            upgrade = _statements_runner(module.STATEMENTS)
        found.append(Migration(int(match.group(1)), info.name, upgrade))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a version number: {versions}")
    return found


def migrate(db: Database) -> list[int]:
    """Apply the migrations the file doesn't have yet; returns the versions applied now.

    The check and the upgrade share one ``BEGIN IMMEDIATE`` transaction, so two processes opening the same data
    dir at once (``hoglab serve`` and ``hoglab key create``) apply each migration exactly once.
    """
    migrations = available_migrations()
    applied_now: list[int] = []
    with db.write() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        applied = {int(row[0]) for row in conn.execute("SELECT version FROM schema_version")}
        known = {m.version for m in migrations}
        if applied - known:
            raise StoreError(
                f"{db.path} has schema version {max(applied)}, newer than this hoglab knows ({max(known)}): "
                "upgrade hoglab or use another data dir"
            )
        for migration in migrations:
            if migration.version in applied:
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, to_db_time(utcnow())),
            )
            applied_now.append(migration.version)
    return applied_now
