"""Bulk rows: every row of a HogQL statement as one Arrow IPC stream (``POST /query/arrow/``, a hoglab extension).

A plain ``HogQLQuery`` answer stops at 10,000 rows, as PostHog's does, so a notebook that wants a million rows
would page through a hundred answers, each re-running its ORDER BY. This answer has no row cap (the statement's
own LIMIT applies, and the per-query memory and time limits): the engine writes the rows as Arrow, they are sent
as they are (no JSON, no Python objects), and the client builds the DataFrame from the columns directly.

The statement goes through the same compiler as ``/query`` (the team guard, the allow-lists, the project's time
zone, ``values`` and ``{filters}``), under the same key, scope and query rate limit. The ClickHouse type of each
column travels in the schema metadata (``hoglab.types``, JSON ``[[name, type], ...]``, the ``types`` of a JSON
answer), so the client gives each column the dtype it gives the same column of a JSON answer; the warnings a JSON
answer has in ``metadata.warnings`` (names the project has never seen, ``taxonomy.py``) travel as
``hoglab.warnings``.

Every step (compiling, describing, running) happens inside the project's share of the engine
(``fairness.py``), and the statement runs once: the types come from ``DESCRIBE``, which ClickHouse analyses by
running the statement's scalar subqueries, so it is described with reading capped at one block
(:data:`DESCRIBE_SETTINGS`); those subqueries then run for real only in the statement itself. The rows are
counted as the engine produces them (``max_bulk_bytes``, the project's answer memory) and the run is recorded
in the project's ``query_log``.

    status, body = bulk_arrow(service, project, {"query": {"kind": "HogQLQuery", "query": "select * from events"}})
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hoglab.schema import HogQLQuery
from hoglab.translate.budget import action_allowance

from ..engine.base import MemoryLimitExceeded, TooManyRows
from ..engine.limits import LimitedEngine, release_memory
from ..engine.settings import quote_identifier
from ..errors import ValidationFailed
from ..hogql import HogQLError
from ..store.db import utcnow
from .bounds import check_compile_budget
from .cache import data_version
from .failures import AnswerTooLarge, api_error, is_result_bytes_overflow
from .fairness import ProjectBusy
from .query_log import is_refusal, log_run
from .request import prepare, project_actions, project_catalog
from .runners import BULK_STATEMENTS, RunContext, has_person_overrides, load_runners
from .runners.hogql import MODIFIERS
from .taxonomy import unseen_names

if TYPE_CHECKING:
    from ..store import ProjectRecord
    from .service import QueryService

__all__ = [
    "ARROW_STREAM", "BULK_MAX_ROWS", "DESCRIBE_SETTINGS", "TYPES_METADATA", "WARNINGS_METADATA", "bulk_arrow",
]

ARROW_STREAM = "application/vnd.apache.arrow.stream"
TYPES_METADATA = b"hoglab.types"
WARNINGS_METADATA = b"hoglab.warnings"
"""Schema metadata key of the answer's warnings (JSON, PostHog's ``HogQLNotice`` list), when there are any."""
# Far past what fits a notebook's memory: the statement's LIMIT and the memory limit are what bound an answer.
BULK_MAX_ROWS = 1_000_000_000
_NO_ROW_CAP = {"max_result_rows": 0}
DESCRIBE_SETTINGS: dict[str, Any] = {
    "max_rows_to_read": 1,
    "read_overflow_mode": "break",
    "max_execution_time": 2,
    "timeout_overflow_mode": "break",
}
"""How the statement is described: ClickHouse runs its scalar subqueries while analysing it, so they stop after
their first block (or two seconds); a column's type does not depend on how many rows a subquery read."""


def _describe(ctx: RunContext, sql: str, settings: dict[str, Any]) -> list[list[str]]:
    """``[[name, ClickHouse type], ...]`` of a compiled statement, its scalar subqueries cut short."""
    table = ctx.engine.execute(f"DESCRIBE TABLE ({sql})", settings={**settings, **DESCRIBE_SETTINGS}, tag=ctx.tag)
    names, types = table.column("name").to_pylist(), table.column("type").to_pylist()
    return [[str(n), str(t)] for n, t in zip(names, types, strict=True)]


# Types Arrow carries natively with the meaning a JSON answer gives them; every other column is sent as text:
# ``toString`` for the string-like ones (Arrow would carry an Enum's number, an IPv4's integer), ``toJSONString``
# for nested ones (the client reads them as it reads a JSON answer's cells).
_NATIVE = frozenset({
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64", "Bool",
    "String", "Date", "Date32", "DateTime", "DateTime64", "Decimal", "Decimal32", "Decimal64", "Decimal128",
    "Decimal256", "Nothing",
})  # fmt: skip
_AS_TEXT = frozenset({"UUID", "FixedString", "Enum8", "Enum16", "IPv4", "IPv6", "Int128", "Int256", "UInt128",
                      "UInt256"})  # fmt: skip


def _base_type(type_text: str) -> str:
    text = type_text.strip()
    while True:
        for wrapper in ("Nullable(", "LowCardinality("):
            if text.startswith(wrapper) and text.endswith(")"):
                text = text[len(wrapper) : -1].strip()
                break
        else:
            return text.split("(", 1)[0].strip()


