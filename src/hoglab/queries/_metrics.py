"""Builders of experiment metrics (PostHog's ``ExperimentMetric``): mean, funnel, ratio and retention; and of the
two experiment queries (:func:`experiment_query`, :func:`exposure_query`).

Each metric builder returns the :mod:`hoglab.schema` model an experiment's ``metrics`` (or ``metrics_secondary``)
holds, with a fresh ``uuid`` so the experiment can order its metrics (``primary_metrics_ordered_uuids``) on hoglab
and PostHog alike; ``breakdowns`` splits its results by up to three event or person properties. A mistake is an
:class:`~hoglab.errors.InvalidArgument` naming the argument, before any request.

>>> from hoglab.queries import series
>>> m = mean_metric("purchase", math="sum", math_property="price", upper_bound_percentile=0.99, window="7d")
>>> m.metric_type, m.source.math, m.source.math_property, m.upper_bound_percentile, m.conversion_window
('mean', 'sum', 'price', 0.99, 7)
>>> funnel_metric(["signup", "purchase"], order="strict").series[1].event
'purchase'
>>> r = ratio_metric(series("purchase", math="sum", math_property="price"), "$pageview", name="revenue per view")
>>> r.numerator.math_property, r.denominator.event, r.name
('price', '$pageview', 'revenue per view')
>>> k = retention_metric("signup", "login", window=(1, 7), breakdowns=["$browser"])
>>> k.metric_type, k.retention_window_end, k.breakdownFilter.breakdowns[0].property
('retention', 7, '$browser')
>>> experiment_query(3, k).kind
'ExperimentQuery'
>>> mean_metric(action="Checkout").source.kind, funnel_metric([series(action=7), "purchase"]).series[0].id
('ActionsNode', 7)
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    EXPERIMENT_BREAKDOWN_TYPES,
    EXPERIMENT_METRIC_MATH,
    MAX_EXPERIMENT_BREAKDOWNS,
    ActionsNode,
    AnyExperimentMetric,
    BreakdownFilter,
    EventsNode,
    ExperimentExposureCriteria,
    ExperimentExposureNode,
    ExperimentExposureQuery,
    ExperimentFunnelMetric,
    ExperimentMeanMetric,
    ExperimentQuery,
    ExperimentRatioMetric,
    ExperimentRetentionMetric,
)
from ._args import check_choice, model_errors, where_filters, window_arg
from ._series import ActionRef, Node, series

__all__ = ["experiment_query", "exposure_query", "funnel_metric", "mean_metric", "ratio_metric", "retention_metric"]

Window = int | str | timedelta | None
Goal = Literal["increase", "decrease"]
Breakdowns = Sequence[str | tuple[str, str] | Mapping[str, Any]] | str | None
_UNITS = "second minute hour day week month"


def _breakdown_filter(breakdowns: Breakdowns, limit: int | None) -> BreakdownFilter | None:
    """``["$browser", ("plan", "person")]`` (or PostHog's ``{"property", "type"}`` dicts) as a ``breakdownFilter``."""
    if breakdowns is None:
        if limit is not None:
            raise InvalidArgument("breakdown_limit: give breakdowns to limit.", argument="breakdown_limit")
        return None
    items = [breakdowns] if isinstance(breakdowns, str) else list(breakdowns)
    if not 1 <= len(items) <= MAX_EXPERIMENT_BREAKDOWNS:
        raise InvalidArgument(f"breakdowns: 1 to {MAX_EXPERIMENT_BREAKDOWNS} properties, got {len(items)}.",
                              argument="breakdowns")  # fmt: skip
    out = []
    for item in items:
        prop: Any
        kind: Any
        if isinstance(item, str):
            prop, kind = item, "event"
        elif isinstance(item, tuple) and len(item) == 2:
            prop, kind = item
        elif isinstance(item, Mapping):
            prop, kind = item.get("property"), item.get("type") or "event"
        else:
            raise InvalidArgumentType("breakdowns: each is a property name, a (property, type) pair or a dict.",
                                      argument="breakdowns")  # fmt: skip
        if not isinstance(prop, str) or not prop:
            raise InvalidArgument(f"breakdowns: {prop!r} is not a property name.", argument="breakdowns")
        check_choice("breakdowns", kind, " ".join(sorted(EXPERIMENT_BREAKDOWN_TYPES)))
        out.append({"property": prop, "type": kind})
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidArgument(f"breakdown_limit: a positive integer, got {limit!r}.", argument="breakdown_limit")
    with model_errors("breakdowns"):
        return BreakdownFilter.model_validate({"breakdowns": out, "breakdown_limit": limit})


def _node(argument: str, value: Any, math: str | None = None, math_property: str | None = None,
          where: Any = None, person_where: Any = None, math_hogql: str | None = None) -> Node:  # fmt: skip
    if math_hogql is not None and math is None:
        math = "hogql"
    node: Node
    if isinstance(value, EventsNode | ActionsNode):
        if math is not None or where is not None or person_where is not None:
            raise InvalidArgument(
                f"{argument}: a hoglab.series(...) carries its own math and filters; pass them to series().",
                argument=argument,
            )
        node = value
    elif isinstance(value, str) and value:
        if math is not None:
            check_choice("math", math, " ".join(sorted(EXPERIMENT_METRIC_MATH)))
        filters = where_filters(where, person_where)
        with model_errors(argument):
            node = EventsNode(
                event=value, name=value, math=math, math_property=math_property, math_hogql=math_hogql,
                properties=filters or None,
            )
    else:
        raise InvalidArgumentType(
            f"{argument}: expected an event name or a hoglab.series(...) (of an event or an action), got "
            f"{type(value).__name__}.",
            argument=argument,
        )
    if node.math is not None and node.math not in EXPERIMENT_METRIC_MATH:
        allowed = ", ".join(repr(m) for m in sorted(EXPERIMENT_METRIC_MATH))
        raise InvalidArgument(
            f"math: {node.math!r} is not an experiment metric's math; one of {allowed}.", argument="math"
        )
    return node


def _events(argument: str, value: Any) -> EventsNode:
    """An event node of a retention metric (hoglab's retention query reads events, not actions)."""
    node = _node(argument, value)
    if not isinstance(node, EventsNode):
        raise InvalidArgument(f"{argument}: a retention metric reads events (an event name or an EventsNode), "
                              "not an action.", argument=argument)  # fmt: skip
    return node


def _common(name: str | None, window: Window, goal: Goal | None, uuid: str | None, breakdowns: Breakdowns = None,
            breakdown_limit: int | None = None) -> dict[str, Any]:  # fmt: skip
    fields: dict[str, Any] = {"uuid": uuid or str(uuid_module.uuid4()), "name": name}
    found = _breakdown_filter(breakdowns, breakdown_limit)
    if found is not None:
        fields["breakdownFilter"] = found
    if goal is not None:
        fields["goal"] = check_choice("goal", goal, "increase decrease")
    if window is not None:
        size, unit = window_arg(window)
        fields["conversion_window"], fields["conversion_window_unit"] = size, unit
    return fields


def mean_metric(
    event: str | Node | None = None,
    *,
    action: ActionRef | None = None,
    math: str | None = None,
    math_property: str | None = None,
    math_hogql: str | None = None,
    where: Any = None,
    person_where: Any = None,
    name: str | None = None,
    window: Window = None,
    goal: Goal | None = None,
    lower_bound_percentile: float | None = None,
    upper_bound_percentile: float | None = None,
    ignore_zeros: bool | None = None,
    uuid: str | None = None,
    breakdowns: Breakdowns = None,
    breakdown_limit: int | None = None,
) -> ExperimentMeanMetric:
    """A mean metric: a value per exposed person, averaged per variant.

    Parameters
    ----------
    event
        The event whose events give the value, or a :func:`hoglab.series` (carrying its own math and filters).
    action
        An action's id or name, instead of ``event``.
    math
        Which value: ``"total"`` (the count of ``event``, the default), ``"sum"``/``"avg"``/``"min"``/``"max"``
        of ``math_property``, ``"unique_session"`` (sessions with the event), ``"dau"``, or ``"hogql"`` with
        ``math_hogql``.
    math_property
        The property ``sum``, ``avg``, ``min`` and ``max`` aggregate.
    math_hogql
        A HogQL value (giving it alone implies ``math="hogql"``): a value per event summed per person
        (``"toFloat(properties.price) * 2"``), or one aggregate of one (``"avg(toFloat(properties.price))"``),
        whose function then aggregates per person, as PostHog reads it.
    where, person_where
        Filters on the events' properties and on person properties (a dict, a HogQL condition string or a
        list, as :func:`hoglab.trends`).
    name
        The metric's name.
    window
        The conversion window after exposure (``"7d"``, ``"12h"``, days as an int; none: the whole experiment).
    goal
        ``"increase"`` (PostHog's default) or ``"decrease"``: which way is better.
    lower_bound_percentile, upper_bound_percentile
        Cap outliers at these percentiles (fractions: ``0.99`` is the 99th percentile).
    ignore_zeros
        Leave persons without the event out of the percentiles.
    uuid
        The metric's id (a fresh one when not given).
    breakdowns
        Up to three properties (``"$browser"``, ``("plan", "person")``), each unit's values read off its first
        exposure.
    breakdown_limit
        Keep the values with the most units and sum the rest into "Other".

    Examples
    --------
    >>> m = mean_metric("$pageview", where={"$browser": "Chrome"}, goal="increase")
    >>> m.source.event, m.source.properties[0].value, m.goal, m.source.math is None
    ('$pageview', 'Chrome', 'increase', True)
    >>> mean_metric("purchase", math="median", math_property="price")
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: math: 'median' is not one of 'avg', 'dau', 'hogql', 'max', 'min', 'sum', \
'total', 'unique_session'.
    >>> mean_metric("purchase", math_hogql="sum(toFloat(properties.price))").source.math
    'hogql'

    """
    if math in ("sum", "avg", "min", "max") and not math_property:
        raise InvalidArgument(
            f"math_property: math={math!r} needs the property to aggregate.", argument="math_property"
        )
    if action is not None:
        if event is not None:
            raise InvalidArgument("action: give an event or an action, not both.", argument="action")
        if math_hogql is not None and math is None:
            math = "hogql"
        if math is not None:
            check_choice("math", math, " ".join(sorted(EXPERIMENT_METRIC_MATH)))
        event = series(action=action, math=math, math_property=math_property, math_hogql=math_hogql, where=where,
                       person_where=person_where)  # fmt: skip
        math = math_property = math_hogql = where = person_where = None
    source = _node("event", event, math, math_property, where, person_where, math_hogql)
    for argument, value in (("lower_bound_percentile", lower_bound_percentile),
                            ("upper_bound_percentile", upper_bound_percentile)):  # fmt: skip
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1):
            raise InvalidArgument(
                f"{argument}: a fraction between 0 and 1 (0.99: the 99th percentile), got {value!r}.", argument=argument
            )
    with model_errors("mean_metric"):
        return ExperimentMeanMetric(
            source=source,
            lower_bound_percentile=lower_bound_percentile,
            upper_bound_percentile=upper_bound_percentile,
            ignore_zeros=ignore_zeros,
            **_common(name, window, goal, uuid, breakdowns, breakdown_limit),
        )


