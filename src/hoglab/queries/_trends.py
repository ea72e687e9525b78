"""The trends builder: events counted per interval, one line per series (and breakdown value).

>>> q = trends("$pageview", math="dau", interval="week", breakdown="$browser")
>>> q.series[0].math, q.interval, q.breakdownFilter.breakdown
('dau', 'week', '$browser')
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ..schema import ChartDisplayType, FormulaNode, IntervalType, TrendsFilter, TrendsQuery
from ._args import check_choice, model_errors, where_filters
from ._series import ActionRef, Node, Where, breakdown_filter, compare_filter, date_range, series_list

__all__ = ["trends"]


def trends(
    events: str | Node | Sequence[str | Node | None] | None = None,
    *,
    action: ActionRef | Sequence[ActionRef] | None = None,
    math: str | None = None,
    math_property: str | None = None,
    interval: str = "day",
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    breakdown: str | int | Sequence[str] | None = None,
    breakdown_type: str | None = None,
    breakdown_limit: int | None = None,
    where: Where = None,
    person_where: Where = None,
    formula: str | Sequence[str] | None = None,
    compare: bool = False,
    compare_to: str | None = None,
    display: str | None = None,
    filter_test_accounts: bool = False,
    aggregate_by: str | int | None = None,
) -> TrendsQuery:
    """A TrendsQuery: events counted per interval, one line per series (and breakdown value).

    Series of actions are labelled with the actions' names.

    Parameters
    ----------
    events
        An event name (``None``: all events), a :func:`series`, or a list of them.
    action
        Actions to count, by id or name, or a list of them: after ``events``, or alone (then only the actions
        are counted).
    math, math_property
        How the series given by name or id count (``"dau"``, ``"sum"`` of ``math_property``, ...); a
        :func:`series` carries its own.
    interval
        ``minute``, ``hour``, ``day`` (the default), ``week`` or ``month``.
    date_from, date_to
        The range: a relative date (``"-7d"``, ``"-1mStart"``, ``"all"``), an ISO date or datetime, or a
        ``date``; unset, the service's default.
    breakdown
        A property (``"person.plan"`` for a person property, an int for a cohort, ``"group.company.plan"`` for a
        property of the event's company) or a list of up to three.
    breakdown_type
        The breakdown's kind, when its name does not say it: ``event``, ``person``, ``group``, ``cohort``,
        ``hogql``, ``event_metadata`` or ``session``.
    breakdown_limit
        How many breakdown values to keep (needs a ``breakdown``).
    where, person_where
        Filters on event properties and on person properties: a dict (``{"$browser": "Chrome"}``,
        ``{"price__gt": 10}``), a HogQL condition string, or a list (docs/client.md has the grammar).
    formula
        Combines series by letter (``"A/B"``); a list of formulas draws several lines.
    compare, compare_to
        Adds the previous period as more lines; ``compare_to`` (``"-4w"``) picks the period, and alone asks to
        compare.
    display
        PostHog's chart type, one of :data:`hoglab.schema.ChartDisplayType` (``"ActionsLineGraph"`` when only a
        ``formula`` is given).
    filter_test_accounts
        Leave out the project's test accounts.
    aggregate_by
        A group type's name or index: the series given by name or id count that type's groups (PostHog's
        ``unique_group`` math).

    Examples
    --------
    >>> from hoglab.queries import series
    >>> q = trends(["signup", series("purchase", math="sum", math_property="price")], formula="B/A", compare=True)
    >>> [s.event for s in q.series], q.trendsFilter.formulaNodes[0].formula, q.compareFilter.compare
    (['signup', 'purchase'], 'B/A', True)
    >>> [(s.kind, s.id) for s in trends(action=[7, 8], math="dau").series]
    [('ActionsNode', 7), ('ActionsNode', 8)]
    """
    nodes = series_list("events", events, math, math_property, aggregate_by, action)
    check_choice("interval", interval, IntervalType)
    if display is not None:
        check_choice("display", display, ChartDisplayType)
    formulas = [formula] if isinstance(formula, str) else list(formula or [])
    trends_filter = None
    if display or formulas:
        with model_errors("formula"):
            trends_filter = TrendsFilter(
                display=display or "ActionsLineGraph",
                formulaNodes=[FormulaNode(formula=f) for f in formulas] or None,
            )
    filters = where_filters(where, person_where)
    with model_errors("trends"):
        return TrendsQuery(
            series=nodes,
            interval=interval,
            dateRange=date_range(date_from, date_to),
            breakdownFilter=breakdown_filter(breakdown, breakdown_type, breakdown_limit),
            compareFilter=compare_filter(compare, compare_to),
            trendsFilter=trends_filter,
            properties=filters or None,
            filterTestAccounts=filter_test_accounts,
        )
