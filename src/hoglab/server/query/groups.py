"""The reads behind ``/api/projects/:id/groups/`` (list, find, property definitions and values), as PostHog's
``GroupsViewSet`` answers them.

Read like a query: HogQL over the guarded ``groups`` table (so only the caller's project), with the statement
limits, within the project's share of the engine (``fairness.py``). Ingestion writes the rows (``ingest/groups.py``).

* list: one type's groups, newest first (``created_at`` descending, then key), 100 a page; ``search`` keeps groups
  whose properties' JSON text contains it (case-insensitive) or whose key is it (case-insensitive), ``group_key``
  those whose key contains it.
* property definitions: per type, each property key and how many groups have it; property values: the 20 most
  common values of one key among a type's groups.

>>> group_item({"index": 0, "key": "acme", "properties": '{"plan": "pro"}', "created_at": "2026-01-01T00:00:00Z"})
{'group_type_index': 0, 'group_key': 'acme', 'group_properties': {'plan': 'pro'}, 'created_at': '2026-01-01T00:00:00Z'}
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from ..engine.limits import LimitedEngine, statement_limits
from ..errors import ServerError
from ..store.db import utcnow
from .failures import api_error
from .fairness import FairGate
from .jobs import tag_for
from .runners.base import RunContext

if TYPE_CHECKING:
    from ..state import ServiceState
    from ..store import ProjectRecord

__all__ = ["PAGE_SIZE", "find_group", "group_item", "list_groups", "property_definitions", "property_values"]

PAGE_SIZE = 100
"""Groups per page of the list (PostHog's cursor page)."""
_COLUMNS = "index, key, properties, created_at"


def group_item(row: Mapping[str, Any]) -> dict[str, Any]:
    """PostHog's ``Group`` object of one row of the ``groups`` table."""
    try:
        properties = orjson.loads(row["properties"] or "{}")
    except orjson.JSONDecodeError:
        properties = {}
    created = row["created_at"]
    return {
        "group_type_index": int(row["index"]),
        "group_key": row["key"],
        "group_properties": properties if isinstance(properties, dict) else {},
        "created_at": created.isoformat().replace("+00:00", "Z") if isinstance(created, datetime) else created,
    }


def _rows(state: ServiceState, project: ProjectRecord, hogql: str, values: Mapping[str, Any],
          max_rows: int) -> list[dict[str, Any]]:  # fmt: skip
    engine = state.engine
    if engine is None:
        raise ServerError("The events engine is not running.")
    ctx = RunContext(
        project=project,
        engine=LimitedEngine(engine, statement_limits(state.config)),
        now=utcnow(),
        tag=tag_for(project.id, f"groups-{uuid.uuid4().hex[:12]}"),
    )
    try:
        with FairGate.for_engine(engine, state.config).hold(project_id=project.id, key_id=None):
            found: list[dict[str, Any]] = ctx.run(hogql, values=values, max_limit=max_rows).to_pylist()
            return found
    except Exception as exc:
        raise api_error(exc) from None


def list_groups(state: ServiceState, project: ProjectRecord, index: int, *, search: str | None = None,
                group_key: str | None = None, offset: int = 0) -> tuple[list[dict[str, Any]], bool]:  # fmt: skip
    """One page of a type's groups (newest first) and whether more follow."""
    where = ["index = {index}"]
    values: dict[str, Any] = {"index": index}
    if search:
        where.append("(properties ILIKE {search_like} OR lower(key) = lower({search}))")
        values.update(search=search, search_like=f"%{_escape_like(search)}%")
    if group_key:
        where.append("key ILIKE {key_like}")
        values["key_like"] = f"%{_escape_like(group_key)}%"
    hogql = (f"SELECT {_COLUMNS} FROM groups WHERE {' AND '.join(where)} ORDER BY created_at DESC, key ASC "
             f"LIMIT {PAGE_SIZE + 1} OFFSET {int(offset)}")  # fmt: skip
    rows = _rows(state, project, hogql, values, PAGE_SIZE + 1)
    return [group_item(r) for r in rows[:PAGE_SIZE]], len(rows) > PAGE_SIZE


def find_group(state: ServiceState, project: ProjectRecord, index: int, key: str) -> dict[str, Any] | None:
    """The group of type ``index`` with exactly this key, or ``None``."""
    rows = _rows(state, project, f"SELECT {_COLUMNS} FROM groups WHERE index = {{index}} AND key = {{key}}",
                 {"index": index, "key": key}, 2)  # fmt: skip
    return group_item(rows[0]) if rows else None


def property_definitions(state: ServiceState, project: ProjectRecord) -> dict[str, list[dict[str, Any]]]:
    """Per type index (as text, PostHog's keys), each property key with the number of groups that have it."""
    rows = _rows(
        state,
        project,
        "SELECT index, name, count() AS n FROM (SELECT index, arrayJoin(JSONExtractKeys(properties)) AS name "
        "FROM groups) GROUP BY index, name ORDER BY index, n DESC, name",
        {},
        10_000,
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(str(row["index"]), []).append({"name": row["name"], "count": int(row["n"])})
    return found


def property_values(state: ServiceState, project: ProjectRecord, index: int, key: str,
                    value: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The 20 most common values of property ``key`` among a type's groups (``value``: those containing it)."""
    where = ["index = {index}", "properties[{key}] IS NOT NULL"]
    values: dict[str, Any] = {"index": index, "key": key}
    if value:
        where.append("properties[{key}] ILIKE {value_like}")
        values["value_like"] = f"%{_escape_like(value)}%"
    rows = _rows(
        state,
        project,
        f"SELECT properties[{{key}}] AS name, count() AS n FROM groups "
        f"WHERE {' AND '.join(where)} GROUP BY name ORDER BY n DESC, name LIMIT 20",
        values,
        20,
    )
    return [{"name": r["name"], "count": int(r["n"])} for r in rows]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
