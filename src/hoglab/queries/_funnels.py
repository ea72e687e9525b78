"""The funnel builder: people moving through 1 to 20 steps, with a conversion window, order and exclusions.

>>> funnel(["$pageview", "signup", "purchase"], window="14d", order="strict").funnelsFilter.funnelOrderType
'strict'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Literal

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import ActionsNode, EventsNode, FunnelExclusion, FunnelsFilter, FunnelsQuery
from ._args import check_choice, model_errors, where_filters, window_arg
from ._groups import group_type_arg, named
from ._series import Node, Where, breakdown_filter, date_range, series_list

__all__ = ["funnel"]


def funnel(
    steps: Sequence[str | Node],
    *,
    window: int | str | timedelta | None = None,
    order: Literal["ordered", "strict", "unordered"] = "ordered",
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_attribution: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    exclude: Sequence[str | tuple[str, int, int]] | None = None,
    viz: Literal["steps", "time_to_convert", "trends"] = "steps",
    step_reference: Literal["total", "previous"] | None = None,
    filter_test_accounts: bool = False,
    aggregate_by: str | int | None = None,
) -> FunnelsQuery:
    """A FunnelsQuery: people moving through 1 to 20 steps within a conversion window.

    Parameters
    ----------
    steps
        1 to 20 event names or :func:`series` (``series(action="Signed up")`` makes a step of an action,
        labelled with its name). One step counts the people who did it, as PostHog's one-step funnel does.
    window
        How long a person has from the first step: days as an int, ``"14d"``, ``"6h"``, a ``timedelta``
        (PostHog's default is 14 days).
    order
        ``ordered`` (the default: the steps in order, other events between them allowed), ``strict`` (any other
        event of the person breaks the chain) or ``unordered`` (the steps in any order).
    breakdown, breakdown_type
        A property to split by, and its kind when its name does not say it (as in :func:`hoglab.trends`).
    breakdown_attribution
        Which breakdown value a person counts under: ``first_touch`` or ``last_touch`` (the person's first or
        last non-empty value), ``all_events`` (the funnel per value) or ``step`` (the value seen at a step).
    date_from, date_to
        The range, as in :func:`hoglab.trends`.
    where, person_where
        Filters on event properties and on person properties, as in :func:`hoglab.trends`.
    exclude
        Events that disqualify an attempt: a name (anywhere in the funnel) or ``(event, from_step, to_step)``
        with 0-based steps.
    viz
        ``steps`` (the default), ``time_to_convert`` or ``trends``: PostHog's funnel visualisation.
    step_reference
        Show rates against the first step (``total``) or the ``previous`` one; the counts are the same.
    filter_test_accounts
        Leave out the project's test accounts.
    aggregate_by
        A group type's name (``"company"``) or index: count groups of that type instead of people (PostHog's
        ``aggregation_group_type_index``); a group converts when its events, whoever sent them, go through the
        steps.

    Examples
    --------
    >>> q = funnel(["$pageview", "signup"], window="6h", exclude=["logout"], breakdown="person.plan")
    >>> settings = q.funnelsFilter
    >>> settings.funnelWindowIntervalUnit, settings.exclusions[0].funnelToStep, q.breakdownFilter.breakdown_type
    ('hour', 1, 'person')
    >>> len(funnel(["purchase"]).series)
    1
    """
    if isinstance(steps, str | EventsNode | ActionsNode) or not isinstance(steps, Sequence):
        raise InvalidArgumentType(
            "steps: expected a list of 1 to 20 event names or hoglab.series(...).", argument="steps"
        )
    nodes = series_list("steps", list(steps), None, None)
    if not 1 <= len(nodes) <= 20:
        raise InvalidArgument(f"steps: a funnel has 1 to 20 steps, got {len(nodes)}.", argument="steps")
    check_choice("order", order, "ordered strict unordered")
    check_choice("viz", viz, "steps time_to_convert trends")
    if step_reference is not None:
        check_choice("step_reference", step_reference, "total previous")
    if breakdown_attribution is not None:
        check_choice("breakdown_attribution", breakdown_attribution, "first_touch last_touch all_events step")
    size, unit = window_arg(window) if window is not None else (None, None)
    exclusions = []
    for item in exclude or []:
        event, start, end = (item, 0, len(nodes) - 1) if isinstance(item, str) else item
        if not 0 <= start < end < len(nodes):
            raise InvalidArgument(
                f"exclude: steps ({start}, {end}) must satisfy 0 <= from < to < {len(nodes)} (0-based steps).",
                argument="exclude",
            )
        with model_errors("exclude"):
            exclusions.append(FunnelExclusion(event=event, funnelFromStep=start, funnelToStep=end))
    filters = where_filters(where, person_where)
    index, type_name = group_type_arg("aggregate_by", aggregate_by) if aggregate_by is not None else (None, None)
    with model_errors("funnel"):
        settings = FunnelsFilter(funnelOrderType=order, funnelVizType=viz, exclusions=exclusions or None)
        if size is not None:
            settings.funnelWindowInterval, settings.funnelWindowIntervalUnit = size, unit  # type: ignore[assignment]
        if step_reference is not None:
            settings.funnelStepReference = step_reference
        if breakdown_attribution is not None:
            settings.breakdownAttributionType = breakdown_attribution  # type: ignore[assignment]
        query = FunnelsQuery(
            series=nodes,
            dateRange=date_range(date_from, date_to),
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, None),
            funnelsFilter=settings,
            properties=filters or None,
            filterTestAccounts=filter_test_accounts,
            aggregation_group_type_index=index,
        )
    return named(query, "aggregation_group_type_index", type_name)
