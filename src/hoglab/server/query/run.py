"""What ``POST /query`` does between the HTTP layer and the runners: validate, pick the execution mode, run
through the kind's runner, write the answer as bytes, and turn every failure into PostHog's error.

>>> execution_mode(QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}}))
'blocking'
>>> execution_mode(QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}, "refresh": True}))
'force_blocking'
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from hoglab.schema import ErrorBody, HogQLFilters, HogQLQuery, QueryRequest, validation_error_body

from ..engine.base import (
    EngineError,
    MemoryLimitExceeded,
    QueryCancelled,
    QueryError,
    QueryTimeout,
    TooManyRows,
)
from ..errors import APIError, QueryTimedOut, ServerError, Throttled, ValidationFailed
from ..hogql import HogQLError
from .cache import NEXT_CLIENT_REFRESH, cache_key
from .jobs import TooManyQueries, iso
from .runners import RUNNERS, RawAnswer, RunContext, has_person_overrides, load_runners

__all__ = [
    "ASYNC_MODES",
    "LimitedEngine",
    "Prepared",
    "api_error",
    "cache_members",
    "compute",
    "describe_failure",
    "execution_mode",
    "join_members",
    "prepare",
    "statement_limits",
]

log = logging.getLogger("hoglab.server.query")

ASYNC_MODES = frozenset({"async", "lazy_async", "force_async"})
# Fields the endpoint owns in every answer; a runner's own values for them are dropped.
_CACHE_FIELDS = frozenset(
    {"is_cached", "cache_key", "last_refresh", "next_allowed_client_refresh", "cache_target_age", "timezone",
     "query_status", "calculation_trigger"}
)  # fmt: skip
_DUMP_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_FILTER_OVERRIDE_KEYS = frozenset({"date_from", "date_to", "properties", "breakdown_filter", "explicitDate"})


@dataclass(frozen=True)
class Prepared:
    """A validated request: the query model (overrides applied), its kind, mode, id and cache key."""

    request: QueryRequest
    query: BaseModel
    kind: str
    mode: str
    query_id: str
    client_query_id: str | None
    cache_key: str


def execution_mode(request: QueryRequest) -> str:
    """PostHog's ``refresh`` → execution mode (reference 1.3): ``async: true`` wins; ``true`` forces a blocking
    run; omitted, ``false`` and ``force_cache`` mean ``blocking`` on this endpoint."""
    if request.async_:
        return "async"
    refresh = request.refresh
    if refresh is True:
        return "force_blocking"
    if refresh is None or refresh is False or refresh == "force_cache":
        return "blocking"
    return str(refresh)


def prepare(data: dict[str, Any], *, team_id: int, timezone: str, path_kind: str | None = None) -> Prepared:
    """Validate a request body; 400s as PostHog words them (unknown kind, kind mismatch, field errors)."""
    load_runners()
    query = data.get("query")
    kind = query.get("kind") if isinstance(query, dict) else None
    if path_kind is not None and isinstance(query, dict) and kind != path_kind:
        raise ValidationFailed(
            f'Query kind mismatch: path kind "{path_kind}" does not match body kind "{kind}".', attr="query__kind"
        )
    if isinstance(kind, str) and kind not in RUNNERS:
        raise ValidationFailed(f"Unsupported query kind: {kind}", attr="query__kind")
    try:
        request = QueryRequest.model_validate(data)
    except ValidationError as exc:
        body = validation_error_body(exc, data)
        raise ValidationFailed(body.detail, attr=body.attr) from None
    except RecursionError:
        raise ValidationFailed("Input is nested too deeply.") from None
    model: BaseModel = request.query
    if request.variables_override:
        raise ValidationFailed(
            "Insight variables are not supported by hoglab: bind values with `values`.", attr="variables_override"
        )
    if request.filters_override:
        model = _apply_filters_override(model, request.filters_override)
    query_kind = str(getattr(model, "kind", kind))
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return Prepared(
        request=request,
        query=model,
        kind=query_kind,
        mode=execution_mode(request),
        query_id=request.client_query_id or uuid.uuid4().hex,
        client_query_id=request.client_query_id,
        cache_key=cache_key(team_id, dumped, timezone=timezone),
    )


def _apply_filters_override(model: BaseModel, override: Mapping[str, Any]) -> BaseModel:
    # PostHog's dashboard filters on a HogQL query: a date range and extra properties for {filters}.
    if not isinstance(model, HogQLQuery):
        raise ValidationFailed("filters_override is supported for HogQLQuery only.", attr="filters_override")
    unknown = sorted(set(override) - _FILTER_OVERRIDE_KEYS)
    if unknown:
        raise ValidationFailed(
            f"Unknown field {unknown[0]!r}: it is not part of this request.", attr="filters_override"
        )
    if override.get("breakdown_filter"):
        raise ValidationFailed(
            "A breakdown does not apply to a HogQL query.", attr="filters_override__breakdown_filter"
        )
    filters = model.filters.model_dump(exclude_none=True) if model.filters else {}
    if override.get("date_from") is not None or override.get("date_to") is not None:
        filters["dateRange"] = {"date_from": override.get("date_from"), "date_to": override.get("date_to")}
    if override.get("properties"):
        filters["properties"] = [*(filters.get("properties") or []), *override["properties"]]
    try:
        return model.model_copy(update={"filters": HogQLFilters.model_validate(filters)})
    except ValidationError as exc:
        body = validation_error_body(exc, filters)
        raise ValidationFailed(body.detail, attr="filters_override" + (f"__{body.attr}" if body.attr else "")) from None


def statement_limits(config: Any) -> dict[str, Any]:
    """The app's own limits on every statement of a request (``ServerConfig``): apps of one process share one
    engine, opened with the first app's configuration, so they can't rely on the engine's defaults."""
    return {"max_execution_time": config.max_execution_time, "max_memory_usage": config.max_memory_usage}


