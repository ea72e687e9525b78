"""Filling a project with the demo: its events through the file loader, its experiment through the rules.

``seed(state, project)`` is what ``hoglab serve --demo`` (and ``hoglab demo``, and ``start_local_service(...,
demo=True)``) runs when the service starts (``server/app.py`` ``seed_demo_hook``); each part is written only once.

For example (a sketch of a call, not run: it needs a running service's state)::

    seed(state, state.store.projects.get(1), users=2_000)   # events loaded, experiment created with its flag
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from ..experiments.rules import create_with_flag, shipped_filters
from ..ingest.files import LoadReport, load_file
from .events import DEMO_SEED, DEMO_USERS, generate_events
from .experiment import DEMO_EXPERIMENT
from .history import HISTORY_PROJECT, HISTORY_SEED, history_events, history_experiments

if TYPE_CHECKING:
    from ..engine.base import Engine
    from ..state import ServiceState
    from ..store import ProjectRecord

__all__ = ["seed", "seed_events", "seed_history"]


def seed_events(
    engine: Engine, project_id: int, *, seed: int = DEMO_SEED, end: datetime | date | None = None,
    users: int = DEMO_USERS,
) -> LoadReport:  # fmt: skip
    """Generate the demo's events and load them into ``project_id`` through the file loader (persons and
    all). Create the experiment's metadata with ``DEMO_EXPERIMENT.create_body(end)``."""
    return _load(engine, project_id, generate_events(seed=seed, end=end, users=users))


def seed(
    state: ServiceState, project: ProjectRecord, *, seed: int = DEMO_SEED, end: datetime | date | None = None,
    users: int = DEMO_USERS, on_load: Callable[[], None] | None = None, history: bool = True,
) -> None:  # fmt: skip
    """Fill the demo project of a running service: its events and its experiment, each only once; and, with
    ``history``, the project of past experiments (:func:`seed_history`).

    Called by ``hoglab serve --demo`` (and ``hoglab demo``) when the service starts; a restart finds both
    already there and leaves them alone, so ids and results stay put. ``on_load`` is called just before the
    events are generated and loaded, that is only when they are (the commands say so then, and only then).
    """
    engine = state.engine
    if engine is None:
        raise RuntimeError("the demo needs the service's events engine")
    stored = engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {int(project.id)}")
    if int(stored.column("n")[0].as_py()) == 0:
        if on_load is not None:
            on_load()
        seed_events(engine, project.id, seed=seed, end=end, users=users)
    if state.store.flags.get_by_key(project.id, DEMO_EXPERIMENT.feature_flag_key) is None:
        user = state.store.users.default()
        create_with_flag(state.store, project.id, user.id, DEMO_EXPERIMENT.create_body(end))
    if history:
        seed_history(state, end=end)


def _load(engine: Engine, project_id: int, table: Any) -> LoadReport:
    with tempfile.TemporaryDirectory(prefix="hoglab-demo-") as tmp:
        path = Path(tmp) / "events.parquet"
        pq.write_table(table, path, compression="zstd")
        return load_file(engine, project_id, path)


def seed_history(state: ServiceState, *, seed: int = HISTORY_SEED, end: datetime | date | None = None) -> int:
    """The demo's history of 40 past experiments (:mod:`.history`) in its own project, made once; its id.

    The project :data:`~.history.HISTORY_PROJECT` gets the history's events through the file loader and each
    experiment through the experiments' rules, concluded; a won one is shipped as ``ship_variant`` ships it.
    """
    store, engine = state.store, state.engine
    if engine is None:
        raise RuntimeError("the demo needs the service's events engine")
    project = store.projects.get_by_name(HISTORY_PROJECT) or store.projects.create(HISTORY_PROJECT)
    stored = engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {int(project.id)}")
    if int(stored.column("n")[0].as_py()) == 0:
        _load(engine, project.id, history_events(seed, end))
    user = store.users.default()
    for body in history_experiments(seed, end):
        if store.flags.get_by_key(project.id, body["feature_flag_key"]) is not None:
            continue
        ship = body.pop("ship")
        _, flag = create_with_flag(store, project.id, user.id, body)
        if ship is not None:
            store.flags.update(flag.id, filters=shipped_filters(flag.filters, ship))
    return project.id
