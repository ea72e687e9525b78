"""What the repositories hand out: frozen dataclasses, JSON columns already parsed, times as aware datetimes."""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import zoneinfo
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from .db import from_db_time

log = logging.getLogger("hoglab.server.store")

__all__ = [
    "ActionRecord",
    "CohortRecord",
    "ExperimentRecord",
    "FlagRecord",
    "HoldoutRecord",
    "KeyRecord",
    "Page",
    "ProjectRecord",
    "SavedMetricLinkRecord",
    "SavedMetricRecord",
    "UserRecord",
    "dump_json",
    "load_json",
    "usable_timezone",
]

# Names the tz database has that are not zones: the host's own zone and a template file of older tz releases.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


def usable_timezone(name: Any) -> bool:
    """Whether ``name`` is an IANA time zone the service can compute in (``Europe/Berlin``, ``UTC``).

    >>> usable_timezone("Europe/Berlin"), usable_timezone("Mars/Olympus'); DROP TABLE x; --"), usable_timezone(3)
    (True, False, False)
    """
    return isinstance(name, str) and name in _zone_names()


@functools.cache
def _effective_timezone(project_id: int, stored: str) -> str:
    """The zone a project computes in: its own, or UTC (said once per project and value) when what is stored is
    not a time zone, as an older ``hoglab pull`` could store a remote's text unchecked. Queries then answer in UTC
    (their ``timezone`` says so) rather than fail: one bad setting must not make every query of the project fail."""
    if usable_timezone(stored):
        return stored
    log.warning("project %s: its stored time zone %.80r is not a time zone; computing in UTC", project_id, stored)
    return "UTC"


def dump_json(value: Any) -> str | None:
    # ensure_ascii keeps the column plain ASCII whatever the input held; NaN is refused like in HTTP bodies.
    return None if value is None else json.dumps(value, allow_nan=False, separators=(",", ":"))


def load_json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


R = TypeVar("R")


@dataclass(frozen=True)
class Page(Generic[R]):
    """One page of a project's records (``results``) and how many there are in all (``total``)."""

    total: int
    results: list[R]


def _time(row: sqlite3.Row, column: str) -> datetime:
    value = from_db_time(row[column])
    assert value is not None, f"{column} is NOT NULL"
    return value


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    id: int
    uuid: str
    name: str
    api_token: str
    timezone: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ProjectRecord:
        timezone = _effective_timezone(int(row["id"]), str(row["timezone"]))
        return cls(row["id"], row["uuid"], row["name"], row["api_token"], timezone, _time(row, "created_at"))

    def to_api(self) -> dict[str, Any]:
        """The ``Project`` body of ``GET /api/projects/:id/``."""
        return {
            "id": self.id,
            "uuid": self.uuid,
            "name": self.name,
            "api_token": self.api_token,
            "timezone": self.timezone,
            "created_at": self.created_at,
            "test_account_filters": [],
        }


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: int
    uuid: str
    distinct_id: str
    first_name: str
    last_name: str
    email: str
    is_email_verified: bool
    hedgehog_config: dict[str, Any] | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> UserRecord:
        return cls(
            row["id"],
            row["uuid"],
            row["distinct_id"],
            row["first_name"],
            row["last_name"],
            row["email"],
            bool(row["is_email_verified"]),
            load_json(row["hedgehog_config"]),
            _time(row, "created_at"),
        )

    def to_api(self) -> dict[str, Any]:
        """The nested ``created_by`` object of an experiment (PostHog's UserBasicSerializer fields)."""
        return {
            "id": self.id,
            "uuid": self.uuid,
            "distinct_id": self.distinct_id,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "email": self.email,
            "is_email_verified": self.is_email_verified,
            "hedgehog_config": self.hedgehog_config,
        }


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A personal API key without its secret. ``project_ids`` is ``None`` when the key reaches every project."""

    id: int
    user_id: int
    label: str
    mask_value: str
    scopes: tuple[str, ...]
    project_ids: tuple[int, ...] | None
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> KeyRecord:
        project_ids = load_json(row["project_ids"])
        return cls(
            row["id"],
            row["user_id"],
            row["label"],
            row["mask_value"],
            tuple(load_json(row["scopes"])),
            None if project_ids is None else tuple(int(p) for p in project_ids),
            _time(row, "created_at"),
            from_db_time(row["last_used_at"]),
            from_db_time(row["expires_at"]),
            from_db_time(row["revoked_at"]),
        )

    def status(self, now: datetime) -> str:
        """``active``, ``expired`` or ``revoked``: only an active key authenticates."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


