"""The paths builder: the most common sequences of pages, screens or events within a session.

>>> paths(start="/home", steps=4).pathsFilter.startPoint
'/home'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import PathCleaningFilter, PathsFilter, PathsQuery, PathType
from ._args import check_choice, model_errors, positive_int, where_filters
from ._series import Where, date_range

__all__ = ["paths"]


def _cleaning(value: Any) -> list[PathCleaningFilter] | None:
    if value is None:
        return None
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    rules = []
    for order, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise InvalidArgumentType(
                f"clean: expected {{regex: alias}} or (regex, alias) pairs, got {pair!r}.", argument="clean"
            )
        with model_errors("clean"):
            rules.append(PathCleaningFilter(regex=pair[0], alias=pair[1], order=order))
    return rules or None


def paths(
    include: str | Sequence[str] | None = "$pageview",
    *,
    start: str | None = None,
    end: str | None = None,
    steps: int = 5,
    edge_limit: int = 50,
    min_weight: int | None = None,
    max_weight: int | None = None,
    exclude: Sequence[str] | None = None,
    clean: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    groupings: Sequence[str] | None = None,
    expression: str | None = None,
    date_from: str | date | None = None,
    date_to: str | date | None = None,
    where: Where = None,
    person_where: Where = None,
    filter_test_accounts: bool = False,
) -> PathsQuery:
    """A PathsQuery: the most common sequences of pages, screens or events within a session.

    The answer is weighted edges between numbered steps.

    Parameters
    ----------
    include
        ``"$pageview"`` (pages by URL, the default), ``"$screen"`` (screens by name), ``"custom_event"``
        (events not starting with ``$``), ``"hogql"`` (``expression`` names each item), a list of them, or
        ``None`` for every event.
    start, end
        Anchor the paths at an item.
    steps
        How many items a path keeps (default 5).
    edge_limit
        How many edges come back, heaviest first (default 50).
    min_weight, max_weight
        Bounds on an edge's people.
    exclude
        Items to drop.
    clean
        Rewrites items by regex, in order: ``{r"/user/\\d+": "/user/:id"}`` or ``(regex, alias)`` pairs.
    groupings
        Merges the items matching a wildcard (``"/blog/*"``).
    expression
        A HogQL expression naming each item (``"hogql"`` is then added to an ``include`` given).
    date_from, date_to
        The range, as in :func:`hoglab.trends`.
    where, person_where
        Filters on event properties and on person properties, as in :func:`hoglab.trends`.
    filter_test_accounts
        Leave out the project's test accounts.

    Examples
    --------
    >>> q = paths(["$pageview", "custom_event"], end="/checkout", clean={r"/item/\\d+": "/item/:id"}, exclude=["/"])
    >>> q.pathsFilter.endPoint, q.pathsFilter.localPathCleaningFilters[0].alias, q.pathsFilter.includeEventTypes
    ('/checkout', '/item/:id', ['$pageview', 'custom_event'])
    """
    types = None
    if include is not None:
        types = [include] if isinstance(include, str) else list(include)
        for item in types:
            check_choice("include", item, PathType)
    if expression is not None and types is not None and "hogql" not in types:
        types.append("hogql")
    if types is not None and "hogql" in types and not expression:
        raise InvalidArgument("expression: include 'hogql' needs a HogQL expression naming each item.",
                              argument="expression")  # fmt: skip
    positive_int("steps", steps, low=2)
    positive_int("edge_limit", edge_limit)
    positive_int("min_weight", min_weight, low=0)
    positive_int("max_weight", max_weight, low=0)
    if min_weight is not None and max_weight is not None and min_weight > max_weight:
        raise InvalidArgument(f"min_weight: {min_weight} is above max_weight {max_weight}.", argument="min_weight")
    for argument, values in (("exclude", exclude), ("groupings", groupings)):
        if values is not None and (isinstance(values, str) or not all(isinstance(v, str) for v in values)):
            raise InvalidArgumentType(f"{argument}: expected a list of strings.", argument=argument)
    with model_errors("paths"):
        settings = PathsFilter(
            includeEventTypes=types,
            startPoint=start,
            endPoint=end,
            stepLimit=steps,
            edgeLimit=edge_limit,
            minEdgeWeight=min_weight,
            maxEdgeWeight=max_weight,
            excludeEvents=list(exclude) if exclude is not None else None,
            pathGroupings=list(groupings) if groupings is not None else None,
            localPathCleaningFilters=_cleaning(clean),
            pathsHogQLExpression=expression,
        )
        return PathsQuery(
            pathsFilter=settings,
            dateRange=date_range(date_from, date_to),
            properties=where_filters(where, person_where) or None,
            filterTestAccounts=filter_test_accounts,
        )
