"""Helpers every insight runner shares beyond what a series counts (``hoglab.translate.series``): running HogQL
into rows, the project's first event.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .base import RunContext

__all__ = ["first_event_time", "rows"]


def rows(
    ctx: RunContext, hogql: str, values: Mapping[str, Any], *, max_rows: int | None = None
) -> list[dict[str, Any]]:
    """Run HogQL for the project and return the rows as dicts (column name → Python value)."""
    compiled = ctx.compile(hogql, values=values, max_limit=max_rows)
    table = ctx.execute(compiled)
    result: list[dict[str, Any]] = table.to_pylist()
    return result


def first_event_time(ctx: RunContext) -> datetime | None:
    """The project's first event (for ``date_from: "all"``), or None without events."""
    found = rows(ctx, "SELECT min(timestamp) AS first, count() AS n FROM events", {})
    if not found or not found[0]["n"]:
        return None
    first = found[0]["first"]
    if isinstance(first, datetime) and first.tzinfo is None:
        first = first.replace(tzinfo=UTC)
    return first if isinstance(first, datetime) else None
