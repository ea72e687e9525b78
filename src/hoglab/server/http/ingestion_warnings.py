"""``GET /api/projects/{project_id}/ingestion_warnings/``: what capture dropped or repaired in the last 30 days.

PostHog's answer (its ``IngestionWarningsViewSet``): ``{"results": [{"type", "lastSeen", "sparkline": [[count,
day], ...], "warnings": [{"type", "timestamp", "details"}, ...], "count"}, ...]}``, one item per warning type, the
most recently seen first, each with its 50 most recent warnings (newest first) and its count per day (in the
project's time zone); ``?q=text`` keeps the warnings whose type or details contain ``text``. The key needs
``query:read``: the same rows are readable with HogQL (``SELECT * FROM ingestion_warnings``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query

from ..query.ingestion_warnings import read_summaries
from ..state import ServiceState, get_state
from .auth import AuthContext, require_scope
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["ingestion_warnings"])


@router.get("/api/projects/{project_id}/ingestion_warnings/", summary="List the project's ingestion warnings")
def list_ingestion_warnings(
    auth: Annotated[AuthContext, Depends(require_scope("query:read"))],
    state: Annotated[ServiceState, Depends(get_state)],
    q: Annotated[str | None, Query(max_length=1000, description="Keep warnings whose type or details hold it.")] = None,
) -> dict[str, Any]:
    return {"results": read_summaries(state, auth.project, q or "")}
