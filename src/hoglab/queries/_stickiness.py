"""The stickiness builder: how many people were active in 1, 2, ... intervals of the range.

>>> stickiness(["$pageview", "signup"], cumulative=True).stickinessFilter.computedAs
'cumulative'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument
from ..schema import StickinessCriteria, StickinessFilter, StickinessQuery
from ._args import check_choice, model_errors, positive_int, where_filters
from ._series import INTERVALS, ActionRef, Node, Where, compare_filter, date_range, series_list

__all__ = ["stickiness"]

_STICKINESS_OPERATORS = {">=": "gte", "<=": "lte", "==": "exact", "=": "exact", "gte": "gte", "lte": "lte",
                         "exact": "exact"}  # fmt: skip


def _criteria(value: Any) -> StickinessCriteria | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = ("gte", value)
    if not isinstance(value, tuple | list) or len(value) != 2 or value[0] not in _STICKINESS_OPERATORS:
        raise InvalidArgument(
            f"active_when: expected (operator, events) with operator '>=', '<=' or '==', got {value!r}.",
            argument="active_when",
        )
    positive_int("active_when", value[1], low=0)
    with model_errors("active_when"):
        return StickinessCriteria(operator=_STICKINESS_OPERATORS[value[0]], value=value[1])


def stickiness(
    events: str | Node | Sequence[str | Node | None] | None = "$pageview",
    *,
    action: ActionRef | Sequence[ActionRef] | None = None,
    interval: str = "day",
    interval_count: int | None = None,
    cumulative: bool = False,
    active_when: int | tuple[str, int] | None = None,
    compare: bool = False,
    compare_to: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
    aggregate_by: str | int | None = None,
) -> StickinessQuery:
    """A StickinessQuery: per series, how many people were active in exactly 1, 2, ... intervals of the range.

    Parameters
    ----------
    events
        An event name, ``None`` (any event), a :func:`hoglab.series` or a list of them.
    action
        Actions (ids or names) to count instead, or besides when ``events`` is given as well.
    interval
        ``hour``, ``day`` (the default), ``week`` or ``month``.
    interval_count
        Groups intervals (``interval="day", interval_count=7``: weeks of seven days).
    cumulative
        Count the people active in that many intervals or more.
    active_when
        What makes an interval count: ``3`` or ``(">=", 3)`` events at least, ``("<=", 2)``, ``("==", 1)``.
    compare, compare_to
        Adds the previous period (or ``compare_to``, ``"-4w"``) as more lines.
    date_from, date_to
        The range, as in :func:`hoglab.trends`.
    where, person_where
        Filters on event properties and on person properties, as in :func:`hoglab.trends`.
    filter_test_accounts
        Leave out the project's test accounts.
    aggregate_by
        A group type's name or index: count groups instead of people. The series named here get PostHog's
        ``unique_group`` math (StickinessQuery itself has no group aggregation).

    Examples
    --------
    >>> q = stickiness("$pageview", interval="week", active_when=(">=", 3), compare=True)
    >>> q.stickinessFilter.stickinessCriteria.operator, q.stickinessFilter.stickinessCriteria.value, q.interval
    ('gte', 3, 'week')
    """
    nodes = series_list("events", events if action is None or events != "$pageview" else None, None, None,
                        aggregate_by, action)  # fmt: skip
    check_choice("interval", interval, INTERVALS)
    positive_int("interval_count", interval_count)
    criteria = _criteria(active_when)
    with model_errors("stickiness"):
        settings = None
        if cumulative or criteria is not None:
            settings = StickinessFilter(computedAs="cumulative" if cumulative else None, stickinessCriteria=criteria)
        return StickinessQuery(
            series=nodes,
            interval=interval,
            intervalCount=interval_count,
            stickinessFilter=settings,
            compareFilter=compare_filter(compare, compare_to),
            dateRange=date_range(date_from, date_to),
            properties=where_filters(where, person_where) or None,
            filterTestAccounts=filter_test_accounts,
        )
