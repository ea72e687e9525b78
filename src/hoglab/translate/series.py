"""What a series of an insight or a metric counts, as HogQL conditions: an ``EventsNode`` (an event name, ``None``
for every event) or an ``ActionsNode`` (a stored action, by id, whose condition :mod:`.actions` writes), with its
own filters, the query's and the test-account filters.

An action the project does not have (another project's id too) matches no event; the runners whose PostHog
counterparts refuse it (funnels, lifecycle, retention, events) call :func:`require_action` first, the others drop
its series (trends, stickiness) or count zero (experiments).

>>> p = Params()
>>> series_conditions(None, {"event": "$pageview", "properties": []}, p, project=None)
['event = {p0}']
>>> actions = {4: ActionDefinition(4, "Paid", ({"event": "paid"},))}
>>> series_conditions(None, {"kind": "ActionsNode", "id": 4}, p, project=None, actions=actions)
['(event IN {p2} AND (event = {p1}))']
>>> series_label({"kind": "ActionsNode", "id": 4}, actions), series_events({"kind": "ActionsNode", "id": 5}, actions)
('Paid', [])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hoglab.schema import node_kind

from .actions import ActionDefinition, Actions, action_condition, action_events
from .errors import TranslationFailed
from .params import Params
from .properties import property_filters_to_hogql, test_account_filters

__all__ = [
    "get",
    "is_action",
    "require_action",
    "series_action",
    "series_conditions",
    "series_events",
    "series_label",
    "series_match",
]


def get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` for models, ``obj[name]`` for dicts; ``default`` when missing or None."""
    if obj is None:
        return default
    value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    return default if value is None else value


def is_action(series: Any) -> bool:
    """Whether the series is an ``ActionsNode``."""
    return series is not None and node_kind(series) == "ActionsNode"


def series_action(series: Any, actions: Actions | None, attr: str = "series") -> ActionDefinition | None:
    """The action an ``ActionsNode`` names; ``None`` when the project has no such action. A node without an id
    is a 400 (``hoglab.series(action="name")`` leaves the id to the client, which looks the name up)."""
    action_id = get(series, "id")
    if action_id is None:
        raise TranslationFailed(
            "An ActionsNode needs the id of the action (the toolkit's client fills it in from a name).",
            attr=f"{attr}.id",
        )
    return (actions or {}).get(int(action_id))


def require_action(series: Any, actions: Actions | None, attr: str = "series") -> ActionDefinition | None:
    """:func:`series_action`, a 400 when the project has no such action (PostHog's funnels and lifecycle say so;
    where PostHog fails with a server error, hoglab says the same). ``None`` for an ``EventsNode``."""
    if not is_action(series):
        return None
    action = series_action(series, actions, attr)
    if action is None:
        raise TranslationFailed(f"Action {get(series, 'id')} does not exist in this project.", attr=f"{attr}.id")
    return action


def series_label(series: Any, actions: Actions | None = None) -> str:
    """PostHog's label of a series: its event (``All events``), or its action's name."""
    if is_action(series):
        action = (actions or {}).get(int(get(series, "id", 0)))
        if action is not None and action.name:
            return action.name
        return str(get(series, "name") or f"Action {get(series, 'id')}")
    event = get(series, "event")
    return "All events" if event is None else str(event)


def series_match(
    series: Any, p: Params, *, actions: Actions | None = None, timezone: str = "UTC", attr: str = "series"
) -> str | None:
    """HogQL for what a series counts: ``event = {p}`` (``None``: every event), or its action's condition
    (``false`` for an action the project does not have)."""
    if is_action(series):
        action = series_action(series, actions, attr)
        if action is None:
            return "false"
        condition = action_condition(action, p, timezone=timezone, attr=f"{attr}.action")
        names = action_events(action)
        if names is None or condition == "true":
            return condition
        # The step events said once more, as one IN: the engine reads it against the sort key (team, day, event).
        return f"(event IN {p.add(names)} AND {condition})"
    name = get(series, "event")
    return None if name is None else f"event = {p.add(str(name))}"


def series_events(series: Any, actions: Actions | None = None) -> list[str] | None:
    """The event names a series can match, for a pre-filter on the events' sort key; ``None``: any event."""
    if is_action(series):
        action = (actions or {}).get(int(get(series, "id", 0)))
        return [] if action is None else action_events(action)
    name = get(series, "event")
    return None if name is None else [str(name)]


def series_conditions(
    query: Any,
    series: Any,
    p: Params,
    *,
    project: Any,
    attr: str = "series",
    event: bool = True,
    actions: Actions | None = None,
) -> list[str]:
    """HogQL conditions (AND-ed by the caller) for the events one series counts: its event or action (unless
    ``event`` is false), its own ``properties``/``fixedProperties``, the query's ``properties`` and the
    test-account filters. ``actions``: the project's (``RunContext.actions``), for an ``ActionsNode``."""
    parts: list[str] = []
    timezone = getattr(project, "timezone", None) or "UTC"
    if event and series is not None:
        match = series_match(series, p, actions=actions, timezone=timezone, attr=attr)
        if match is not None:
            parts.append(match)
    if query is not None and get(query, "filterTestAccounts"):
        extra = property_filters_to_hogql(
            test_account_filters(project), p, attr="filterTestAccounts", timezone=timezone
        )
        if extra:
            parts.append(extra)
    if query is not None:
        global_filter = property_filters_to_hogql(get(query, "properties"), p, attr="properties", timezone=timezone)
        if global_filter:
            parts.append(global_filter)
    for key in ("properties", "fixedProperties"):
        own = property_filters_to_hogql(get(series, key), p, attr=f"{attr}.{key}", timezone=timezone)
        if own:
            parts.append(own)
    return parts
