"""Projects, experiments, their feature flags and cohorts, and the paged list envelope."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID, uuid4

from pydantic import Field, field_validator, model_validator

from ._base import RequestModel, ResponseModel
from .experiment_metrics import ExperimentExposureCriteria, ExperimentMetric, ExperimentStatsConfig
from .experiment_objects import ExperimentHoldout, ExperimentToSavedMetric, saved_metric_links
from .users import User

__all__ = [
    "Cohort",
    "Experiment",
    "ExperimentCreate",
    "ExperimentParameters",
    "ExperimentResults",
    "ExperimentUpdate",
    "FeatureFlag",
    "FeatureFlagVariant",
    "Paginated",
    "Project",
    "SecondaryMetric",
    "ShipVariant",
    "User",
]

T = TypeVar("T")

FLAG_KEY_PATTERN = r"^[a-zA-Z0-9_-]+$"
MAX_VARIANTS = 10
MAX_METRICS = 50
CONTROL_VARIANT_KEY = "control"
DEFAULT_VARIANTS: tuple[dict[str, Any], ...] = (
    {"key": "control", "name": "Control Group", "rollout_percentage": 50},
    {"key": "test", "name": "Test Variant", "rollout_percentage": 50},
)


class Paginated(ResponseModel, Generic[T]):
    """``{count, next, previous, results}``; ``next``/``previous`` are URLs carrying ``offset`` and ``limit``."""

    count: int
    next: str | None = None
    previous: str | None = None
    results: list[T]


class Project(ResponseModel):
    """A project (PostHog's team): its events and metadata are isolated from every other project."""

    id: int
    uuid: UUID | None = None
    name: str
    api_token: str | None = None
    timezone: str = "UTC"
    created_at: datetime | None = None
    test_account_filters: list[dict[str, Any]] = Field(default_factory=list)


class FeatureFlagVariant(RequestModel):
    key: str = Field(min_length=1, max_length=200, pattern=FLAG_KEY_PATTERN)
    name: str | None = Field(default=None, max_length=400)
    rollout_percentage: float = Field(ge=0, le=100)


class FeatureFlag(ResponseModel):
    """The flag an experiment runs on, nested in the experiment."""

    id: int
    team_id: int
    name: str
    key: str
    filters: dict[str, Any]
    deleted: bool = False
    active: bool
    ensure_experience_continuity: bool | None = False


class ExperimentParameters(RequestModel):
    """``parameters`` of an experiment; keys PostHog's UI stores and hoglab doesn't read are kept."""

    model_config = RequestModel.model_config | {"extra": "allow"}

    feature_flag_variants: list[FeatureFlagVariant] | None = None
    minimum_detectable_effect: float | None = Field(default=None, gt=0, le=100)
    recommended_running_time: float | None = None
    recommended_sample_size: float | None = None
    custom_exposure_filter: dict[str, Any] | None = None
    aggregation_group_type_index: int | None = Field(default=None, ge=0, le=4)

    @field_validator("feature_flag_variants")
    @classmethod
    def _variants_are_valid(cls, variants: list[FeatureFlagVariant] | None) -> list[FeatureFlagVariant] | None:
        if variants is None:
            return None
        keys = [v.key for v in variants]
        if CONTROL_VARIANT_KEY not in keys:
            raise ValueError("Feature flag variants must contain a control variant")
        if len(variants) > MAX_VARIANTS:
            raise ValueError(f"Feature flag variants must be less than {MAX_VARIANTS + 1}")
        if len(set(keys)) != len(keys):
            raise ValueError("Feature flag variant keys must be unique")
        total = sum(v.rollout_percentage for v in variants)
        if abs(total - 100) > 1e-9:
            raise ValueError(f"Invalid variant definitions: rollout percentages must sum to 100 (got {total:g}).")
        return variants


class SecondaryMetric(RequestModel):
    """``{"name": "...", "filters": {legacy insight filter with "insight": "TRENDS"|"FUNNELS"}}``."""

    model_config = RequestModel.model_config | {"extra": "allow"}

    name: str | None = Field(default=None, max_length=400)
    filters: dict[str, Any]


class _ExperimentFields(RequestModel):
    name: str | None = Field(default=None, min_length=1, max_length=400)
    description: str | None = Field(default=None, max_length=400)
    start_date: datetime | None = None
    end_date: datetime | None = None
    parameters: ExperimentParameters | None = None
    secondary_metrics: list[SecondaryMetric] | None = None
    filters: dict[str, Any] | None = None
    archived: bool | None = None
    metrics: list[ExperimentMetric] | None = Field(default=None, max_length=MAX_METRICS)
    metrics_secondary: list[ExperimentMetric] | None = Field(default=None, max_length=MAX_METRICS)
    exposure_criteria: ExperimentExposureCriteria | None = None
    stats_config: ExperimentStatsConfig | None = None
    type: Literal["product", "web"] | None = None
    conclusion: Literal["won", "lost", "inconclusive", "stopped_early", "invalid"] | None = None
    conclusion_comment: str | None = Field(default=None, max_length=10_000)
    primary_metrics_ordered_uuids: list[str] | None = None
    secondary_metrics_ordered_uuids: list[str] | None = None
    holdout_id: int | None = None
    saved_metrics_ids: list[dict[str, Any]] | None = None

    _saved_metric_links = field_validator("saved_metrics_ids", mode="before")(saved_metric_links)

    @field_validator("holdout_id", mode="before")
    @classmethod
    def _holdout_pk(cls, value: Any) -> Any:
        # PostHog's PrimaryKeyRelatedField: a number (or its digits as text), else DRF's "Incorrect type".
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value)
        raise ValueError(f"Incorrect type. Expected pk value, received {type(value).__name__}.")

    @field_validator("metrics", "metrics_secondary")
    @classmethod
    def _metric_uuids(cls, metrics: list[Any] | None) -> list[Any] | None:
        # Every stored metric has a uuid (the order lists and the toolkit refer to metrics by it); PostHog's UI
        # makes one client-side, so an API caller who sends none gets one here.
        for metric in metrics or []:
            if metric.uuid is None:
                metric.uuid = str(uuid4())
        uuids = [m.uuid for m in metrics or []]
        if len(set(uuids)) != len(uuids):
            raise ValueError("Metric uuids must be unique within the list.")
        return metrics

    @field_validator("conclusion", mode="before")
    @classmethod
    def _blank_conclusion(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("start_date", "end_date")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # The contract's dates are UTC; a naive datetime is read as UTC rather than rejected.
        if value is not None and value.tzinfo is None:
            from datetime import UTC

            return value.replace(tzinfo=UTC)
        return value

    @model_validator(mode="after")
    def _dates_in_order(self) -> _ExperimentFields:
        if self.start_date and self.end_date and self.end_date <= self.start_date:
            raise ValueError("End date must be after start date")
        if self.filters and self.filters.get("properties"):
            raise ValueError("Experiments do not support global filter properties")
        return self


class ExperimentCreate(_ExperimentFields):
    """The body of a create: ``name`` and ``feature_flag_key`` are required."""

    name: str = Field(min_length=1, max_length=400)
    feature_flag_key: str = Field(min_length=1, max_length=400, pattern=FLAG_KEY_PATTERN)
    archived: bool | None = False


class ExperimentUpdate(_ExperimentFields):
    """The body of a PATCH: any subset of the accepted fields (``feature_flag_key`` is fixed once created)."""

    feature_flag_key: str | None = Field(default=None, min_length=1, max_length=400, pattern=FLAG_KEY_PATTERN)


class ShipVariant(RequestModel):
    """The body of ``POST .../experiments/:id/ship_variant/`` (PostHog's ``ShipVariantSerializer``): the variant
    served to everyone from now on, and how the experiment concluded."""

    variant_key: str = Field(min_length=1, max_length=400)
    conclusion: Literal["won", "lost", "inconclusive", "stopped_early", "invalid"] | None = None
    conclusion_comment: str | None = Field(default=None, max_length=10_000)
    release_to_everyone: bool = False


class Experiment(ResponseModel):
    id: int
    name: str
    description: str | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    feature_flag_key: str
    feature_flag: FeatureFlag | None = None
    exposure_cohort: int | None = None
    parameters: dict[str, Any] | None = None
    secondary_metrics: list[dict[str, Any]] | None = None
    filters: dict[str, Any] | None = None
    archived: bool = False
    created_by: User | None = None
    created_at: datetime
    updated_at: datetime
    # Read leniently: PostHog answers "" for a blank type (its BlankEnum) and leaves the uuid lists untyped.
    type: str | None = "product"
    metrics: list[dict[str, Any]] | None = None
    metrics_secondary: list[dict[str, Any]] | None = None
    exposure_criteria: dict[str, Any] | None = None
    stats_config: dict[str, Any] | None = None
    conclusion: str | None = None
    conclusion_comment: str | None = None
    primary_metrics_ordered_uuids: list[Any] | None = None
    secondary_metrics_ordered_uuids: list[Any] | None = None
    holdout: ExperimentHoldout | None = None
    holdout_id: int | None = None
    saved_metrics: list[ExperimentToSavedMetric] | None = None

    @property
    def status(self) -> Literal["draft", "running", "complete"]:
        """``draft`` until started, ``running`` until it has an end date, then ``complete``."""
        if self.start_date is None:
            return "draft"
        return "running" if self.end_date is None else "complete"


class Cohort(ResponseModel):
    id: int
    name: str
    description: str | None = ""
    filters: dict[str, Any] | None = None
    groups: list[dict[str, Any]] | None = None
    is_static: bool = False
    is_calculating: bool = False
    count: int | None = None
    created_at: datetime | None = None
    deleted: bool = False


class ExperimentResults(ResponseModel):
    """``GET .../experiments/:id/results``: ``{"result": {...}, "last_refresh": ..., "is_cached": ...}``."""

    result: dict[str, Any]
    last_refresh: datetime | None = None
    is_cached: bool = False
