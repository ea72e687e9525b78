"""One SELECT's view of the world: its sources, its aliases, and the nodes that belong to it.

>>> from hoglab.translate.parse import parse_hogql
>>> select = parse_hogql("select a.x from (select 1 as x) a")
>>> [n.sql() for n in scope_nodes(Scope(select=select, env_aliases=set())) if isinstance(n, exp.Column)]
['a.x']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sqlglot import exp

from hoglab.translate.dialect import SAMPLE_OFFSET_META, HogQLDialect
from hoglab.translate.errors import HogQLError, node_span

from .props import JSON_META, NAME_META, PROP_META, mark_json
from .suggest import did_you_mean
from .tables import TABLES, TableSchema

if TYPE_CHECKING:
    from .resolve import Env, Resolver

__all__ = ["MAX_NUMBERS", "Columns", "Scope", "Source", "collect_sources", "expand_stars", "output_columns"]

MAX_NUMBERS = 10_000_000
"""Largest row count ``numbers(n)`` may produce."""

_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _err(message: str, node: exp.Expr | None) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def identifier(name: str) -> exp.Identifier:
    """An identifier node, quoted unless it is a plain non-keyword name."""
    plain = _SIMPLE.match(name) is not None and name.upper() not in HogQLDialect.tokenizer_class.KEYWORDS
    return exp.to_identifier(name, quoted=not plain)


@dataclass
class Columns:
    """Output columns of a subquery: name -> whether it is a JSON (properties) column."""

    names: dict[str, bool] = field(default_factory=dict)
    complete: bool = True


@dataclass
class Source:
    alias: str | None
    kind: Literal["table", "derived", "numbers"]
    schema: TableSchema | None = None
    columns: Columns | None = None
    node: exp.Expr | None = None
    lazy: dict[str, Source] = field(default_factory=dict)
    join_on: tuple[str, Source, str] | None = None
    needs_person_id: bool = False
    sample: float | None = None
    sample_offset: float = 0.0
    group_index: int | None = None

    def alias_identifier(self) -> exp.Identifier | None:
        return identifier(self.alias) if self.alias else None

    def names(self) -> list[str]:
        """The names this source is known to have (a table's fields and joins, a subquery's named columns)."""
        if self.kind == "table":
            assert self.schema is not None
            return [f.name for f in self.schema.fields] + list(self.schema.joins)
        if self.kind == "numbers":
            return ["number"]
        return list(self.columns.names) if self.columns is not None else []

    def has(self, name: str) -> bool | None:
        """``True``/``False`` when known, ``None`` when a subquery's columns are not all known."""
        if self.kind == "table":
            assert self.schema is not None
            return self.schema.field(name) is not None or name in self.schema.joins
        if self.kind == "numbers":
            return name == "number"
        assert self.columns is not None
        if name in self.columns.names:
            return True
        return False if self.columns.complete else None


