"""Name resolution, scope by scope: tables become guarded views, fields become qualified columns.

For each SELECT (a *scope*), in order:

1. ``WITH`` queries are resolved and renamed ``__hq_cte_<n>`` (so a CTE name can never fall through to a real
   table in the engine's current database); scalar ``WITH expr AS name`` become visible aliases.
2. Every FROM/JOIN item becomes a source: a HogQL table (later replaced by its guarded view), a CTE, a
   subquery (resolved as its own scope) or ``numbers(n)``. Anything else is refused.
3. ``*`` is expanded where a table is in scope; every column reference in the scope's expressions is resolved
   against the sources: ``properties.x`` to a JSON access, ``person.*``/``pdi.*`` through a LEFT JOIN added
   once per source, plain fields to ``<alias>.<field>``. Subqueries met in expressions are scopes of their own.
4. Tables are replaced by their views (see tables.py), which is where ``team_id`` is filtered.

Unqualified names that match an alias of the scope keep ClickHouse's meaning (the alias). A name no source
has is refused with its position when every source's columns are known; when a subquery has unnamed columns
it is left for ClickHouse to report. Correlated references to an outer query are not supported.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from hoglab.translate.budget import checkpoint
from hoglab.translate.dialect import HogQLDialect
from hoglab.translate.errors import HogQLError, node_span
from hoglab.translate.parse import parse_hogql_expr
from hoglab.translate.values import escape_identifier

from .catalog import NO_MATERIALIZED, Catalog
from .check import chain_top
from .nullsafe import NULLABLE_META, apply_null_rules
from .props import (
    EVENT_PROPERTIES_META,
    JSON_META,
    NAME_META,
    PERSON_PROPERTIES_META,
    PROP_META,
    TYPED_NODES,
    NameRead,
    json_access,
    mark_json,
    type_comparisons,
    type_numeric_contexts,
)
from .query_log import query_log_view
from .scope import Columns, Scope, Source, collect_sources, expand_stars, output_columns, scope_nodes, walk_scope
from .suggest import did_you_mean
from .tables import TABLES, ViewOptions, build_view

__all__ = ["Resolver"]


def _err(message: str, node: exp.Expr | None) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def _unknown(message: str, name: str, node: exp.Expr, candidates: Iterable[str]) -> HogQLError:
    """An unknown name's error with the closest known names; a quoted name is remembered on it
    (``HogQLError.quoted_name``) for the compiler's "strings take single quotes" hint."""
    hint = did_you_mean(name, candidates)
    error = _err(f"{message}; {hint}" if hint else message, node)
    ident = node.this if isinstance(node, exp.Column) else None
    if isinstance(ident, exp.Identifier) and ident.quoted and ident.name == name:
        error.quoted_name = name
    return error


@dataclass
class Env:
    """What a scope inherits: visible CTEs (name -> (internal name, output columns)) and WITH aliases."""

    ctes: dict[str, tuple[str, Columns]] = field(default_factory=dict)
    aliases: set[str] = field(default_factory=set)

    def child(self) -> Env:
        return Env(dict(self.ctes), set(self.aliases))


