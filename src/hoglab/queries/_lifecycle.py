"""The lifecycle builder: per interval, the people who are new, returning, resurrecting or dormant.

>>> lifecycle("$pageview", interval="week", statuses=["new", "dormant"]).lifecycleFilter.toggledLifecycles
['new', 'dormant']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ..errors import InvalidArgumentType
from ..schema import LifecycleFilter, LifecycleQuery, LifecycleToggle
from ._args import check_choice, model_errors, where_filters
from ._groups import group_type_arg, named
from ._series import INTERVALS, ActionRef, Node, Where, date_range, series_list

__all__ = ["lifecycle"]


def lifecycle(
    event: str | Node | None = "$pageview",
    *,
    action: ActionRef | None = None,
    interval: str = "day",
    statuses: Sequence[str] | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
    aggregate_by: str | int | None = None,
) -> LifecycleQuery:
    """A LifecycleQuery: per interval, the people new, returning, resurrecting and dormant.

    New people do ``event`` for the first time, returning ones again after the previous interval, resurrecting ones
    again after a gap; dormant ones stopped.

    ``event`` is an event name, ``None`` (any event) or one :func:`hoglab.series`; ``action`` (an id or name)
    follows an action's events instead. ``statuses`` shows only some
    of ``new``, ``returning``, ``resurrecting``, ``dormant`` (PostHog's ``toggledLifecycles``).
    ``aggregate_by`` (a group type's name, ``"company"``, or its index) counts groups of that type instead of
    people (PostHog's ``aggregation_group_type_index``);
    a group is new in the interval of its first ``$groupidentify``.

    >>> q = lifecycle(where={"$browser": "Chrome"}, date_from="-30d")
    >>> q.series[0].event, q.interval, q.dateRange.date_from, q.properties[0].value
    ('$pageview', 'day', '-30d', 'Chrome')
    """
    if isinstance(event, Sequence) and not isinstance(event, str):
        raise InvalidArgumentType("event: a lifecycle has one event (a name, None or hoglab.series(...)).",
                                  argument="event")  # fmt: skip
    if action is not None and not isinstance(action, int | str):
        raise InvalidArgumentType("action: a lifecycle has one action (an id or a name).", argument="action")
    nodes = series_list("event", None if action is not None else event, None, None, action=action)
    index, type_name = group_type_arg("aggregate_by", aggregate_by) if aggregate_by is not None else (None, None)
    check_choice("interval", interval, INTERVALS)
    toggled = None
    if statuses is not None:
        toggled = [check_choice("statuses", s, LifecycleToggle) for s in ([statuses] if isinstance(statuses, str)
                   else statuses)]  # fmt: skip
    with model_errors("lifecycle"):
        query = LifecycleQuery(
            series=nodes,
            interval=interval,
            lifecycleFilter=LifecycleFilter(toggledLifecycles=toggled) if toggled else None,
            dateRange=date_range(date_from, date_to),
            properties=where_filters(where, person_where) or None,
            filterTestAccounts=filter_test_accounts,
            aggregation_group_type_index=index,
        )
    return named(query, "aggregation_group_type_index", type_name)