@dataclass
class Scope:
    select: exp.Select
    env_aliases: set[str]
    sources: list[Source] = field(default_factory=list)
    scalar_ctes: list[exp.CTE] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)
    lazy: list[Source] = field(default_factory=list)

    def by_alias(self, name: str) -> Source | None:
        return next((s for s in self.sources if s.alias == name), None)

    def sources_with(self, name: str) -> list[Source]:
        return [s for s in self.sources if s.has(name) is True]

    def known_names(self, *, tables: bool = False) -> list[str]:
        """Every name a bare reference could mean here: the sources' fields and the aliases (and with ``tables``,
        the tables' aliases, for the first part of ``a.b``)."""
        names = [name for s in self.sources for name in s.names()]
        table_aliases = [s.alias for s in self.sources if s.alias] if tables else []
        return [*names, *self.aliases, *self.env_aliases, *table_aliases]

    def aliases_of(self, sources: list[Source]) -> str:
        return ", ".join(repr(s.alias) for s in sources)

    def is_alias(self, name: str, node: exp.Expr) -> bool:
        if name not in self.aliases:
            return False
        # Inside ``f(x) AS x`` the x is the column (ClickHouse resolves the self-reference to the column).
        parent = node.parent
        while parent is not None and parent is not self.select:
            if isinstance(parent, exp.Alias) and parent.alias == name:
                return False
            parent = parent.parent
        return True

    def is_lambda_param(self, node: exp.Expr, name: str) -> bool:
        parent = node.parent
        while parent is not None and parent is not self.select:
            if isinstance(parent, exp.Lambda) and any(p.name == name for p in parent.expressions):
                return True
            parent = parent.parent
        return False

    def collect_aliases(self) -> None:
        table_aliases = {s.alias for s in self.sources if s.alias}
        for node in scope_nodes(self):
            if isinstance(node, exp.Alias):
                if node.alias in table_aliases:
                    raise _err(f"Alias '{node.alias}' is also a table alias in this SELECT: rename one", node)
                self.aliases.add(node.alias)
        # ClickHouse makes WITH aliases visible in nested queries too: one named like a table would shadow it.
        for cte in self.scalar_ctes:
            self.aliases.add(cte.alias)
        clash = table_aliases & ({cte.alias for cte in self.scalar_ctes} | self.env_aliases)
        if clash:
            raise _err(f"WITH alias '{sorted(clash)[0]}' is also a table alias: rename one", self.select)

    def bare_names(self, exclude: exp.Expr | None = None) -> set[str]:
        """Unqualified column names left in the scope (they could be captured by a new alias)."""
        names: set[str] = set()
        for node in scope_nodes(self):
            if isinstance(node, exp.Column) and not node.table and not isinstance(node.this, exp.Star):
                if exclude is not None and _inside(node, exclude):
                    continue
                names.add(node.name)
        return names

    def try_alias(self, item: exp.Expr, name: str, taken: set[str]) -> bool:
        """Give select item ``item`` the alias ``name`` if that cannot change what any other name means.

        ClickHouse aliases are visible in the whole SELECT, so an alias must not shadow a table alias, another
        alias or a bare name used elsewhere in the scope.
        """
        if not name or name in taken or name in self.aliases or name in self.env_aliases:
            return False
        if any(s.alias == name for s in [*self.sources, *self.lazy]) or name in self.bare_names(exclude=item):
            return False
        alias = exp.Alias(alias=identifier(name))
        item.replace(alias)
        alias.set("this", item)
        taken.add(name)
        return True

    def name_properties(self) -> None:
        """Name property accesses in the select list after their last key (``properties.$browser`` -> ``$browser``)."""
        taken = {e.alias for e in self.select.expressions if isinstance(e, exp.Alias)}
        for item in list(self.select.expressions):
            if isinstance(item, exp.Alias) or not item.meta.get(PROP_META):
                continue
            self.try_alias(item, str(item.meta.get(NAME_META) or ""), taken)


def _inside(node: exp.Expr, ancestor: exp.Expr) -> bool:
    current: exp.Expr | None = node
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False


def walk_scope(node: exp.Expr) -> Iterator[exp.Expr]:
    """Nodes under ``node`` without entering nested queries (those are yielded, not entered)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, (exp.Select, exp.SetOperation)):
            continue
        stack.extend(reversed(list(current.iter_expressions())))


def scope_nodes(scope: Scope) -> Iterator[exp.Expr]:
    """Expression nodes of one SELECT: not its FROM items, not its WITH queries, not nested queries' insides."""
    select = scope.select
    roots: list[exp.Expr] = []
    for key, value in select.args.items():
        if key in ("with_", "from_", "joins") or value is None:
            continue
        roots.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, exp.Expr))
    for join in select.args.get("joins") or []:
        if join.kind == "ARRAY":
            roots.append(join.this)
            roots.extend(join.expressions)
        elif join.args.get("on") is not None:
            roots.append(join.args["on"])
    roots.extend(cte.this for cte in scope.scalar_ctes)
    for root in roots:
        yield from walk_scope(root)


