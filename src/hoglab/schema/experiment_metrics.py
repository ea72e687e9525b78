"""Metric experiments, PostHog's current shape: metrics on the experiment, analysed by ``ExperimentQuery``.

A metric is one of four models told apart by ``metric_type`` (PostHog's ``ExperimentMeanMetric``,
``ExperimentFunnelMetric``, ``ExperimentRatioMetric``, ``ExperimentRetentionMetric``); mean, funnel and ratio
metrics read events through ``EventsNode`` or ``ActionsNode`` sources, a retention metric through
:class:`EventsNode` (it may also start at the exposure, :class:`ExperimentExposureNode`). Any metric may be broken
down by up to three event or person properties (``breakdownFilter``). PostHog's ``ExperimentDataWarehouseNode``
sources are refused with a message naming the field (hoglab has no data warehouse). Exposure criteria name an
exposure event (``ExperimentEventExposureConfig``) or an action.

>>> metric = parse_metric({"metric_type": "mean", "source": {"kind": "EventsNode", "event": "purchase",
...                        "math": "sum", "math_property": "price"}})
>>> metric.kind, metric.metric_type, metric.source.math_property
('ExperimentMetric', 'mean', 'price')
>>> ExperimentQuery(experiment_id=1, metric=metric).kind
'ExperimentQuery'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, TypeAdapter, field_validator, model_validator

from ._base import RequestModel, ResponseModel
from .filters import AnyPropertyFilter, BreakdownFilter, DateRange
from .nodes import ActionsNode, EventsNode, SeriesFields, SeriesNode

__all__ = [
    "EXPERIMENT_BREAKDOWN_TYPES",
    "EXPERIMENT_METRIC_MATH",
    "MAX_EXPERIMENT_BREAKDOWNS",
    "MAX_UNIT_METRICS",
    "MAX_UNIT_PROPERTIES",
    "ExperimentBreakdownResult",
    "ExperimentEventExposureConfig",
    "ExperimentExposureCriteria",
    "ExperimentExposureNode",
    "ExperimentExposureQuery",
    "ExperimentExposureQueryResponse",
    "ExperimentExposureTimeSeries",
    "ExperimentFunnelMetric",
    "ExperimentMeanMetric",
    "ExperimentMetric",
    "ExperimentQuery",
    "ExperimentQueryResponse",
    "ExperimentRatioMetric",
    "ExperimentRetentionMetric",
    "ExperimentStatsConfig",
    "ExperimentUnitsQuery",
    "ExperimentVariantStats",
    "metric_fingerprint",
    "parse_metric",
]

ConversionWindowUnit = Literal["second", "minute", "hour", "day", "week", "month"]
MetricGoal = Literal["increase", "decrease"]
FunnelOrderType = Literal["strict", "unordered", "ordered"]
MultipleVariantHandling = Literal["exclude", "first_seen"]
StartHandling = Literal["first_seen", "last_seen"]
BreakdownAttributionType = Literal["first_touch", "last_touch", "step", "all_events"]

MAX_EXPERIMENT_BREAKDOWNS = 3
"""PostHog's limit on an experiment metric's breakdowns."""
EXPERIMENT_BREAKDOWN_TYPES: frozenset[str] = frozenset({"event", "person"})
"""The breakdown types hoglab computes for an experiment metric (PostHog also has group and session ones)."""

EXPERIMENT_METRIC_MATH: frozenset[str] = frozenset(
    {"total", "sum", "avg", "min", "max", "unique_session", "dau", "unique_group", "hogql"}
)
"""The ``math`` of a metric source hoglab computes per unit (PostHog's ``ExperimentMetricMathType``).
``unique_group``: the distinct groups of type ``math_group_type_index`` among the unit's events. ``hogql``:
``math_hogql`` is a value per event (summed per person) or one aggregate of one (``sum``/``avg``/``min``/``max``/
``count``), whose function then aggregates per person, as PostHog reads it."""

_LARGEST_ID = 2**63 - 1
"""Ids are SQLite integers: a larger one names no experiment and is refused before any lookup."""

def _experiment_math(node: SeriesFields) -> SeriesFields:
    if node.math is not None and node.math not in EXPERIMENT_METRIC_MATH:
        allowed = ", ".join(sorted(EXPERIMENT_METRIC_MATH))
        raise ValueError(f"math {node.math!r} is not supported in an experiment metric; one of {allowed}.")
    return node


def _experiment_breakdowns(value: Any) -> Any:
    # PostHog's own message for too many breakdowns, before the generic filter's length check says it otherwise.
    items = value.get("breakdowns") if isinstance(value, dict) else getattr(value, "breakdowns", None)
    if isinstance(items, list):
        if len(items) > MAX_EXPERIMENT_BREAKDOWNS:
            raise ValueError(f"Maximum of {MAX_EXPERIMENT_BREAKDOWNS} breakdowns are supported for experiment metrics")
        for item in items:
            kind = (item.get("type") if isinstance(item, dict) else getattr(item, "type", None)) or "event"
            if kind not in EXPERIMENT_BREAKDOWN_TYPES:
                raise ValueError(f"Breakdowns of type {kind!r} are not supported in experiment metrics by hoglab: "
                                 "event and person properties are.")  # fmt: skip
    single = value.get("breakdown") if isinstance(value, dict) else getattr(value, "breakdown", None)
    if single not in (None, "", []):
        raise ValueError("An experiment metric's breakdowns go in breakdownFilter.breakdowns "
                         '([{"property": "$browser", "type": "event"}]).')  # fmt: skip
    return value


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
    breakdownFilter: BreakdownFilter | None = None

    _breakdowns = field_validator("breakdownFilter", mode="before")(_experiment_breakdowns)


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
    breakdownAttributionType: BreakdownAttributionType | None = None
    breakdownAttributionValue: int | None = Field(default=None, ge=0)


class ExperimentRatioMetric(_MetricBase):
    """Σ numerator / Σ denominator over persons (revenue per order, ...), tested by the delta method."""

    metric_type: Literal["ratio"] = "ratio"
    numerator: SeriesNode
    denominator: SeriesNode

    _sources_math = field_validator("numerator", "denominator")(_experiment_math)


class ExperimentExposureNode(RequestModel):
    """A retention metric's start at each unit's first exposure (PostHog's ``ExperimentExposureNode``)."""

    kind: Literal["ExperimentExposureNode"] = "ExperimentExposureNode"
    response: dict[str, Any] | None = None
    version: float | None = None


_RETENTION_UNSUPPORTED = {
    "ActionsNode": "A retention metric reads events in hoglab: use an EventsNode (actions work in mean, funnel and "
                   "ratio metrics).",
    "ExperimentDataWarehouseNode": "Data warehouse sources are not supported by hoglab: use an EventsNode source.",
}  # fmt: skip


def _events_source(value: Any) -> Any:
    # PostHog accepts three kinds of retention event; a clear refusal beats pydantic's error for the two hoglab's
    # retention query does not read.
    if isinstance(value, dict):
        message = _RETENTION_UNSUPPORTED.get(str(value.get("kind")))
        if message:
            raise ValueError(message)
    return value


def _retention_start(value: Any) -> Any:
    if isinstance(value, dict) and value.get("kind") == "ExperimentExposureNode":
        return value
    return _events_source(value)


class ExperimentRetentionMetric(_MetricBase):
    """Of the exposed units who did ``start_event``, the share who did ``completion_event`` in a window.

    The window is from ``retention_window_start`` to ``retention_window_end`` units after the start (both ends
    inclusive; ``day`` and ``hour`` windows count whole calendar days or hours), the start coming after the
    exposure. ``start_handling``: the first or last start event.
    """

    metric_type: Literal["retention"] = "retention"
    start_event: EventsNode | ExperimentExposureNode
    completion_event: EventsNode
    retention_window_start: int = Field(ge=0, le=100_000)
    retention_window_end: int = Field(ge=0, le=100_000)
    retention_window_unit: ConversionWindowUnit
    start_handling: StartHandling

    _start_kind = field_validator("start_event", mode="before")(_retention_start)
    _completion_kind = field_validator("completion_event", mode="before")(_events_source)

    @model_validator(mode="after")
    def _window_and_start(self) -> ExperimentRetentionMetric:
        if self.retention_window_start > self.retention_window_end:
            raise ValueError("retention_window_start must not be after retention_window_end.")
        if isinstance(self.start_event, ExperimentExposureNode):
            # PostHog's retention_metric_error: settings an exposure-anchored start would silently ignore.
            if self.conversion_window is not None or self.conversion_window_unit is not None:
                raise ValueError("a conversion window cannot be combined with an experiment exposure start. "
                                 "Retention already anchors on each user's first exposure.")  # fmt: skip
            if self.start_handling == "last_seen":
                raise ValueError("start_handling 'last_seen' cannot be combined with an experiment exposure start. "
                                 "Retention always anchors on each user's first exposure.")  # fmt: skip
        return self


AnyExperimentMetric = ExperimentMeanMetric | ExperimentFunnelMetric | ExperimentRatioMetric | ExperimentRetentionMetric
ExperimentMetric = Annotated[AnyExperimentMetric, Field(discriminator="metric_type")]
"""Any experiment metric, told apart by ``metric_type``."""

_any_metric: TypeAdapter[Any] = TypeAdapter(ExperimentMetric)


def parse_metric(data: dict[str, Any]) -> AnyExperimentMetric:
    """Validate one metric dict (raises ``pydantic.ValidationError``)."""
    metric: AnyExperimentMetric = _any_metric.validate_python(data)
    return metric


_FINGERPRINT_IGNORED = frozenset({"uuid", "name", "kind", "fingerprint", "only_count_matured_users"})


def metric_fingerprint(
    metric: Mapping[str, Any],
    start_date: datetime | str | None,
    stats_method: str | None = None,
    exposure_criteria: Mapping[str, Any] | None = None,
    only_count_matured_users: bool = False,
    excluded_variants: Iterable[str] | None = None,
) -> str:
    """PostHog's metric fingerprint (``experiment_metric_fingerprint.compute_metric_fingerprint``): the SHA-256 of
    the sorted, compact JSON of what a metric's results depend on, which keys its stored timeseries.

    The metric without ``uuid``/``name``/``kind``/``fingerprint`` (and without an empty ``breakdownFilter``), the
    start date in UTC ISO form, the stats method (``bayesian`` by default), the exposure criteria when set, the
    matured-users switch when on and the sorted excluded variants when any. CUPED and sequential settings are not
    part of it, as in PostHog.

    >>> metric_fingerprint({"metric_type": "mean", "uuid": "a", "source": {"event": "buy"}},
    ...                    "2026-01-10T00:00:00Z")[:12]
    'aba8412a8158'
    """
    clean = {k: v for k, v in metric.items() if k not in _FINGERPRINT_IGNORED}
    breakdown = clean.get("breakdownFilter")
    if breakdown is None:
        clean.pop("breakdownFilter", None)
    elif isinstance(breakdown, Mapping) and not breakdown.get("breakdowns"):
        rest = {k: v for k, v in breakdown.items() if k != "breakdowns"}
        if rest:
            clean["breakdownFilter"] = rest
        else:
            clean.pop("breakdownFilter")
    if isinstance(start_date, datetime):
        start = (start_date if start_date.tzinfo else start_date.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    else:
        start = start_date  # type: ignore[assignment]
    data: dict[str, Any] = {"metric": clean, "start_date": start, "stats_method": stats_method or "bayesian"}
    if exposure_criteria:
        data["exposure_criteria"] = dict(exposure_criteria)
    if only_count_matured_users:
        data["only_count_matured_users"] = True
    excluded = sorted(set(excluded_variants or ()))
    if excluded:
        data["excluded_variants"] = excluded
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    """Who counts as exposed: test accounts, a custom exposure, and persons seen with several variants.

    Test accounts are filtered or not; a custom exposure is an event with property filters, or an action's events,
    whose variant is their ``$feature/<flag>`` property; persons seen with several variants are dropped
    (``exclude``, PostHog's default) or kept in their first (``first_seen``).
    """

    filterTestAccounts: bool | None = None
    exposure_config: ExposureConfig | None = None
    multiple_variant_handling: MultipleVariantHandling | None = None


class ExperimentStatsConfig(RequestModel):
    """``stats_config``: the method (Bayesian by default, PostHog's) and its settings, kept as sent.

    ``frequentist``: ``alpha``, ``difference_type``, ``sequential_testing_enabled``, ``sequential_tuning_parameter``;
    ``bayesian``: ``ci_level``, ``difference_type``; ``cuped``: ``{"enabled": bool, "lookback_days": 1-30}``
    (hoglab's extensions: ``"ratio": true`` also adjusts ratio metrics; ``"variance": "delta"`` answers with the
    delta-method variance of the relative effect, calibrated, where PostHog's formula is the default). Malformed
    values fall back to the team's
    defaults and then PostHog's, at query time, as PostHog resolves them.
    """

    model_config = RequestModel.model_config | {"extra": "allow"}

    method: Literal["bayesian", "frequentist"] | None = None
    bayesian: dict[str, Any] | None = None
    frequentist: dict[str, Any] | None = None
    cuped: dict[str, Any] | None = None


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
    # hoglab's extension: PostHog's current engine leaves the holdout's persons out of results (and so does hoglab
    # without it).
    compare_to_holdout: bool | None = Field(
        default=None,
        description="hoglab only: the experiment's holdout arm (holdout-<id>) is the baseline and every flag variant, "
        "control included, is compared with it.",
    )

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


MAX_UNIT_METRICS = 20
"""Metrics one ``ExperimentUnitsQuery`` computes (each is a scan of the events)."""
MAX_UNIT_PROPERTIES = 50
"""Person or group properties one ``ExperimentUnitsQuery`` reads."""


class ExperimentUnitsQuery(RequestModel):
    """hoglab's per-unit rows of a stored experiment (``POST /query/arrow/``): one row per exposed unit.

    A unit is a person, or a group for an experiment by group; its row has its variant, first exposure, each
    metric's value exactly as ``ExperimentQuery`` sums it, and the unit's ``properties``.

    >>> ExperimentUnitsQuery(experiment_id=3, metrics=[{"metric_type": "mean", "source": {"event": "buy"}}],
    ...                      properties=["plan"]).metrics[0].metric_type
    'mean'
    """

    kind: Literal["ExperimentUnitsQuery"] = "ExperimentUnitsQuery"
    experiment_id: int = Field(ge=1, le=_LARGEST_ID)
    metrics: list[ExperimentMetric] = Field(default_factory=list, max_length=MAX_UNIT_METRICS)
    properties: list[Annotated[str, Field(min_length=1, max_length=400)]] = Field(
        default_factory=list, max_length=MAX_UNIT_PROPERTIES
    )


class ExperimentVariantStats(ResponseModel):
    """One variant's statistics and, for a non-baseline variant, its test (frequentist or Bayesian fields).

    With CUPED, ``covariate_sum``, ``covariate_sum_squares`` and ``covariate_sum_product`` (Σ metric × covariate)
    are the pre-exposure covariate's sums; ``sum`` and ``sum_squares`` stay unadjusted.
    """

    key: str
    number_of_samples: int
    sum: float
    sum_squares: float
    denominator_sum: float | None = None
    denominator_sum_squares: float | None = None
    numerator_denominator_sum_product: float | None = None
    step_counts: list[int] | None = None
    covariate_sum: float | None = None
    covariate_sum_squares: float | None = None
    covariate_sum_product: float | None = None
    validation_failures: list[str] | None = None
    method: Literal["bayesian", "frequentist"] | None = None
    significant: bool | None = None
    p_value: float | None = None
    confidence_interval: list[float] | None = None
    chance_to_win: float | None = None
    credible_interval: list[float] | None = None


class ExperimentBreakdownResult(ResponseModel):
    """One breakdown value's results: the value (one string per breakdown property), baseline and variants."""

    breakdown_value: list[str]
    baseline: ExperimentVariantStats
    variants: list[ExperimentVariantStats]


class ExperimentQueryResponse(ResponseModel):
    """``ExperimentQuery``'s answer: the ``baseline`` (control) and one result per other variant; with a breakdown,
    ``breakdown_results`` per value and the top level over all values together."""

    kind: Literal["ExperimentQuery"] = "ExperimentQuery"
    metric: dict[str, Any] | None = None
    baseline: ExperimentVariantStats | None = None
    variant_results: list[ExperimentVariantStats] | None = None
    breakdown_results: list[ExperimentBreakdownResult] | None = None


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
