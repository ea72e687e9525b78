"""The engine's :class:`~hoglab.server.hogql.catalog.Catalog`: what the HogQL compiler is told of the engine.

The compiler imports nothing from the engine, nor the engine from the compiler: this adapter between the two
lives in the query service. ``runners/base.py`` ``RunContext`` and the other callers of ``compile_hogql`` hand
the compiler :data:`ENGINE_CATALOG`, which answers from the process-wide registry of materialized properties
(``engine/materialized.py``): the columns the engine holds, none while ``materialized.suspended()``, and a
version that moves whenever either changes (compiled statements are cached by it, so a property materialized
while the service runs is read from its column by the next compile). Each key the compiler asks for counts as
one use of it by the project compiled for, which automatic materialization ranks keys by, within each project's
budget (``engine/autoprops.py``).

>>> from hoglab.server.hogql.catalog import Catalog
>>> catalog: Catalog = ENGINE_CATALOG
>>> catalog.columns("nowhere", "events")
{}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from sqlglot import exp

from ..engine import materialized
from ..hogql.catalog import NO_MATERIALIZED, ActionDefinition

__all__ = ["ENGINE_CATALOG", "EngineCatalog"]


class EngineCatalog:
    """The materialized columns of this process's engine (one engine per process: the registry is global)."""

    def version(self) -> Hashable:
        return materialized.registry_version()

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        return materialized.lookup(key, database, table, team_id)

    def columns(self, database: str, table: str) -> dict[str, str]:
        return materialized.materialized_columns(database, table)

    def actions(self) -> Mapping[int, ActionDefinition]:
        """None: actions belong to a project, which the query service adds (``hogql.catalog.WithActions``)."""
        return {}

    def action_condition(self, action: ActionDefinition, timezone: str) -> exp.Expr:
        return NO_MATERIALIZED.action_condition(action, timezone)  # it holds none: "not found"


ENGINE_CATALOG = EngineCatalog()
"""The one engine catalog of the process."""