def funnel_metric(
    steps: Sequence[str | Node],
    *,
    order: Literal["ordered", "strict", "unordered"] | None = None,
    name: str | None = None,
    window: Window = None,
    goal: Goal | None = None,
    uuid: str | None = None,
    breakdowns: Breakdowns = None,
    breakdown_limit: int | None = None,
) -> ExperimentFunnelMetric:
    """A funnel metric: the share of exposed persons who then do every step.

    The steps are event names or :func:`hoglab.series`, done in ``order`` (PostHog's default ``ordered``) within
    ``window`` of the exposure.

    A single step is a conversion rate: ``funnel_metric(["purchase"])`` is the share of exposed persons who buy.

    >>> from hoglab.queries import series
    >>> m = funnel_metric(["signup", series("purchase", where={"plan": "pro"})], window="14d")
    >>> [s.event for s in m.series], m.conversion_window_unit, m.series[1].properties[0].key
    (['signup', 'purchase'], 'day', 'plan')
    """
    if isinstance(steps, str | EventsNode | ActionsNode) or not isinstance(steps, Sequence):
        raise InvalidArgumentType("steps: expected a list of event names or hoglab.series(...).", argument="steps")
    if not 1 <= len(steps) <= 20:
        raise InvalidArgument(f"steps: a funnel metric has 1 to 20 steps, got {len(steps)}.", argument="steps")
    nodes = [_node("steps", step) for step in steps]
    if order is not None:
        check_choice("order", order, "ordered strict unordered")
    with model_errors("funnel_metric"):
        return ExperimentFunnelMetric(series=nodes, funnel_order_type=order,
                                      **_common(name, window, goal, uuid, breakdowns, breakdown_limit))  # fmt: skip