@dataclass(frozen=True, slots=True)
class FlagRecord:
    id: int
    team_id: int
    key: str
    name: str
    filters: dict[str, Any]
    active: bool
    deleted: bool
    ensure_experience_continuity: bool
    created_by_id: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> FlagRecord:
        return cls(
            row["id"],
            row["team_id"],
            row["key"],
            row["name"],
            load_json(row["filters"]),
            bool(row["active"]),
            bool(row["deleted"]),
            bool(row["ensure_experience_continuity"]),
            row["created_by_id"],
            _time(row, "created_at"),
            _time(row, "updated_at"),
        )

    @property
    def variants(self) -> list[dict[str, Any]]:
        """The multivariate variants (``[{"key", "name", "rollout_percentage"}, ...]``), empty for a boolean flag."""
        multivariate = self.filters.get("multivariate") or {}
        return list(multivariate.get("variants") or [])

    def to_api(self) -> dict[str, Any]:
        """The ``feature_flag`` object nested in an experiment (PostHog's ``FeatureFlag`` fields)."""
        return {
            "id": self.id,
            "team_id": self.team_id,
            "name": self.name,
            "key": self.key,
            "filters": self.filters,
            "deleted": self.deleted,
            "active": self.active,
            "ensure_experience_continuity": self.ensure_experience_continuity,
        }


