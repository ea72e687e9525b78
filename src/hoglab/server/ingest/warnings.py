"""Ingestion warnings: what capture records when it drops or repairs one event of a batch, as PostHog does.

Capture keeps the good events of a batch. An event it cannot store is dropped, and one whose time it cannot use is
stored at the capture time; either way a row goes to the ``ingestion_warnings`` table (PostHog's columns: team_id,
source, type, details as JSON text, timestamp), which the project reads through HogQL (``SELECT * FROM
ingestion_warnings``) and ``GET /api/projects/:id/ingestion_warnings/`` (``http/ingestion_warnings.py``).

:data:`WARNING_TYPES` is every type capture writes and what happened to the event; the names are PostHog's
(its Node.js ingestion's ``ignored_invalid_timestamp`` and ``event_timestamp_in_future``, its Rust capture's
per-event drops) except ``invalid_event``, for faults PostHog rejects whole requests for.

>>> w = dropped("missing_distinct_id", {"event": "signup"}, index=3, field="distinct_id", reason="no distinct_id")
>>> w.type, w.details["eventName"], w.details["index"]
('missing_distinct_id', 'signup', 3)
>>> row = {"type": "missing_distinct_id", "day": "2026-01-02", "n": 2, "times": ["2026-01-02T10:00:00Z"],
...        "details": ['{"index":3}']}
>>> summarize([row])[0]["warnings"], summarize([row])[0]["count"]
([{'type': 'missing_distinct_id', 'timestamp': '2026-01-02T10:00:00Z', 'details': {'index': 3}}], 2)
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..engine.limits import LimitedEngine, statement_limits
from ..errors import ServerError
from ..query.failures import api_error
from ..query.fairness import FairGate
from ..query.jobs import tag_for
from ..query.runners.base import RunContext
from ..store.db import utcnow

if TYPE_CHECKING:
    from ..state import ServiceState
    from ..store import ProjectRecord

__all__ = [
    "API_DAYS",
    "API_EXAMPLES",
    "SOURCE",
    "SUMMARY_HOGQL",
    "WARNING_TYPES",
    "IngestionWarning",
    "clip",
    "dropped",
    "read_summaries",
    "summarize",
]

SOURCE = "capture"
"""The ``source`` of every warning capture writes."""

WARNING_TYPES: dict[str, str] = {
    "missing_event_name": "dropped: `event` is missing, not a string, or blank",
    "missing_distinct_id": "dropped: no usable `distinct_id` (top level, `properties.distinct_id` or `$distinct_id`)",
    "invalid_event_uuid": "dropped: `uuid` is given but is not a UUID",
    "malformed_event_properties": "dropped: `properties`, `$set` or `$set_once` is not an object, or the properties"
    " are nested deeper than 255 levels",
    "invalid_event": "dropped: the event is not a JSON object, or its `elements_chain` is not a string",
    "ignored_invalid_timestamp": "repaired: `timestamp` is not a date-time, or the time computed from `timestamp`,"
    " `sent_at` and `offset` falls outside 1900..2299: stored at the capture time; an unparseable `sent_at` is"
    " ignored (no clock-skew correction)",
    "event_timestamp_in_future": "repaired: the computed time is more than 23 hours ahead: stored at the capture time",
}
"""Every warning type capture writes -> what happened to the event (docs/api.md lists the same)."""

_CLIP = 200
API_DAYS = 30
"""``GET .../ingestion_warnings/`` covers the warnings of the last 30 days, as PostHog's."""
API_EXAMPLES = 50
"""... and shows the 50 most recent of each type, as PostHog's."""


@dataclass(frozen=True, slots=True)
class IngestionWarning:
    """One warning: its ``type`` (a key of :data:`WARNING_TYPES`) and ``details`` (stored as JSON text)."""

    type: str
    details: Mapping[str, Any]

    def details_json(self) -> str:
        return orjson.dumps(self.details).decode()


