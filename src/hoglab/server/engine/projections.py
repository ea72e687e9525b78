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

import logging
import re
from typing import Any

from .base import EngineError
from .ddl import DATABASE

log = logging.getLogger("hoglab.engine")

__all__ = ["PROJECTIONS", "ensure_projections"]

PROJECTIONS: dict[str, str] = {
    "p_event_day": "SELECT team_id, toDate(timestamp), event, count() GROUP BY team_id, toDate(timestamp), event",
}


def ensure_projections(engine: Any) -> list[str]:
    """Add the projections ``events`` lacks and start building them for existing parts; the names added.

    A projection only speeds queries up, so an engine that refuses one (an old ClickHouse server) is logged and
    served without it.
    """
    try:
        created = engine.execute(f"SHOW CREATE TABLE {DATABASE}.events").column(0).to_pylist()[0]
    except EngineError:
        log.warning("cannot read the events table's definition; serving without projections", exc_info=True)
        return []
    added = []
    for name, select in PROJECTIONS.items():
        if re.search(rf"\bPROJECTION\s+`?{name}\b", str(created)):
            continue
        try:
            engine.command(f"ALTER TABLE {DATABASE}.events ADD PROJECTION IF NOT EXISTS {name} ({select})")
            engine.command(
                f"ALTER TABLE {DATABASE}.events MATERIALIZE PROJECTION {name}", settings={"mutations_sync": 0}
            )
        except EngineError:
            log.warning("the engine refused projection %s; serving without it", name, exc_info=True)
            continue
        added.append(name)
    return added
