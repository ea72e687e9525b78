"""The nine Experiments endpoints, with PostHog's semantics (docs/api.md, "Experiments: PostHog's legacy semantics").

GET    /api/projects/{project_id}/experiments/                                  experiment:read
POST   /api/projects/{project_id}/experiments/                                  experiment:write
GET    /api/projects/{project_id}/experiments/requires_flag_implementation/     experiment:read
GET    /api/projects/{project_id}/experiments/{id}/                             experiment:read
PATCH  /api/projects/{project_id}/experiments/{id}/                             experiment:write
DELETE /api/projects/{project_id}/experiments/{id}/                             experiment:write
POST   /api/projects/{project_id}/experiments/{id}/create_exposure_cohort_for_experiment/   experiment:write
GET    /api/projects/{project_id}/experiments/{id}/results/                     experiment:read
GET    /api/projects/{project_id}/experiments/{id}/secondary_results/           experiment:read

and PostHog's newer ones: ``POST .../experiments/{id}/duplicate/`` (experiment:write, a draft copy),
``POST .../experiments/{id}/ship_variant/`` (experiment:write: one variant to everyone, a running experiment ended) and
``GET .../experiments/eligible_feature_flags/`` (feature_flag:read, the flags an experiment can run on). Holdouts
and saved metrics have their own routers (``experiment_holdouts.py``, ``experiment_saved_metrics.py``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from hoglab.schema import Experiment, ExperimentCreate, ExperimentUpdate, Paginated, ShipVariant

from ..errors import ValidationFailed
from ..experiments import rules
from ..experiments.duplicate import duplicate_experiment
from ..experiments.eligible_flags import PageError, eligible_flags, parse_page
from ..experiments.saved_metrics import link_saved_metrics
from ..state import ServiceState, get_state
from ..store import ExperimentRecord, FlagRecord
from ..validation import MAX_ID, validate_body
from .auth import AuthContext, require_scope
from .bodies import clamp_page, json_body_openapi, page_links, parse_json_object, raw_body
from .flag_resources import experiments_by_flag, flag_body
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["experiments"])

BASE = "/api/projects/{project_id}/experiments/"
Read = Annotated[AuthContext, Depends(require_scope("experiment:read"))]
Write = Annotated[AuthContext, Depends(require_scope("experiment:write"))]
FlagRead = Annotated[AuthContext, Depends(require_scope("feature_flag:read"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
ExperimentId = Annotated[int, Path(ge=1, le=MAX_ID, description="The experiment's id.")]


def _load(state: ServiceState, auth: AuthContext, experiment_id: int) -> tuple[ExperimentRecord, FlagRecord]:
    record = state.store.experiments.get(auth.project.id, experiment_id)
    flag = state.store.flags.get(record.feature_flag_id) if record is not None else None
    if record is None or flag is None:
        raise rules.experiment_not_found(state.store, auth.project.id, experiment_id)
    return record, flag


def _answer(state: ServiceState, record: ExperimentRecord, flag: FlagRecord) -> dict[str, Any]:
    user = state.store.users.get(record.created_by_id) if record.created_by_id is not None else None
    return rules.experiment_answers(state.store, [(record, flag, user)])[0]


@router.get(BASE, response_model=Paginated[Experiment], summary="List all experiments")
def list_experiments(
    request: Request,
    auth: Read,
    state: State,
    limit: Annotated[int | None, Query(ge=1, description="Results per page (default 100, at most 1000).")] = None,
    offset: Annotated[int | None, Query(ge=0, description="Initial index from which results are returned.")] = None,
    archived: Annotated[bool | None, Query(description="true: only archived ones. Default: only live ones.")] = None,
    status: Annotated[Literal["draft", "running", "complete", "all"], Query()] = "all",
    search: Annotated[str | None, Query(max_length=400, description="Part of the name.")] = None,
) -> dict[str, Any]:
    page_limit, page_offset = clamp_page(limit, offset)
    page = state.store.experiments.list(
        auth.project.id,
        archived=bool(archived),
        status=status,
        search=search,
        limit=page_limit,
        offset=page_offset,
    )
    flags = state.store.flags.get_many(r.feature_flag_id for r in page.results)
    users = {uid: state.store.users.get(uid) for uid in {r.created_by_id for r in page.results} if uid is not None}
    following, previous = page_links(request.url, total=page.total, limit=page_limit, offset=page_offset)
    items = [(r, flags[r.feature_flag_id], users.get(r.created_by_id) if r.created_by_id else None)
             for r in page.results]  # fmt: skip
    return {
        "count": page.total,
        "next": following,
        "previous": previous,
        "results": rules.experiment_answers(state.store, items),
    }


@router.post(
    BASE,
    status_code=201,
    response_model=Experiment,
    summary="Create experiment",
    openapi_extra=json_body_openapi(ExperimentCreate),
)
def create_experiment(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    data = parse_json_object(raw, request.headers.get("content-type"))
    record, flag = rules.create_with_flag(state.store, auth.project.id, auth.user.id, data)
    return _answer(state, record, flag)


@router.get(BASE + "requires_flag_implementation/", summary="Retrieve requires-flag-implementation")
def requires_flag_implementation(
    auth: Read,
    state: State,
    events: Annotated[
        str | None, Query(description='Metric events, JSON: ["$pageview"] or [{"id": "$pageview"}].')
    ] = None,
) -> dict[str, bool]:
    names: list[str] = []
    if events:
        try:
            parsed = json.loads(events)
        except (ValueError, RecursionError):
            raise ValidationFailed("events must be a JSON list.", attr="events") from None
        if not isinstance(parsed, list):
            raise ValidationFailed("events must be a JSON list.", attr="events")
        for item in parsed:
            name = item.get("id") if isinstance(item, dict) else item
            if not isinstance(name, str):
                raise ValidationFailed("each event is a name or an object with an 'id'.", attr="events")
            names.append(name)
    samples = state.sample_event_properties(state, auth.project, names)
    return {"result": rules.requires_flag_implementation(samples)}


@router.get(
    BASE + "eligible_feature_flags/",
    summary="Feature flags eligible for an experiment",
    responses={200: {"description": '{"results": [FeatureFlag...], "count": N}: multivariate flags whose first '
                                    'variant is control.'}},
)  # fmt: skip
def eligible_feature_flags(
    auth: FlagRead,
    state: State,
    search: Annotated[str | None, Query(max_length=400, description="Part of the key or name, any case.")] = None,
    limit: Annotated[str | None, Query(description="Results per page (default 20, at most 100).")] = None,
    offset: Annotated[str | None, Query(description="Initial index from which results are returned.")] = None,
    active: Annotated[str | None, Query(description='"true" or "false".')] = None,
    created_by_id: Annotated[str | None, Query(description="Only flags this user created.")] = None,
    order: Annotated[str | None, Query(description="created_at, key or name; - for descending.")] = None,
    evaluation_runtime: Annotated[str | None, Query(description="server, client or all.")] = None,
    has_evaluation_contexts: Annotated[str | None, Query(description='"true" or "false".')] = None,
) -> Any:
    try:
        size, start = parse_page(limit, offset)
    except PageError as exc:
        # PostHog's own shape for this one ({"error": ...}), with hoglab's error members alongside.
        return JSONResponse({**exc.body().model_dump(), "error": exc.detail}, status_code=400)
    found = eligible_flags(
        state.store.flags.list(auth.project.id), search=search, active=active, created_by_id=created_by_id,
        order=order, evaluation_runtime=evaluation_runtime, has_evaluation_contexts=has_evaluation_contexts,
    )  # fmt: skip
    uses = experiments_by_flag(state, auth.project.id)
    return {"results": [flag_body(f, uses.get(f.id, []), state) for f in found[start : start + size]],
            "count": len(found)}  # fmt: skip


@router.get(BASE + "{id}/", response_model=Experiment, summary="Retrieve experiment")
def retrieve_experiment(auth: Read, state: State, id: ExperimentId) -> dict[str, Any]:
    record, flag = _load(state, auth, id)
    return _answer(state, record, flag)


@router.patch(
    BASE + "{id}/",
    response_model=Experiment,
    summary="Update experiment",
    openapi_extra=json_body_openapi(ExperimentUpdate),
)
def update_experiment(request: Request, auth: Write, state: State, id: ExperimentId, raw: Body) -> dict[str, Any]:
    record, flag = _load(state, auth, id)
    data = rules.read_only_dropped(parse_json_object(raw, request.headers.get("content-type")))
    if data.get("feature_flag_key") == flag.key:
        del data["feature_flag_key"]  # sending the object back unchanged is not an attempt to re-key it
    refused = sorted(set(data) - rules.UPDATABLE_FIELDS)
    if refused:
        raise ValidationFailed(f"Can't update keys: {', '.join(refused)} on Experiment", attr=refused[0])
    payload = validate_body(ExperimentUpdate, data, model_error_attrs=rules.MODEL_ERROR_ATTRS)
    given = payload.model_fields_set
    changes: dict[str, Any] = {}
    for field in ("name", "archived"):
        if field in given:
            if getattr(payload, field) is None:
                raise ValidationFailed("This field may not be null.", attr=field)
            changes[field] = getattr(payload, field)
    if "description" in given:
        changes["description"] = payload.description or ""
    for field in ("start_date", "end_date"):
        if field in given:
            changes[field] = rules.to_utc(getattr(payload, field), field)
    if "filters" in given:
        rules.check_metric_filters(data["filters"])
    for field in ("filters", "parameters", "secondary_metrics"):
        if field in given:
            changes[field] = data[field]
    changes.update(rules.metric_fields(payload))
    store = state.store
    with store.transaction():
        record, flag = _load(state, auth, id)  # again, inside the lock: the row may have changed meanwhile
        start = changes.get("start_date", record.start_date)
        end = changes.get("end_date", record.end_date)
        if start is not None and end is not None and end <= start:
            raise ValidationFailed("End date must be after start date", attr="end_date")
        flag_changes: dict[str, Any] = {}
        if payload.parameters is not None and payload.parameters.feature_flag_variants:
            wanted = rules.variants_from(payload.parameters)
            if not rules.same_variants(wanted, flag.variants):
                if not record.is_draft:
                    raise ValidationFailed(
                        "Can't update feature_flag_variants on Experiment",
                        attr="parameters__feature_flag_variants",
                    )
                flag_changes["filters"] = {**flag.filters, "multivariate": {"variants": wanted}}
        if "start_date" in changes and (start is not None) != flag.active:
            flag_changes["active"] = start is not None
        if flag_changes:
            flag = store.flags.update(flag.id, **flag_changes)
        flag = rules.object_changes(store, record, flag, payload, changes)
        updated = store.experiments.update(auth.project.id, id, changes)
        if updated is None:
            raise rules.experiment_not_found(store, auth.project.id, id)
        if "saved_metrics_ids" in given:
            updated = link_saved_metrics(store, updated, payload.saved_metrics_ids, replace=True)
    return _answer(state, updated, flag)


@router.delete(BASE + "{id}/", status_code=204, response_class=Response, summary="Delete experiment")
def delete_experiment(auth: Write, state: State, id: ExperimentId) -> Response:
    store = state.store
    with store.transaction():
        removed = store.experiments.delete(auth.project.id, id)
        if removed is None:
            raise rules.experiment_not_found(store, auth.project.id, id)
        # The flag outlives its experiment only as deleted, so its key can be used again; a flag another
        # experiment still runs on (a duplicate shares its source's flag) stays.
        if not experiments_by_flag(state, auth.project.id).get(removed.feature_flag_id):
            store.flags.update(removed.feature_flag_id, deleted=True, active=False)
    return Response(status_code=204)


@router.post(
    BASE + "{id}/duplicate/",
    status_code=201,
    response_model=Experiment,
    summary="Duplicate experiment",
    responses={201: {"description": "The draft copy (name + ' (Copy)'); body: optional feature_flag_key, name."}},
)
def duplicate(request: Request, auth: Write, state: State, id: ExperimentId, raw: Body) -> dict[str, Any]:
    record, flag = _load(state, auth, id)
    body = parse_json_object(raw, request.headers.get("content-type"))
    copy, copy_flag = duplicate_experiment(state.store, record, flag, auth.user.id, body)
    return _answer(state, copy, copy_flag)


@router.post(
    BASE + "{id}/ship_variant/",
    response_model=Experiment,
    summary="Ship a variant to 100% of users and end the experiment if it is running",
    openapi_extra=json_body_openapi(ShipVariant),
)
def ship_variant(request: Request, auth: Write, state: State, id: ExperimentId, raw: Body) -> dict[str, Any]:
    payload = validate_body(ShipVariant, parse_json_object(raw, request.headers.get("content-type")))
    store = state.store
    with store.transaction():
        record, flag = _load(state, auth, id)
        if record.start_date is None:
            raise ValidationFailed("Cannot ship a variant of a draft experiment.", attr="variant_key")
        filters = rules.shipped_filters(flag.filters, payload.variant_key,
                                        release_to_everyone=payload.release_to_everyone)  # fmt: skip
        flag = store.flags.update(flag.id, filters=filters)
        changes: dict[str, Any] = {}
        if record.end_date is None:
            changes["end_date"] = rules.to_utc(datetime.now(UTC), "end_date")
        for field in ("conclusion", "conclusion_comment"):
            if getattr(payload, field) is not None:
                changes[field] = getattr(payload, field)
        updated = store.experiments.update(auth.project.id, id, changes) if changes else record
        if updated is None:
            raise rules.experiment_not_found(store, auth.project.id, id)
    return _answer(state, updated, flag)


@router.post(
    BASE + "{id}/create_exposure_cohort_for_experiment/",
    summary="Create exposure cohort for experiment",
    responses={200: {"description": '{"cohort": {...}}: the new cohort of persons exposed to the experiment.'}},
)
def create_exposure_cohort(auth: Write, state: State, id: ExperimentId) -> dict[str, Any]:
    store = state.store
    with store.transaction():
        record, flag = _load(state, auth, id)
        if record.start_date is None:
            raise ValidationFailed("Experiment does not have a start date.")
        if record.exposure_cohort_id is not None:
            raise ValidationFailed("Experiment already has an exposure cohort.")
        cohort = store.cohorts.create(
            auth.project.id,
            f'Users exposed to experiment "{record.name}"',
            rules.exposure_cohort_filters(flag.key, record.start_date, record.parameters),
            created_by_id=auth.user.id,
        )
        store.experiments.update(auth.project.id, id, {"exposure_cohort_id": cohort.id})
    if state.calculate_cohort is not None:
        cohort = state.calculate_cohort(state, auth.project, cohort)  # members from events so far, with count
    return {"cohort": rules.cohort_body(cohort, auth.user)}


Refresh = Annotated[
    str | None, Query(description="Any non-empty value recomputes instead of answering from the one-hour cache.")
]
_RESULTS_ANSWER: dict[int | str, dict[str, Any]] = {
    200: {"description": '{"result": {...}, "last_refresh": "...", "is_cached": false}'}
}


def _results(state: ServiceState, auth: AuthContext, record: ExperimentRecord, index: int | None, refresh: bool) -> Any:
    if state.experiment_results is None:
        raise ValidationFailed(
            "No results: this service computes no experiment results (it runs without an events engine).",
            code="no-results",
        )
    answer = state.experiment_results(state, auth.project, record, index, refresh)
    if isinstance(answer, bytes):
        return Response(answer, media_type="application/json")
    return answer


@router.get(BASE + "{id}/results/", summary="Retrieve experiment results", responses=_RESULTS_ANSWER)
def experiment_results(auth: Read, state: State, id: ExperimentId, refresh: Refresh = None) -> Any:
    record, _ = _load(state, auth, id)
    if not record.filters:
        raise ValidationFailed("Experiment has no target metric")
    return _results(state, auth, record, None, bool(refresh))


@router.get(BASE + "{id}/secondary_results/", summary="Retrieve experiment secondary results",
            responses=_RESULTS_ANSWER)  # fmt: skip
def experiment_secondary_results(
    auth: Read,
    state: State,
    id: ExperimentId,
    metric_id: Annotated[str | None, Query(alias="id", description="Index into secondary_metrics.")] = None,
    refresh: Refresh = None,
) -> Any:
    record, _ = _load(state, auth, id)
    metrics = record.secondary_metrics or []
    if not metrics:
        raise ValidationFailed("Experiment has no secondary metrics")
    if metric_id is None or metric_id == "":
        raise ValidationFailed("Secondary metric id is required", attr="id")
    if not (metric_id.isascii() and metric_id.isdigit()):
        raise ValidationFailed("Secondary metric id must be an integer", attr="id")
    index = int(metric_id)
    if index >= len(metrics):
        raise ValidationFailed("Invalid metric ID", attr="id")
    return _results(state, auth, record, index, bool(refresh))
