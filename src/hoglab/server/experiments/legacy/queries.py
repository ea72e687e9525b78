"""The insight queries behind an experiment metric, as PostHog's legacy engine builds them.

Every query covers exactly the experiment's window (``explicitDate``: from ``start_date`` to ``end_date``, or to
now while it runs, both edges included, in the project's time zone) and splits by variant:

* **Trend metric** (``count_query``): the metric's event broken down by the event property ``$feature/<flag>``,
  only events whose value is one of the flag's variants, cumulative (a per-user math keeps its per-interval
  line, PostHog's ``ActionsLineGraph``).
* **Trend exposure** (``exposure_query``): by default the unique persons who sent ``$feature_flag_called`` with
  ``$feature_flag = <flag>``, broken down by ``$feature_flag_response`` (one of the variants); or the event of
  ``parameters.custom_exposure_filter`` broken down by ``$feature/<flag>``; or, for a per-user math, the metric
  event twice: its total count (the variants' ``count``) and its unique persons (their exposure).
* **Funnel metric** (``funnel_query``): the funnel broken down by ``$feature/<flag>`` (first touch); persons
  without the property fall in the ``""`` breakdown, which the results leave out.

An experiment by group (its flag's ``aggregation_group_type_index``, or the metric's) counts groups where the
queries count persons: the default exposure is the unique groups of ``$feature_flag_called`` (``unique_group``),
a per-user math's exposure its unique groups, and the funnel converts groups (``aggregation_group_type_index``).

Each builder also returns the legacy filter PostHog reports for it (``filters``, ``exposure_filters``): the
stored filter with the experiment's overrides applied.

>>> from datetime import UTC, datetime
>>> from .filters import read_metric
>>> arms = Arms("new-checkout", ("control", "test"), datetime(2025, 6, 1, 9, tzinfo=UTC), None, "Europe/Berlin")
>>> query, filters = count_query(read_metric({"insight": "TRENDS", "events": [{"id": "purchase"}]}), arms)
>>> query.breakdownFilter.breakdown, query.dateRange.date_from, filters["display"]
('$feature/new-checkout', '2025-06-01T11:00:00+02:00', 'ActionsLineGraphCumulative')
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from hoglab.schema import (
    BreakdownFilter,
    DateRange,
    EventPropertyFilter,
    EventsNode,
    FunnelsQuery,
    TrendsFilter,
    TrendsQuery,
)

from .filters import CustomExposure, LegacyMetric

__all__ = [
    "CUMULATIVE",
    "EXPOSURE_EVENT",
    "FUNNEL_BREAKDOWN_LIMIT",
    "LINEAR",
    "Arms",
    "count_query",
    "exposure_query",
    "funnel_query",
]

CUMULATIVE = "ActionsLineGraphCumulative"
LINEAR = "ActionsLineGraph"
EXPOSURE_EVENT = "$feature_flag_called"
# A funnel breakdown keeps every value of $feature/<flag> (stale variants included) rather than folding some
# into "Other", so no variant of the flag can be hidden behind the top-N cut.
FUNNEL_BREAKDOWN_LIMIT = 10_000


@dataclass(frozen=True)
class Arms:
    """What splits an experiment: its flag's key and variants, its window (``end=None``: up to now), the zone."""

    flag_key: str
    variants: tuple[str, ...]
    start: datetime
    end: datetime | None
    timezone: str
    group_type_index: int | None = None

    def unique_actors(self) -> dict[str, Any]:
        """The math counting the experiment's units: unique persons, or unique groups of its group type."""
        if self.group_type_index is None:
            return {"math": "dau"}
        return {"math": "unique_group", "math_group_type_index": self.group_type_index}

    @property
    def breakdown_key(self) -> str:
        return f"$feature/{self.flag_key}"

    def date_range(self) -> DateRange:
        tz = ZoneInfo(self.timezone)
        end = self.end.astimezone(tz).isoformat() if self.end is not None else None
        return DateRange(date_from=self.start.astimezone(tz).isoformat(), date_to=end, explicitDate=True)

    def legacy_dates(self) -> dict[str, Any]:
        dates = self.date_range()
        return {"date_from": dates.date_from, "date_to": dates.date_to, "explicit_date": True}

    def one_of_variants(self, key: str) -> EventPropertyFilter:
        return EventPropertyFilter(key=key, value=list(self.variants), operator="exact")

    def by_flag(self, key: str | None = None, *, limit: int | None = None) -> BreakdownFilter:
        return BreakdownFilter(breakdown=key or self.breakdown_key, breakdown_type="event", breakdown_limit=limit)


def _legacy_entity(node: EventsNode, order: int) -> dict[str, Any]:
    entity: dict[str, Any] = {"id": node.event, "name": node.event, "type": "events", "order": order}
    for key in ("math", "math_property", "math_hogql"):
        value = getattr(node, key)
        entity[key] = value
    if node.math_group_type_index is not None:
        entity["math_group_type_index"] = node.math_group_type_index
    if node.properties:
        entity["properties"] = [p.model_dump(exclude_none=True) for p in node.properties]
    return entity


