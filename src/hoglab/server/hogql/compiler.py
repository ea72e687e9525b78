"""``compile_hogql``: HogQL text in, ClickHouse SQL that can only read one project out.

>>> c = compile_hogql("select event, count() from events group by event", team_id=7)
>>> c.limit, c.has_implicit_limit, c.columns
(100, True, ('event', 'count()'))
>>> "equals(__hq_e.`team_id`, 7)" in c.sql
True
>>> c.hogql
'SELECT event, count() FROM events GROUP BY event LIMIT 101'
"""

from __future__ import annotations

import logging
import zoneinfo
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from hoglab.translate.errors import HogQLError, hint_quoted_string, node_span
from hoglab.translate.parse import parse_hogql, parse_hogql_expr
from hoglab.translate.values import bind_placeholders

from .actions import expand_matches_action
from .catalog import NO_MATERIALIZED, Catalog
from .check import check_query
from .posthog_names import rewrite_posthog_names
from .printer import apply_limit, name_columns, print_clickhouse, print_hogql, remember_texts
from .props import NameRead, use_materialized
from .resolve import Env, Resolver
from .textguard import guard_text_equalities

__all__ = ["REQUIRED_SETTINGS", "CompiledQuery", "FiltersCondition", "compile_hogql"]

log = logging.getLogger(__name__)

REQUIRED_SETTINGS: Mapping[str, Any] = {"join_use_nulls": 1}
"""Settings the printed SQL assumes: a person that does not match is NULL, not zero values."""

FiltersCondition = Callable[[], "tuple[str, Mapping[str, Any]] | None"]
"""What ``{filters}`` expands to, asked for only when a statement uses it: a HogQL condition and the values of its
placeholders, or None for ``true``. The query service passes the one property-filter translator's
(``server/filters/hogql_filters.py``), so the compiler never imports the translator that imports it."""


@dataclass(frozen=True)
class CompiledQuery:
    """A compiled statement.

    ``sql`` is ClickHouse SQL for the engine; ``hogql`` the normalised HogQL with the effective LIMIT (the
    response's ``hogql`` field); ``limit``/``offset`` are the effective top-level values when constant;
    ``has_implicit_limit`` is True when the default limit was applied (run as ``limit + 1``: trim the extra
    row and set ``hasMore``); ``columns`` are the output names when knowable; ``settings`` must be passed to
    the engine with the SQL. ``reads`` are the property keys the statement reads and the event names it compares
    ``event`` with (:class:`~.props.NameRead`), each once, for the query service's warnings.
    """

    sql: str
    hogql: str
    limit: int | None
    offset: int | None
    has_implicit_limit: bool
    columns: tuple[str, ...] | None = None
    settings: Mapping[str, Any] = field(default_factory=lambda: dict(REQUIRED_SETTINGS))
    reads: tuple[NameRead, ...] = ()


def _validate_args(team_id: int, timezone: str, max_limit: int, default_limit: int | None, database: str) -> None:
    if isinstance(team_id, bool) or not isinstance(team_id, int):
        raise TypeError("team_id must be an int")
    if not isinstance(max_limit, int) or (default_limit is not None and not isinstance(default_limit, int)):
        raise TypeError("limits must be ints")
    if not database.isidentifier():
        raise ValueError(f"Invalid database name {database!r}")
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise HogQLError(f"Unknown time zone {timezone!r}") from None


def compile_hogql(
    query: str,
    *,
    team_id: int,
    values: Mapping[str, Any] | None = None,
    timezone: str = "UTC",
    default_limit: int | None = 100,
    max_limit: int = 10_000,
    database: str = "hoglab",
    person_overrides: bool = False,
    filters: FiltersCondition | None = None,
    numeric_properties: Mapping[str, Collection[str]] | None = None,
    query_log: Sequence[Mapping[str, Any]] = (),
    catalog: Catalog = NO_MATERIALIZED,
) -> CompiledQuery:
    """Compile one HogQL SELECT for project ``team_id``; every refusal is a :class:`HogQLError`.

    ``values`` bind ``{name}`` placeholders as literals. ``filters`` gives what a ``{filters}`` placeholder expands
    to (:data:`FiltersCondition`; ``true`` when absent). ``person_overrides`` routes
    ``events.person_id`` through the person merge table. ``numeric_properties`` (HogQL table -> property keys the
    project's data types as numbers, PostHog's property definitions) are read as numbers where order matters.
    ``query_log`` are the records the ``query_log`` table shows: the caller's own, and nobody else's.
    ``catalog`` says which properties the engine holds as columns (:mod:`.catalog`; the query service passes the
    engine's); a key it names is read from its column, with the same answer. Its ``actions()`` are what
    ``matchesAction(id or name)`` may name (the project's, handed in by the query service; none without a catalog).
    """
    _validate_args(team_id, timezone, max_limit, default_limit, database)
    if not isinstance(query, str):
        raise HogQLError("The query must be a string")
    try:
        return _compile(
            query,
            team_id,
            values,
            timezone,
            default_limit,
            max_limit,
            database,
            person_overrides,
            filters,
            numeric_properties,
            query_log,
            catalog,
        )
    except HogQLError as e:
        raise hint_quoted_string(e, query).locate(query) from None
    except RecursionError:
        raise HogQLError("The query is nested too deeply") from None
    except SqlglotError as e:
        raise HogQLError(f"Could not compile the query: {str(e).splitlines()[0] if str(e) else e!r}") from None
    except Exception as e:  # a bug in the compiler must still reach the user as a 400, and be logged
        log.exception("HogQL compiler failed on %r", query[:1000])
        raise HogQLError(f"Internal error while compiling the query ({type(e).__name__})", internal=True) from e


