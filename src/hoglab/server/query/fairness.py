"""One project cannot take the whole engine: a share of the engine's read sessions per project and per key.

The engine has one pool of read sessions (8) for every project of the process. Without a share, one project's
eight slow cross joins hold all of them and another project's ``select 1`` waits for the slowest. With it, a
query runs only while its project and its key each hold fewer than ``slots`` queries (half the pool by
default), so the other half always serves everyone else. A project that already has ``max_waiting`` queries
waiting for a slot gets a 429 at once (its own problem, not the others'), and a query that waited longer than
``timeout`` seconds too. Async jobs have their own per-project quota and a round-robin queue (``jobs.py``).

Compiling HogQL is pure Python in the serving process, and the interpreter runs one thread at a time: four
statements of one project compiling at once would take four fifths of it from everyone else. So a project also
compiles one statement at a time (:meth:`FairGate.compiling`, entered by ``RunContext.compile`` inside the
query's slot); its other queries wait for that, not the other projects. The compile budget
(``translate/budget.py``) bounds how long one statement may take.

``hoglab serve`` settings: ``HOGLAB_FAIR_SHARE=off`` turns the share off (the benchmark's "before"),
``HOGLAB_PROJECT_QUERY_SLOTS`` sets ``slots``.

>>> gate = FairGate(slots=1, max_waiting=0, timeout=1)
>>> with gate.hold(project_id=1, key_id=None):
...     with gate.hold(project_id=2, key_id=None):
...         print("project 2 runs while project 1 does")
project 2 runs while project 1 does
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hoglab.errors import HoglabError

__all__ = ["FairGate", "ProjectBusy"]

_gates: weakref.WeakKeyDictionary[Any, FairGate] = weakref.WeakKeyDictionary()
_gates_lock = threading.Lock()


class ProjectBusy(HoglabError):
    """This project (or key) already uses its share of the engine and has too many queries waiting: a 429."""


class FairGate:
    """Counts the queries each project and each key runs; ``hold`` waits for a free slot of both."""

    def __init__(self, *, slots: int, max_waiting: int, timeout: float, enabled: bool = True) -> None:
        self.slots = max(1, int(slots))
        self.max_waiting = max(0, int(max_waiting))
        self.timeout = float(timeout)
        self.enabled = enabled
        self._running: Counter[tuple[str, int]] = Counter()
        self._waiting: Counter[tuple[str, int]] = Counter()
        self._changed = threading.Condition()

    @classmethod
    def for_engine(cls, engine: Any, config: Any) -> FairGate:
        """The gate of ``engine`` (apps of one process share its pool, so they share the gate too)."""
        with _gates_lock:
            gate = _gates.get(engine)
            if gate is None:
                slots = int(getattr(config, "project_query_slots", 4))
                gate = _gates[engine] = cls(
                    slots=slots,
                    max_waiting=4 * slots,
                    timeout=float(getattr(config, "max_execution_time", 60)),
                    enabled=bool(getattr(config, "fair_share", True)),
                )
            return gate

    @contextmanager
    def hold(self, *, project_id: int, key_id: int | None) -> Iterator[None]:
        """Run the body while holding one slot of the project and one of the key; :class:`ProjectBusy` if the
        project or key has too many waiting, or no slot came within ``timeout``."""
        if not self.enabled:
            yield
            return
        owners = [("project", int(project_id))] + ([("key", int(key_id))] if key_id is not None else [])
        with self._changed:
            busy = [o for o in owners if self._running[o] >= self.slots]
            if busy and any(self._waiting[o] >= self.max_waiting for o in busy):
                raise ProjectBusy(self._message(busy[0]))
            for owner in owners:
                self._waiting[owner] += 1
            try:
                free = self._changed.wait_for(lambda: all(self._running[o] < self.slots for o in owners), self.timeout)
            finally:
                for owner in owners:
                    self._waiting[owner] -= 1
            if not free:
                raise ProjectBusy(self._message(owners[0]))
            for owner in owners:
                self._running[owner] += 1
        try:
            yield
        finally:
            with self._changed:
                for owner in owners:
                    self._running[owner] -= 1
                    if self._running[owner] <= 0:
                        del self._running[owner]
                self._changed.notify_all()

    @contextmanager
    def compiling(self, project_id: int) -> Iterator[None]:
        """Run the body as the project's one compiling statement; :class:`ProjectBusy` if the project's other
        compile did not end within ``timeout``."""
        if not self.enabled:
            yield
            return
        owner = ("compile", int(project_id))
        with self._changed:
            if not self._changed.wait_for(lambda: self._running[owner] < 1, self.timeout):
                raise ProjectBusy(
                    "This project is already compiling a query, its share of the service, and it did not finish "
                    "in time: try again when its queries have finished."
                )
            self._running[owner] += 1
        try:
            yield
        finally:
            with self._changed:
                self._running[owner] -= 1
                if self._running[owner] <= 0:
                    del self._running[owner]
                self._changed.notify_all()

    def running(self, project_id: int) -> int:
        """How many queries of the project hold a slot now."""
        with self._changed:
            return self._running[("project", int(project_id))]

    def _message(self, owner: tuple[str, int]) -> str:
        what = "This project" if owner[0] == "project" else "This personal API key"
        return (
            f"{what} is already running {self.slots} queries, its share of the engine, and more are waiting: "
            "try again when some have finished."
        )
