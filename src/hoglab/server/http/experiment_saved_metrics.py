"""Saved (shared) experiment metrics over HTTP, in the shape of PostHog's
``/api/projects/{id}/experiment_saved_metrics/``.

GET    /api/projects/{project_id}/experiment_saved_metrics/        experiment:read    paged, by name
POST   /api/projects/{project_id}/experiment_saved_metrics/        experiment:write   201, the query gets a uuid
GET    /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:read
PUT    /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write
PATCH  /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write
DELETE /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write   204, unlinked everywhere

The rules are ``server/experiments/saved_metrics.py``. Experiments link saved metrics with
``saved_metrics_ids`` (``http/experiments.py``); results run through ``ExperimentQuery`` like any metric.

    curl -s -H "Authorization: Bearer $KEY" "$HOST/api/projects/1/experiment_saved_metrics/" -d '{"name": "Revenue",
         "query": {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode",
         "event": "purchase", "math": "sum", "math_property": "price"}}}'
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response

from hoglab.schema import (
    ExperimentSavedMetric,
    ExperimentSavedMetricCreate,
    ExperimentSavedMetricUpdate,
    Paginated,
)

from ..errors import NotFound
from ..experiments import saved_metrics
from ..state import ServiceState, get_state
from ..store import SavedMetricRecord
from .auth import MAX_ID, AuthContext, require_scope
from .bodies import char_field, clamp_page, json_body_openapi, page_links, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["experiment_saved_metrics"])

BASE = "/api/projects/{project_id}/experiment_saved_metrics/"
Read = Annotated[AuthContext, Depends(require_scope("experiment:read"))]
Write = Annotated[AuthContext, Depends(require_scope("experiment:write"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
SavedMetricId = Annotated[int, Path(ge=1, le=MAX_ID, description="The saved metric's id.")]


def _answer(state: ServiceState, record: SavedMetricRecord) -> dict[str, Any]:
    user = state.store.users.get(record.created_by_id) if record.created_by_id is not None else None
    return saved_metrics.saved_metric_body(record, user)


@router.get(BASE, response_model=Paginated[ExperimentSavedMetric], summary="List experiment saved metrics")
def list_experiment_saved_metrics(
    request: Request,
    auth: Read,
    state: State,
    limit: Annotated[int | None, Query(ge=1, description="Results per page (default 100, at most 1000).")] = None,
    offset: Annotated[int | None, Query(ge=0, description="Initial index from which results are returned.")] = None,
) -> dict[str, Any]:
    page_limit, page_offset = clamp_page(limit, offset)
    page = state.store.saved_metrics.list(auth.project.id, limit=page_limit, offset=page_offset)
    following, previous = page_links(request.url, total=page.total, limit=page_limit, offset=page_offset)
    return {"count": page.total, "next": following, "previous": previous,
            "results": [_answer(state, m) for m in page.results]}  # fmt: skip


@router.post(BASE, status_code=201, response_model=ExperimentSavedMetric, summary="Create experiment saved metric",
             openapi_extra=json_body_openapi(ExperimentSavedMetricCreate))  # fmt: skip
def create_experiment_saved_metric(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    data = parse_json_object(raw, request.headers.get("content-type"))
    return _answer(state, saved_metrics.create_saved_metric(state.store, auth.project.id, auth.user.id, data))


@router.get(BASE + "{id}/", response_model=ExperimentSavedMetric, summary="Retrieve experiment saved metric")
def retrieve_experiment_saved_metric(auth: Read, state: State, id: SavedMetricId) -> dict[str, Any]:
    record = state.store.saved_metrics.get(auth.project.id, id)
    if record is None:
        raise NotFound()
    return _answer(state, record)


def _update(request: Request, auth: AuthContext, state: ServiceState, id: int, raw: bytes, *, full: bool) -> Any:
    data = parse_json_object(raw, request.headers.get("content-type"))
    if full:
        char_field(data, "name", required=True, nullable=False)  # PUT: the whole object; name is its one required
    updated = saved_metrics.update_saved_metric(state.store, auth.project.id, id, data)
    if updated is None:
        raise NotFound()
    return _answer(state, updated)


@router.patch(BASE + "{id}/", response_model=ExperimentSavedMetric, summary="Update experiment saved metric",
              openapi_extra=json_body_openapi(ExperimentSavedMetricUpdate))  # fmt: skip
def update_experiment_saved_metric(request: Request, auth: Write, state: State, id: SavedMetricId, raw: Body) -> Any:
    return _update(request, auth, state, id, raw, full=False)


@router.put(BASE + "{id}/", response_model=ExperimentSavedMetric, summary="Replace experiment saved metric",
            openapi_extra=json_body_openapi(ExperimentSavedMetricCreate))  # fmt: skip
def replace_experiment_saved_metric(request: Request, auth: Write, state: State, id: SavedMetricId, raw: Body) -> Any:
    return _update(request, auth, state, id, raw, full=True)


@router.delete(BASE + "{id}/", status_code=204, response_class=Response, summary="Delete experiment saved metric")
def delete_experiment_saved_metric(auth: Write, state: State, id: SavedMetricId) -> Response:
    # The links go with it (ON DELETE CASCADE): every experiment that used it no longer does.
    if state.store.saved_metrics.delete(auth.project.id, id) is None:
        raise NotFound()
    return Response(status_code=204)
