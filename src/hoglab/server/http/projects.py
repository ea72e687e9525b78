"""``GET /api/projects/`` (the projects a key reaches, paged) and ``GET /api/projects/{project_id}/``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, Request

from hoglab.schema import Paginated, Project

from ..state import ServiceState, get_state
from .auth import AuthContext, KeyContext, authenticated_key, require_scope
from .bodies import clamp_page, page_links
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["projects"])


@router.get("/api/projects/", response_model=Paginated[Project], summary="List the projects the key can reach")
def list_projects(
    request: Request,
    key: Annotated[KeyContext, Depends(authenticated_key)],
    state: Annotated[ServiceState, Depends(get_state)],
    limit: Annotated[int | None, Query(ge=1)] = None,
    offset: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    page_limit, page_offset = clamp_page(limit, offset)
    projects = state.store.projects.list(key.key.project_ids)
    following, previous = page_links(request.url, total=len(projects), limit=page_limit, offset=page_offset)
    return {
        "count": len(projects),
        "next": following,
        "previous": previous,
        "results": [p.to_api() for p in projects[page_offset : page_offset + page_limit]],
    }


@router.get("/api/projects/{project_id}/", response_model=Project, summary="Retrieve a project")
def retrieve_project(auth: Annotated[AuthContext, Depends(require_scope(None))]) -> dict[str, Any]:
    return auth.project.to_api()
