"""SQLite metadata of the service: projects, users, personal API keys, feature flags, cohorts, experiments (with
their holdouts and saved metrics), actions, and the status of asynchronous queries.

Events live in the engine; everything a person creates through the API lives here, in
``<data_dir>/hoglab.sqlite3``.

>>> import tempfile
>>> with Store.open_at(tempfile.mkdtemp()) as store:
...     project = store.projects.create("Shop")
...     user = store.users.default()
...     key, plaintext = store.keys.create(user.id, ["experiment:read"], [project.id], label="notebook")
...     store.keys.authenticate(plaintext) == key
True
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from .actions import ActionRepository, DuplicateActionName
from .cohorts import CohortRepository
from .db import DATABASE_FILENAME, Database, StoreError
from .experiment_timeseries import DayResult, ExperimentTimeseriesRepository, RecalculationRecord
from .experiments import ExperimentRepository, ExperimentStatus
from .experiments_config import ExperimentsConfigRepository
from .flags import DuplicateFlagKey, FlagRepository
from .holdouts import HoldoutRepository
from .keys import KEY_PREFIX, VALID_SCOPES, KeyRepository, hash_key, validate_scopes
from .migrations import migrate
from .projects import ProjectRepository
from .pulls import PullRepository, PullSource
from .queries import AsyncQueryRecord, AsyncQueryRepository
from .records import (
    ActionRecord,
    CohortRecord,
    ExperimentRecord,
    FlagRecord,
    HoldoutRecord,
    KeyRecord,
    Page,
    ProjectRecord,
    SavedMetricLinkRecord,
    SavedMetricRecord,
    UserRecord,
)
from .saved_metrics import DuplicateSavedMetricName, SavedMetricRepository
from .users import DEFAULT_USER_EMAIL, UserRepository

__all__ = [
    "DATABASE_FILENAME",
    "DEFAULT_USER_EMAIL",
    "KEY_PREFIX",
    "VALID_SCOPES",
    "ActionRecord",
    "ActionRepository",
    "AsyncQueryRecord",
    "AsyncQueryRepository",
    "CohortRecord",
    "DayResult",
    "DuplicateActionName",
    "DuplicateFlagKey",
    "DuplicateSavedMetricName",
    "ExperimentRecord",
    "ExperimentStatus",
    "FlagRecord",
    "HoldoutRecord",
    "KeyRecord",
    "Page",
    "ProjectRecord",
    "PullRepository",
    "PullSource",
    "RecalculationRecord",
    "SavedMetricLinkRecord",
    "SavedMetricRecord",
    "Store",
    "StoreError",
    "UserRecord",
    "hash_key",
    "validate_scopes",
]


class Store:
    """All repositories over one ``Database``. ``open()`` before use (it applies pending migrations)."""

    def __init__(self, data_dir: Path | str) -> None:
        self.db = Database(Path(data_dir).expanduser())
        self.projects = ProjectRepository(self.db)
        self.users = UserRepository(self.db)
        self.keys = KeyRepository(self.db)
        self.flags = FlagRepository(self.db)
        self.cohorts = CohortRepository(self.db)
        self.pulls = PullRepository(self.db)
        self.experiments = ExperimentRepository(self.db)
        self.holdouts = HoldoutRepository(self.db)
        self.saved_metrics = SavedMetricRepository(self.db)
        self.actions = ActionRepository(self.db)
        self.async_queries = AsyncQueryRepository(self.db)
        self.experiments_config = ExperimentsConfigRepository(self.db)
        self.experiment_timeseries = ExperimentTimeseriesRepository(self.db)

    @classmethod
    def open_at(cls, data_dir: Path | str) -> Store:
        """A store on ``data_dir``, opened; use it as a context manager to close it."""
        store = cls(data_dir)
        store.open()
        return store

    @property
    def data_dir(self) -> Path:
        return self.db.data_dir

    def open(self) -> None:
        """Create the file if needed and bring its schema up to date; ``StoreError`` says why it can't."""
        self.db.open()
        try:
            migrate(self.db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"cannot use {self.db.path}: {exc}") from exc
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction around several repository calls: all of them land, or none.

        >>> with store.transaction():  # doctest: +SKIP
        ...     flag = store.flags.create(...)
        ...     store.experiments.create(..., feature_flag_id=flag.id)
        """
        with self.db.write():
            yield

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
