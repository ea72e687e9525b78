"""What every query runner gets (a :class:`RunContext`) and gives (a JSON-ready answer).

A runner turns one validated query model into the response PostHog gives for its kind. It never writes SQL for
the engine directly: it writes HogQL, with every user value in a ``{placeholder}``, and runs it through
``ctx.run``/``ctx.run_json``, so the HogQL compiler's team guard, allow-lists and row caps apply to insight
queries exactly as to a user's own HogQL.

    @register("TrendsQuery")
    def run_trends(query: TrendsQuery, ctx: RunContext) -> dict[str, Any]:
        table = ctx.run("SELECT count() AS c FROM events WHERE event = {event}", values={"event": "$pageview"})
        ...
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hoglab.schema import MAX_SELECT_RETURNED_ROWS
from hoglab.translate.actions import ActionDefinition
from hoglab.translate.budget import CompileBudget

from ...filters.hogql_filters import filters_expansion
from ...hogql import CompiledQuery, compile_hogql
from ...hogql.catalog import Catalog
from ...hogql.textguard import text_guards_enabled
from ..catalog import ENGINE_CATALOG
from ..query_log import note_reads

if TYPE_CHECKING:
    import pyarrow as pa

    from ...engine.base import Engine, JsonResult
    from ...store import ProjectRecord, Store

__all__ = [
    "BULK_STATEMENTS",
    "COMPILED",
    "RESOLVERS",
    "RUNNERS",
    "BulkStatement",
    "CompiledCache",
    "RawAnswer",
    "RunContext",
    "Runner",
    "Timings",
    "has_person_overrides",
    "register",
    "register_bulk",
    "register_resolver",
]


@dataclass
class Timings:
    """Where a request's time went, as PostHog's ``timings``: ``[{"k": "./compile", "t": 0.0012}, ...]``."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def measure(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.entries.append({"k": f"./{key}", "t": round(time.perf_counter() - start, 6)})

    def to_list(self, total: float | None = None) -> list[dict[str, Any]]:
        entries = list(self.entries)
        if total is not None:
            entries.append({"k": ".", "t": round(total, 6)})
        return entries


@dataclass(frozen=True)
class RawAnswer:
    """A response whose ``results`` are JSON bytes straight from the engine (no Python round trip).

    ``fields`` are the other response fields; the HTTP layer writes ``{"results": <results>, **fields}``.
    """

    results: bytes
    fields: dict[str, Any]


class CompiledCache:
    """Compiled statements by everything compiling depends on; a bounded LRU.

    Compiling is a pure function of the text, the values, the filters, the limits and the project's id, zone and
    person mode (relative dates compile to ``now()`` arithmetic, never to a moment), so the same request compiles
    to the same SQL: notebooks and dashboards re-run the same statements, which then skip compiling (1.5-4.5 ms
    for a typical statement, 50-200 ms for a funnel's per-person replay).
    """

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], CompiledQuery] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> CompiledQuery | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], compiled: CompiledQuery) -> None:
        with self._lock:
            self._entries[key] = compiled
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


COMPILED = CompiledCache()
"""Compiled statements of every runner (the user's HogQL and the insight runners' own), shared by the process."""


