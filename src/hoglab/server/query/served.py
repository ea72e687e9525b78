"""What hoglab does with every field of PostHog's query schema: served, accepted as display only, or refused.

A field hoglab accepts must change its answer as PostHog's does, or be one PostHog itself leaves out of its
answers (a chart option its app reads, a name, a tag): anything else is a 400 naming the field (``attr`` its path,
``query__series__0__math_multiplier``), never silently ignored. :func:`check_served` walks a validated query:

* :data:`UNSERVED`: fields of hoglab's models that it accepts only at their neutral value (``samplingFactor`` 1,
  ``optionalInFunnel`` false, ...); any other value is refused saying why;
* :data:`DISPLAY`: the keys a settings object (``trendsFilter``, ``funnelsFilter``, ...) may carry beyond the
  fields hoglab computes with, all chart options of PostHog's app; another key is refused as unknown;
* :data:`MODIFIERS`: PostHog's ``modifiers``, each an implementation choice that changes no answer (accepted) or
  one hoglab only answers at one value (another is refused).

``tests/server/query/test_query_served.py`` checks this against PostHog's published schema: every field of every
query kind hoglab runs is served, display or refused.

>>> from hoglab.schema import parse_query
>>> check_served(parse_query({"kind": "TrendsQuery", "series": [{"event": "a", "math_multiplier": 1}]}))
>>> check_served(parse_query({"kind": "TrendsQuery", "series": [{"event": "a", "math_multiplier": 100}]}))
Traceback (most recent call last):
...
hoglab.server.errors.ValidationFailed: math_multiplier is not supported by hoglab: ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..errors import ValidationFailed

__all__ = ["DISPLAY", "MODIFIERS", "UNSERVED", "Unserved", "check_served"]


@dataclass(frozen=True)
class Unserved:
    """A field hoglab does not compute with: accepted at ``neutral`` values only, else refused with ``why``."""

    why: str
    neutral: tuple[Any, ...] = (None,)
    kinds: frozenset[str] | None = None  # only in these query kinds (None: in every kind)


_NO_RECORDINGS = "hoglab keeps no session recordings"
UNSERVED: dict[tuple[str, str], Unserved] = {
    ("InsightBase", "samplingFactor"): Unserved(
        "insights are not sampled by hoglab (PostHog's samplingFactor reads a sample of the events and scales "
        "the counts); leave it out, or use SAMPLE in a HogQL query", (None, 1, 1.0)
    ),
    ("TrendsQuery", "conversionGoal"): Unserved("web analytics conversion goals are not computed by hoglab"),
    ("SeriesFields", "math_multiplier"): Unserved(
        "hoglab does not multiply a series' values (PostHog's revenue math)", (None, 1, 1.0)
    ),
    ("SeriesFields", "optionalInFunnel"): Unserved("optional funnel steps are not computed by hoglab", (None, False)),
    ("BreakdownFilter", "breakdown_normalize_url"): Unserved(
        "URL breakdown values are not normalized by hoglab (PostHog strips the query and trailing slash)",
        (None, False),
    ),
    ("BreakdownItem", "normalize_url"): Unserved(
        "URL breakdown values are not normalized by hoglab (PostHog strips the query and trailing slash)",
        (None, False),
    ),
    ("BreakdownItem", "histogram_bin_count"): Unserved(
        "binned breakdowns are computed for a single breakdown (breakdownFilter.breakdown_histogram_bin_count)"
    ),
    ("BreakdownFilter", "breakdown_histogram_bin_count"): Unserved(
        "binned breakdowns are computed by hoglab for trends only",
        kinds=frozenset({"FunnelsQuery", "RetentionQuery", "ExperimentQuery"}),
    ),
    ("HogQLQuery", "explain"): Unserved(
        "it does not answer ClickHouse's EXPLAIN of a statement (PostHog's explain lines)", (None, False)
    ),
    ("InsightActorsQuery", "includeRecordings"): Unserved(_NO_RECORDINGS, (None, False)),
    ("FunnelsActorsQuery", "includeRecordings"): Unserved(_NO_RECORDINGS, (None, False)),
    ("FunnelsActorsQuery", "funnelTrendsDropOff"): Unserved(
        "the persons behind a point of a funnel's trend are not listed by hoglab", (None, False)
    ),
    ("FunnelsActorsQuery", "funnelTrendsEntrancePeriodStart"): Unserved(
        "the persons behind a point of a funnel's trend are not listed by hoglab"
    ),
}
"""``(model class, field)`` -> when hoglab refuses it: fields of its models it accepts at a neutral value only."""

_CHART = frozenset({
    "aggregationAxisFormat", "aggregationAxisPostfix", "aggregationAxisPrefix", "decimalPlaces", "minDecimalPlaces",
    "yAxisScaleType", "showLegend", "showLabelsOnSeries", "showValuesOnSeries", "showPercentStackView",
    "showMultipleYAxes", "showTrendLines", "hiddenLegendIndexes", "resultCustomizationBy", "resultCustomizations",
    "goalLines", "showAlertThresholdLines", "confidenceLevel", "showConfidenceIntervals", "movingAverageIntervals",
    "showMovingAverage", "detailedResultsAggregationType",
})  # fmt: skip
DISPLAY: dict[str, frozenset[str]] = {
    "TrendsFilter": _CHART,
    "FunnelsFilter": frozenset(
        {"goalLines", "hiddenLegendBreakdowns", "layout", "resultCustomizations", "showValuesOnSeries", "useUdf"}
    ),
    "RetentionFilter": frozenset(),
    "StickinessFilter": frozenset(),
    "LifecycleFilter": frozenset(),
    "PathsFilter": frozenset(),
}
"""Keys a settings object may carry that hoglab does not compute with: PostHog's app draws them (chart options),
or PostHog chooses its implementation by them (``useUdf``); its answers do not depend on them. Declared fields of
the same objects that are display only: ``display`` (but for the values below), ``showLegend``, ``stacked``,
``showValuesOnSeries``, ``dashboardDisplay``, ``showTrendLines``, ``meanRetentionCalculation`` (PostHog's app
averages the cohorts), ``retentionReference`` and ``funnelStepReference`` (how rates are shown)."""

_REFUSED_DISPLAYS = {
    "CalendarHeatmap": "the calendar heatmap (PostHog's answer by weekday and hour) is not computed by hoglab",
}

_SAME_ANSWER = None  # any value: an implementation choice
MODIFIERS: dict[str, tuple[Any, ...] | None] = {
    # how PostHog reads its tables: hoglab answers the same whichever is named
    "personsArgMaxVersion": _SAME_ANSWER,
    "inCohortVia": _SAME_ANSWER,
    "materializationMode": _SAME_ANSWER,
    "optimizeJoinedFilters": _SAME_ANSWER,
    "optimizeProjections": _SAME_ANSWER,
    "useMaterializedViews": _SAME_ANSWER,
    "usePresortedEventsTable": _SAME_ANSWER,
    "usePreaggregatedTableTransforms": _SAME_ANSWER,
    "propertyGroupsMode": _SAME_ANSWER,
    "sessionTableVersion": _SAME_ANSWER,
    "sessionsV2JoinMode": _SAME_ANSWER,
    "debug": _SAME_ANSWER,
    "timings": _SAME_ANSWER,
    "formatCsvAllowDoubleQuotes": _SAME_ANSWER,
    "s3TableUseInvalidColumns": _SAME_ANSWER,
    # what the answer means: hoglab answers at these values only
    "personsOnEventsMode": ("person_id_override_properties_joined",),
    "convertToProjectTimezone": (True,),
    "personsJoinMode": ("left",),  # person fields of an event without a person read as NULL
    "bounceRatePageViewMode": ("count_pageviews",),
    "bounceRateDurationSeconds": (10, 10.0),
    "useWebAnalyticsPreAggregatedTables": (False,),
    "customChannelTypeRules": ([],),
    "dataWarehouseEventsModifiers": ([],),
}
"""PostHog's query modifiers: ``None`` any value (changes no answer), else the values hoglab answers for."""