def ratio_metric(
    numerator: str | Node,
    denominator: str | Node,
    *,
    name: str | None = None,
    window: Window = None,
    goal: Goal | None = None,
    uuid: str | None = None,
    breakdowns: Breakdowns = None,
    breakdown_limit: int | None = None,
) -> ExperimentRatioMetric:
    """A ratio metric: Σ numerator / Σ denominator over each variant's exposed persons.

    Revenue per order, clicks per pageview: each side is an event name (counted) or a :func:`hoglab.series` with
    its math.

    >>> m = ratio_metric("click", "$pageview", goal="increase")
    >>> m.metric_type, m.numerator.event, m.denominator.event
    ('ratio', 'click', '$pageview')
    """
    top = _node("numerator", numerator)
    bottom = _node("denominator", denominator)
    with model_errors("ratio_metric"):
        return ExperimentRatioMetric(numerator=top, denominator=bottom,
                                     **_common(name, window, goal, uuid, breakdowns, breakdown_limit))  # fmt: skip


def retention_metric(
    start: str | EventsNode | None,
    completion: str | EventsNode,
    *,
    window: tuple[int, int] = (1, 7),
    unit: Literal["second", "minute", "hour", "day", "week", "month"] = "day",
    start_handling: Literal["first_seen", "last_seen"] = "first_seen",
    conversion_window: Window = None,
    name: str | None = None,
    goal: Goal | None = None,
    uuid: str | None = None,
    breakdowns: Breakdowns = None,
    breakdown_limit: int | None = None,
) -> ExperimentRetentionMetric:
    """A retention metric: of the exposed units who did ``start``, the share who did ``completion`` later.

    PostHog's ``ExperimentRetentionMetric``: of the exposed units who did ``start`` after their exposure, the share
    who did ``completion`` between ``window[0]`` and ``window[1]`` ``unit``s later (both inclusive; ``day``/``hour``
    windows count calendar days or clock hours). ``start=None`` starts at each unit's
    first exposure. ``start_handling``: the first or the last start event counts; ``conversion_window``: how long
    after the exposure the start may come (``"3d"``; not with ``start=None``).

    >>> m = retention_metric(None, "login", window=(7, 14))
    >>> m.start_event.kind, m.completion_event.event, (m.retention_window_start, m.retention_window_end)
    ('ExperimentExposureNode', 'login', (7, 14))
    >>> retention_metric("signup", "login", window=(7, 1))
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: window: (start, end) with 0 <= start <= end, got (7, 1).
    """
    if (not isinstance(window, tuple | list) or len(window) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in window)
            or not 0 <= window[0] <= window[1]):  # fmt: skip
        raise InvalidArgument(f"window: (start, end) with 0 <= start <= end, got {window!r}.", argument="window")
    check_choice("unit", unit, _UNITS)
    check_choice("start_handling", start_handling, "first_seen last_seen")
    begin: EventsNode | ExperimentExposureNode = ExperimentExposureNode() if start is None else _events("start", start)
    end_node = _events("completion", completion)
    with model_errors("retention_metric"):
        return ExperimentRetentionMetric(
            start_event=begin, completion_event=end_node, retention_window_start=window[0],
            retention_window_end=window[1], retention_window_unit=unit, start_handling=start_handling,
            **_common(name, conversion_window, goal, uuid, breakdowns, breakdown_limit),
        )  # fmt: skip