def _wrapped(sql: str, types: list[list[str]]) -> str:
    """``sql`` with its non-native columns converted to text; unchanged when no column needs it (or names repeat,
    which a subquery cannot tell apart: the client then reads those columns as best it can)."""
    names = [name for name, _ in types]
    if len(set(names)) != len(names):
        return sql
    columns, changed = [], False
    for name, type_text in types:
        quoted = quote_identifier(name)
        base = _base_type(type_text)
        if base in _NATIVE:
            columns.append(quoted)
            continue
        changed = True
        function = "toString" if base in _AS_TEXT else "toJSONString"
        columns.append(f"{function}({quoted}) AS {quoted}")
    return f"SELECT {', '.join(columns)} FROM ({sql})" if changed else sql


def _ipc(table: pa.Table) -> memoryview:
    """The table as an Arrow IPC stream, without copying it out of Arrow's buffer."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return memoryview(sink.getvalue())


def load_bulk_statements() -> dict[str, Any]:
    """The kinds besides ``HogQLQuery`` whose rows this endpoint answers (their modules load with the runners)."""
    load_runners()
    return BULK_STATEMENTS


def bulk_arrow(
    service: QueryService, project: ProjectRecord, data: dict[str, Any], *, key_id: int | None = None
) -> memoryview:
    """Validate a ``{"query": HogQLQuery}`` body and answer all its rows as an Arrow IPC stream.

    Any other kind is a 400 naming ``query__kind``; a HogQL mistake is the 400 ``/query`` gives. ``key_id``: the
    caller's key, which gets its own share of the engine, as on ``/query``.
    """
    with action_allowance(service.compile_budget.max_action_filters):  # what its actions may expand to
        return _bulk_arrow(service, project, data, key_id=key_id)


def _bulk_arrow(
    service: QueryService, project: ProjectRecord, data: dict[str, Any], *, key_id: int | None = None
) -> memoryview:
    query_json = data.get("query") if isinstance(data, dict) else None
    kind = query_json.get("kind") if isinstance(query_json, dict) else None
    actions = project_actions(service.store, project.id)  # what matchesAction() may name
    if isinstance(kind, str) and kind in load_bulk_statements():
        # A kind with rows of its own (ExperimentUnitsQuery): its statement runs as the HogQLQuery it compiles to.
        check_compile_budget(data)
        assert isinstance(query_json, dict)
        if service.store is None:
            raise ValidationFailed(f"{kind} needs the service's store, which this service runs without.")
        by_id = project_catalog(actions).actions()
        sql, values = BULK_STATEMENTS[kind](query_json, project, service.store, utcnow(), by_id)
        data = {**data, "query": {"kind": "HogQLQuery", "query": sql, "values": values}}
    prepared = prepare(data, team_id=project.id, timezone=project.timezone or "UTC")
    if not isinstance(prepared.query, HogQLQuery):
        detail = f"Bulk rows are answered for HogQLQuery and {', '.join(sorted(BULK_STATEMENTS))} only, " \
                 f"not {prepared.kind}."  # fmt: skip
        raise ValidationFailed(detail, attr="query__kind", code="invalid_input")
    query = prepared.query
    started, clock = time.time(), time.perf_counter()
    with service.jobs.track(project.id, prepared.query_id) as tag:
        try:
            if query.variables:
                raise HogQLError("Query variables are not supported: bind values with `values` and {placeholders}.")
            version = data_version(service.engine)
            overrides = service.cache.person_overrides(
                project.id, version, lambda: has_person_overrides(service.engine, project.id)
            )
            # The project's share of the engine for every step, compiling included (query/fairness.py).
            with (
                service.gate.hold(project_id=project.id, key_id=key_id),
                LimitedEngine(service.engine, service.bulk_limits(), project_id=project.id) as view,
            ):
                ctx = RunContext(project=project, engine=view, now=utcnow(), tag=tag, person_overrides=overrides,
                                 compile_budget=service.compile_budget,
                                 compile_slot=partial(service.gate.compiling, project.id),
                                 catalog=project_catalog(actions))  # fmt: skip
                compiled = ctx.compile(
                    query.query,
                    values=query.values,
                    default_limit=None,
                    max_limit=BULK_MAX_ROWS,
                    filters=query.filters.model_dump(mode="json") if query.filters else None,
                )
                settings = {**compiled.settings, **_NO_ROW_CAP}
                warnings = unseen_names(view, project.id, compiled.reads)
                types = _describe(ctx, compiled.sql, settings)
                with ctx.timings.measure("execute"):
                    table = view.execute(_wrapped(compiled.sql, types), settings=settings, tag=tag)
                metadata = {TYPES_METADATA: json.dumps(types).encode(),
                            b"hoglab.modifiers": json.dumps(MODIFIERS).encode()}  # fmt: skip
                if warnings:  # names the project has never seen, as /query's metadata.warnings (taxonomy.py)
                    metadata[WARNINGS_METADATA] = json.dumps(warnings).encode()
                view.hold(table.nbytes)  # the stream written from it is as large again
                body = _ipc(table.replace_schema_metadata(metadata))
                del table
        except Exception as exc:
            failure: BaseException = exc
            if is_result_bytes_overflow(exc) or isinstance(exc, AnswerTooLarge):
                failure = AnswerTooLarge(service.max_bulk_bytes, "max_bulk_bytes")
            error = api_error(failure)
            if isinstance(exc, (TooManyRows, MemoryLimitExceeded)) or failure is not exc:
                release_memory(service.engine)  # the refused answer's memory goes back at once
            if not isinstance(exc, ProjectBusy):  # turned away at the gate, as on /query: not a run
                log_run(project.id, prepared, started, clock, error=error.detail, before_start=is_refusal(exc))
            raise error from None
    log_run(project.id, prepared, started, clock, result_bytes=len(body))
    return body
