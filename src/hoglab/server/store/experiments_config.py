"""A project's experiment defaults (PostHog's ``TeamExperimentsConfig``): one JSON object per project.

The API validates the fields (``schema.ExperimentsConfig``); this repository keeps what it was given. A project
that never saved any has none (``{}``): every default is then PostHog's own.

>>> import tempfile
>>> from hoglab.server.store import Store
>>> with Store.open_at(tempfile.mkdtemp()) as store:
...     project = store.projects.create("Shop")
...     store.experiments_config.update(project.id, {"default_cuped_enabled": True})
...     store.experiments_config.get(project.id)
{'default_cuped_enabled': True}
{'default_cuped_enabled': True}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .db import Database, to_db_time, utcnow

__all__ = ["ExperimentsConfigRepository"]


class ExperimentsConfigRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, team_id: int) -> dict[str, Any]:
        """The fields the project saved (``{}`` when none)."""
        with self._db.read() as conn:
            row = conn.execute("SELECT config FROM experiments_config WHERE team_id = ?", (int(team_id),)).fetchone()
        return dict(json.loads(row["config"])) if row is not None else {}

    def update(self, team_id: int, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``changes`` into the saved fields (one transaction) and return them all."""
        with self._db.write() as conn:
            row = conn.execute("SELECT config FROM experiments_config WHERE team_id = ?", (int(team_id),)).fetchone()
            config = {**(json.loads(row["config"]) if row is not None else {}), **changes}
            conn.execute(
                "INSERT INTO experiments_config (team_id, config, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (team_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
                (int(team_id), json.dumps(config, sort_keys=True), to_db_time(utcnow())),
            )
        return config
