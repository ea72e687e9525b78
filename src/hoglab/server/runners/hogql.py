"""The ``HogQLQuery`` runner: a user's HogQL statement, compiled for the project, rows straight from the engine.

PostHog's semantics (reference 1.4-1.5): a statement without LIMIT returns 100 rows and runs as ``LIMIT 101`` so
``hasMore`` can be told; with an explicit LIMIT, ``hasMore``/``limit``/``offset`` are ``null``; any LIMIT is
capped at 10,000 rows. Rows stay the engine's JSON bytes (a :class:`RawAnswer`): a 10,000-row answer is never
parsed into Python objects, only its 101st row is cut off when there is one. Compiled statements are kept
(``COMPILED``, 512 of them): the same request is compiled once.

>>> drop_last_row(b'[\\n\\t\\t[1],\\n\\t\\t[2],\\n\\t\\t[3]\\n\\t]')
b'[\\n\\t\\t[1],\\n\\t\\t[2]\\n\\t]'
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson

from hoglab.schema import DEFAULT_RETURNED_ROWS, MAX_SELECT_RETURNED_ROWS, HogQLQuery

from ..hogql import CompiledQuery, HogQLError, compile_hogql
from .base import RawAnswer, RunContext, register

__all__ = ["COMPILED", "MODIFIERS", "drop_last_row", "run_hogql"]

# How hoglab resolves persons, in PostHog's modifier vocabulary (docs/hogql.md "Persons"); requested modifiers
# are accepted for compatibility but change nothing.
MODIFIERS: dict[str, Any] = {"personsOnEventsMode": "person_id_override_properties_joined"}

# ClickHouse's JSONCompact writes each row on its own line, "\n\t\t[...]", separated by commas. A JSON string
# can't hold a raw newline, so the last separator found from the end starts the last row.
_ROW_SEPARATOR = b",\n\t\t["


def drop_last_row(data: bytes) -> bytes:
    """``data`` (a JSON array of rows as ClickHouse writes it) without its last row; cheap: scans one row."""
    cut = data.rfind(_ROW_SEPARATOR)
    if cut < 0:
        # One row, or a layout this code does not know: parse (only ever 101 rows here) and write back.
        rows = orjson.loads(data)
        return orjson.dumps(rows[:-1])
    return data[:cut] + b"\n\t]"


class _CompiledCache:
    """Compiled statements by everything compiling depends on; a bounded LRU.

    Compiling is a pure function of the text, the values, the filters and the project's id, zone and person
    mode (relative dates compile to ``now()`` arithmetic, never to a moment), so the same request compiles to the
    same SQL: notebooks and dashboards re-run the same statements, which then skip the 1.5-4.5 ms of compiling.
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


COMPILED = _CompiledCache()


def _compile(query: HogQLQuery, ctx: RunContext) -> CompiledQuery:
    try:
        inputs = orjson.dumps(
            [query.values, query.filters.model_dump(mode="json") if query.filters else None],
            option=orjson.OPT_SORT_KEYS,
        )
    except TypeError:  # values that JSON can't carry (only possible from Python callers): compile every time
        inputs = None
    key = (ctx.team_id, ctx.timezone, ctx.person_overrides, query.query, inputs)
    compiled = COMPILED.get(key) if inputs is not None else None
    if compiled is None:
        compiled = compile_hogql(
            query.query,
            team_id=ctx.team_id,
            values=query.values,
            timezone=ctx.timezone,
            default_limit=DEFAULT_RETURNED_ROWS,
            max_limit=MAX_SELECT_RETURNED_ROWS,
            person_overrides=ctx.person_overrides,
            filters=query.filters,
        )
        if inputs is not None:
            COMPILED.put(key, compiled)
    return compiled


@register("HogQLQuery")
def run_hogql(query: HogQLQuery, ctx: RunContext) -> RawAnswer:
    """Compile with the default limit (100) and the cap (10,000), run, answer PostHog's HogQL response."""
    if query.variables:
        raise HogQLError("Query variables are not supported: bind values with `values` and {placeholders}.")
    with ctx.timings.measure("compile"):
        compiled = _compile(query, ctx)
    result = ctx.execute_json(compiled)
    data = result.data
    has_more: bool | None = None
    limit: int | None = None
    offset: int | None = None
    if compiled.has_implicit_limit:
        limit = compiled.limit
        offset = compiled.offset or 0
        has_more = limit is not None and result.rows > limit
        if has_more:
            data = drop_last_row(data)
    return RawAnswer(
        results=data,
        fields={
            "columns": result.columns,
            "types": [[name, type_] for name, type_ in zip(result.columns, result.types, strict=True)],
            "hogql": compiled.hogql,
            "clickhouse": compiled.sql,
            "query": query.query,
            "hasMore": has_more,
            "limit": limit,
            "offset": offset,
            "error": None,
            "explain": None,
            "metadata": None,
            "modifiers": MODIFIERS,
            "resolved_date_range": None,
        },
    )