def clip(value: Any) -> Any:
    """A sender's value as a warning may hold it: numbers, booleans and null as they are, anything else as text of
    at most 200 characters (a warning never carries a big or unwritable value).

    >>> clip("x" * 500) == "x" * 200, clip(1.5), clip({"a": [1]}), clip(2**70), clip(float("nan"))
    (True, 1.5, '{"a":[1]}', '1180591620717411303424', 'null')
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str):
        return value[:_CLIP]
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = str(value)
    return text[:_CLIP]


def dropped(warning: str, raw: Any, *, index: int | None, field: str | None, reason: str) -> IngestionWarning:
    """The warning of a dropped event: what identifies it (uuid, name, distinct id as sent), the field at fault,
    why, and its place in the request (``index``)."""
    event: dict[str, Any] = raw if isinstance(raw, dict) else {}
    properties: dict[str, Any] = event["properties"] if isinstance(event.get("properties"), dict) else {}
    distinct_id = event.get("distinct_id", properties.get("distinct_id", properties.get("$distinct_id")))
    details: dict[str, Any] = {
        "eventUuid": clip(event.get("uuid")) if isinstance(event.get("uuid"), str) else "",
        "eventName": clip(event.get("event")) if isinstance(event.get("event"), str) else "",
        "distinctId": clip(distinct_id) if isinstance(distinct_id, str | int | float) else "",
        "field": field or "",
        "reason": reason,
    }
    if index is not None:
        details["index"] = index
    return IngestionWarning(warning, details)


SUMMARY_HOGQL = f"""
SELECT type, day, n, arrayMap(x -> tupleElement(x, 1), recent) AS times,
       arrayMap(x -> tupleElement(x, 2), recent) AS details
FROM (
    SELECT type, toDate(timestamp) AS day, count() AS n,
           arraySlice(arrayReverseSort(groupArray(tuple(timestamp, details))), 1, {API_EXAMPLES}) AS recent
    FROM ingestion_warnings
    WHERE timestamp > now() - toIntervalDay({API_DAYS})
      AND ({{search}} = '' OR positionUTF8(details, {{search}}) > 0 OR positionUTF8(type, {{search}}) > 0)
    GROUP BY type, day
)
"""
"""The warnings API's HogQL (``{search}`` is a value, '' for none): per type and day, the count
and the most recent examples (newest first), over the guarded
table, so it reads the caller's project only. :func:`summarize` folds the days into PostHog's summaries."""


def _iso(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def summarize(rows: Iterable[Mapping[str, Any]], examples: int = API_EXAMPLES) -> list[dict[str, Any]]:
    """Rows of :data:`SUMMARY_HOGQL` -> PostHog's answer items (``type``, ``lastSeen``, ``sparkline`` of
    ``[count, day]``, the ``warnings`` most recent first, ``count``), the most recently seen type first."""
    by_type: dict[str, dict[str, Any]] = {}
    for row in rows:
        summary = by_type.setdefault(row["type"], {"days": [], "recent": [], "count": 0})
        summary["count"] += int(row["n"])
        summary["days"].append([int(row["n"]), _iso(row["day"])])
        summary["recent"] += zip(row["times"], row["details"], strict=True)
    answer = []
    for warning_type, summary in by_type.items():
        recent = sorted(summary["recent"], key=lambda pair: pair[0], reverse=True)[:examples]
        answer.append(
            {
                "type": warning_type,
                "lastSeen": _iso(recent[0][0]) if recent else None,
                "sparkline": sorted(summary["days"], key=lambda pair: pair[1]),
                "warnings": [
                    {"type": warning_type, "timestamp": _iso(at), "details": orjson.loads(details)}
                    for at, details in recent
                ],
                "count": summary["count"],
            }
        )
    return sorted(answer, key=lambda s: s["lastSeen"] or "", reverse=True)


def read_summaries(state: ServiceState, project: ProjectRecord, search: str = "") -> list[dict[str, Any]]:
    """The project's warnings of the last :data:`API_DAYS` days as PostHog's summaries (``search``: keep those
    whose type or details contain it). Read like a query: through the HogQL compiler (the team guard), with the
    statement limits, within the project's share of the engine (``query/fairness.py``)."""
    engine = state.engine
    if engine is None:
        raise ServerError("The events engine is not running.")
    ctx = RunContext(
        project=project,
        engine=LimitedEngine(engine, statement_limits(state.config)),
        now=utcnow(),
        tag=tag_for(project.id, f"ingestion-warnings-{uuid.uuid4().hex[:12]}"),
    )
    try:
        with FairGate.for_engine(engine, state.config).hold(project_id=project.id, key_id=None):
            rows = ctx.run(SUMMARY_HOGQL, values={"search": search}).to_pylist()
    except Exception as exc:
        raise api_error(exc) from None
    return summarize(rows)
