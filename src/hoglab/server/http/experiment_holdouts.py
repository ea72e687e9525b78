"""Experiment holdouts over HTTP, in the shape of PostHog's ``/api/projects/{id}/experiment_holdouts/``.

GET    /api/projects/{project_id}/experiment_holdouts/        experiment:read    paged, newest first
POST   /api/projects/{project_id}/experiment_holdouts/        experiment:write   201
GET    /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:read
PUT    /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write
PATCH  /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write   flags of its experiments follow
DELETE /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write   204, its experiments lose it

The rules are ``server/experiments/holdouts.py`` (PostHog's ``ee/clickhouse/views/experiment_holdouts.py``).

    curl -s -H "Authorization: Bearer $KEY" "$HOST/api/projects/1/experiment_holdouts/" \\
         -d '{"name": "Q3 holdout", "filters": [{"properties": [], "rollout_percentage": 10}]}'
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response

from hoglab.schema import ExperimentHoldout, ExperimentHoldoutCreate, ExperimentHoldoutUpdate, Paginated

from ..errors import NotFound
from ..experiments import holdouts
from ..state import ServiceState, get_state
from ..store import HoldoutRecord
from .auth import MAX_ID, AuthContext, require_scope
from .bodies import char_field, clamp_page, json_body_openapi, page_links, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["experiment_holdouts"])

BASE = "/api/projects/{project_id}/experiment_holdouts/"
Read = Annotated[AuthContext, Depends(require_scope("experiment:read"))]
Write = Annotated[AuthContext, Depends(require_scope("experiment:write"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
HoldoutId = Annotated[int, Path(ge=1, le=MAX_ID, description="The holdout's id.")]


def _answer(state: ServiceState, holdout: HoldoutRecord) -> dict[str, Any]:
    user = state.store.users.get(holdout.created_by_id) if holdout.created_by_id is not None else None
    return holdouts.holdout_body(holdout, user)


@router.get(BASE, response_model=Paginated[ExperimentHoldout], summary="List experiment holdouts")
def list_experiment_holdouts(
    request: Request,
    auth: Read,
    state: State,
    limit: Annotated[int | None, Query(ge=1, description="Results per page (default 100, at most 1000).")] = None,
    offset: Annotated[int | None, Query(ge=0, description="Initial index from which results are returned.")] = None,
) -> dict[str, Any]:
    page_limit, page_offset = clamp_page(limit, offset)
    page = state.store.holdouts.list(auth.project.id, limit=page_limit, offset=page_offset)
    following, previous = page_links(request.url, total=page.total, limit=page_limit, offset=page_offset)
    return {"count": page.total, "next": following, "previous": previous,
            "results": [_answer(state, h) for h in page.results]}  # fmt: skip


@router.post(BASE, status_code=201, response_model=ExperimentHoldout, summary="Create experiment holdout",
             openapi_extra=json_body_openapi(ExperimentHoldoutCreate))  # fmt: skip
def create_experiment_holdout(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    data = parse_json_object(raw, request.headers.get("content-type"))
    return _answer(state, holdouts.create_holdout(state.store, auth.project.id, auth.user.id, data))


@router.get(BASE + "{id}/", response_model=ExperimentHoldout, summary="Retrieve experiment holdout")
def retrieve_experiment_holdout(auth: Read, state: State, id: HoldoutId) -> dict[str, Any]:
    holdout = state.store.holdouts.get(auth.project.id, id)
    if holdout is None:
        raise NotFound()
    return _answer(state, holdout)


def _update(request: Request, auth: AuthContext, state: ServiceState, id: int, raw: bytes, *, full: bool) -> Any:
    data = parse_json_object(raw, request.headers.get("content-type"))
    if full:
        char_field(data, "name", required=True, nullable=False)  # PUT: the whole object; name is its one required
    updated = holdouts.update_holdout(state.store, auth.project.id, id, data)
    if updated is None:
        raise NotFound()
    return _answer(state, updated)


@router.patch(BASE + "{id}/", response_model=ExperimentHoldout, summary="Update experiment holdout",
              openapi_extra=json_body_openapi(ExperimentHoldoutUpdate))  # fmt: skip
def update_experiment_holdout(request: Request, auth: Write, state: State, id: HoldoutId, raw: Body) -> Any:
    return _update(request, auth, state, id, raw, full=False)


@router.put(BASE + "{id}/", response_model=ExperimentHoldout, summary="Replace experiment holdout",
            openapi_extra=json_body_openapi(ExperimentHoldoutCreate))  # fmt: skip
def replace_experiment_holdout(request: Request, auth: Write, state: State, id: HoldoutId, raw: Body) -> Any:
    return _update(request, auth, state, id, raw, full=True)


@router.delete(BASE + "{id}/", status_code=204, response_class=Response, summary="Delete experiment holdout")
def delete_experiment_holdout(auth: Write, state: State, id: HoldoutId) -> Response:
    if not holdouts.delete_holdout(state.store, auth.project.id, id):
        raise NotFound()
    return Response(status_code=204)