@dataclass(frozen=True, slots=True)
class CohortRecord:
    id: int
    team_id: int
    name: str
    description: str
    filters: dict[str, Any]
    is_static: bool
    is_calculating: bool
    count: int | None
    deleted: bool
    created_by_id: int | None
    created_at: datetime
    last_calculation: datetime | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> CohortRecord:
        return cls(
            row["id"],
            row["team_id"],
            row["name"],
            row["description"],
            load_json(row["filters"]),
            bool(row["is_static"]),
            bool(row["is_calculating"]),
            row["count"],
            bool(row["deleted"]),
            row["created_by_id"],
            _time(row, "created_at"),
            from_db_time(row["last_calculation"]),
        )

    def to_api(self) -> dict[str, Any]:
        """PostHog's cohort body: the ``filters`` definition, legacy ``groups`` empty."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "groups": [],
            "filters": self.filters,
            "query": None,
            "is_static": self.is_static,
            "is_calculating": self.is_calculating,
            "count": self.count,
            "created_at": self.created_at,
            "last_calculation": self.last_calculation,
            "deleted": self.deleted,
        }


@dataclass(frozen=True, slots=True)
class ExperimentRecord:
    id: int
    team_id: int
    name: str
    description: str
    feature_flag_id: int
    exposure_cohort_id: int | None
    parameters: dict[str, Any] | None
    secondary_metrics: list[dict[str, Any]] | None
    filters: dict[str, Any] | None
    start_date: datetime | None
    end_date: datetime | None
    archived: bool
    type: str
    created_by_id: int | None
    created_at: datetime
    updated_at: datetime
    metrics: list[dict[str, Any]] | None = None
    metrics_secondary: list[dict[str, Any]] | None = None
    exposure_criteria: dict[str, Any] | None = None
    stats_config: dict[str, Any] | None = None
    conclusion: str | None = None
    conclusion_comment: str | None = None
    primary_metrics_ordered_uuids: list[str] | None = None
    secondary_metrics_ordered_uuids: list[str] | None = None
    holdout_id: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ExperimentRecord:
        return cls(
            row["id"],
            row["team_id"],
            row["name"],
            row["description"],
            row["feature_flag_id"],
            row["exposure_cohort_id"],
            load_json(row["parameters"]),
            load_json(row["secondary_metrics"]),
            load_json(row["filters"]),
            from_db_time(row["start_date"]),
            from_db_time(row["end_date"]),
            bool(row["archived"]),
            row["type"],
            row["created_by_id"],
            _time(row, "created_at"),
            _time(row, "updated_at"),
            load_json(row["metrics"]),
            load_json(row["metrics_secondary"]),
            load_json(row["exposure_criteria"]),
            load_json(row["stats_config"]),
            row["conclusion"],
            row["conclusion_comment"],
            load_json(row["primary_metrics_ordered_uuids"]),
            load_json(row["secondary_metrics_ordered_uuids"]),
            row["holdout_id"],
        )

    @property
    def is_draft(self) -> bool:
        return self.start_date is None


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """An action: its steps as stored (each a dict of PostHog's ten step keys)."""

    id: int
    team_id: int
    name: str | None
    description: str
    tags: list[str]
    post_to_slack: bool
    slack_message_format: str
    steps: list[dict[str, Any]]
    deleted: bool
    bytecode_error: str | None
    pinned_at: datetime | None
    created_by_id: int | None
    created_at: datetime
    updated_at: datetime
    last_calculated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ActionRecord:
        return cls(
            row["id"],
            row["team_id"],
            row["name"],
            row["description"],
            list(load_json(row["tags"]) or []),
            bool(row["post_to_slack"]),
            row["slack_message_format"],
            list(load_json(row["steps"]) or []),
            bool(row["deleted"]),
            row["bytecode_error"],
            from_db_time(row["pinned_at"]),
            row["created_by_id"],
            _time(row, "created_at"),
            _time(row, "updated_at"),
            _time(row, "last_calculated_at"),
        )

    def to_api(self) -> dict[str, Any]:
        """PostHog's ``Action`` body, less ``created_by`` (the caller adds the user)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "tags": list(self.tags),
            "post_to_slack": self.post_to_slack,
            "slack_message_format": self.slack_message_format,
            "steps": [dict(step) for step in self.steps],
            "created_at": self.created_at,
            "deleted": self.deleted,
            "is_calculating": False,
            "last_calculated_at": self.last_calculated_at,
            "team_id": self.team_id,
            "is_action": True,
            "bytecode_error": self.bytecode_error,
            "pinned_at": self.pinned_at,
            "creation_context": None,
            "user_access_level": "editor",
        }


@dataclass(frozen=True, slots=True)
class HoldoutRecord:
    """An experiment holdout: ``filters`` is PostHog's list of groups, the first one's ``rollout_percentage`` the
    share of persons held out."""

    id: int
    team_id: int
    name: str
    description: str | None
    filters: list[dict[str, Any]]
    created_by_id: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> HoldoutRecord:
        filters = load_json(row["filters"])
        return cls(
            row["id"],
            row["team_id"],
            row["name"],
            row["description"],
            filters if isinstance(filters, list) else [],
            row["created_by_id"],
            _time(row, "created_at"),
            _time(row, "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class SavedMetricRecord:
    """A saved (shared) experiment metric: ``query`` is an ``ExperimentMetric`` body with its ``uuid``."""

    id: int
    team_id: int
    name: str
    description: str | None
    query: dict[str, Any]
    tags: list[Any]
    created_by_id: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SavedMetricRecord:
        return cls(
            row["id"],
            row["team_id"],
            row["name"],
            row["description"],
            load_json(row["query"]) or {},
            load_json(row["tags"]) or [],
            row["created_by_id"],
            _time(row, "created_at"),
            _time(row, "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class SavedMetricLinkRecord:
    """One experiment's use of a saved metric (PostHog's ``ExperimentToSavedMetric``) and the metric itself."""

    id: int
    experiment_id: int
    saved_metric: SavedMetricRecord
    metadata: dict[str, Any] | None
    created_at: datetime

    @property
    def role(self) -> str:
        """``primary`` or ``secondary``: a link without metadata counts as primary (PostHog's reading)."""
        return "secondary" if (self.metadata or {}).get("type") == "secondary" else "primary"
