"""Reading flags and cohorts with a personal API key, and the flag definitions SDKs evaluate locally.

GET /api/projects/{project_id}/feature_flags/             feature_flag:read   paged, newest id last
GET /api/projects/{project_id}/feature_flags/{id}/        feature_flag:read
GET /api/projects/{project_id}/cohorts/                   cohort:read         paged
GET /api/projects/{project_id}/cohorts/{id}/?refresh=1    cohort:read         recalculated when stale or asked
GET /flags/definitions?token=phc_...&send_cohorts         feature_flag:read   (and /api/feature_flag/local_evaluation)

The definitions are what posthog-python polls when given a ``personal_api_key``/``secret_key``: every live flag
(inactive ones too, which the SDK reads as off), ``group_type_mapping`` (the project's group types, index as text ->
name, which the SDK needs to evaluate flags rolled out by group) and, with
``send_cohorts``, the cohorts flags use that are defined by person properties. Behavioural cohorts (exposure
cohorts) are left out, so the SDK asks the server for flags that use them, as it does with PostHog.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from ..errors import AuthenticationFailed, NotFound, PermissionDenied, ValidationFailed
from ..flags.cohorts import is_materialised, refresh_if_stale
from ..flags.service import FLAG_VERSION, cohort_ids, flag_spec, load_cohorts
from ..ingest import GroupStore
from ..state import ServiceState, get_state
from ..store import CohortRecord, FlagRecord, ProjectRecord
from ..validation import MAX_ID
from .auth import AuthContext, KeyContext, authenticated_key, has_scope, require_scope
from .bodies import clamp_page, page_links
from .routing import SlashRouter

__all__ = ["experiments_by_flag", "flag_body", "router"]

router = SlashRouter(tags=["feature_flags"])

FLAGS = "/api/projects/{project_id}/feature_flags/"
COHORTS = "/api/projects/{project_id}/cohorts/"
State = Annotated[ServiceState, Depends(get_state)]
FlagRead = Annotated[AuthContext, Depends(require_scope("feature_flag:read"))]
CohortRead = Annotated[AuthContext, Depends(require_scope("cohort:read"))]
ObjectId = Annotated[int, Path(ge=1, le=MAX_ID)]
Limit = Annotated[int | None, Query(ge=1, description="Results per page (default 100, at most 1000).")]
Offset = Annotated[int | None, Query(ge=0)]


def experiments_by_flag(state: ServiceState, project_id: int) -> dict[int, list[int]]:
    with state.store.db.read() as conn:
        rows = conn.execute(
            "SELECT feature_flag_id, id FROM experiments WHERE team_id = ? ORDER BY id", (project_id,)
        ).fetchall()
    found: dict[int, list[int]] = {}
    for row in rows:
        found.setdefault(int(row[0]), []).append(int(row[1]))
    return found


def flag_body(flag: FlagRecord, experiments: list[int], state: ServiceState) -> dict[str, Any]:
    """PostHog's FeatureFlag serializer fields that hoglab has."""
    raw_groups = flag.filters.get("groups")
    groups: list[Any] = raw_groups if isinstance(raw_groups, list) else []
    simple = len(groups) == 1 and isinstance(groups[0], dict) and not groups[0].get("properties") and not flag.variants
    user = state.store.users.get(flag.created_by_id) if flag.created_by_id is not None else None
    return {
        **flag.to_api(),
        "created_at": flag.created_at,
        "updated_at": flag.updated_at,
        "created_by": None if user is None else user.to_api(),
        "is_simple_flag": simple,
        "rollout_percentage": groups[0].get("rollout_percentage") if simple else None,
        "experiment_set": experiments,
        "version": FLAG_VERSION,
        "evaluation_runtime": "all",
        "tags": [],
    }


@router.get(FLAGS, summary="List feature flags")
def list_feature_flags(
    request: Request, auth: FlagRead, state: State, limit: Limit = None, offset: Offset = None
) -> Any:
    page_limit, page_offset = clamp_page(limit, offset)
    flags = state.store.flags.list(auth.project.id)
    experiments = experiments_by_flag(state, auth.project.id)
    following, previous = page_links(request.url, total=len(flags), limit=page_limit, offset=page_offset)
    page = flags[page_offset : page_offset + page_limit]
    return {
        "count": len(flags),
        "next": following,
        "previous": previous,
        "results": [flag_body(f, experiments.get(f.id, []), state) for f in page],
    }


