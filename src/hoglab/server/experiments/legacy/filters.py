"""Reading an experiment metric stored as a PostHog legacy insight filter.

PostHog's legacy experiment engine keeps each metric as an insight filter of the old (pre-query) shape::

    {"insight": "FUNNELS",
     "events": [{"id": "$pageview", "order": 0, "properties": [{"key": "$current_url", "value": "/checkout",
                                                                  "operator": "icontains", "type": "event"}]},
                {"id": "purchase", "order": 1}],
     "funnel_window_interval": 14, "funnel_window_interval_unit": "day"}

:func:`read_metric` turns one into a :class:`LegacyMetric` holding the shared schema's nodes (``EventsNode``,
``FunnelsFilter``), so the insight runners can answer it. Whatever hoglab cannot run the way PostHog would is a
400 naming the legacy field (``filters__events__1__math``), never a wrong answer: actions, formulas,
comparisons, funnel visualisations other than steps. Group aggregation (``aggregation_group_type_index``, an
entity's ``math: unique_group`` with ``math_group_type_index``) is read as PostHog's. Keys PostHog's UI stores
for display only, and the keys the experiment replaces (dates, ``breakdown``, ``properties``, ``display``), are
read as PostHog reads them: not at all. ``insight`` defaults to ``TRENDS``, as PostHog's ``Filter`` does.

>>> metric = read_metric({"insight": "funnels", "events": [{"id": "buy", "order": 1}, {"id": "view", "order": 0}]})
>>> metric.insight, [step.event for step in metric.series], metric.origins
('FUNNELS', ['view', 'buy'], ('events__1', 'events__0'))
>>> read_metric({"events": [{"id": "buy", "math": "avg_count_per_actor"}]}).per_user_math
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from hoglab.schema import EventsNode, FunnelExclusion, FunnelsFilter, TrendsFilter, validation_error_body
from hoglab.schema.nodes import COUNT_PER_ACTOR_MATH, PROPERTY_MATH

from ...errors import ValidationFailed

__all__ = ["PER_USER_MATH", "CustomExposure", "LegacyMetric", "read_custom_exposure", "read_metric"]

PER_USER_MATH: frozenset[str] = (PROPERTY_MATH - {"sum"}) | COUNT_PER_ACTOR_MATH
"""Maths PostHog measures against the metric event's own unique users instead of the flag's exposures
(``uses_math_aggregation_by_user_or_property_value``: every property and per-actor math except ``sum``)."""

_INSIGHTS = ("TRENDS", "FUNNELS")
_INTERVALS = ("hour", "day", "week", "month")
_MAX_STEPS = 20
# Legacy funnel keys and the FunnelsFilter fields they become (validation errors name the legacy key).
_FUNNEL_KEYS = {
    "funnel_window_interval": "funnelWindowInterval",
    "funnel_window_interval_unit": "funnelWindowIntervalUnit",
    "funnel_order_type": "funnelOrderType",
    "breakdown_attribution_type": "breakdownAttributionType",
    "breakdown_attribution_value": "breakdownAttributionValue",
    "funnel_aggregate_by_hogql": "funnelAggregateByHogQL",
}
# Keys that change what an insight computes in ways an experiment result can't carry: refused, not ignored.
_REFUSED = {
    "formula": "Formulas are not supported in experiment metrics: give the metric as one event.",
    "compare": "Comparing with a previous period is not supported in experiment metrics.",
}


@dataclass(frozen=True)
class LegacyMetric:
    """A metric read from legacy filters: ``series`` in step order, ``origins`` the legacy place of each
    (``events__0``), ``attr`` where the filters live (``filters`` or ``secondary_metrics__2__filters``)."""

    insight: Literal["TRENDS", "FUNNELS"]
    series: tuple[EventsNode, ...]
    origins: tuple[str, ...]
    attr: str
    raw: Mapping[str, Any]
    interval: str = "day"
    filter_test_accounts: bool = False
    smoothing_intervals: int | None = None
    funnels_filter: FunnelsFilter | None = None
    group_type_index: int | None = None

    @property
    def per_user_math(self) -> bool:
        """Whether the metric uses a math PostHog measures per user (:data:`PER_USER_MATH`)."""
        return any(node.math in PER_USER_MATH for node in self.series)

    def field_attr(self, runner_attr: str | None) -> str:
        """A runner's error ``attr`` (``series.1.properties.0``) as the legacy field it came from."""
        if not runner_attr:
            return self.attr
        parts = runner_attr.replace("__", ".").split(".")
        if parts[0] == "series" and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < len(self.origins):
            parts = [self.origins[int(parts[1])], *parts[2:]]
        elif parts[0] == "funnelsFilter" and len(parts) > 1:
            legacy = {v: k for k, v in _FUNNEL_KEYS.items()}.get(parts[1], parts[1])
            parts = [legacy, *parts[2:]]
        else:
            return self.attr
        return "__".join([self.attr, *parts])


