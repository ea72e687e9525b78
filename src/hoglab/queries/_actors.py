"""The actors builder: persons as a table, or the persons behind one number of an insight (PostHog's
``ActorsQuery`` over an ``InsightActorsQuery`` or ``FunnelsActorsQuery``).

>>> actors(["person", "id"], search="@acme.com", limit=50).search
'@acme.com'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    ActorsQuery,
    FunnelsActorsQuery,
    FunnelsQuery,
    InsightActorsQuery,
    LifecycleQuery,
    PathsQuery,
    RetentionQuery,
    StickinessQuery,
    TrendsQuery,
)
from ._args import check_choice, model_errors, positive_int, property_filters
from ._series import Where

__all__ = ["InsightQuery", "actors"]

InsightQuery = TrendsQuery | FunnelsQuery | RetentionQuery | LifecycleQuery | StickinessQuery | PathsQuery
_INSIGHT_KINDS = (TrendsQuery, FunnelsQuery, RetentionQuery, LifecycleQuery, StickinessQuery, PathsQuery)


def actors(
    select: Sequence[str] | None = None,
    *,
    search: str | None = None,
    where: Where = None,
    order_by: str | Sequence[str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
    source: InsightQuery | None = None,
    day: str | int | date | None = None,
    series: int | None = None,
    breakdown: Any = None,
    step: int | None = None,
    status: str | None = None,
    cohort: int | None = None,
    period: int | None = None,
    interval: int | None = None,
    edge: tuple[str | None, str | None] | None = None,
    dropoff: str | None = None,
) -> ActorsQuery:
    """An ActorsQuery: persons as a table, or the persons behind one number of an insight.

    Without ``source``, every person the filters keep. With ``source``, the persons behind one number of it:

    * a trend's data point: ``day``, ``series``, ``breakdown``;
    * a funnel step: ``step`` (1-based, positive converted, negative dropped off);
    * a retention cell: ``cohort`` (0-based, as the frame's ``cohort``), ``period`` and ``breakdown`` (PostHog's
      ``interval`` and ``day``, which ``interval=``/``day=`` also set as they are);
    * a lifecycle bar: ``status`` and ``day`` (the interval's start date);
    * a stickiness bar: ``day``, the number of active intervals (and ``series``);
    * a paths edge: ``edge=("1_/home", "2_/pricing")`` (PostHog's step-prefixed node names; either may be
      ``None``: everyone leaving, or reaching, a node), or ``dropoff="3_/pricing"``: the people whose path ended
      there.

    Parameters
    ----------
    select
        The columns (default ``person, id, created_at``); a string is one column.
    search
        Text to find in a person's id, any of its distinct ids or its properties (``"@acme.com"``; hoglab
        matches it case-insensitively).
    where
        Filters on person properties, in the grammar of :func:`hoglab.trends`.
    order_by
        An ordering (``"created_at DESC"``) or a list of them.
    limit, offset
        A page of the persons.
    source
        The insight (:func:`hoglab.trends`, ``funnel``, ``retention``, ``lifecycle``, ``stickiness`` or
        ``paths``) whose number is asked about.
    day, series, breakdown
        A trend's data point, a lifecycle bar's date, a stickiness bar's count of active intervals; a breakdown
        value (of a trend, a funnel step or a retention cell).
    step
        A funnel step: 1-based, positive the persons who converted, negative those who dropped off.
    status
        A lifecycle bar: ``new``, ``returning``, ``resurrecting`` or ``dormant``.
    cohort, period
        A retention cell: the cohort (0-based) and the period after it.
    interval
        PostHog's name of a retention cell's cohort (``cohort`` wins when both are given).
    edge, dropoff
        A paths edge ``(source, target)``, or the node where the persons' paths ended.

    Examples
    --------
    >>> from hoglab.queries import funnel, lifecycle, paths, retention
    >>> actors(source=funnel(["a", "b"]), step=-2).source.funnelStep
    -2
    >>> actors(source=lifecycle("$pageview"), status="dormant", day="2025-06-03").source.status
    'dormant'
    >>> actors(source=paths(), edge=("1_/home", "2_/pricing")).source.source.pathsFilter.pathEndKey
    '2_/pricing'
    >>> cell = actors(source=retention("signup"), cohort=2, period=1).source
    >>> cell.interval, cell.day
    (2, 1)
    """
    if isinstance(select, str):
        select = [select]
    positive_int("limit", limit)
    positive_int("offset", offset, low=0)
    if status is not None:
        check_choice("status", status, "new returning resurrecting dormant")
    inner: InsightActorsQuery | FunnelsActorsQuery | None = None
    with model_errors("source"):
        if isinstance(source, FunnelsQuery) and step is not None:
            inner = FunnelsActorsQuery(source=source, funnelStep=step, funnelStepBreakdown=breakdown)
        elif isinstance(source, _INSIGHT_KINDS):
            if edge is not None or dropoff is not None:
                if not isinstance(source, PathsQuery):
                    name = "edge" if edge is not None else "dropoff"
                    raise InvalidArgument(f"{name}: only a paths source has edges.", argument=name)
                start, end = edge or (None, None)
                keys = source.pathsFilter.model_copy(
                    update={"pathStartKey": start, "pathEndKey": end, "pathDropoffKey": dropoff}
                )
                source = source.model_copy(update={"pathsFilter": keys})
            if cohort is not None or period is not None:
                if not isinstance(source, RetentionQuery):
                    name = "cohort" if cohort is not None else "period"
                    raise InvalidArgument(f"{name}: only a retention source has cohorts.", argument=name)
                interval = cohort if cohort is not None else interval
                day = period if period is not None else day
            day_value = day.isoformat() if isinstance(day, date) else day
            inner = InsightActorsQuery(
                source=source, day=day_value, series=series, breakdown=breakdown, status=status, interval=interval
            )
        elif source is not None:
            raise InvalidArgumentType(
                "source: expected an insight query (hoglab.trends/funnel/retention/lifecycle/stickiness/paths).",
                argument="source",
            )
        elif any(v is not None for v in (step, day, status, cohort, period, interval, edge, dropoff)):
            raise InvalidArgument(
                "source: a cell (day, step, status, cohort, edge...) needs a source.", argument="source"
            )
    filters = property_filters("where", where, scope="person")
    with model_errors("actors"):
        return ActorsQuery(
            select=list(select) if select else None,
            search=search,
            properties=filters or None,
            orderBy=[order_by] if isinstance(order_by, str) else (list(order_by) if order_by else None),
            limit=limit,
            offset=offset,
            source=inner,
        )