def output_columns(query: exp.Expr) -> Columns:
    """The names a resolved query's rows have, and which of them are JSON columns."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        return output_columns(query.this)
    cols = Columns()
    if not isinstance(query, exp.Select):
        cols.complete = False
        return cols
    for item in query.expressions:
        if isinstance(item, exp.Alias):
            cols.names[item.alias] = bool(item.this.meta.get(JSON_META))
        elif isinstance(item, exp.Column) and not isinstance(item.this, exp.Star):
            cols.names[item.name] = bool(item.meta.get(JSON_META))
        else:
            cols.complete = False
    return cols


def _numbers(node: exp.Table, func: exp.Anonymous) -> None:
    """``numbers(count)`` / ``numbers(offset, count)`` with constant arguments (PostHog's messages for the count of
    them); a count that is not a literal is read as at most :data:`MAX_NUMBERS`, as a literal may ask for."""
    args = list(func.expressions)
    if not args:
        raise _err("Table function 'numbers' requires at least 1 argument", node)
    if len(args) > 2:
        raise _err("Table function 'numbers' requires at most 2 arguments", node)
    for arg in args:
        if isinstance(arg, exp.Literal) and arg.is_string:
            raise _err("numbers() takes numbers: numbers(count) or numbers(offset, count)", arg)
        if any(isinstance(n, (exp.Column, exp.Query, exp.Subquery, exp.Star, exp.Window)) for n in arg.walk()):
            raise _err("The arguments of numbers() must be constant expressions", arg)
    count = args[-1]
    if isinstance(count, exp.Literal) and count.is_int:
        if int(count.this) > MAX_NUMBERS:
            raise _err(f"numbers() is limited to {MAX_NUMBERS:,} rows", node)
        return
    bounded = exp.Anonymous(
        this="least",
        expressions=[exp.Anonymous(this="toUInt64", expressions=[count.copy()]), exp.Literal.number(MAX_NUMBERS)],
    )
    count.replace(bounded)


def _sample_fraction(sample: exp.Expr) -> tuple[float, float]:
    """``SAMPLE k [OFFSET m]``'s ``(k, m)``, each a constant fraction."""
    size = sample.args.get("size")
    extra = [k for k, v in sample.args.items() if v is not None and k not in ("size", "method")]
    if size is None or extra:
        raise _err("Only SAMPLE <fraction> is supported, e.g. SAMPLE 0.1 or SAMPLE 1/10", sample)
    value = _fraction(size, sample, "SAMPLE")
    if not 0 < value <= 1:
        raise _err("SAMPLE <rows> is not supported: give a fraction between 0 and 1", sample)
    offset = sample.meta.get(SAMPLE_OFFSET_META)
    start = 0.0 if offset is None else _fraction(offset, sample, "SAMPLE ... OFFSET")
    if not 0 <= start <= 1:
        raise _err("SAMPLE ... OFFSET needs a fraction from 0 to 1, e.g. SAMPLE 1/10 OFFSET 1/2", sample)
    return value, start


def _fraction(size: exp.Expr, sample: exp.Expr, what: str) -> float:
    try:
        if isinstance(size, exp.Div) and all(isinstance(p, exp.Literal) for p in (size.this, size.expression)):
            value = float(size.this.this) / float(size.expression.this)
        elif isinstance(size, exp.Literal) and not size.is_string:
            value = float(size.this)
        else:
            raise ValueError
    except (ValueError, ZeroDivisionError):
        raise _err(f"{what} needs a constant fraction, e.g. {what} 0.1", sample) from None
    return value