def _fail(detail: str, attr: str) -> ValidationFailed:
    return ValidationFailed(detail, attr=attr)


def _legacy_properties(value: Any, attr: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not value.get("values"):
            return None  # an empty property group, as PostHog's UI saves it
        raise _fail("Property groups are not supported on a metric's event: give a list of filters.", attr)
    if not isinstance(value, list):
        raise _fail("Properties are a list of filters.", attr)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise _fail("Each property filter is an object.", f"{attr}__{i}")
        # Legacy filters spell defaults as nulls (operator, group_type_index) and may leave the type out (event).
        cleaned = {k: v for k, v in item.items() if v is not None or k == "value"}
        cleaned.setdefault("type", "event")
        out.append(cleaned)
    return out


def _entity(item: Any, attr: str) -> EventsNode:
    """One legacy entity (``{"id", "type", "math", "properties", ...}``) as an ``EventsNode``."""
    if not isinstance(item, Mapping):
        raise _fail("Each event of a metric is an object with an 'id'.", attr)
    kind = item.get("type") or "events"
    if kind != "events":
        raise _fail(f"Entities of type {kind!r} are not supported by hoglab: give events.", f"{attr}__type")
    event = item.get("id")
    if event is not None and not isinstance(event, str):
        raise _fail("An event's id is its name, a string.", f"{attr}__id")
    node: dict[str, Any] = {"event": event}
    for key in ("name", "custom_name", "math", "math_property", "math_property_type", "math_hogql",
                "math_group_type_index"):  # fmt: skip
        if item.get(key) is not None:
            node[key] = item[key]
    properties = _legacy_properties(item.get("properties"), f"{attr}__properties")
    if properties:
        node["properties"] = properties
    try:
        return EventsNode.model_validate(node)
    except ValidationError as exc:
        body = validation_error_body(exc, node)
        raise _fail(body.detail, f"{attr}__{body.attr}" if body.attr else attr) from None


def _entities(filters: Mapping[str, Any], attr: str) -> tuple[list[EventsNode], list[str]]:
    """The metric's events (and refused actions) in PostHog's order: by ``order``, then as listed."""
    found: list[tuple[int, int, str, Any]] = []
    for key in ("events", "actions"):
        items = filters.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _fail(f"'{key}' is a list.", f"{attr}__{key}")
        if key == "actions" and items:
            raise _fail("Actions are not supported by hoglab: give the metric's events.", f"{attr}__actions")
        for i, item in enumerate(items):
            order = item.get("order") if isinstance(item, Mapping) else None
            if order is not None and (isinstance(order, bool) or not isinstance(order, int)):
                raise _fail("'order' is an integer.", f"{attr}__{key}__{i}__order")
            found.append((order if order is not None else i, len(found), f"{key}__{i}", item))
    found.sort(key=lambda entry: entry[:2])
    nodes = [_entity(item, f"{attr}__{origin}") for _, _, origin, item in found]
    return nodes, [origin for _, _, origin, _ in found]


def _funnels_filter(filters: Mapping[str, Any], series: list[EventsNode], attr: str) -> FunnelsFilter:
    viz = filters.get("funnel_viz_type")
    if viz not in (None, "steps"):
        raise _fail("An experiment's funnel metric counts steps: funnel_viz_type must be 'steps'.",
                    f"{attr}__funnel_viz_type")  # fmt: skip
    data: dict[str, Any] = {_FUNNEL_KEYS[k]: filters[k] for k in _FUNNEL_KEYS if filters.get(k) is not None}
    if "funnelWindowInterval" not in data and filters.get("funnel_window_days") is not None:
        data["funnelWindowInterval"] = filters["funnel_window_days"]  # the oldest spelling: a number of days
        data["funnelWindowIntervalUnit"] = "day"
    exclusions = filters.get("exclusions")
    if exclusions:
        if not isinstance(exclusions, list):
            raise _fail("'exclusions' is a list.", f"{attr}__exclusions")
        data["exclusions"] = [_exclusion(item, len(series), f"{attr}__exclusions__{i}")
                              for i, item in enumerate(exclusions)]  # fmt: skip
    try:
        return FunnelsFilter.model_validate(data)
    except ValidationError as exc:
        body = validation_error_body(exc, data)
        field = (body.attr or "").split("__")[0]
        legacy = {v: k for k, v in _FUNNEL_KEYS.items()}.get(field, field)
        raise _fail(body.detail, f"{attr}__{legacy}" if legacy else attr) from None


def _exclusion(item: Any, steps: int, attr: str) -> FunnelExclusion:
    node = _entity(item, attr)
    low, high = item.get("funnel_from_step"), item.get("funnel_to_step")
    for name, value in (("funnel_from_step", low), ("funnel_to_step", high)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(f"'{name}' is the index of a step.", f"{attr}__{name}")
    if not 0 <= low < high < steps:
        raise _fail(f"An exclusion sits between two steps of the funnel (0 to {steps - 1}), from before to.",
                    f"{attr}__funnel_to_step")  # fmt: skip
    return FunnelExclusion(**node.model_dump(exclude_none=True, exclude={"kind"}), funnelFromStep=low,
                           funnelToStep=high)  # fmt: skip


def _trend_settings(filters: Mapping[str, Any], attr: str) -> tuple[str, int | None]:
    interval = filters.get("interval") or "day"
    if interval not in _INTERVALS:
        raise _fail(f"interval is one of {', '.join(_INTERVALS)}.", f"{attr}__interval")
    smoothing = filters.get("smoothing_intervals")
    if smoothing is not None:
        if isinstance(smoothing, bool) or not isinstance(smoothing, int):
            raise _fail("smoothing_intervals is a whole number of intervals.", f"{attr}__smoothing_intervals")
        try:
            TrendsFilter(smoothingIntervals=smoothing)  # the schema's bounds, checked before any query is built
        except ValidationError as exc:
            raise _fail(validation_error_body(exc, {}).detail, f"{attr}__smoothing_intervals") from None
    return str(interval), smoothing


def _events_and_switches(filters: Mapping[str, Any], attr: str) -> tuple[list[EventsNode], list[str], bool]:
    """What a metric and a custom exposure read alike: the keys refused, the events (with their legacy places)
    and ``filter_test_accounts``."""
    for key, detail in _REFUSED.items():
        if filters.get(key) not in (None, False, ""):
            raise _fail(detail, f"{attr}__{key}")
    tests = filters.get("filter_test_accounts")
    if tests is not None and not isinstance(tests, bool):
        raise _fail("filter_test_accounts is true or false.", f"{attr}__filter_test_accounts")
    series, origins = _entities(filters, attr)
    return series, origins, bool(tests)


def _group_type_index(filters: Mapping[str, Any], attr: str) -> int | None:
    index = filters.get("aggregation_group_type_index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 4):
        raise _fail("aggregation_group_type_index is a group type index, 0 to 4.",
                    f"{attr}__aggregation_group_type_index")  # fmt: skip
    return index


def read_metric(filters: Any, attr: str = "filters") -> LegacyMetric:
    """Read legacy insight ``filters`` (raises ``ValidationFailed`` naming the field under ``attr``)."""
    if not isinstance(filters, Mapping) or not filters:
        raise _fail("The metric has no filters: give an insight with its events.", attr)
    insight = filters.get("insight") or "TRENDS"
    if not isinstance(insight, str) or insight.upper() not in _INSIGHTS:
        raise _fail("An experiment metric is a TRENDS or FUNNELS insight.", f"{attr}__insight")
    insight = insight.upper()
    series, origins, tests = _events_and_switches(filters, attr)
    common: dict[str, Any] = {"origins": tuple(origins), "attr": attr, "raw": filters,
                              "filter_test_accounts": tests,
                              "group_type_index": _group_type_index(filters, attr)}  # fmt: skip
    if insight == "TRENDS":
        if len(series) != 1:
            raise _fail("A trend metric counts one event.", f"{attr}__events")
        interval, smoothing = _trend_settings(filters, attr)
        return LegacyMetric("TRENDS", tuple(series), interval=interval, smoothing_intervals=smoothing, **common)
    if not 2 <= len(series) <= _MAX_STEPS:
        raise _fail(f"A funnel metric has 2 to {_MAX_STEPS} steps.", f"{attr}__events")
    funnels = _funnels_filter(filters, series, attr)
    return LegacyMetric("FUNNELS", tuple(series), funnels_filter=funnels, **common)


@dataclass(frozen=True)
class CustomExposure:
    """``parameters.custom_exposure_filter``: its one event (with its own math), its test-account switch, as sent."""

    node: EventsNode
    filter_test_accounts: bool
    raw: Mapping[str, Any]


def read_custom_exposure(custom: Any, attr: str = "parameters__custom_exposure_filter") -> CustomExposure:
    """Read ``parameters.custom_exposure_filter`` (a legacy filter with one event)."""
    if not isinstance(custom, Mapping):
        raise _fail("custom_exposure_filter is a legacy insight filter with one event.", attr)
    series, _, tests = _events_and_switches(custom, attr)
    if len(series) != 1:
        raise _fail("A custom exposure counts one event.", f"{attr}__events")
    return CustomExposure(series[0], tests, custom)
