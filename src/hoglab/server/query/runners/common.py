"""Helpers every insight runner shares: the filters of a series, running HogQL into rows, the first event.

>>> p = Params()
>>> series_conditions(None, {"event": "$pageview", "properties": []}, p, project=None)
['event = {p0}']
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ...filters.properties import Params, property_filters_to_hogql, test_account_filters
from .base import RunContext

__all__ = ["Params", "first_event_time", "get", "rows", "series_conditions", "series_label"]


def get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` for models, ``obj[name]`` for dicts; ``default`` when missing or None."""
    if obj is None:
        return default
    value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    return default if value is None else value


def series_label(series: Any) -> str:
    """PostHog's label of a series: its event, or ``All events``."""
    event = get(series, "event")
    return "All events" if event is None else str(event)


def series_conditions(
    query: Any, series: Any, p: Params, *, project: Any, attr: str = "series", event: bool = True
) -> list[str]:
    """HogQL conditions (AND-ed by the caller) for the events one series counts: its event, its own
    ``properties``/``fixedProperties``, the query's ``properties`` and the test-account filters."""
    parts: list[str] = []
    timezone = getattr(project, "timezone", None) or "UTC"
    name = get(series, "event")
    if event and name is not None:
        parts.append(f"event = {p.add(str(name))}")
    if query is not None and get(query, "filterTestAccounts"):
        extra = property_filters_to_hogql(
            test_account_filters(project), p, attr="filterTestAccounts", timezone=timezone
        )
        if extra:
            parts.append(extra)
    if query is not None:
        global_filter = property_filters_to_hogql(get(query, "properties"), p, attr="properties", timezone=timezone)
        if global_filter:
            parts.append(global_filter)
    for key in ("properties", "fixedProperties"):
        own = property_filters_to_hogql(get(series, key), p, attr=f"{attr}.{key}", timezone=timezone)
        if own:
            parts.append(own)
    return parts


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
