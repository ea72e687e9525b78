"""A router whose every path answers with and without the trailing slash.

PostHog documents its paths with a trailing slash (``/api/projects/1/experiments/``) and clients send both
forms. Registering both avoids Starlette's 307 redirect, which many clients don't follow for a POST. Only the
slash form appears in the OpenAPI document.

>>> router = SlashRouter()
>>> @router.get("/api/projects/{project_id}/things/")
... def things(project_id: str) -> list[str]:
...     return []
>>> sorted(route.path for route in router.routes)
['/api/projects/{project_id}/things', '/api/projects/{project_id}/things/']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

__all__ = ["SlashRouter"]


class SlashRouter(APIRouter):
    def add_api_route(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        slash = path if path.endswith("/") else path + "/"
        super().add_api_route(slash, endpoint, **kwargs)
        bare = slash.rstrip("/")
        if bare:
            hidden = {**kwargs, "include_in_schema": False}
            hidden.pop("operation_id", None)
            super().add_api_route(bare, endpoint, **hidden)
