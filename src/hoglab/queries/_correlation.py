"""The funnel correlation builder: which events or properties go with converting through a funnel.

>>> q = funnel_correlation(["signup", "purchase"], kind="properties", names=["plan"])
>>> q.funnelCorrelationType, q.source.source.series[1].event, q.funnelCorrelationNames
('properties', 'purchase', ['plan'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import FunnelCorrelationQuery, FunnelsActorsQuery, FunnelsQuery
from ._args import check_choice, model_errors
from ._funnels import funnel

__all__ = ["funnel_correlation"]


def _names(argument: str, value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) and item for item in items):
        raise InvalidArgumentType(f"{argument}: expected names (non-empty strings).", argument=argument)
    return items


def funnel_correlation(
    steps: FunnelsQuery | Sequence[Any],
    *,
    kind: Literal["events", "properties", "event_with_properties"] = "events",
    names: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    events: str | Sequence[str] | None = None,
    step: int | None = None,
    **funnel_args: Any,
) -> FunnelCorrelationQuery:
    """A FunnelCorrelationQuery: what goes with converting through a funnel, and what with dropping off.

    Parameters
    ----------
    steps
        The funnel: a :func:`hoglab.funnel` query, or its steps (then ``funnel_args`` are :func:`hoglab.funnel`'s:
        ``window``, ``date_from``, ``where``, ``aggregate_by``...).
    kind
        ``events`` (the default: every other event done between entering and converting or leaving),
        ``properties`` (the person's or group's properties ``names``; ``"$all"`` for every one) or
        ``event_with_properties`` (the properties of the events ``events``).
    names
        ``properties``: the properties to correlate (required).
    exclude
        Names left out: events (``events``), properties (``properties``) or the events' properties
        (``event_with_properties``).
    events
        ``event_with_properties``: the events whose properties are correlated (required).
    step
        The actors: persons who reached this step (1-based; 1, the default, everyone who entered) or, negative,
        dropped off before it (PostHog's ``funnelStep``).

    Examples
    --------
    >>> q = funnel_correlation(["signup", "purchase"], window="7d", exclude=["$pageleave"])
    >>> q.source.source.funnelsFilter.funnelWindowInterval, q.funnelCorrelationExcludeEventNames
    (7, ['$pageleave'])
    """
    check_choice("kind", kind, "events properties event_with_properties")
    if isinstance(steps, FunnelsQuery):
        if funnel_args:
            raise InvalidArgument("funnel arguments go to hoglab.funnel(...) when steps is a funnel query.",
                                  argument=next(iter(funnel_args)))  # fmt: skip
        source = steps
    else:
        source = funnel(steps, **funnel_args)
    chosen = _names("names", names)
    if kind == "properties" and not chosen:
        raise InvalidArgument("names: a property correlation needs properties (or ['$all']).", argument="names")
    picked = _names("events", events)
    if kind == "event_with_properties" and not picked:
        raise InvalidArgument("events: an event property correlation needs events.", argument="events")
    left_out = _names("exclude", exclude)
    excluded = {"events": "funnelCorrelationExcludeEventNames", "properties": "funnelCorrelationExcludeNames",
                "event_with_properties": "funnelCorrelationEventExcludePropertyNames"}[kind]  # fmt: skip
    with model_errors("funnel_correlation"):
        return FunnelCorrelationQuery(
            source=FunnelsActorsQuery(source=source, funnelStep=step),
            funnelCorrelationType=kind,
            funnelCorrelationNames=chosen if kind == "properties" else None,
            funnelCorrelationEventNames=picked if kind == "event_with_properties" else None,
            **{excluded: left_out},
        )
