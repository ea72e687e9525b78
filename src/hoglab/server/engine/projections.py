"""Aggregate projections of ``events``: small pre-aggregated copies ClickHouse reads instead of the table.

``p_event_day`` keeps ``count()`` by project, day and event name. ClickHouse picks it by itself whenever a query
only counts events by those columns, through the compiler's guard view too (``WHERE team_id = ...`` then
``GROUP BY event``): count by event over 10M events reads a few thousand projection rows instead of millions
(docs/benchmarks.md, "hoglab against DuckDB"). Any other query reads the table as before, so answers never
depend on the projection; parts written before it existed are read from the table until the background
``MATERIALIZE PROJECTION`` has rebuilt them.

The projection is added when an engine opens (:func:`ensure_projections`), on chDB and on a ClickHouse server,
to tables made by any version.
"""

from __future__ import annotations

from typing import Any

from .ddl import DATABASE
from .settings import quote_string

__all__ = ["PROJECTIONS", "ensure_projections"]

PROJECTIONS: dict[str, str] = {
    "p_event_day": "SELECT team_id, toDate(timestamp), event, count() GROUP BY team_id, toDate(timestamp), event",
}


def ensure_projections(engine: Any) -> list[str]:
    """Add the projections ``events`` lacks and start building them for existing parts; the names added."""
    rows = engine.execute(
        f"SELECT name FROM system.projections WHERE database = {quote_string(DATABASE)} AND table = 'events'"
    ).to_pylist()
    present = {str(r["name"]) for r in rows}
    added = []
    for name, select in PROJECTIONS.items():
        if name in present:
            continue
        engine.command(f"ALTER TABLE {DATABASE}.events ADD PROJECTION IF NOT EXISTS {name} ({select})")
        engine.command(f"ALTER TABLE {DATABASE}.events MATERIALIZE PROJECTION {name}", settings={"mutations_sync": 0})
        added.append(name)
    return added