@router.get(FLAGS + "{id}/", summary="Retrieve a feature flag")
def retrieve_feature_flag(auth: FlagRead, state: State, id: ObjectId) -> Any:
    flag = state.store.flags.get(id)
    if flag is None or flag.team_id != auth.project.id or flag.deleted:
        raise NotFound()
    return flag_body(flag, experiments_by_flag(state, auth.project.id).get(flag.id, []), state)


def _cohort_body(state: ServiceState, cohort: CohortRecord) -> dict[str, Any]:
    user = state.store.users.get(cohort.created_by_id) if cohort.created_by_id is not None else None
    return {**cohort.to_api(), "created_by": None if user is None else user.to_api()}


@router.get(COHORTS, summary="List cohorts")
def list_cohorts(request: Request, auth: CohortRead, state: State, limit: Limit = None, offset: Offset = None) -> Any:
    page_limit, page_offset = clamp_page(limit, offset)
    cohorts = state.store.cohorts.list(auth.project.id)
    following, previous = page_links(request.url, total=len(cohorts), limit=page_limit, offset=page_offset)
    page = cohorts[page_offset : page_offset + page_limit]
    return {"count": len(cohorts), "next": following, "previous": previous, "results": [
        _cohort_body(state, c) for c in page
    ]}  # fmt: skip


@router.get(COHORTS + "{id}/", summary="Retrieve a cohort (its membership recalculated when stale)")
def retrieve_cohort(
    auth: CohortRead,
    state: State,
    id: ObjectId,
    refresh: Annotated[bool, Query(description="Recalculate membership now.")] = False,
) -> Any:
    cohort = state.store.cohorts.get(id, auth.project.id)
    if cohort is None or cohort.deleted:
        raise NotFound()
    return _cohort_body(state, refresh_if_stale(state, auth.project, cohort, force=refresh))


def _definitions_project(state: ServiceState, key: KeyContext, token: str | None) -> ProjectRecord:
    if not token:
        raise ValidationFailed("token (the project API key) is required.", attr="token")
    project = state.store.projects.get_by_token(token)
    if project is None:
        raise AuthenticationFailed(
            "Project API key invalid. You can find your project API key in PostHog project settings.",
            code="invalid_api_key",
        )
    if not key.reaches(project.id):
        raise PermissionDenied(f"API key does not have access to the requested project: ID {project.id}.")
    if not has_scope(key.scopes, "feature_flag:read"):
        raise PermissionDenied("API key missing required scope 'feature_flag:read'")
    return project


def _local_cohorts(state: ServiceState, project: ProjectRecord, flags: list[FlagRecord]) -> dict[str, Any]:
    cohorts = load_cohorts(state, project, cohort_ids([flag_spec(f) for f in flags]))
    return {str(c.id): c.filters.get("properties") for c in cohorts.values() if not is_materialised(c)}


def _group_type_mapping(state: ServiceState, project: ProjectRecord) -> dict[str, str]:
    """PostHog's ``{"0": "company", ...}``: the index as text, the type's name."""
    if state.engine is None:
        return {}
    return {str(t.index): t.name for t in GroupStore.for_engine(state.engine).types(project.id)}


@router.get("/flags/definitions", summary="Flag definitions for SDK local evaluation")
@router.get("/api/feature_flag/local_evaluation", include_in_schema=False)
def flag_definitions(
    request: Request,
    key: Annotated[KeyContext, Depends(authenticated_key)],
    state: State,
    token: Annotated[str | None, Query(description="The project API key.")] = None,
) -> Any:
    project = _definitions_project(state, key, token)
    flags = state.store.flags.list(project.id)
    body: dict[str, Any] = {
        "flags": [
            {
                "id": f.id,
                "team_id": f.team_id,
                "name": f.name,
                "key": f.key,
                "filters": f.filters,
                "deleted": f.deleted,
                "active": f.active,
                "ensure_experience_continuity": f.ensure_experience_continuity,
                "version": FLAG_VERSION,
                "evaluation_runtime": "all",
            }
            for f in flags
        ],
        "group_type_mapping": _group_type_mapping(state, project),
    }
    if "send_cohorts" in request.query_params:
        body["cohorts"] = _local_cohorts(state, project, flags)
    return body
