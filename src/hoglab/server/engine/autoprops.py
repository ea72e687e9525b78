"""Automatic materialization: the event and person properties queries read most become columns, in the background.

The compiler counts every ``events.properties.<key>`` and ``persons.properties.<key>`` (``person.properties.x``
from events) it reads (``materialized.lookup``): what HogQL statements, insight filters and breakdowns filter and
group by. Every ``interval`` seconds :class:`AutoMaterializer` adds those counts to the engine's ``property_usage``
and ``person_property_usage`` tables (so they survive restarts and add up over processes on one ClickHouse
server), then, for events and for persons apart, materializes each key used at least ``min_uses`` times, most used
first, until ``max_columns`` keys of that table are materialized. Materializing never changes an answer (see
``materialized.py``), so the choice only costs disk: a ``LowCardinality(Nullable(String))`` column per key, compressed.

``HOGLAB_AUTO_MATERIALIZE=0`` turns it off; ``hoglab materialize`` adds keys by hand either way.

>>> job = AutoMaterializer(engine=None, interval=300, min_uses=20, max_columns=20)
>>> job.pick({"$browser": 50, "plan": 3, "$os": 21}, materialized={"$os": "mat_$os"})
['$browser']
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from . import materialized
from .base import EngineError
from .ddl import DATABASE, PERSON_USAGE_TABLE, USAGE_TABLE
from .settings import quote_string

__all__ = ["PERSON_USAGE_TABLE", "USAGE_TABLE", "AutoMaterializer"]

log = logging.getLogger("hoglab.engine")

# Where the uses of each table's property keys are counted: one usage table per property table, so an event key
# and a person key of the same name are counted apart.
_USAGE_TABLES = {"events": USAGE_TABLE, "persons": PERSON_USAGE_TABLE}


def _create(usage_table: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {DATABASE}.{usage_table} (key String, uses UInt64) "
        "ENGINE = SummingMergeTree ORDER BY key"
    )


class AutoMaterializer:
    """The background job; ``start()``/``close()`` with the service, ``run_once()`` to do one round now."""

    def __init__(self, engine: Any, *, interval: float, min_uses: int, max_columns: int) -> None:
        self.engine = engine
        self.interval = interval
        self.min_uses = min_uses
        self.max_columns = max_columns
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._created: set[str] = set()

    def pick(self, uses: Mapping[str, int], *, materialized: Mapping[str, str]) -> list[str]:
        """The keys to materialize now: used ``min_uses`` times or more, most used first, within ``max_columns``."""
        room = self.max_columns - len(materialized)
        hot = [k for k, n in uses.items() if n >= self.min_uses and k not in materialized]
        return sorted(hot, key=lambda k: (-uses[k], k))[: max(room, 0)]

    def record(self, table: str = "events") -> dict[str, int]:
        """Add the uses of ``table``'s properties counted since the last round to the engine's usage table; every
        key's total uses."""
        usage_table = _USAGE_TABLES[table]
        # Bookkeeping writes: the counts are no data any query reads, so result caches stay valid.
        if table not in self._created:
            self.engine.command(_create(usage_table), bookkeeping=True)
            self._created.add(table)
        taken = materialized.take_usage(table)
        if taken:
            rows = ", ".join(f"({quote_string(k)}, {int(n)})" for k, n in taken.items())
            self.engine.command(f"INSERT INTO {DATABASE}.{usage_table} (key, uses) VALUES {rows}", bookkeeping=True)
        answer = self.engine.execute(
            f"SELECT key, sum(uses) AS uses FROM {DATABASE}.{usage_table} GROUP BY key", settings={"max_result_rows": 0}
        )
        return {str(r["key"]): int(r["uses"]) for r in answer.to_pylist()}

    def run_once(self) -> dict[str, list[str]]:
        """Record the uses and materialize what is hot; the keys materialized this round, by table (``events``,
        ``persons``)."""
        made: dict[str, list[str]] = {}
        for table in _USAGE_TABLES:
            uses = self.record(table)
            keys = self.pick(uses, materialized=materialized.refresh(self.engine, table))
            if keys:
                materialized.materialize(self.engine, keys, table)
                log.info("materialized %s properties %s (filled in the background)", table[:-1], ", ".join(keys))
            made[table] = keys
        return made

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.run_once()
            except EngineError:
                log.exception("automatic materialization failed; trying again in %s s", self.interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="hoglab-materialize", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
