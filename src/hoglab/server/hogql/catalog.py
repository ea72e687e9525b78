"""What the compiler must know of the engine, handed to it: a :class:`Catalog`.

The compiler prints SQL and runs nothing, so it reads no engine state of its own. The one engine fact that
changes how it prints is which ``properties`` keys of ``events`` and ``persons`` are materialized as columns
(``mat_<key>``, ``pmat_<key>``): where one is, the compiler reads the column instead of extracting the key from
the JSON (the same values by construction, ``engine/materialized.py``). Whoever compiles passes a catalog:
the query service passes the engine's (``engine/catalog.py``, which also counts each key read, for automatic
materialization); without one, nothing is materialized (:data:`NO_MATERIALIZED`), which answers the same, only
slower.

A catalog's :meth:`~Catalog.version` changes whenever its answers change, so a cache of compiled statements
keyed on it never serves a statement printed for another set of columns.

>>> from hoglab.server.hogql import compile_hogql
>>> columns = StaticCatalog({("hoglab", "events"): {"$browser": "mat_$browser"}})
>>> "`mat_$browser`" in compile_hogql("select properties.$browser from events", team_id=1, catalog=columns).sql
True
>>> "`mat_$browser`" in compile_hogql("select properties.$browser from events", team_id=1).sql
False
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Protocol

__all__ = ["NO_MATERIALIZED", "Catalog", "StaticCatalog"]


class Catalog(Protocol):
    """The engine's materialized properties, as the compiler reads them (``table`` is ``events`` or ``persons``)."""

    def version(self) -> Hashable:
        """A value that changes whenever :meth:`column` or :meth:`columns` would answer differently."""
        ...

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        """The column holding ``<database>.<table>.properties.<key>``, if there is one. The compiler asks once
        for each property it reads with a single key, naming the project it compiles for (the engine's catalog
        counts those reads per project)."""
        ...

    def columns(self, database: str, table: str) -> Mapping[str, str]:
        """Every materialized ``key -> column`` of ``<database>.<table>`` (the views carry them all)."""
        ...


class StaticCatalog:
    """A catalog of fixed columns, ``{(database, table): {key: column}}``: for tools and tests without an engine.

    >>> StaticCatalog({("hoglab", "persons"): {"email": "pmat_email"}}).column("email", "hoglab", "persons")
    'pmat_email'
    """

    def __init__(self, columns: Mapping[tuple[str, str], Mapping[str, str]] | None = None) -> None:
        self._columns = {place: dict(found) for place, found in (columns or {}).items()}
        self._version = tuple(sorted((place, tuple(sorted(found.items()))) for place, found in self._columns.items()))

    def version(self) -> Hashable:
        return self._version

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        return self._columns.get((database, table), {}).get(key)

    def columns(self, database: str, table: str) -> Mapping[str, str]:
        return dict(self._columns.get((database, table), {}))


NO_MATERIALIZED = StaticCatalog()
"""The catalog of an engine without materialized columns: every property is read from its JSON."""