class Resolver:
    """Resolves one query tree in place. ``views`` counts the guarded views it created."""

    def __init__(
        self,
        *,
        team_id: int,
        database: str,
        timezone: str,
        person_overrides: bool,
        numeric_properties: Mapping[str, Collection[str]] | None = None,
        query_log: Sequence[Mapping[str, Any]] = (),
        catalog: Catalog = NO_MATERIALIZED,
    ) -> None:
        self.team_id = team_id
        self.catalog = catalog
        self.query_log = query_log
        self.numeric_properties = numeric_properties or {}
        self.database = database
        self.timezone = timezone
        self.person_overrides = person_overrides
        self._ids = itertools.count(1)
        self.views = 0
        self.scopes: dict[int, Scope] = {}
        self.reads: list[NameRead] = []  # the property keys the statement reads (props.NameRead)
        self._virtual = 0  # > 0 while a virtual field's own expression resolves: its reads are not the user's

    def new_name(self, kind: str) -> str:
        return f"__hq_{kind}_{next(self._ids)}"

    # ---- queries and scopes ------------------------------------------------------------------------------

    def resolve_query(self, node: exp.Expr, env: Env) -> None:
        if isinstance(node, exp.Subquery):
            self.resolve_query(node.this, env)
            return
        env = self._resolve_with(node, env)
        if isinstance(node, exp.SetOperation):
            # ``WITH (SELECT ..) AS x SELECT .. UNION ALL ..``: a scalar WITH on the set operation has no FROM of
            # its own, but the queries inside it must be resolved (guarded) like any other.
            for cte in node.args["with_"].expressions if node.args.get("with_") else []:
                if cte.args.get("scalar"):
                    for nested in list(walk_scope(cte.this)):
                        if nested is not cte.this and isinstance(nested, (exp.Select, exp.SetOperation)):
                            self.resolve_query(nested, env)
            self.resolve_query(node.this, env)
            self.resolve_query(node.expression, env)
        elif isinstance(node, exp.Select):
            self._resolve_select(node, env)
        else:
            raise _err(f"Unsupported query: {type(node).__name__}", node)

    def _resolve_with(self, node: exp.Expr, env: Env) -> Env:
        with_ = node.args.get("with_")
        if not with_:
            return env
        env = env.child()
        for cte in with_.expressions:
            name = cte.alias
            if cte.args.get("scalar"):
                env.aliases.add(name)
                continue
            if cte.args["alias"].columns:
                raise _err("Column lists on WITH queries are not supported", cte)
            # A CTE sees the ones before it, not itself: ``WITH events AS (SELECT .. FROM events)`` reads the table.
            self.resolve_query(cte.this, env)
            internal = self.new_name("cte")
            env.ctes[name] = (internal, output_columns(cte.this))
            cte.set("alias", exp.TableAlias(this=exp.to_identifier(internal)))
        return env

    def _resolve_select(self, select: exp.Select, env: Env) -> None:
        checkpoint()  # the compile budget (translate/budget.py): each SELECT is a unit of work
        scope = Scope(select=select, env_aliases=set(env.aliases))
        prewhere = select.args.get("prewhere")
        if prewhere is not None:
            # The views are subqueries, where ClickHouse has no PREWHERE; as a filter it means the same.
            select.set("prewhere", None)
            select.where(prewhere.this, copy=False)
        with_ = select.args.get("with_")
        if with_:
            scope.scalar_ctes = [cte for cte in with_.expressions if cte.args.get("scalar")]
        collect_sources(scope, env, self)
        self.scopes[id(select)] = scope
        scope.collect_aliases()
        expand_stars(scope, self)
        nodes = list(scope_nodes(scope))
        for nested in [n for n in nodes if isinstance(n, (exp.Select, exp.SetOperation))]:
            self.resolve_query(nested, env)
        for node in nodes:
            if isinstance(node, exp.In) and node.args.get("field") is not None:
                self._rewrite_in_name(node, env)
        nodes = list(scope_nodes(scope))
        for column in [n for n in nodes if isinstance(n, exp.Column)]:
            if column.parent is not None:
                self._resolve_column(column, scope)
        # Innermost first, so properties['a']['b'] (and properties.a[1].b) folds into one access.
        for access in reversed([n for n in scope_nodes(scope) if isinstance(n, (exp.Bracket, exp.Dot))]):
            if isinstance(access, exp.Bracket):
                self._resolve_bracket(access)
            else:
                self._resolve_dot(access)
        type_comparisons([n for n in scope_nodes(scope) if isinstance(n, TYPED_NODES)])
        type_numeric_contexts(list(scope_nodes(scope)), self.numeric_properties)
        apply_null_rules(list(scope_nodes(scope)))
        scope.name_properties()
        self._add_lazy_joins(scope)
        self._replace_tables(scope)

    def _rewrite_in_name(self, node: exp.In, env: Env) -> None:
        # ``x IN name`` reads table ``name`` in ClickHouse: only a CTE may be named there, as (SELECT * FROM cte).
        target = node.args["field"]
        if not isinstance(target, (exp.Column, exp.Dot, exp.Table)):
            return  # a bound list or another expression, e.g. x IN {ids}
        name = target.name if isinstance(target, exp.Column) and len(target.parts) == 1 else None
        if name is None or name not in env.ctes:
            raise _err("IN needs a list, a subquery or the name of a WITH query", target)
        internal, _ = env.ctes[name]
        node.set("field", None)
        table = exp.Table(this=exp.to_identifier(internal))
        node.set("query", exp.Subquery(this=exp.Select(expressions=[exp.Star()]).from_(table, copy=False)))

    # ---- column references -------------------------------------------------------------------------------

    def _resolve_column(self, column: exp.Column, scope: Scope) -> None:
        checkpoint()
        if column.meta.get("hq_done") or isinstance(column.this, exp.Star):
            return
        top = chain_top(column)
        parts = top.parts
        indexes: list[exp.Expr] = []
        names: list[str] = []
        in_properties = False
        for part in parts:
            if isinstance(part, exp.Identifier):
                in_properties = in_properties or part.name.lower() == "properties"
                names.append(part.name)
            elif in_properties and isinstance(part, exp.Literal) and part.is_int:
                # properties.a.1: the first element of a JSON array (or member of an object), as PostHog's
                # JSONExtract(properties, 'a', 1); 1-based, so 0 is refused as PostHog refuses it
                if int(part.this) == 0:
                    raise _err("SQL indexes start from one, not from zero. E.g: array.1", column)
                names.append(JsonIndex(part.this))
            else:
                break
        else:
            parts = []
        for part in parts[len(names):]:
            if not (isinstance(part, exp.Literal) and part.is_int):
                return  # another element access: ClickHouse's business
            indexes.append(part)  # a tuple element: person_display_name.1
        if not names:
            return
        if scope.is_lambda_param(column, names[0]):
            return
        replacement = self._resolve_names(names, column, scope)
        for index in indexes if replacement is not None else ():
            replacement = exp.Anonymous(this="tupleElement", expressions=[replacement, exp.Literal.number(index.this)])
        if replacement is not None:
            replacement.meta["hq_done"] = True
            top.replace(replacement)

    def _resolve_names(self, names: list[str], node: exp.Expr, scope: Scope) -> exp.Expr | None:
        first = names[0]
        if len(names) == 1 and scope.is_alias(first, node):
            return None
        source = scope.by_alias(first) if len(names) > 1 else None
        rest = names[1:]
        if source is None:
            if first.lower() == "team_id":
                raise _err("'team_id' is reserved: a query only ever sees its own project's rows", node)
            candidates = scope.sources_with(first)
            if len(candidates) > 1:
                raise _err(f"Ambiguous name '{first}': qualify it with one of {scope.aliases_of(candidates)}", node)
            if not candidates:
                for known in (s.schema for s in scope.sources if s.schema is not None and first in s.schema.unserved):
                    raise _err(f"Field '{first}' of PostHog's {known.name} is not recorded by hoglab: "
                               f"{known.unserved[first]}", node)  # fmt: skip
                if len(names) > 1 and not scope.is_alias(first, node):
                    raise _unknown(f"Unknown table or field '{first}'", first, node, scope.known_names(tables=True))
                # Only refuse what no source can have: a subquery with unnamed columns might still have it.
                if first not in scope.env_aliases and all(s.has(first) is False for s in scope.sources):
                    tables = ", ".join(s.alias or "(subquery)" for s in scope.sources) or "no table"
                    raise _unknown(f"Unknown field '{first}' (reading {tables})", first, node, scope.known_names())
                return None
            source, rest = candidates[0], names
        return self._resolve_in_source(source, rest, node, scope)

    def _resolve_in_source(self, source: Source, rest: list[str], node: exp.Expr, scope: Scope) -> exp.Expr | None:
        if not rest:
            raise _err(f"'{source.alias}' is a table: name one of its fields", node)
        name = rest[0]
        if name.lower() == "team_id":
            raise _err("'team_id' is reserved: a query only ever sees its own project's rows", node)
        if source.kind == "derived":
            kind = source.columns.names.get(name) if source.columns is not None else None
            ref = exp.column(exp.to_identifier(name, quoted=True), table=source.alias_identifier())
            ref.meta[NULLABLE_META] = True
            if kind is True:
                mark_json(ref, name)
                return json_access(ref, _keys(rest[1:]), self.catalog, self.team_id) if len(rest) > 1 else ref
            return ref if len(rest) == 1 else None
        if source.kind == "numbers":
            if name != "number" or len(rest) > 1:
                raise _err(f"numbers() has one field, 'number'; got '{'.'.join(rest)}'", node)
            return exp.column("number", table=source.alias_identifier())
        schema = source.schema
        assert schema is not None
        if name in schema.joins:
            if len(rest) == 1:
                raise _err(f"'{name}' is a join: name one of its fields, e.g. {name}.id or {name}.properties.x", node)
            target = self._lazy_source(source, name, scope)
            return self._resolve_in_source(target, rest[1:], node, scope)
        fld = schema.field(name)
        if fld is None and name in schema.unserved:
            raise _err(f"Field '{name}' of PostHog's {schema.name} is not recorded by hoglab: "
                       f"{schema.unserved[name]}", node)  # fmt: skip
        if fld is None:
            known = [f.name for f in schema.fields] + list(schema.joins)
            raise _unknown(f"Field '{name}' not found on table '{schema.name}'", name, node, known)
        if fld.kind == "virtual":
            if len(rest) > 1:
                raise _err(f"Field '{name}' has no sub-fields", node)
            virtual = self._virtual_field(fld.expression, source, scope)
            virtual.meta[NAME_META] = name
            return virtual
        if name == "person_id":
            source.needs_person_id = True
        ref = exp.column(exp.to_identifier(name, quoted=True), table=source.alias_identifier())
        if fld.kind == "json":
            mark_json(ref, name, schema.name)
            if name == "properties" and len(rest) > 1 and not isinstance(rest[1], JsonIndex):
                self._read_property(schema.name, rest[1], node)
            if schema.name == "events" and name == "properties":
                ref.meta[EVENT_PROPERTIES_META] = self.database  # keys may be materialized columns (props.py)
            elif schema.name == "persons" and name == "properties":
                ref.meta[PERSON_PROPERTIES_META] = self.database
            return json_access(ref, _keys(rest[1:]), self.catalog, self.team_id) if len(rest) > 1 else ref
        if len(rest) > 1:
            raise _err(f"Field '{name}' has no sub-fields", node)
        ref.meta[NAME_META] = name
        if source.join_on is not None:
            ref.meta[NULLABLE_META] = True  # a lazily joined row that does not exist reads as NULL
        return ref

    def _read_property(self, table: str, key: str, node: exp.Expr) -> None:
        if self._virtual or table not in ("events", "persons"):
            return
        top = chain_top(node)
        parts = top.parts if isinstance(top, (exp.Column, exp.Dot)) else []
        # the key's own identifier, right after "properties": where a warning about it points
        at = next((p for before, p in itertools.pairwise(parts)
                   if before.name == "properties" and p.name == key), None)  # fmt: skip
        start, end = node_span(at) if at is not None else (None, None)
        self.reads.append(NameRead("events" if table == "events" else "persons", key, start, end))

    def _virtual_field(self, template: str, source: Source, scope: Scope) -> exp.Expr:
        # The expression is HogQL over the source's own alias, resolved here like the user's text.
        assert source.alias is not None
        expression = parse_hogql_expr(template.format(table=escape_identifier(source.alias)))
        holder = exp.Paren(this=expression)
        self._virtual += 1
        try:
            for column in list(holder.find_all(exp.Column)):
                top = chain_top(column)
                names = [p.name for p in top.parts]
                resolved = self._resolve_names(names, column, scope)
                if resolved is not None:
                    resolved.meta["hq_done"] = True
                    top.replace(resolved)
        finally:
            self._virtual -= 1
        result: exp.Expr = holder.this
        result.meta["hq_done"] = True
        return result

    def _lazy_source(self, source: Source, name: str, scope: Scope) -> Source:
        if name not in source.lazy:
            assert source.schema is not None
            join = source.schema.joins[name]
            target = Source(alias=self.new_name(name), kind="table", schema=TABLES[join.target], node=None)
            target.join_on = (join.to_field, source, join.from_field)
            target.group_index = join.group_index
            if join.from_field == "person_id":
                source.needs_person_id = True
            source.lazy[name] = target
            scope.lazy.append(target)
        return source.lazy[name]

    def _resolve_dot(self, dot: exp.Dot) -> None:
        # properties.a[1].b: a key (or .1, a position) after an element of a property, as PostHog reads it
        base, key = dot.this, dot.expression
        if not (base.meta.get(JSON_META) or base.meta.get(PROP_META)):
            return
        if isinstance(key, exp.Literal) and key.is_int:
            if int(key.this) == 0:
                raise _err("SQL indexes start from one, not from zero. E.g: array.1", dot)
            dot.replace(json_access(base, [exp.Literal.number(int(key.this))], self.catalog, self.team_id))
        elif isinstance(key, exp.Identifier):
            dot.replace(json_access(base, [exp.Literal.string(key.name)], self.catalog, self.team_id))

    def _resolve_bracket(self, bracket: exp.Bracket) -> None:
        base = bracket.this
        keys = bracket.expressions
        if len(keys) != 1 or not (base.meta.get(JSON_META) or base.meta.get(PROP_META)):
            return
        key = keys[0]
        position = _written_index(bracket, key)
        if position is not None:
            # an element of a JSON array, 1-based as ClickHouse's JSON functions (and PostHog) count them
            if position == 0:
                raise _err("SQL indexes start from one, not from zero. E.g: array[1]", bracket)
            bracket.replace(json_access(base, [exp.Literal.number(position)], self.catalog, self.team_id))
            return
        if not (isinstance(key, exp.Literal) and key.is_string):
            raise _err("Property keys in [...] must be strings or array positions, e.g. properties['$browser']", key)
        table = {EVENT_PROPERTIES_META: "events", PERSON_PROPERTIES_META: "persons"}
        kind = next((t for meta, t in table.items() if base.meta.get(meta)), None)
        if kind is not None and not self._virtual:
            self.reads.append(NameRead(kind, key.this, *node_span(key), literal=True))  # type: ignore[arg-type]
        bracket.replace(json_access(base, [exp.Literal.string(key.this)], self.catalog, self.team_id))

    # ---- joins and views ---------------------------------------------------------------------------------

    def _add_lazy_joins(self, scope: Scope) -> None:
        for target in scope.lazy:
            assert target.join_on is not None
            to_field, parent, from_field = target.join_on
            on = exp.Anonymous(
                this="equals",
                expressions=[
                    exp.column(exp.to_identifier(to_field, quoted=True), table=target.alias_identifier()),
                    exp.column(exp.to_identifier(from_field, quoted=True), table=parent.alias_identifier()),
                ],
            )
            view = exp.Subquery(this=self._view(target), alias=exp.TableAlias(this=target.alias_identifier()))
            scope.select.join(view, on=on, join_type="LEFT", copy=False)

    def _view(self, source: Source) -> exp.Select:
        assert source.schema is not None
        self.views += 1
        if source.schema.name == "query_log":
            return query_log_view(self.query_log, self.timezone)
        opts = ViewOptions(
            team_id=self.team_id,
            database=self.database,
            timezone=self.timezone,
            person_overrides=self.person_overrides,
            needs_person_id=source.needs_person_id,
            sample=source.sample,
            sample_offset=source.sample_offset,
            group_index=source.group_index,
        )
        return build_view(source.schema.name, opts, self.catalog)

    def _replace_tables(self, scope: Scope) -> None:
        for source in scope.sources:
            if source.kind != "table" or source.node is None:
                continue
            view = exp.Subquery(this=self._view(source), alias=exp.TableAlias(this=source.alias_identifier()))
            source.node.replace(view)


def _written_index(bracket: exp.Bracket, key: exp.Expr) -> int | None:
    """The integer the user wrote in ``x[n]``: sqlglot keeps ClickHouse's 1-based index 0-based in the tree."""
    negative = isinstance(key, exp.Neg)
    literal = key.this if negative else key
    if not (isinstance(literal, exp.Literal) and literal.is_int):
        return None
    stored = -int(literal.this) if negative else int(literal.this)
    return stored + int(HogQLDialect.INDEX_OFFSET) - int(bracket.args.get("offset") or 0)


class JsonIndex(str):
    """A number after a dot in a property path (``properties.a.1``): a position, not a key named "1"."""


def _keys(names: list[str]) -> list[exp.Expr]:
    return [exp.Literal.number(int(n)) if isinstance(n, JsonIndex) else exp.Literal.string(n) for n in names]