def _source_for(node: exp.Expr, env: Env, resolver: Resolver) -> Source:
    if isinstance(node, exp.Subquery):
        resolver.resolve_query(node.this, env)
        if node.args.get("alias") is not None and node.args["alias"].columns:
            raise _err("Column lists on subquery aliases are not supported", node)
        return Source(alias=node.alias or None, kind="derived", columns=output_columns(node.this), node=node)
    if not isinstance(node, exp.Table):
        raise _err(f"Unsupported FROM item: {type(node).__name__}", node)
    alias_node = node.args.get("alias")
    if alias_node is not None and alias_node.columns:
        raise _err("Column lists on table aliases are not supported", node)
    if isinstance(node.this, exp.Anonymous):
        name = node.this.name
        if name.lower() != "numbers":
            raise _err(f"Table function '{name}' is not allowed: only numbers(n)", node)
        _numbers(node, node.this)
        return Source(alias=node.alias or None, kind="numbers", node=None)
    if not isinstance(node.this, exp.Identifier):
        raise _err("Unsupported table reference", node)
    name = node.name
    alias = node.alias or name
    sample = node.args.get("sample")
    if name in env.ctes:
        if sample is not None:
            raise _err("SAMPLE applies to the events table only", sample)
        internal, columns = env.ctes[name]
        node.replace(exp.Table(this=exp.to_identifier(internal), alias=exp.TableAlias(this=identifier(alias))))
        return Source(alias=alias, kind="derived", columns=columns)
    if name not in TABLES:
        hint = did_you_mean(name, [*TABLES, *env.ctes])
        raise _err(f"Unknown table '{name}'{f' ({hint})' if hint else ''}: tables are {', '.join(TABLES)} and "
                   "numbers(n)", node)  # fmt: skip
    source = Source(alias=alias, kind="table", schema=TABLES[name], node=node)
    if sample is not None:
        if name != "events":
            raise _err("SAMPLE applies to the events table only", sample)
        source.sample, source.sample_offset = _sample_fraction(sample)
        node.set("sample", None)
    return source


def collect_sources(scope: Scope, env: Env, resolver: Resolver) -> None:
    """Fill ``scope.sources`` from FROM and JOIN (ARRAY JOIN is not a source), resolving subqueries first."""
    select = scope.select
    items: list[exp.Expr] = []
    from_ = select.args.get("from_")
    if from_ is not None:
        items.append(from_.this)
    items.extend(j.this for j in select.args.get("joins") or [] if j.kind != "ARRAY")
    for item in items:
        source = _source_for(item, env, resolver)
        if source.alias and scope.by_alias(source.alias):
            raise _err(f"Table alias '{source.alias}' is used twice in one SELECT", item)
        scope.sources.append(source)


def _star_columns(scope: Scope, source: Source, exclude: set[str], resolver: Resolver) -> list[exp.Expr]:
    if source.kind == "numbers":
        return [] if "number" in exclude else [exp.column("number", table=source.alias_identifier())]
    if source.kind == "derived":
        cols = source.columns
        if exclude and (cols is None or not cols.complete):
            raise _err("* EXCEPT over a subquery whose columns are not all named is not supported", scope.select)
        if exclude and cols is not None:
            return [exp.column(identifier(n), table=source.alias_identifier()) for n in cols.names if n not in exclude]
        if source.alias is None:
            source.alias = resolver.new_name("sub")
            assert isinstance(source.node, exp.Subquery)
            source.node.set("alias", exp.TableAlias(this=identifier(source.alias)))
        return [exp.Column(this=exp.Star(), table=source.alias_identifier())]
    assert source.schema is not None
    columns: list[exp.Expr] = []
    for name in source.schema.star:
        if name in exclude:
            continue
        col = exp.column(identifier(name), table=source.alias_identifier())
        col.meta["hq_done"] = True
        col.meta[NAME_META] = name
        fld = source.schema.field(name)
        if fld is not None and fld.kind == "json":
            mark_json(col, name, source.schema.name)
        columns.append(col)
    return columns


def expand_stars(scope: Scope, resolver: Resolver) -> None:
    """Expand ``*`` and ``t.*`` wherever a table is among the sources, so no engine-side ``*`` meets a view."""
    has_table = any(s.kind in ("table", "numbers") for s in scope.sources)
    for item in list(scope.select.expressions):
        if isinstance(item, exp.Star):
            if not has_table:
                continue
            exclude = {e.name for e in item.args.get("except_") or []}
            expanded = [c for s in scope.sources for c in _star_columns(scope, s, exclude, resolver)]
        elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            source = scope.by_alias(item.table)
            if source is None:
                raise _err(f"Unknown table '{item.table}' in {item.table}.*", item)
            if source.kind == "derived":
                continue
            exclude = {e.name for e in item.this.args.get("except_") or []}
            expanded = _star_columns(scope, source, exclude, resolver)
        else:
            continue
        if not expanded:
            raise _err("* expands to no columns", item)
        index = scope.select.expressions.index(item)
        scope.select.set(
            "expressions", [*scope.select.expressions[:index], *expanded, *scope.select.expressions[index + 1 :]]
        )
