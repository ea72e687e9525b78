"""The project's ingestion warnings as ``GET /api/projects/:id/ingestion_warnings/`` answers them (PostHog's
``IngestionWarningsViewSet``): per warning type, its count, its count per day and its most recent warnings.

Read like a query: HogQL over the guarded ``ingestion_warnings`` table (so only the caller's project), with the
statement limits, within the project's share of the engine (``reads.py``). Capture writes the rows
(``ingest/warnings.py``).

>>> row = {"type": "missing_distinct_id", "day": "2026-01-02", "n": 2, "times": ["2026-01-02T10:00:00Z"],
...        "details": ['{"index":3}']}
>>> summarize([row])[0]["warnings"], summarize([row])[0]["count"]
([{'type': 'missing_distinct_id', 'timestamp': '2026-01-02T10:00:00Z', 'details': {'index': 3}}], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from .reads import read_rows

if TYPE_CHECKING:
    from ..state import ServiceState
    from ..store import ProjectRecord

__all__ = ["API_DAYS", "API_EXAMPLES", "SUMMARY_HOGQL", "read_summaries", "summarize"]

API_DAYS = 30
"""The answer covers the warnings of the last 30 days, as PostHog's."""
API_EXAMPLES = 50
"""... and shows the 50 most recent of each type, as PostHog's."""

SUMMARY_HOGQL = f"""
SELECT type, day, n, arrayMap(x -> tupleElement(x, 1), recent) AS times,
       arrayMap(x -> tupleElement(x, 2), recent) AS details
FROM (
    SELECT type, toDate(timestamp) AS day, sum(greatest(1, JSONExtractUInt(details, 'count'))) AS n,
           arraySlice(arrayReverseSort(groupArray(tuple(timestamp, details))), 1, {API_EXAMPLES}) AS recent
    FROM ingestion_warnings
    WHERE timestamp > now() - toIntervalDay({API_DAYS})
      AND ({{search}} = '' OR positionUTF8(details, {{search}}) > 0 OR positionUTF8(type, {{search}}) > 0)
    GROUP BY type, day
)
"""
"""The warnings API's HogQL (``{search}`` is a value, '' for none): per type and day, the count (capture writes
one row per cause and batch, its ``count`` the events it stands for) and the most recent examples (newest
first), over the guarded table, so it reads the caller's project only. :func:`summarize` folds the days into
PostHog's summaries."""


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
    return summarize(read_rows(state, project, SUMMARY_HOGQL, values={"search": search}, label="ingestion-warnings"))
