"""The metric experiments' own endpoints: the project's experiment defaults and a metric's results day by day.

GET    /api/projects/{project_id}/experiments_config/                          experiment:read
PATCH  /api/projects/{project_id}/experiments_config/                          experiment:write
GET    /api/projects/{project_id}/experiments/{id}/timeseries_results/         experiment:read
POST   /api/projects/{project_id}/experiments/{id}/recalculate_timeseries/     experiment:write

``experiments_config`` is PostHog's ``TeamExperimentsConfig``: the CUPED, sequential-testing and matured-users
defaults an experiment's ``stats_config`` falls back to at query time. The two timeseries endpoints are PostHog's
(``products/experiments/backend/presentation/views.py``); the work is ``experiments/metric/timeseries.py``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from fastapi.responses import JSONResponse

from hoglab.schema import ExperimentsConfig, ExperimentsConfigUpdate

from ..errors import ValidationFailed
from ..experiments.metric.timeseries import start_recalculation, timeseries_answer
from ..experiments.rules import experiment_not_found
from ..state import ServiceState, get_state
from ..store import ExperimentRecord
from ..validation import MAX_ID, validate_body
from .auth import AuthContext, require_scope
from .bodies import json_body_openapi, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["experiments"])

PROJECT = "/api/projects/{project_id}/"
Read = Annotated[AuthContext, Depends(require_scope("experiment:read"))]
Write = Annotated[AuthContext, Depends(require_scope("experiment:write"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
ExperimentId = Annotated[int, Path(ge=1, le=MAX_ID, description="The experiment's id.")]


def _config(state: ServiceState, project_id: int) -> dict[str, Any]:
    return ExperimentsConfig.model_validate(state.store.experiments_config.get(project_id)).model_dump(mode="json")


@router.get(PROJECT + "experiments_config/", response_model=ExperimentsConfig,
            summary="Retrieve the project's experiment defaults")  # fmt: skip
def retrieve_experiments_config(auth: Read, state: State) -> dict[str, Any]:
    return _config(state, auth.project.id)


@router.patch(PROJECT + "experiments_config/", response_model=ExperimentsConfig,
              summary="Update the project's experiment defaults",
              openapi_extra=json_body_openapi(ExperimentsConfigUpdate))  # fmt: skip
def update_experiments_config(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    data = parse_json_object(raw, request.headers.get("content-type"))
    payload = validate_body(ExperimentsConfigUpdate, data)
    changes = payload.model_dump(mode="json", include=payload.model_fields_set)
    state.store.experiments_config.update(auth.project.id, changes)
    return _config(state, auth.project.id)


def _experiment(state: ServiceState, auth: AuthContext, experiment_id: int) -> ExperimentRecord:
    record = state.store.experiments.get(auth.project.id, experiment_id)
    if record is None:
        raise experiment_not_found(state.store, auth.project.id, experiment_id)
    return record


_DAYS = "{experiment_id, metric_uuid, status, timeseries: {day: answer}, errors, ...}"
_REQUEST = "{id, experiment_id, metric_uuid, fingerprint, status, created_at}"


@router.get(PROJECT + "experiments/{id}/timeseries_results/", summary="Retrieve a metric's results day by day",
            responses={200: {"description": _DAYS}})  # fmt: skip
def experiment_timeseries_results(
    auth: Read,
    state: State,
    id: ExperimentId,
    metric_uuid: Annotated[str | None, Query(max_length=200, description="The metric's uuid.")] = None,
    fingerprint: Annotated[str | None, Query(max_length=200, description="The metric's fingerprint.")] = None,
) -> dict[str, Any]:
    return timeseries_answer(state, auth.project, _experiment(state, auth, id), metric_uuid, fingerprint)


@router.post(PROJECT + "experiments/{id}/recalculate_timeseries/", summary="Recalculate a metric's daily results",
             responses={200: {"description": "The recalculation already running for this fingerprint"},
                        201: {"description": _REQUEST}})  # fmt: skip
def recalculate_experiment_timeseries(request: Request, auth: Write, state: State, id: ExperimentId,
                                      raw: Body) -> JSONResponse:  # fmt: skip
    data = parse_json_object(raw, request.headers.get("content-type")) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    status, body = start_recalculation(state, auth.project, _experiment(state, auth, id), data)
    return JSONResponse(body, status_code=status)
