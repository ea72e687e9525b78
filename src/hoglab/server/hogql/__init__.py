"""The HogQL compiler: HogQL text -> ClickHouse SQL that can only read the caller's project.

Pipeline: parse (sqlglot's ClickHouse dialect, narrowed: dialect.py, parse.py) -> bind ``{name}`` values
(values.py) -> allow-lists (check.py, functions.py) -> top-level limits (printer.py) -> resolution of tables,
fields, properties and persons into guarded views (resolve.py, scope.py, props.py, tables.py) -> project time
zone (timezones.py) -> proof that every table read is team-guarded (guard.py) -> ClickHouse SQL.

It reads no engine or store state: what it must know of the engine (which properties are materialized as columns)
and of the project (its actions, for ``matchesAction``: actions.py) comes in a catalog its caller hands it
(catalog.py; the query service passes the engine's, ``query/catalog.py``, with the project's actions).

>>> compile_hogql("select count() from events", team_id=1).columns
('count()',)

See docs/hogql.md for what is accepted and why.
"""

from .catalog import NO_MATERIALIZED, ActionDefinition, Catalog, StaticCatalog, WithActions
from .compiler import REQUIRED_SETTINGS, CompiledQuery, compile_hogql
from .errors import HogQLError
from .parse import parse_hogql, parse_hogql_expr
from .tables import PERSON_OVERRIDES_DDL, PERSON_OVERRIDES_TABLE, TABLES
from .values import escape_identifier, escape_literal

__all__ = [
    "NO_MATERIALIZED",
    "PERSON_OVERRIDES_DDL",
    "PERSON_OVERRIDES_TABLE",
    "REQUIRED_SETTINGS",
    "TABLES",
    "ActionDefinition",
    "Catalog",
    "CompiledQuery",
    "HogQLError",
    "StaticCatalog",
    "WithActions",
    "compile_hogql",
    "escape_identifier",
    "escape_literal",
    "parse_hogql",
    "parse_hogql_expr",
]
