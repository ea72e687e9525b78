"""The reads the service makes for its own endpoints (groups, ingestion warnings), read like a user's query.

HogQL, so the compiler's team guard keeps them to the caller's project; with the statement limits; within the
project's share of the engine (``fairness.py``). A failure is the answer a query would get (``failures.py``).

>>> rows = read_rows(state, project, "SELECT count() AS n FROM groups", label="groups")  # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..engine.limits import LimitedEngine, statement_limits
from ..errors import InternalError
from ..store.db import utcnow
from .failures import api_error
from .fairness import FairGate
from .jobs import tag_for
from .runners.base import RunContext

if TYPE_CHECKING:
    from ..state import ServiceState
    from ..store import ProjectRecord

__all__ = ["read_rows"]


def read_rows(
    state: ServiceState,
    project: ProjectRecord,
    hogql: str,
    *,
    values: Mapping[str, Any] | None = None,
    label: str,
    max_rows: int | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``hogql`` (``values``: its ``{placeholders}``); ``label`` names the read in the engine's query
    log tag, ``max_rows`` caps the rows (default: the compiler's)."""
    engine = state.engine
    if engine is None:
        raise InternalError("The events engine is not running.")
    ctx = RunContext(
        project=project,
        engine=LimitedEngine(engine, statement_limits(state.config)),
        now=utcnow(),
        tag=tag_for(project.id, f"{label}-{uuid.uuid4().hex[:12]}"),
    )
    try:
        with FairGate.for_engine(engine, state.config).hold(project_id=project.id, key_id=None):
            rows: list[dict[str, Any]] = ctx.run(hogql, values=values, max_limit=max_rows).to_pylist()
            return rows
    except Exception as exc:
        raise api_error(exc) from None
