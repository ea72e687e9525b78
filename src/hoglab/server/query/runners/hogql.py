"""The ``HogQLQuery`` runner: a user's HogQL statement, compiled for the project, rows straight from the engine.

PostHog's semantics (docs/api.md, "Query"): a statement without LIMIT returns 100 rows and runs as ``LIMIT 101`` so
``hasMore`` can be told; with an explicit LIMIT, ``hasMore``/``limit``/``offset`` are ``null``; any LIMIT is
capped at 10,000 rows. Rows stay the engine's JSON bytes (a :class:`RawAnswer`): a 10,000-row answer is never
parsed into Python objects, only its 101st row is cut off when there is one. Compiled statements are kept
(``base.COMPILED``, 512 of them): the same request is compiled once. A property or event name the project has
never seen is a warning in ``metadata`` (PostHog's ``HogQLMetadataResponse``; ``taxonomy.py``).

>>> drop_last_row(b'[\\n\\t\\t[1],\\n\\t\\t[2],\\n\\t\\t[3]\\n\\t]')
b'[\\n\\t\\t[1],\\n\\t\\t[2]\\n\\t]'
"""

from __future__ import annotations

from typing import Any

import orjson

from hoglab.schema import DEFAULT_RETURNED_ROWS, MAX_SELECT_RETURNED_ROWS, HogQLQuery

from ...hogql import HogQLError
from ...hogql.values import VARIABLE_PREFIX
from ..property_types import numeric_properties
from ..query_log import QUERY_LOG
from ..taxonomy import unseen_names
from .base import RawAnswer, RunContext, register

__all__ = ["MODIFIERS", "drop_last_row", "run_hogql", "variable_values"]

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


def variable_values(variables: Any) -> dict[str, Any]:
    """PostHog's insight variables (``{id: {"code_name": "x", "value": ..}}``) as the values of ``{variables.x}``.

    >>> variable_values({"a1": {"variableId": "a1", "code_name": "country", "value": "DE"}})
    {'variables.country': 'DE'}
    """
    found: dict[str, Any] = {}
    for variable in (variables or {}).values():
        if not isinstance(variable, dict) or not isinstance(variable.get("code_name"), str):
            raise HogQLError("Each query variable needs a 'code_name' and a 'value'.")
        found[f"{VARIABLE_PREFIX}{variable['code_name']}"] = variable.get("value")
    return found


def _metadata(hogql: str, warnings: list[dict[str, Any]]) -> dict[str, Any] | None:
    """PostHog's ``HogQLMetadataResponse`` carrying the statement's warnings (names the project has never seen,
    ``taxonomy.py``); ``None``, as before, when there are none."""
    if not warnings:
        return None
    return {"query": hogql, "isValid": True, "errors": [], "warnings": warnings, "notices": []}


@register("HogQLQuery")
def run_hogql(query: HogQLQuery, ctx: RunContext) -> RawAnswer:
    """Compile with the default limit (100) and the cap (10,000), run, answer PostHog's HogQL response."""
    compiled = ctx.compile(
        query.query,
        values={**(query.values or {}), **variable_values(query.variables)},
        default_limit=DEFAULT_RETURNED_ROWS,
        max_limit=MAX_SELECT_RETURNED_ROWS,
        filters=query.filters.model_dump(mode="json") if query.filters else None,
        numeric_properties=numeric_properties(ctx.engine, ctx.team_id),
        # only the caller's own records, and only when the statement reads them
        query_log=QUERY_LOG.rows(ctx.team_id) if "query_log" in query.query.lower() else (),
    )
    warnings = unseen_names(ctx.engine, ctx.team_id, compiled.reads)
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
            "metadata": _metadata(query.query, warnings),
            "modifiers": MODIFIERS,
            "resolved_date_range": None,
        },
    )
