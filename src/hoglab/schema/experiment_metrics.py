"""Metric experiments, PostHog's current shape: metrics on the experiment, analysed by ``ExperimentQuery``.

A metric is one of three models told apart by ``metric_type`` (PostHog's ``ExperimentMeanMetric``,
``ExperimentFunnelMetric``, ``ExperimentRatioMetric``); each reads events through ``EventsNode`` or ``ActionsNode``
sources. PostHog's ``ExperimentDataWarehouseNode`` sources are refused with a message naming the field (hoglab has
no data warehouse). Exposure criteria name an exposure event (``ExperimentEventExposureConfig``) or an action.

>>> metric = parse_metric({"metric_type": "mean", "source": {"kind": "EventsNode", "event": "purchase",
...                        "math": "sum", "math_property": "price"}})
>>> metric.kind, metric.metric_type, metric.source.math_property
('ExperimentMetric', 'mean', 'price')
>>> ExperimentQuery(experiment_id=1, metric=metric).kind
'ExperimentQuery'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, field_validator, model_validator

from ._base import RequestModel, ResponseModel
from .filters import AnyPropertyFilter, DateRange
from .nodes import ActionsNode, SeriesFields, SeriesNode

__all__ = [
    "EXPERIMENT_METRIC_MATH",
    "ExperimentEventExposureConfig",
    "ExperimentExposureCriteria",
    "ExperimentExposureQuery",
    "ExperimentExposureQueryResponse",
    "ExperimentExposureTimeSeries",
    "ExperimentFunnelMetric",
    "ExperimentMeanMetric",
    "ExperimentMetric",
    "ExperimentQuery",
    "ExperimentQueryResponse",
    "ExperimentRatioMetric",
    "ExperimentStatsConfig",
    "ExperimentVariantStats",
    "parse_metric",
]

ConversionWindowUnit = Literal["second", "minute", "hour", "day", "week", "month"]
MetricGoal = Literal["increase", "decrease"]
FunnelOrderType = Literal["strict", "unordered", "ordered"]
MultipleVariantHandling = Literal["exclude", "first_seen"]

EXPERIMENT_METRIC_MATH: frozenset[str] = frozenset(
    {"total", "sum", "avg", "min", "max", "unique_session", "dau", "hogql"}
)
"""The ``math`` of a metric source hoglab computes per person (PostHog's ``ExperimentMetricMathType`` less
``unique_group``). ``hogql``: ``math_hogql`` is a value per event (summed per person) or one aggregate of one
(``sum``/``avg``/``min``/``max``/``count``), whose function then aggregates per person, as PostHog reads it."""

_LARGEST_ID = 2**63 - 1
"""Ids are SQLite integers: a larger one names no experiment and is refused before any lookup."""

def _experiment_math(node: SeriesFields) -> SeriesFields:
    if node.math is not None and node.math not in EXPERIMENT_METRIC_MATH:
        allowed = ", ".join(sorted(EXPERIMENT_METRIC_MATH))
        raise ValueError(f"math {node.math!r} is not supported in an experiment metric; one of {allowed}.")
    return node


class _MetricBase(RequestModel):
    kind: Literal["ExperimentMetric"] = "ExperimentMetric"
    uuid: str | None = Field(default=None, min_length=1, max_length=200)
    name: str | None = Field(default=None, max_length=400)
    conversion_window: int | None = Field(default=None, ge=1, le=100_000)
    conversion_window_unit: ConversionWindowUnit | None = None
    goal: MetricGoal | None = None
    fingerprint: str | None = None
    isSharedMetric: bool | None = None
    sharedMetricId: float | None = None
    response: dict[str, Any] | None = None
    version: float | None = None


class ExperimentMeanMetric(_MetricBase):
    """A per-person value: a count of events, a sum (or min, max, average) of a property, unique sessions.

    Outliers are capped at the pooled ``lower_bound_percentile``/``upper_bound_percentile`` (fractions in
    [0, 1], PostHog's), ``ignore_zeros`` leaving persons with 0 out of the percentile.
    """

    metric_type: Literal["mean"] = "mean"
    source: SeriesNode
    lower_bound_percentile: float | None = Field(default=None, ge=0, le=1)
    upper_bound_percentile: float | None = Field(default=None, ge=0, le=1)
    ignore_zeros: bool | None = None

    _source_math = field_validator("source")(_experiment_math)

    @model_validator(mode="after")
    def _bounds_in_order(self) -> ExperimentMeanMetric:
        low, high = self.lower_bound_percentile, self.upper_bound_percentile
        if low is not None and high is not None and low >= high:
            raise ValueError("lower_bound_percentile must be below upper_bound_percentile.")
        return self


class ExperimentFunnelMetric(_MetricBase):
    """The share of exposed persons who go through every step after their exposure (``step_counts`` per step)."""

    metric_type: Literal["funnel"] = "funnel"
    series: list[SeriesNode] = Field(min_length=1, max_length=20)
    funnel_order_type: FunnelOrderType | None = None


class ExperimentRatioMetric(_MetricBase):
    """Σ numerator / Σ denominator over persons (revenue per order, ...), tested by the delta method."""

    metric_type: Literal["ratio"] = "ratio"
    numerator: SeriesNode
    denominator: SeriesNode

    _sources_math = field_validator("numerator", "denominator")(_experiment_math)


ExperimentMetric = Annotated[
    ExperimentMeanMetric | ExperimentFunnelMetric | ExperimentRatioMetric, Field(discriminator="metric_type")
]
"""Any experiment metric, told apart by ``metric_type``."""

_any_metric: TypeAdapter[Any] = TypeAdapter(ExperimentMetric)


def parse_metric(data: dict[str, Any]) -> ExperimentMeanMetric | ExperimentFunnelMetric | ExperimentRatioMetric:
    """Validate one metric dict (raises ``pydantic.ValidationError``)."""
    metric: ExperimentMeanMetric | ExperimentFunnelMetric | ExperimentRatioMetric = _any_metric.validate_python(data)
    return metric


class ExperimentEventExposureConfig(RequestModel):
    """A custom exposure: the first ``event`` matching ``properties`` (instead of ``$feature_flag_called``)."""

    kind: Literal["ExperimentEventExposureConfig"] = "ExperimentEventExposureConfig"
    event: str = Field(min_length=1, max_length=400)
    properties: list[AnyPropertyFilter] = Field(default_factory=list)
    response: dict[str, Any] | None = None
    version: float | None = None


def _exposure_kind(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "ActionsNode" if kind == "ActionsNode" else "ExperimentEventExposureConfig"


ExposureConfig = Annotated[
    Annotated[ExperimentEventExposureConfig, Tag("ExperimentEventExposureConfig")]
    | Annotated[ActionsNode, Tag("ActionsNode")],
    Discriminator(_exposure_kind),
]


class ExperimentExposureCriteria(RequestModel):
    """Who counts as exposed: test accounts filtered or not, a custom exposure (an event with property filters,
    or an action's events, whose variant is their ``$feature/<flag>`` property), and persons seen with several
    variants dropped (``exclude``, PostHog's default) or kept in their first (``first_seen``)."""

    filterTestAccounts: bool | None = None
    exposure_config: ExposureConfig | None = None
    multiple_variant_handling: MultipleVariantHandling | None = None


class ExperimentStatsConfig(RequestModel):
    """``stats_config``: the method (Bayesian by default, PostHog's) and its settings, kept as sent."""

    model_config = RequestModel.model_config | {"extra": "allow"}

    method: Literal["bayesian", "frequentist"] | None = None
    bayesian: dict[str, Any] | None = None
    frequentist: dict[str, Any] | None = None


class _ExperimentQueryBase(RequestModel):
    modifiers: dict[str, Any] | None = None
    tags: dict[str, Any] | None = None
    version: float | None = None
    response: dict[str, Any] | None = None


class ExperimentQuery(_ExperimentQueryBase):
    """One metric of a stored experiment, per variant (the experiment gives the flag, dates and exposure)."""

    kind: Literal["ExperimentQuery"] = "ExperimentQuery"
    experiment_id: int | None = Field(default=None, ge=1, le=_LARGEST_ID)
    metric: ExperimentMetric
    name: str | None = Field(default=None, max_length=400)

    @model_validator(mode="after")
    def _needs_experiment(self) -> ExperimentQuery:
        if self.experiment_id is None:
            raise ValueError("experiment_id is required: hoglab reads the flag, dates and exposure from it.")
        return self


class ExperimentExposureQuery(_ExperimentQueryBase):
    """Exposures per day and variant of a stored experiment (the body's dates, flag and criteria override it)."""

    kind: Literal["ExperimentExposureQuery"] = "ExperimentExposureQuery"
    experiment_id: int | None = Field(default=None, ge=1, le=_LARGEST_ID)
    experiment_name: str | None = Field(default=None, max_length=400)
    feature_flag: dict[str, Any] | None = None
    start_date: str | None = None
    end_date: str | None = None
    holdout: dict[str, Any] | None = None
    exposure_criteria: ExperimentExposureCriteria | None = None

    @model_validator(mode="after")
    def _needs_experiment(self) -> ExperimentExposureQuery:
        if self.experiment_id is None:
            raise ValueError("experiment_id is required: hoglab reads the flag and exposure from it.")
        return self


class ExperimentVariantStats(ResponseModel):
    """One variant's statistics and, for a non-baseline variant, its test (frequentist or Bayesian fields)."""

    key: str
    number_of_samples: int
    sum: float
    sum_squares: float
    denominator_sum: float | None = None
    denominator_sum_squares: float | None = None
    numerator_denominator_sum_product: float | None = None
    step_counts: list[int] | None = None
    validation_failures: list[str] | None = None
    method: Literal["bayesian", "frequentist"] | None = None
    significant: bool | None = None
    p_value: float | None = None
    confidence_interval: list[float] | None = None
    chance_to_win: float | None = None
    credible_interval: list[float] | None = None


class ExperimentQueryResponse(ResponseModel):
    """``ExperimentQuery``'s answer: the ``baseline`` (control) and one result per other variant."""

    kind: Literal["ExperimentQuery"] = "ExperimentQuery"
    metric: dict[str, Any] | None = None
    baseline: ExperimentVariantStats | None = None
    variant_results: list[ExperimentVariantStats] | None = None


class ExperimentExposureTimeSeries(ResponseModel):
    """One variant's exposures per day: running totals of exposed persons up to each day (as PostHog's chart)."""

    variant: str
    days: list[str]
    exposure_counts: list[float]


class ExperimentExposureQueryResponse(ResponseModel):
    """``ExperimentExposureQuery``'s answer: per-variant daily series, totals and the window analysed."""

    kind: Literal["ExperimentExposureQuery"] = "ExperimentExposureQuery"
    timeseries: list[ExperimentExposureTimeSeries]
    total_exposures: dict[str, float]
    date_range: DateRange | dict[str, Any]
