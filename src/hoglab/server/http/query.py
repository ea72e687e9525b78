"""The Query endpoints of the seed, with PostHog's semantics (reference sections 1 and 4).

POST   /api/projects/{project_id}/query/              query:read, the query bucket (120/hour)   200 / 202
POST   /api/projects/{project_id}/query/{kind}/       the same, the body's kind must be {kind}
GET    /api/projects/{project_id}/query/{id}/         query:read   202 running, 200 done, 400 failed, 404
DELETE /api/projects/{project_id}/query/{id}/         query:read   204 cancelled, 404 unknown
GET    /api/projects/{project_id}/query/draft_sql/    query:read   {"sql": "..."}

Answers are written as bytes: a runner's rows (JSON from the engine) are spliced in unparsed, the rest is
orjson. ``curl -H "Authorization: Bearer $KEY" -d '{"query": {"kind": "HogQLQuery", "query": "select 1"}}'
http://127.0.0.1:8000/api/projects/1/query/``
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response

from hoglab.schema import HogQLQueryResponse, QueryRequest, QueryStatusResponse

from ..engine.base import EngineError
from ..errors import NotFound, ServerError, ValidationFailed
from ..query import draft_sql as drafting
from ..query.cache import LAZY_TARGET_AGE, TARGET_AGE, data_version
from ..query.jobs import QueryJobs
from ..query.run import (
    ASYNC_MODES,
    Prepared,
    api_error,
    cache_members,
    compute,
    dumps,
    join_members,
    prepare,
    statement_limits,
)
from ..query.runners import has_person_overrides
from ..state import ServiceState, get_state
from ..store import ProjectRecord
from ..store.db import utcnow
from .auth import AuthContext, require_scope
from .bodies import json_body_openapi, parse_json_object, raw_body
from .ratelimit import query_rate_limited
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["query"])

BASE = "/api/projects/{project_id}/query/"
Create = Annotated[AuthContext, Depends(query_rate_limited())]
Read = Annotated[AuthContext, Depends(require_scope("query:read"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
QueryId = Annotated[str, Path(description="The query's id: its client_query_id, or the id the 202 answer gave.")]
_QUERY_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_JSON = "application/json"
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The answer (its shape depends on the kind)", "model": HogQLQueryResponse},
    202: {"description": "Running asynchronously: poll GET /query/{id}/", "model": QueryStatusResponse},
    504: {"description": "The query hit the max execution time."},
}


def _services(state: ServiceState) -> tuple[Any, QueryJobs]:
    if state.engine is None or state.query_jobs is None:
        raise ServerError("The query service is not running.")
    return state.engine, state.query_jobs


def _answer(state: ServiceState, project: ProjectRecord, prepared: Prepared) -> tuple[int, bytes]:
    engine, jobs = _services(state)
    cache = state.query_cache
    timezone = project.timezone or "UTC"
    now = utcnow()
    try:
        version = data_version(engine)
    except EngineError as exc:
        raise api_error(exc) from None
    mode = prepared.mode
    entry = None if mode in ("force_blocking", "force_async") else cache.get(prepared.cache_key, version=version)
    fresh_for = LAZY_TARGET_AGE if mode == "lazy_async" else TARGET_AGE
    if entry is not None and entry.age(now) < fresh_for:
        cached = cache_members(
            prepared, is_cached=True, last_refresh=entry.last_refresh, target_age=TARGET_AGE, timezone=timezone
        )
        return 200, join_members(entry.body, cached)

    def overrides(at_version: int) -> bool:
        return cache.person_overrides(project.id, at_version, lambda: has_person_overrides(engine, project.id))

    if mode in ASYNC_MODES or (mode == "async_except_on_cache_miss" and entry is not None):

        def work(tag: str, cancelled: Any) -> bytes:
            started = utcnow()
            at_version = data_version(engine)
            members = compute(
                prepared,
                project=project,
                engine=engine,
                limits=statement_limits(state.config),
                tag=tag,
                person_overrides=overrides(at_version),
                cancelled=cancelled,
                now=started,
            )
            done = utcnow()
            cache.put(prepared.cache_key, members, version=at_version, now=done)
            return join_members(
                members,
                cache_members(prepared, is_cached=False, last_refresh=done, target_age=TARGET_AGE, timezone=timezone),
            )

        try:
            status = jobs.submit(project.id, prepared.query_id, work)
        except Exception as exc:
            raise api_error(exc) from None
        body = dumps({"cache_key": prepared.cache_key, "query_status": status})
        return (200 if status.get("complete") else 202), body

    with jobs.track(project.id, prepared.query_id) as tag:
        try:
            members = compute(
                prepared,
                project=project,
                engine=engine,
                limits=statement_limits(state.config),
                tag=tag,
                person_overrides=overrides(version),
                now=now,
            )
        except Exception as exc:
            raise api_error(exc) from None
    done = utcnow()
    cache.put(prepared.cache_key, members, version=version, now=done)
    fields = cache_members(prepared, is_cached=False, last_refresh=done, target_age=TARGET_AGE, timezone=timezone)
    return 200, join_members(members, fields)


def _create(request: Request, auth: AuthContext, raw: bytes, kind: str | None) -> Response:
    # The state is read here rather than through a dependency: FastAPI runs each sync dependency in its thread
    # pool, and every hop costs ~0.1-0.3 ms of the endpoint's overhead (docs/benchmarks.md, Query endpoint).
    state = get_state(request)
    data = parse_json_object(raw, request.headers.get("content-type"))
    project = auth.project
    prepared = prepare(data, team_id=project.id, timezone=project.timezone or "UTC", path_kind=kind)
    status, body = _answer(state, project, prepared)
    return Response(body, status_code=status, media_type=_JSON)


@router.post(
    BASE,
    summary="Create query",
    response_model=None,
    responses=_ANSWERS,
    openapi_extra=json_body_openapi(QueryRequest),
)
def create_query(request: Request, auth: Create, raw: Body) -> Response:
    """Run a query (any kind with a runner). ``refresh``: ``blocking`` (default), ``force_blocking``, ``async``,
    ``lazy_async``, ``force_async``, ``async_except_on_cache_miss``; ``async: true`` means ``async``."""
    return _create(request, auth, raw, None)


@router.get(BASE + "draft_sql/", summary="Retrieve query draft SQL")
def draft_query_sql(
    auth: Read,
    state: State,
    prompt: Annotated[str | None, Query(description="What to ask, in words (at most 400 characters).")] = None,
    current_query: Annotated[str | None, Query(description="Accepted for compatibility; not used.")] = None,
) -> dict[str, str]:
    """A starter HogQL statement built from the prompt and the project's own event names and property keys."""
    if not prompt or not prompt.strip():
        raise ValidationFailed("This field is required.", attr="prompt", code="required")
    if len(prompt) > drafting.MAX_PROMPT_CHARS:
        raise ValidationFailed("This field is too long.", attr="prompt", code="too_long")
    engine, _ = _services(state)
    try:
        vocabulary = drafting.project_vocabulary(engine, auth.project)
    except Exception as exc:
        raise api_error(exc) from None
    return {"sql": drafting.draft_sql(prompt, vocabulary, team_id=auth.project.id, timezone=auth.project.timezone)}