def _filters_builder(filters: FiltersCondition | None, timezone: str) -> Callable[[], exp.Expr]:
    def build() -> exp.Expr:
        condition = filters() if filters is not None else None
        if condition is None:
            return exp.true()
        hogql, values = condition
        expression = parse_hogql_expr(f"({hogql})")
        for node in expression.walk():  # positions in the filters' own text would point into the statement's
            for key in ("line", "col", "start", "end"):
                node.meta.pop(key, None)
            node.meta[FILTERS_META] = True
        return bind_placeholders(expression, values, timezone=timezone)

    return build


FILTERS_META = "hq_filters"
"""Set on the nodes ``{filters}`` expanded to."""


def _filters_over_sessions(tree: exp.Expr) -> None:
    """``{filters}`` in a SELECT over ``sessions`` reads the session's own fields, as PostHog's: its date range
    ``$start_timestamp`` (events' ``timestamp``) and a session filter ``$field`` (events' ``session.$field``)."""
    for select in tree.find_all(exp.Select):
        source = select.args.get("from_")
        table = source.this if source is not None else None
        if not (isinstance(table, exp.Table) and table.name == "sessions" and not table.args.get("db")):
            continue
        if select.args.get("joins"):
            continue
        for column in list(select.find_all(exp.Column)):
            if not column.meta.get(FILTERS_META) or column.find_ancestor(exp.Select) is not select:
                continue
            if column.table == "session" and not column.args.get("db"):
                column.replace(exp.column(column.name))
            elif column.name == "timestamp" and not column.table:
                column.replace(exp.column("$start_timestamp"))


def _event_names(tree: exp.Expr) -> list[NameRead]:
    """String literals compared with a column named ``event`` (``event = 'x'``, ``e.event IN ('x', 'y')``)."""
    found: list[NameRead] = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        if isinstance(node, exp.In):
            column, values = node.this, list(node.expressions)
        else:
            column, values = (node.this, [node.expression])
            if not isinstance(column, exp.Column):
                column, values = node.expression, [node.this]
        if not (isinstance(column, exp.Column) and column.name == "event" and len(column.parts) <= 2):
            continue
        for value in values:
            if isinstance(value, exp.Literal) and value.is_string:
                found.append(NameRead("event", value.this, *node_span(value), literal=True))
    return found


def _once(reads: Sequence[NameRead]) -> tuple[NameRead, ...]:
    first: dict[tuple[str, str], NameRead] = {}
    for read in reads:
        first.setdefault((read.kind, read.name), read)
    return tuple(first.values())


def _compile(
    query: str,
    team_id: int,
    values: Mapping[str, Any] | None,
    timezone: str,
    default_limit: int | None,
    max_limit: int,
    database: str,
    person_overrides: bool,
    filters: FiltersCondition | None,
    numeric_properties: Mapping[str, Collection[str]] | None,
    query_log: Sequence[Mapping[str, Any]],
    catalog: Catalog,
) -> CompiledQuery:
    tree = parse_hogql(query)
    bound = bind_placeholders(tree, values, timezone=timezone, special={"filters": _filters_builder(filters, timezone)})
    _filters_over_sessions(bound)
    # Actions expand before the allow-lists: their conditions are checked and guarded like the user's own text.
    bound = expand_matches_action(bound, catalog, timezone=timezone)
    bound = rewrite_posthog_names(bound)
    assert isinstance(bound, (exp.Select, exp.SetOperation))
    check_query(bound)
    top, limits = apply_limit(bound, default_limit=default_limit, max_limit=max_limit)
    hogql = print_hogql(top)
    remember_texts(top)
    events = _event_names(top)
    resolver = Resolver(
        team_id=team_id,
        database=database,
        timezone=timezone,
        person_overrides=person_overrides,
        numeric_properties=numeric_properties,
        query_log=query_log,
        catalog=catalog,
    )
    resolver.resolve_query(top, Env())
    columns = name_columns(top, resolver.scopes)
    use_materialized(top)
    guard_text_equalities(top)
    from .guard import verify_guards, verify_lexing
    from .timezones import apply_timezone

    apply_timezone(top, timezone)
    verify_guards(top, team_id=team_id, database=database)
    sql = print_clickhouse(top)
    verify_lexing(sql)
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError:
        raise HogQLError("The query or a value contains text that is not valid Unicode") from None
    return CompiledQuery(
        sql=sql,
        hogql=hogql,
        limit=limits.limit,
        offset=limits.offset,
        has_implicit_limit=limits.has_implicit_limit,
        columns=columns,
        reads=_once([*events, *resolver.reads]),
    )
