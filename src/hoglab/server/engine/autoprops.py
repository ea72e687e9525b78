"""Automatic materialization: the event and person properties queries read most become columns, in the background.

The compiler counts every ``events.properties.<key>`` and ``persons.properties.<key>`` (``person.properties.x``
from events) it reads, for the project it compiles for (``materialized.lookup``): what HogQL statements, insight
filters and breakdowns filter and group by. Every ``interval`` seconds :class:`AutoMaterializer` adds those
counts to the engine's ``property_usage_by_project`` and ``person_property_usage_by_project`` tables (so they
survive restarts and add up over processes on one ClickHouse server), then, for events and for persons apart,
materializes the keys some project used at least ``min_uses`` times, within two budgets:

* **per project**, ``project_columns`` (10): a column counts against the budget of every project that reads its
  key hot (``min_uses`` or more), since it serves each of them; a key is made while at least one of the projects
  reading it hot has room, so a project that has used its budget gets no more columns of its own, yet cannot
  stop a key another project needs from being made;
* **per table**, ``max_columns`` (20): every materialized column of the table counts (made by hand, by an older
  version, or hot for nobody any more: columns are never dropped automatically).

The free slots are dealt in turns, fairly: each turn, every project with room gets its most used key not yet a
column (projects in order of that key's uses), until the table's slots or the wanted keys run out.
Materializing never changes an answer (see ``materialized.py``), so the choice only costs disk and insert time:
a ``LowCardinality(Nullable(String))`` column per key, compressed.

One key's failure is that key's alone: it is logged, skipped, and remembered (:attr:`AutoMaterializer.failed`),
so this process does not try it again; the other keys and projects go on. The thread that runs the rounds is
watched by a supervisor that restarts it should it ever stop.

``HOGLAB_AUTO_MATERIALIZE=0`` turns it off; ``hoglab materialize`` adds keys by hand either way (outside the
budgets). The settings: ``HOGLAB_MATERIALIZE_PROJECT_COLUMNS``, ``HOGLAB_MATERIALIZE_MAX_COLUMNS``,
``HOGLAB_MATERIALIZE_MIN_USES``, ``HOGLAB_MATERIALIZE_INTERVAL`` (seconds).

>>> job = AutoMaterializer(engine=None, interval=300, min_uses=20, max_columns=4, project_columns=2)
>>> job.pick({1: {"a1": 90, "a2": 80, "a3": 70}, 2: {"b1": 30, "$os": 21, "cold": 3}}, materialized={"$os": "mat_$os"})
['a1', 'b1', 'a2']
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from . import materialized
from .ddl import DATABASE, PERSON_USAGE_TABLE, USAGE_TABLE
from .settings import quote_string

__all__ = ["PERSON_USAGE_TABLE", "USAGE_TABLE", "AutoMaterializer"]

log = logging.getLogger("hoglab.engine")

# Where the uses of each table's property keys are counted: one usage table per property table, so an event key
# and a person key of the same name are counted apart.
_USAGE_TABLES = {"events": USAGE_TABLE, "persons": PERSON_USAGE_TABLE}
_INSERT_ROWS = 1000  # usage rows per INSERT


def _most_used_first(uses: Mapping[str, int]) -> list[str]:
    return sorted(uses, key=lambda k: (-uses[k], k))


def _create(usage_table: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {DATABASE}.{usage_table} (team_id Int64, key String, uses UInt64) "
        "ENGINE = SummingMergeTree ORDER BY (team_id, key)"
    )


class AutoMaterializer:
    """The background job; ``start()``/``close()`` with the service, ``run_once()`` to do one round now.

    ``failed`` maps ``(table, key)`` to why the key could not be materialized (not tried again by this job);
    ``restarts`` counts the supervisor's restarts of the round thread; ``alive`` says the thread is running.
    """

    def __init__(
        self, engine: Any, *, interval: float, min_uses: int, max_columns: int, project_columns: int = 10
    ) -> None:
        self.engine = engine
        self.interval = interval
        self.min_uses = min_uses
        self.max_columns = max_columns
        self.project_columns = project_columns
        self.failed: dict[tuple[str, str], str] = {}
        self.restarts = 0
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._worker: threading.Thread | None = None
        self._created: set[str] = set()

    def pick(
        self, uses: Mapping[int, Mapping[str, int]], *, materialized: Mapping[str, str], table: str = "events"
    ) -> list[str]:
        """The keys to materialize now, from each project's uses of each key, within both budgets (see above)."""
        hot = {team: {k: n for k, n in keys.items() if n >= self.min_uses} for team, keys in uses.items()}
        readers: dict[str, list[int]] = defaultdict(list)
        for team, keys in hot.items():
            for key in keys:
                readers[key].append(team)
        skip = self.failed
        room = {team: self.project_columns - sum(k in materialized for k in keys) for team, keys in hot.items()}
        wanted = {
            team: _most_used_first({k: n for k, n in keys.items() if k not in materialized and (table, k) not in skip})
            for team, keys in hot.items()
        }
        slots = self.max_columns - len(materialized)
        picked: list[str] = []
        chosen: set[str] = set()
        while slots > 0:
            turn = []
            for project, queue in wanted.items():
                while queue and queue[0] in chosen:
                    queue.pop(0)  # made for another project this round; it was charged to this one then
                if queue and room[project] > 0:
                    turn.append((-hot[project][queue[0]], project, queue[0]))
            if not turn:
                break
            for _, project, key in sorted(turn):
                if slots == 0 or key in chosen or room[project] <= 0:
                    continue
                picked.append(key)
                chosen.add(key)
                slots -= 1
                for reader in readers[key]:  # it serves every project reading it hot: each is charged
                    room[reader] -= 1
        return picked

    def record(self, table: str = "events") -> dict[int, dict[str, int]]:
        """Add the uses of ``table``'s properties counted since the last round to the engine's usage table; the
        keys each project has used ``min_uses`` times or more, with their total uses."""
        usage_table = _USAGE_TABLES[table]
        # Bookkeeping writes: the counts are no data any query reads, so result caches stay valid.
        if table not in self._created:
            self.engine.command(_create(usage_table), bookkeeping=True)
            self._created.add(table)
        counted = materialized.take_usage(table)
        rows = [f"({int(team)}, {quote_string(key)}, {int(n)})" for (team, key), n in counted.items()]
        for start in range(0, len(rows), _INSERT_ROWS):
            self._insert(usage_table, rows[start : start + _INSERT_ROWS])
        answer = self.engine.execute(
            f"SELECT team_id, key, sum(uses) AS uses FROM {DATABASE}.{usage_table} GROUP BY team_id, key "
            f"HAVING uses >= {int(self.min_uses)}",
            settings={"max_result_rows": 0},
        )
        hot: dict[int, dict[str, int]] = defaultdict(dict)
        for row in answer.to_pylist():
            hot[int(row["team_id"])][str(row["key"])] = int(row["uses"])
        return dict(hot)

    def _insert(self, usage_table: str, rows: list[str]) -> None:
        sql = f"INSERT INTO {DATABASE}.{usage_table} (team_id, key, uses) VALUES "
        try:
            self.engine.command(sql + ", ".join(rows), bookkeeping=True)
        except Exception:
            if len(rows) == 1:  # this one count is lost, and only it
                log.exception("cannot record the property use %s", rows[0][:200])
                return
            for row in rows:  # find the one the engine refuses; the others are recorded
                self._insert(usage_table, [row])

    def run_once(self) -> dict[str, list[str]]:
        """Record the uses and materialize what is hot; the keys materialized this round, by table (``events``,
        ``persons``). Nothing raises: a table's or a key's failure is logged and the rest goes on."""
        made: dict[str, list[str]] = {}
        for table in _USAGE_TABLES:
            try:
                made[table] = self._round(table)
            except Exception:
                log.exception("automatic materialization of %s properties failed; trying again next round", table)
                made[table] = []
        return made

    def _round(self, table: str) -> list[str]:
        uses = self.record(table)
        done = []
        for key in self.pick(uses, materialized=materialized.refresh(self.engine, table), table=table):
            try:
                materialized.materialize(self.engine, [key], table)
            except Exception as exc:  # this key's failure is this key's alone
                self.failed[(table, key)] = f"{type(exc).__name__}: {exc}"
                log.warning("cannot materialize the %s property %r (%s: %s); this process will not try it again",
                            table[:-1], key, type(exc).__name__, exc)  # fmt: skip
                continue
            done.append(key)
        if done:
            named = ", ".join(repr(k) if len(k) < 80 else f"{k[:60]!r}... ({len(k)} characters)" for k in done)
            log.info("materialized %s properties %s (filled in the background)", table[:-1], named)
        return done

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    self.run_once()
                except Exception:  # run_once contains its failures; this is the last line should it not
                    log.exception("automatic materialization failed; trying again in %s s", self.interval)
        except BaseException as exc:  # SystemExit and the like end this thread (said here); the supervisor restarts it
            log.error("the automatic materialization thread ends on %s", type(exc).__name__, exc_info=True)

    def _supervise(self) -> None:
        while not self._stop.is_set():
            worker = threading.Thread(target=self._loop, name="hoglab-materialize-rounds", daemon=True)
            self._worker = worker
            worker.start()
            worker.join()
            if self._stop.is_set():
                return
            self.restarts += 1
            log.error("the automatic materialization thread stopped; restarting it (restart %d)", self.restarts)
            self._stop.wait(min(self.interval, 5.0))  # never spin should it die at once

    @property
    def alive(self) -> bool:
        """Whether the rounds run: the supervisor, and the thread it watches."""
        return bool(self._supervisor and self._supervisor.is_alive() and self._worker and self._worker.is_alive())

    def start(self) -> None:
        self._supervisor = threading.Thread(target=self._supervise, name="hoglab-materialize", daemon=True)
        self._supervisor.start()

    def close(self) -> None:
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=30)
            self._supervisor = None