@router.post(
    BASE + "{kind}/",
    summary="Create query of a kind",
    response_model=None,
    responses=_ANSWERS,
    openapi_extra=json_body_openapi(QueryRequest),
)
def create_query_with_kind(
    request: Request,
    auth: Create,
    raw: Body,
    kind: Annotated[str, Path(description="The query kind, e.g. HogQLQuery; must match the body's.")],
) -> Response:
    """As ``POST /query/``, with the kind in the path (PostHog's ``create_with_kind``)."""
    return _create(request, auth, raw, kind)


def _not_found(query_id: str, team_id: int) -> NotFound:
    return NotFound(f"Query {query_id[:200]} not found for team {team_id}")


@router.get(
    BASE + "{query_id}/",
    summary="Retrieve query",
    response_model=None,
    responses={200: {"model": QueryStatusResponse}, 202: {"model": QueryStatusResponse}},
)
def retrieve_query(
    auth: Read,
    state: State,
    query_id: QueryId,
    show_progress: Annotated[bool, Query(description="Add the engine's progress of a running query.")] = False,
    showProgress: Annotated[bool, Query(include_in_schema=False)] = False,
) -> Response:
    """An asynchronous query's status: 202 running, 200 complete (``results`` is the whole answer), 400 failed
    with ``error_message``, 500 failed without one, 404 unknown or expired (statuses live 20 minutes)."""
    _, jobs = _services(state)
    team_id = auth.project.id
    if not _QUERY_ID.match(query_id):
        raise _not_found(query_id, team_id)
    try:
        found = jobs.status(team_id, query_id, progress=show_progress or showProgress)
    except EngineError as exc:
        raise api_error(exc) from None
    if found is None:
        raise _not_found(query_id, team_id)
    status, results = found
    status.pop("results", None)
    code = 202
    if status.get("error"):
        code = 400 if status.get("error_message") else 500
    elif status.get("complete"):
        code = 200
    inner = join_members(dumps(status)[1:-1], b'"results":' + (results if results is not None else b"null"))
    return Response(b'{"query_status":' + inner + b"}", status_code=code, media_type=_JSON)


@router.delete(BASE + "{query_id}/", status_code=204, summary="Delete query", response_model=None)
def destroy_query(auth: Read, state: State, query_id: QueryId) -> Response:
    """Cancel a query: dequeued if waiting, killed in the engine if running (then its status says so); a
    finished query's status is dropped. 404 for an id the project does not have."""
    _, jobs = _services(state)
    team_id = auth.project.id
    if not _QUERY_ID.match(query_id) or not jobs.cancel(team_id, query_id):
        raise _not_found(query_id, team_id)
    return Response(status_code=204)