class LimitedEngine:
    """The engine as a query sees it: the app's limits on every statement, and once ``cancelled`` is set no new
    statement starts (a statement already running is killed by its tag). Runners only read."""

    def __init__(self, engine: Any, limits: Mapping[str, Any], cancelled: threading.Event | None = None) -> None:
        self._engine = engine
        self._limits = dict(limits)
        self._cancelled = cancelled
        self.name: str = engine.name

    def _settings(self, settings: Mapping[str, Any] | None) -> dict[str, Any]:
        if self._cancelled is not None and self._cancelled.is_set():
            raise QueryCancelled("Query was cancelled.", code=394, name="QUERY_WAS_CANCELLED")
        return {**(settings or {}), **self._limits}

    def execute(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        return self._engine.execute(sql, settings=self._settings(settings), tag=tag)

    def execute_json(self, sql: str, *, settings: Mapping[str, Any] | None = None, tag: str | None = None) -> Any:
        return self._engine.execute_json(sql, settings=self._settings(settings), tag=tag)

    def command(self, sql: str, *, settings: Mapping[str, Any] | None = None) -> None:
        raise EngineError("query runners only read")

    def insert_arrow(self, table: str, data: Any) -> None:
        raise EngineError("query runners only read")

    def cancel(self, tag: str) -> bool:
        return bool(self._engine.cancel(tag))

    def close(self) -> None:
        """The wrapped engine belongs to the service; closing the view of it does nothing."""


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _fallback(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    try:
        return _default(value)
    except TypeError:
        return str(value)


def dumps(value: Any) -> bytes:
    """JSON with orjson; integers beyond 64 bits (which orjson refuses) go through the standard encoder."""
    try:
        return orjson.dumps(value, default=_default, option=_DUMP_OPTIONS)
    except TypeError:
        return json.dumps(value, default=_fallback, separators=(",", ":"), ensure_ascii=False).encode()


def join_members(*members: bytes) -> bytes:
    """A JSON object from members written without braces (``b'"a":1'``); empty parts are skipped.

    >>> join_members(b'"results":[[1]]', b'', b'"is_cached":false')
    b'{"results":[[1]],"is_cached":false}'
    """
    return b"{" + b",".join(m for m in members if m) + b"}"


def answer_members(answer: Any, timings: list[dict[str, Any]]) -> bytes:
    """A runner's answer as JSON members (no braces, no cache fields); rows of a ``RawAnswer`` are not parsed."""
    if isinstance(answer, RawAnswer):
        fields = {k: v for k, v in answer.fields.items() if k not in _CACHE_FIELDS and k != "results"}
        fields.setdefault("timings", timings)
        return join_members(b'"results":' + answer.results, dumps(fields)[1:-1])[1:-1]
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(mode="json", by_alias=True)
    fields = {k: v for k, v in dict(answer).items() if k not in _CACHE_FIELDS}
    fields.setdefault("timings", timings)
    return dumps(fields)[1:-1]


def cache_members(
    prepared: Prepared, *, is_cached: bool, last_refresh: datetime, target_age: Any, timezone: str
) -> bytes:
    """The cache fields PostHog adds to every answer, as JSON members."""
    return dumps(
        {
            "is_cached": is_cached,
            "cache_key": prepared.cache_key,
            "last_refresh": iso(last_refresh),
            "next_allowed_client_refresh": iso(last_refresh + NEXT_CLIENT_REFRESH),
            "cache_target_age": iso(last_refresh + target_age),
            "timezone": timezone,
            "query_status": None,
            "calculation_trigger": None,
        }
    )[1:-1]


def compute(
    prepared: Prepared,
    *,
    project: Any,
    engine: Any,
    limits: Mapping[str, Any],
    tag: str,
    person_overrides: bool | None = None,
    cancelled: threading.Event | None = None,
    now: datetime,
) -> bytes:
    """Run the query through its kind's runner; the answer's members (see :func:`answer_members`)."""
    runner = RUNNERS[prepared.kind]
    view = LimitedEngine(engine, limits, cancelled)
    if person_overrides is None:
        person_overrides = has_person_overrides(view, int(project.id))
    ctx = RunContext(project=project, engine=view, now=now, tag=tag, person_overrides=person_overrides)
    start = time.perf_counter()
    answer = runner(prepared.query, ctx)
    return answer_members(answer, ctx.timings.to_list(time.perf_counter() - start))


# -- errors ---------------------------------------------------------------------------------------------------


class HogQLInvalid(ValidationFailed):
    """A HogQL statement the compiler refuses: the body also says where (``start``/``end``/``line``/``column``)."""

    def __init__(self, error: HogQLError) -> None:
        super().__init__(str(error))
        self.position = {k: v for k, v in error.to_dict().items() if k != "message"}

    def body(self) -> ErrorBody:
        return ErrorBody(type=self.error_type, code=self.code, detail=self.detail, attr=self.attr, **self.position)


class QueryWasCancelled(APIError):
    status_code = 400
    error_type = "invalid_request"
    default_code = "query_cancelled"
    default_detail = "The query was cancelled."


class MemoryLimitReached(ValidationFailed):
    default_code = "memory_limit_exceeded"
    default_detail = (
        "Query has reached the max memory limit before completing. Narrow the date range, aggregate before "
        "selecting rows, or select fewer columns."
    )


class EngineFailed(ServerError):
    default_detail = "The engine failed while executing the query."


_CUT_MARKERS = (" In scope ", "In scope SELECT", " while processing query", " While processing ")
_QUALIFIERS = re.compile(r"\b(?:__hq_\w+|hoglab)\.")


def scrub_engine_message(message: str) -> str:
    """An engine message for the user: without the compiled statement it quotes (which shows the guard views,
    internal aliases and database) and without internal qualifiers.

    >>> scrub_engine_message("Illegal types String and UInt8 of arguments of function plus: In scope SELECT ...")
    'Illegal types String and UInt8 of arguments of function plus.'
    """
    text = message
    for marker in _CUT_MARKERS:
        at = text.find(marker)
        if at >= 0:
            text = text[:at]
    text = _QUALIFIERS.sub("", text)
    for secret in ("team_id", "__hq"):
        at = text.find(secret)
        if at >= 0:
            text = text[:at]
    text = text.strip().rstrip(":;,").strip()
    if not text:
        return "The engine could not run the query."
    return text if text.endswith((".", "?", "!", ")")) else text + "."


def api_error(exc: BaseException) -> APIError:
    """The HTTP error for a failure while answering a query (reference 1.7, decisions in docs/api.md)."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, HogQLError):
        if exc.internal:
            log.error("HogQL compiler failure surfaced as a 400: %s", exc)
        return HogQLInvalid(exc)
    if isinstance(exc, QueryTimeout):
        return QueryTimedOut()
    if isinstance(exc, MemoryLimitExceeded):
        return MemoryLimitReached()
    if isinstance(exc, QueryCancelled):
        return QueryWasCancelled()
    if isinstance(exc, TooManyRows):
        return ValidationFailed(scrub_engine_message(exc.message), code="too_many_rows")
    if isinstance(exc, QueryError):
        return ValidationFailed(scrub_engine_message(exc.message), code=(exc.name or "invalid_input").lower())
    if isinstance(exc, TooManyQueries):
        return Throttled(5, str(exc))
    if isinstance(exc, EngineError):
        log.error("engine failure while answering a query: %s", exc)
        return EngineFailed()
    if isinstance(exc, ValueError):  # runners signal a bad combination of query fields this way
        return ValidationFailed(str(exc) or "Invalid query.")
    log.error("unexpected failure while answering a query", exc_info=exc)
    return ServerError()


def describe_failure(exc: BaseException) -> str | None:
    """A failed async query's ``error_message``: what the synchronous request would have said, or ``None`` for
    an internal failure (then ``GET /query/:id`` answers 500, as PostHog)."""
    error = api_error(exc)
    if error.status_code >= 500 and not isinstance(error, QueryTimedOut):
        return None
    return error.detail
