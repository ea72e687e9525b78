"""Builders of experiment metrics (PostHog's ``ExperimentMetric``): mean, funnel and ratio.

Each returns the :mod:`hoglab.schema` model an experiment's ``metrics`` (or ``metrics_secondary``) holds, with a
fresh ``uuid`` so the experiment can order its metrics (``primary_metrics_ordered_uuids``) on hoglab and PostHog
alike. A mistake is an :class:`~hoglab.errors.InvalidArgument` naming the argument, before any request.

>>> from hoglab.queries import series
>>> m = mean_metric("purchase", math="sum", math_property="price", upper_bound_percentile=0.99, window="7d")
>>> m.metric_type, m.source.math, m.source.math_property, m.upper_bound_percentile, m.conversion_window
('mean', 'sum', 'price', 0.99, 7)
>>> funnel_metric(["signup", "purchase"], order="strict").series[1].event
'purchase'
>>> r = ratio_metric(series("purchase", math="sum", math_property="price"), "$pageview", name="revenue per view")
>>> r.numerator.math_property, r.denominator.event, r.name
('price', '$pageview', 'revenue per view')
>>> mean_metric(action="Checkout").source.kind, funnel_metric([series(action=7), "purchase"]).series[0].id
('ActionsNode', 7)
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    EXPERIMENT_METRIC_MATH,
    ActionsNode,
    EventsNode,
    ExperimentFunnelMetric,
    ExperimentMeanMetric,
    ExperimentRatioMetric,
)
from ._args import check_choice, model_errors, where_filters, window_arg
from ._series import ActionRef, Node, series

__all__ = ["funnel_metric", "mean_metric", "ratio_metric"]

Window = int | str | timedelta | None
Goal = Literal["increase", "decrease"]


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


def _common(name: str | None, window: Window, goal: Goal | None, uuid: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"uuid": uuid or str(uuid_module.uuid4()), "name": name}
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
) -> ExperimentMeanMetric:
    """A mean metric: a value per exposed person, averaged per variant, of ``event``'s events or of ``action``'s
    (an id or a name).

    ``math`` says which value: ``"total"`` (the count of ``event``, the default), ``"sum"``/``"avg"``/``"min"``/
    ``"max"`` of ``math_property``, ``"unique_session"`` (sessions with the event), ``"dau"``, or ``"hogql"`` with
    ``math_hogql`` (giving ``math_hogql`` alone implies it): a value per event summed per person
    (``"toFloat(properties.price) * 2"``), or one aggregate of one (``"avg(toFloat(properties.price))"``), whose
    function then aggregates per person, as PostHog reads it. ``where`` filters
    the events (a dict, a HogQL condition string or a list, as :func:`hoglab.trends`). ``window`` is the
    conversion window after exposure (``"7d"``, ``"12h"``, days as an int; none: the whole experiment). Outliers
    are capped at the ``lower_bound_percentile``/``upper_bound_percentile`` (fractions, ``0.99`` = the 99th
    percentile), ``ignore_zeros`` leaving persons without the event out of the percentile.

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
            **_common(name, window, goal, uuid),
        )


def funnel_metric(
    steps: Sequence[str | Node],
    *,
    order: Literal["ordered", "strict", "unordered"] | None = None,
    name: str | None = None,
    window: Window = None,
    goal: Goal | None = None,
    uuid: str | None = None,
) -> ExperimentFunnelMetric:
    """A funnel metric: the share of exposed persons who then do every step (event names or
    :func:`hoglab.series`), in ``order`` (PostHog's default ``ordered``), within ``window`` of their exposure.

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
        return ExperimentFunnelMetric(series=nodes, funnel_order_type=order, **_common(name, window, goal, uuid))


def ratio_metric(
    numerator: str | Node,
    denominator: str | Node,
    *,
    name: str | None = None,
    window: Window = None,
    goal: Goal | None = None,
    uuid: str | None = None,
) -> ExperimentRatioMetric:
    """A ratio metric: Σ numerator / Σ denominator over each variant's exposed persons (revenue per order,
    clicks per pageview), each an event name (counted) or a :func:`hoglab.series` with its math.

    >>> m = ratio_metric("click", "$pageview", goal="increase")
    >>> m.metric_type, m.numerator.event, m.denominator.event
    ('ratio', 'click', '$pageview')
    """
    top = _node("numerator", numerator)
    bottom = _node("denominator", denominator)
    with model_errors("ratio_metric"):
        return ExperimentRatioMetric(numerator=top, denominator=bottom, **_common(name, window, goal, uuid))