def check_served(query: BaseModel, attr: str = "query") -> None:
    """Refuse (a 400 naming the field) any field of ``query`` hoglab would otherwise accept and not compute with."""
    _walk(query, attr, str(getattr(query, "kind", "")))


def _walk(node: Any, attr: str, kind: str) -> None:
    if isinstance(node, list | tuple):
        for i, item in enumerate(node):
            _walk(item, f"{attr}__{i}", kind)
        return
    if not isinstance(node, BaseModel):
        return
    own = getattr(node, "kind", None)
    if isinstance(own, str) and own.endswith("Query"):
        kind = own  # the query kind a nested object belongs to (an actors query's source is its own kind)
    names = [cls.__name__ for cls in type(node).__mro__]
    for field in type(node).model_fields:
        value = getattr(node, field)
        if value is None:
            continue
        here = f"{attr}__{field}"
        for name in names:
            rule = UNSERVED.get((name, field))
            if rule is not None and (rule.kinds is None or kind in rule.kinds) and value not in rule.neutral:
                raise ValidationFailed(f"{field} is not supported by hoglab: {rule.why}.", attr=here)
        if field == "modifiers" and isinstance(value, Mapping):
            _check_modifiers(value, here)
        elif field == "display" and value in _REFUSED_DISPLAYS and type(node).__name__ == "TrendsFilter":
            raise ValidationFailed(f"display {value!r} is not supported by hoglab: {_REFUSED_DISPLAYS[value]}.",
                                   attr=here)  # fmt: skip
        else:
            _walk(value, here, kind)
    allowed = DISPLAY.get(type(node).__name__, frozenset())
    for key in node.model_extra or {}:
        if key not in allowed:
            raise ValidationFailed(
                f"Unknown field {key!r}: hoglab does not compute with it (the display options it accepts here "
                f"are {', '.join(sorted(allowed)) or 'none'}).", attr=f"{attr}__{key}",
            )  # fmt: skip


def _check_modifiers(modifiers: Mapping[str, Any], attr: str) -> None:
    for name, value in modifiers.items():
        if name not in MODIFIERS:
            raise ValidationFailed(f"Unknown modifier {name!r}: it is not one of PostHog's query modifiers.",
                                   attr=f"{attr}__{name}")  # fmt: skip
        answers = MODIFIERS[name]
        if answers is not None and value is not None and value not in answers:
            raise ValidationFailed(
                f"modifiers.{name} = {value!r} is not supported by hoglab: it answers as "
                f"{name} = {answers[0]!r} only.", attr=f"{attr}__{name}",
            )  # fmt: skip