def _trend(series: list[EventsNode], arms: Arms, *, display: str, interval: str, breakdown: str,
           properties: list[EventPropertyFilter], test_accounts: bool, smoothing: int | None = None) -> TrendsQuery:
    return TrendsQuery(
        series=series,
        interval=interval,  # checked by legacy.read_metric
        dateRange=arms.date_range(),
        breakdownFilter=arms.by_flag(breakdown),
        properties=list(properties),
        trendsFilter=TrendsFilter(display=display, smoothingIntervals=smoothing or 1),
        filterTestAccounts=test_accounts,
    )  # fmt: skip


def _overrides(arms: Arms, *, breakdown: str, properties: list[EventPropertyFilter], **more: Any) -> dict[str, Any]:
    return {**arms.legacy_dates(), "breakdown": breakdown, "breakdown_type": "event",
            "properties": [p.model_dump(exclude_none=True) for p in properties], **more}  # fmt: skip


def count_query(metric: LegacyMetric, arms: Arms) -> tuple[TrendsQuery, dict[str, Any]]:
    """The trend metric by variant, and its legacy ``filters``."""
    display = LINEAR if metric.per_user_math else CUMULATIVE
    properties = [arms.one_of_variants(arms.breakdown_key)]
    query = _trend(list(metric.series), arms, display=display, interval=metric.interval,
                   breakdown=arms.breakdown_key, properties=properties, test_accounts=metric.filter_test_accounts,
                   smoothing=metric.smoothing_intervals)  # fmt: skip
    filters = {**metric.raw, **_overrides(arms, breakdown=arms.breakdown_key, properties=properties, display=display)}
    return query, filters


def exposure_query(
    metric: LegacyMetric, arms: Arms, custom: CustomExposure | None
) -> tuple[TrendsQuery, dict[str, Any]]:
    """The exposures of a trend metric by variant, and their legacy ``exposure_filters``.

    With a per-user math the answer has two series: the metric event's count (0) and its unique persons (1);
    the custom exposure is then not used (as in PostHog).
    """
    if metric.per_user_math:
        node = metric.series[0]
        plain = {"math": None, "math_property": None, "math_hogql": None}
        series = [node.model_copy(update=plain), node.model_copy(update={**plain, **arms.unique_actors()})]
        properties = [arms.one_of_variants(arms.breakdown_key)]
        query = _trend(series, arms, display=CUMULATIVE, interval=metric.interval, breakdown=arms.breakdown_key,
                       properties=properties, test_accounts=metric.filter_test_accounts)  # fmt: skip
        events = [_legacy_entity(s, i) for i, s in enumerate(series)]
        filters = {**metric.raw, **_overrides(arms, breakdown=arms.breakdown_key, properties=properties,
                                              display=CUMULATIVE, events=events, actions=[])}  # fmt: skip
        return query, filters
    if custom is not None:
        properties = [arms.one_of_variants(arms.breakdown_key)]
        query = _trend([custom.node], arms, display=CUMULATIVE, interval=metric.interval,
                       breakdown=arms.breakdown_key, properties=properties,
                       test_accounts=custom.filter_test_accounts)  # fmt: skip
        filters = {**custom.raw,
                   **_overrides(arms, breakdown=arms.breakdown_key, properties=properties, display=CUMULATIVE)}
        return query, filters
    exposure = EventsNode(event=EXPOSURE_EVENT, name=EXPOSURE_EVENT, **arms.unique_actors())
    response = "$feature_flag_response"
    properties = [arms.one_of_variants(response),
                  EventPropertyFilter(key="$feature_flag", value=[arms.flag_key], operator="exact")]  # fmt: skip
    query = _trend([exposure], arms, display=CUMULATIVE, interval=metric.interval, breakdown=response,
                   properties=properties, test_accounts=metric.filter_test_accounts)  # fmt: skip
    filters = {**metric.raw, **_overrides(arms, breakdown=response, properties=properties, display=CUMULATIVE,
                                          events=[_legacy_entity(exposure, 0)], actions=[])}  # fmt: skip
    return query, filters


def funnel_query(metric: LegacyMetric, arms: Arms) -> tuple[FunnelsQuery, dict[str, Any]]:
    """The funnel metric by variant, and its legacy ``filters`` (PostHog drops the filter's properties)."""
    query = FunnelsQuery(
        series=list(metric.series),
        dateRange=arms.date_range(),
        breakdownFilter=arms.by_flag(limit=FUNNEL_BREAKDOWN_LIMIT),
        funnelsFilter=metric.funnels_filter,
        filterTestAccounts=metric.filter_test_accounts,
        aggregation_group_type_index=arms.group_type_index,
    )
    filters = {**metric.raw, **_overrides(arms, breakdown=arms.breakdown_key, properties=[])}
    if arms.group_type_index is not None:
        filters["aggregation_group_type_index"] = arms.group_type_index
    return query, filters