@dataclass(frozen=True)
class RunContext:
    """One request's view of the service: the project, the engine, a fixed "now" and the cancel tag.

    ``now`` is taken once per request so every sub-query of it resolves relative dates (``-7d``) the same way.
    ``tag`` goes on every engine query of the request (``log_comment``), so cancelling the request kills them all.
    ``catalog`` is what the compiler is told of the engine (its materialized properties: the engine's) and of the
    project (its actions, which runners read through :attr:`actions` too, so both see the same definitions).
    ``compile_budget`` bounds each statement's compiling (``translate/budget.py``); ``compile_slot`` is entered
    around it: the project's share of compiling (``query/fairness.py``), one statement at a time per project.
    """

    project: ProjectRecord
    engine: Engine
    now: datetime
    tag: str
    person_overrides: bool = False
    max_rows: int = MAX_SELECT_RETURNED_ROWS
    timings: Timings = field(default_factory=Timings)
    catalog: Catalog = ENGINE_CATALOG
    compile_budget: CompileBudget | None = None
    compile_slot: Callable[[], AbstractContextManager[None]] | None = None

    @property
    def team_id(self) -> int:
        return int(self.project.id)

    @property
    def timezone(self) -> str:
        return self.project.timezone or "UTC"

    @property
    def actions(self) -> Mapping[int, ActionDefinition]:
        """The project's actions by id (deleted ones too), as the compiler's ``matchesAction`` reads them."""
        return self.catalog.actions()

    def compile(
        self,
        hogql: str,
        *,
        values: Mapping[str, Any] | None = None,
        default_limit: int | None = None,
        max_limit: int | None = None,
        filters: Any = None,
        numeric_properties: Mapping[str, frozenset[str]] | None = None,
        query_log: Sequence[Mapping[str, Any]] = (),
    ) -> CompiledQuery:
        """HogQL → guarded ClickHouse SQL for this project (raises ``HogQLError`` on a mistake), kept in ``COMPILED``.

        Runners' own queries get no implicit LIMIT (``default_limit=None``) but keep the row cap. A statement not
        compiled before is compiled in the project's compile slot and under the compile budget; a statement over
        the budget is refused (``CompileBudgetExceeded``) and not kept.
        """
        max_limit = self.max_rows if max_limit is None else max_limit
        with self.timings.measure("compile"):
            # repr, not JSON: JSON writes a tuple as a list, a UUID or a datetime as its text and NaN as null, and
            # those compile to other literals (or fail to compile); repr of the values compile accepts keeps them
            # apart, and is faster to take than any walk over them.
            numeric = sorted((table, sorted(keys)) for table, keys in (numeric_properties or {}).items())
            inputs = (repr(values), repr(filters), repr(numeric), repr(query_log))
            key = (self.team_id, self.timezone, self.person_overrides, hogql, inputs, default_limit, max_limit,
                   self.catalog.version(),  # a newly materialized property compiles to its column
                   text_guards_enabled())  # fmt: skip
            compiled = COMPILED.get(key)
            if compiled is None:
                budget = self.compile_budget
                with (
                    self.compile_slot() if self.compile_slot is not None else nullcontext(),
                    budget.applied() if budget is not None else nullcontext(),
                ):
                    compiled = compile_hogql(
                        hogql,
                        team_id=self.team_id,
                        values=values,
                        timezone=self.timezone,
                        default_limit=default_limit,
                        max_limit=max_limit,
                        person_overrides=self.person_overrides,
                        filters=filters_expansion(filters, timezone=self.timezone),
                        numeric_properties=numeric_properties,
                        query_log=query_log,
                        catalog=self.catalog,
                    )
                if budget is not None:
                    budget.check_sql(compiled.sql)
                COMPILED.put(key, compiled)
            return compiled

    def execute(self, compiled: CompiledQuery, *, settings: Mapping[str, Any] | None = None) -> pa.Table:
        with self.timings.measure("execute"):
            table = self.engine.execute(compiled.sql, settings={**compiled.settings, **(settings or {})}, tag=self.tag)
        note_reads(table.num_rows)
        return table

    def execute_json(self, compiled: CompiledQuery, *, settings: Mapping[str, Any] | None = None) -> JsonResult:
        with self.timings.measure("execute"):
            result = self.engine.execute_json(
                compiled.sql, settings={**compiled.settings, **(settings or {})}, tag=self.tag
            )
        note_reads(result.rows)
        return result

    def run(self, hogql: str, *, values: Mapping[str, Any] | None = None, **compile_args: Any) -> pa.Table:
        """Compile and execute; the result as Arrow (for runners that reshape rows in Python)."""
        return self.execute(self.compile(hogql, values=values, **compile_args))

    def run_json(
        self, hogql: str, *, values: Mapping[str, Any] | None = None, **compile_args: Any
    ) -> tuple[CompiledQuery, JsonResult]:
        """Compile and execute; rows as JSON bytes with ClickHouse's types (for tabular answers)."""
        compiled = self.compile(hogql, values=values, **compile_args)
        return compiled, self.execute_json(compiled)


Answer = Mapping[str, Any] | RawAnswer
Runner = Callable[[Any, RunContext], Answer]
"""``runner(query_model, ctx) -> response``: a JSON-ready mapping, or a :class:`RawAnswer`."""

RUNNERS: dict[str, Runner] = {}
"""Query kind → runner. The query endpoint dispatches on ``query.kind`` through this map."""

_Entry = TypeVar("_Entry")


def _registrar(registry: dict[str, _Entry], what: str, kind: str) -> Callable[[_Entry], _Entry]:
    """Decorator adding ``kind``'s entry to ``registry``, one entry a kind: registering the same one again changes
    nothing, another one is a ``ValueError`` naming ``what``."""

    def add(entry: _Entry) -> _Entry:
        if kind in registry and registry[kind] is not entry:
            raise ValueError(f"{what} for {kind} is already registered")
        registry[kind] = entry
        return entry

    return add


def register(kind: str) -> Callable[[Runner], Runner]:
    """Decorator: make ``runner`` the one for ``kind`` (one runner per kind)."""
    return _registrar(RUNNERS, "a runner", kind)


QueryResolver = Callable[[Any, "ProjectRecord", "Store"], Any]
"""``resolver(query_model, project, store) -> model``: the query with what it refers to in the store read in."""

RESOLVERS: dict[str, QueryResolver] = {}
"""Query kind → resolver, for kinds that name stored objects (an experiment by id). The service resolves before
its cache lookup, so the cache key covers the stored settings and the runner gets the resolved model."""


def register_resolver(kind: str) -> Callable[[QueryResolver], QueryResolver]:
    """Decorator: make ``resolver`` the one for ``kind``."""
    return _registrar(RESOLVERS, "a resolver", kind)


BulkStatement = Callable[
    [dict[str, Any], "ProjectRecord", "Store", datetime, Mapping[int, ActionDefinition]], tuple[str, dict[str, Any]]
]
"""``statement(query_json, project, store, now, actions) -> (hogql, values)``: a kind whose rows
``POST /query/arrow/`` answers, turned into the HogQL statement it runs (validated and resolved against the store;
``actions``: the project's by id, for a metric or an exposure that names one)."""

BULK_STATEMENTS: dict[str, BulkStatement] = {}
"""Query kind → its bulk statement, for kinds other than ``HogQLQuery`` that the Arrow endpoint answers."""


def register_bulk(kind: str) -> Callable[[BulkStatement], BulkStatement]:
    """Decorator: make ``statement`` the HogQL of ``kind``'s rows on ``POST /query/arrow/``."""
    return _registrar(BULK_STATEMENTS, "a bulk statement", kind)


def has_person_overrides(engine: Engine, team_id: int) -> bool:
    """Whether any person of the project was merged into another (then person ids resolve through overrides).

    The table is small and sorted by team, so this costs a point read; the fast path skips the override join.
    """
    table = engine.execute(
        f"SELECT count() AS n FROM (SELECT 1 FROM person_overrides WHERE team_id = {int(team_id)} LIMIT 1)"
    )
    return bool(table.column("n")[0].as_py())
