"""The retention builder: of the people who did an event in a period, how many came back in the periods after.

>>> q = retention("signup", returning="$pageview", period="week", intervals=6)
>>> q.retentionFilter.period, q.retentionFilter.totalIntervals, q.retentionFilter.returningEntity.id
('Week', 6, '$pageview')
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgumentType
from ..schema import ActionsNode, EventsNode, RetentionEntity, RetentionFilter, RetentionQuery
from ._args import check_choice, model_errors, positive_int, where_filters
from ._groups import group_type_arg, named
from ._series import INTERVALS, ActionRef, Node, Where, action_fields, breakdown_filter, date_range

__all__ = ["retention"]

_RETENTION_TYPES = {
    "first_time": "retention_first_time",
    "recurring": "retention_recurring",
    "first_ever": "retention_first_ever_occurrence",
}


def _entity(argument: str, value: Any) -> RetentionEntity:
    # An event name, None (any event), a hoglab.series(...) (its filters come along) or a RetentionEntity.
    if isinstance(value, RetentionEntity):
        return value
    with model_errors(argument):
        if isinstance(value, ActionsNode):
            return RetentionEntity(
                id=value.id, name=value.name, custom_name=value.custom_name, type="actions", kind="ActionsNode",
                properties=value.properties,
            )  # fmt: skip
        if value is None or isinstance(value, str):
            return RetentionEntity(id=value, name=value or "All events", type="events", kind="EventsNode")
        if isinstance(value, EventsNode):
            return RetentionEntity(
                id=value.event,
                name=value.name or value.event or "All events",
                custom_name=value.custom_name,
                type="events",
                kind="EventsNode",
                properties=value.properties,
            )
    raise InvalidArgumentType(
        f"{argument}: expected an event name, None (any event) or hoglab.series(...), got {type(value).__name__}.",
        argument=argument,
    )


def retention(
    target: str | Node | RetentionEntity | None = "$pageview",
    *,
    returning: str | Node | RetentionEntity | None = None,
    action: ActionRef | None = None,
    period: str = "day",
    intervals: int = 8,
    retention_type: str = "first_time",
    reference: str = "total",
    cumulative: bool = False,
    minimum_occurrences: int | None = None,
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_limit: int | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
    aggregate_by: str | int | None = None,
) -> RetentionQuery:
    """A RetentionQuery: of the people who did ``target`` in a period, how many came back in each later one.

    Each cohort is followed over the ``intervals - 1`` periods after its own.

    Parameters
    ----------
    target
        An event name, ``None`` (any event) or :func:`hoglab.series` (with filters, or of an action:
        ``series(action="Signed up")``).
    returning
        What counts as coming back, in the same forms; defaults to ``target``.
    action
        An action's id or name, the target instead of ``target``.
    period
        ``hour``, ``day`` (the default), ``week`` or ``month``.
    intervals
        How many periods to show, the cohort's own included (default 8).
    retention_type
        ``first_time`` (a person's cohort is the period of their first ``target``), ``recurring`` (every period
        with a ``target`` starts a cohort for that person) or ``first_ever``.
    reference
        ``total`` (rates against the cohort) or ``previous`` (against the period before).
    cumulative
        A person counts in a period if they came back in it or any later one.
    minimum_occurrences
        How many ``returning`` events make a period count.
    breakdown, breakdown_type, breakdown_limit
        A property to split the cohorts by, as in :func:`hoglab.trends`.
    date_from, date_to
        The range, as in :func:`hoglab.trends`.
    where, person_where
        Filters on event properties and on person properties, as in :func:`hoglab.trends`.
    filter_test_accounts
        Leave out the project's test accounts.
    aggregate_by
        A group type's name (``"company"``) or index: count groups of that type instead of people (PostHog's
        ``aggregation_group_type_index``).

    Examples
    --------
    >>> q = retention("signup", period="Week", reference="previous", breakdown="person.plan")
    >>> q.retentionFilter.returningEntity.id, q.retentionFilter.retentionReference, q.breakdownFilter.breakdown
    ('signup', 'previous', 'plan')
    >>> retention(period="fortnight")
    Traceback (most recent call last):
    hoglab.errors.InvalidArgument: period: 'fortnight' is not one of 'hour', 'day', 'week', 'month'.
    """
    unit = period.lower() if isinstance(period, str) else period
    check_choice("period", unit, INTERVALS)
    check_choice("retention_type", retention_type, " ".join(_RETENTION_TYPES))
    check_choice("reference", reference, "total previous")
    positive_int("intervals", intervals)
    positive_int("minimum_occurrences", minimum_occurrences)
    index, type_name = group_type_arg("aggregate_by", aggregate_by) if aggregate_by is not None else (None, None)
    if action is not None:
        start = _entity("action", ActionsNode(**action_fields("action", action)))
    else:
        start = _entity("target", target)
    back = start if returning is None else _entity("returning", returning)
    with model_errors("retention"):
        settings = RetentionFilter(
            retentionType=_RETENTION_TYPES[retention_type],
            period=unit.title(),
            totalIntervals=intervals,
            targetEntity=start,
            returningEntity=back,
            retentionReference=reference,
            cumulative=cumulative or None,
            minimumOccurrences=minimum_occurrences,
        )
        query = RetentionQuery(
            retentionFilter=settings,
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, breakdown_limit),
            dateRange=date_range(date_from, date_to),
            properties=where_filters(where, person_where) or None,
            filterTestAccounts=filter_test_accounts,
            aggregation_group_type_index=index,
        )
    return named(query, "aggregation_group_type_index", type_name)