def experiment_query(experiment_id: int, metric: AnyExperimentMetric | Mapping[str, Any]) -> ExperimentQuery:
    """The ``ExperimentQuery`` of one metric of a stored experiment, for :meth:`hoglab.Client.query` (a frame: a
    row per breakdown value and variant) or :meth:`~hoglab.Client.query_raw` (PostHog's answer).

    >>> experiment_query(7, mean_metric("purchase")).metric.source.event
    'purchase'
    """
    if isinstance(experiment_id, bool) or not isinstance(experiment_id, int) or experiment_id < 1:
        raise InvalidArgument(f"experiment_id: a positive integer, got {experiment_id!r}.", argument="experiment_id")
    with model_errors("metric"):
        return ExperimentQuery.model_validate({"experiment_id": experiment_id, "metric": metric})


def exposure_query(experiment_id: int, *,
                   exposure_criteria: Mapping[str, Any] | None = None) -> ExperimentExposureQuery:  # fmt: skip
    """The ``ExperimentExposureQuery`` of a stored experiment: exposed units per day and variant.

    >>> exposure_query(7).experiment_id
    7
    """
    if isinstance(experiment_id, bool) or not isinstance(experiment_id, int) or experiment_id < 1:
        raise InvalidArgument(f"experiment_id: a positive integer, got {experiment_id!r}.", argument="experiment_id")
    with model_errors("exposure_criteria"):
        criteria = None if exposure_criteria is None else ExperimentExposureCriteria.model_validate(exposure_criteria)
        return ExperimentExposureQuery(experiment_id=experiment_id, exposure_criteria=criteria)
