"""The events builder: raw events as a table of HogQL expressions (PostHog's ``EventsQuery``).

>>> events(["event", "timestamp"], event="$pageview", limit=10).select
['event', 'timestamp']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from ..errors import InvalidArgumentType
from ..schema import EventsQuery
from ._args import date_arg, model_errors, positive_int, where_filters
from ._series import Where

__all__ = ["DEFAULT_EVENT_COLUMNS", "events"]

DEFAULT_EVENT_COLUMNS = ("event", "timestamp", "distinct_id", "properties")


def _split_where(where: Where) -> tuple[list[str], list[Any]]:
    # For tables, strings are HogQL conditions (EventsQuery ``where``); everything else is a property filter.
    if where is None:
        return [], []
    items = [where] if isinstance(where, str | dict) else list(where)
    return [w for w in items if isinstance(w, str)], [w for w in items if not isinstance(w, str)]


def events(
    select: Sequence[str] | None = None,
    *,
    event: str | None = None,
    action: int | None = None,
    where: Where = None,
    person_where: Where = None,
    after: str | date | None = None,
    before: str | date | None = None,
    order_by: str | Sequence[str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
    person_id: str | None = None,
    filter_test_accounts: bool | None = None,
) -> EventsQuery:
    """An EventsQuery: raw events as a table of HogQL expressions.

    The default columns are ``event, timestamp, distinct_id, properties``. ``where`` strings are HogQL
    conditions; dicts are property filters. ``action``: only the events of that action (its id:
    ``client.actions.get("Signed up").id``; PostHog's ``actionId``). PostHog's default window is the last 24 hours
    (``after="-24h"``; ``after="all"`` lifts it).

    >>> q = events(["event", "properties.$browser"], event="$pageview", where=["timestamp > now() - interval 1 day",
    ...            {"$browser": "Chrome"}], order_by="timestamp DESC", limit=500)
    >>> q.where, q.properties[0].key, q.orderBy
    (['timestamp > now() - interval 1 day'], '$browser', ['timestamp DESC'])
    """
    if isinstance(select, str):
        select = [select]
    if action is not None and (isinstance(action, bool) or not isinstance(action, int)):
        raise InvalidArgumentType(
            f"action: an EventsQuery names an action by id (an int), got {action!r}; client.actions.get(name).id "
            "gives it.",
            argument="action",
        )
    positive_int("limit", limit)
    positive_int("offset", offset, low=0)
    conditions, props = _split_where(where)
    filters = where_filters(props, person_where)
    with model_errors("events"):
        return EventsQuery(
            select=list(select or DEFAULT_EVENT_COLUMNS),
            event=event,
            actionId=action,
            where=conditions or None,
            properties=filters or None,
            after=date_arg("after", after),
            before=date_arg("before", before),
            orderBy=[order_by] if isinstance(order_by, str) else (list(order_by) if order_by else None),
            limit=limit,
            offset=offset,
            personId=person_id,
            filterTestAccounts=filter_test_accounts,
        )
