"""The Query endpoints, with PostHog's semantics (docs/api.md, "Query").

POST   /api/projects/{project_id}/query/              query:read, the query bucket (120/hour)   200 / 202
POST   /api/projects/{project_id}/query/{kind}/       the same, the body's kind must be {kind}
GET    /api/projects/{project_id}/query/{id}/         query:read   202 running, 200 done, 400 failed, 404
DELETE /api/projects/{project_id}/query/{id}/         query:read   204 cancelled, 404 unknown
GET    /api/projects/{project_id}/query/draft_sql/    query:read   {"sql": "..."}
POST   /api/projects/{project_id}/query/arrow/        as POST /query/: every row of a HogQLQuery as Arrow IPC (hoglab)

The views only read the body and write the bytes that :class:`~hoglab.server.query.service.QueryService`
answers with (validation, execution modes, cache, async jobs and error mapping all live there).
``curl -H "Authorization: Bearer $KEY" -d '{"query": {"kind": "HogQLQuery", "query": "select 1"}}'
http://127.0.0.1:8000/api/projects/1/query/``
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response

from hoglab.schema import HogQLQueryResponse, QueryRequest, QueryStatusResponse

from ..query.bulk import ARROW_STREAM, bulk_arrow
from ..query.service import QueryService
from ..state import get_state
from .auth import AuthContext, require_scope
from .bodies import json_body_openapi, parse_json_object, raw_body
from .ratelimit import query_rate_limited
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["query"])

BASE = "/api/projects/{project_id}/query/"
Create = Annotated[AuthContext, Depends(query_rate_limited())]
Read = Annotated[AuthContext, Depends(require_scope("query:read"))]
Body = Annotated[bytes, Depends(raw_body)]
QueryId = Annotated[str, Path(description="The query's id: its client_query_id, or the id the 202 answer gave.")]
_JSON = "application/json"
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The answer (its shape depends on the kind)", "model": HogQLQueryResponse},
    202: {"description": "Running asynchronously: poll GET /query/{id}/", "model": QueryStatusResponse},
    504: {"description": "The query hit the max execution time."},
}


def _create(request: Request, auth: AuthContext, raw: bytes, kind: str | None) -> Response:
    # The state is read here rather than through a dependency: FastAPI runs each sync dependency in its thread
    # pool, and every hop costs ~0.1-0.3 ms of the endpoint's overhead (docs/benchmarks.md, Query endpoint).
    data = parse_json_object(raw, request.headers.get("content-type"))
    status, body = QueryService.of(get_state(request)).run(auth.project, data, path_kind=kind, key_id=auth.key.id)
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
    request: Request,
    auth: Read,
    prompt: Annotated[str | None, Query(description="What to ask, in words (at most 400 characters).")] = None,
    current_query: Annotated[str | None, Query(description="Accepted for compatibility; not used.")] = None,
) -> dict[str, str]:
    """A starter HogQL statement built from the prompt and the project's own event names and property keys."""
    return QueryService.of(get_state(request)).draft_sql(auth.project, prompt)


@router.post(
    BASE + "arrow/",
    summary="Create query, all rows as Arrow (hoglab)",
    response_model=None,
    responses={200: {"description": "An Arrow IPC stream", "content": {ARROW_STREAM: {}}}},
    openapi_extra=json_body_openapi(QueryRequest),
)
def create_query_arrow(request: Request, auth: Create, raw: Body) -> Response:
    """A HogQLQuery's every row (no 10,000-row cap; its own LIMIT applies) as an Arrow IPC stream whose schema
    metadata ``hoglab.types`` holds the ClickHouse types; errors as ``POST /query/``. Not part of PostHog."""
    data = parse_json_object(raw, request.headers.get("content-type"))
    body = bulk_arrow(QueryService.of(get_state(request)), auth.project, data, key_id=auth.key.id)
    return Response(body, status_code=200, media_type=ARROW_STREAM)


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


@router.get(
    BASE + "{query_id}/",
    summary="Retrieve query",
    response_model=None,
    responses={200: {"model": QueryStatusResponse}, 202: {"model": QueryStatusResponse}},
)
def retrieve_query(
    request: Request,
    auth: Read,
    query_id: QueryId,
    show_progress: Annotated[bool, Query(description="Add the engine's progress of a running query.")] = False,
    showProgress: Annotated[bool, Query(include_in_schema=False)] = False,
) -> Response:
    """An asynchronous query's status: 202 running, 200 complete (``results`` is the whole answer), 400 failed
    with ``error_message``, 500 failed without one, 404 unknown or expired (statuses live 20 minutes)."""
    service = QueryService.of(get_state(request))
    status, body = service.status(auth.project.id, query_id, progress=show_progress or showProgress)
    return Response(body, status_code=status, media_type=_JSON)


@router.delete(BASE + "{query_id}/", status_code=204, summary="Delete query", response_model=None)
def destroy_query(request: Request, auth: Read, query_id: QueryId) -> Response:
    """Cancel a query: dequeued if waiting, killed in the engine if running (then its status says so); a
    finished query's status is dropped. 404 for an id the project does not have."""
    QueryService.of(get_state(request)).cancel(auth.project.id, query_id)
    return Response(status_code=204)
