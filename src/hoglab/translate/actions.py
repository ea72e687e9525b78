"""THE writer of actions: an action's steps as one HogQL condition, so an action selects the same events in every
insight, in experiments, in ``EventsQuery.actionId`` and in HogQL's ``matchesAction()``, on hoglab and (written by
the toolkit) on PostHog.

PostHog's semantics (``posthog/hogql/property.py`` ``action_to_expr``):

* the steps are OR-ed; an action without steps matches every event; inside a step every condition given is
  AND-ed, and a step with no condition matches every event;
* ``event`` (non-empty): the event's name;
* ``url`` (non-empty), on the ``$current_url`` property: ``exact`` is equality, ``regex`` is RE2 ``match``
  (unanchored), anything else (``contains``, ``null``) is a case-sensitive ``LIKE '%url%'`` in which ``%`` and
  ``_`` stay wildcards, as PostHog leaves them; an event without ``$current_url`` does not match;
* ``properties``: the one property-filter translator (:mod:`.properties`), AND-ed;
* element conditions apply only when ``event`` is ``$autocapture`` (PostHog ignores them for any other event), and
  read the event's ``elements_chain`` as PostHog's materialized columns do: ``tag_name`` is an element of that
  tag anywhere in the chain; ``href`` is the first ``href="..."`` of the chain; ``text`` any ``text="..."`` of it.
  ``text``/``href`` match ``exact`` (the default), ``contains`` (``ILIKE``, wildcards kept) or ``regex``. A CSS
  ``selector`` is refused: PostHog turns it into a regular expression over the chain by rules that changed from
  one version to the next, and a partial copy would select other events than PostHog without saying so.

Every value is a placeholder (:class:`.params.Params`). What the API runs before storing steps (each compiled
through the whole HogQL compiler, regular expressions checked by RE2) is the service's: ``server/filters/actions.py``
``check_steps``.

>>> p = Params()
>>> action = ActionDefinition(1, "Signed up", ({"event": "$pageview", "url": "/done", "url_matching": "contains"},
...                                           {"event": "signed_up", "properties": [{"key": "plan", "value": "pro"}]}))
>>> for part in action_condition(action, p).split(" OR "):
...     print(part)
((event = {p0} AND ifNull(properties.`$current_url` LIKE {p1}, 0))
(event = {p2} AND (ifNull(properties.plan = {p3}, 0))))
>>> p.values["p1"]
'%/done%'
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hoglab.schema import ACTION_STEP_KEYS

from .budget import spend_action_filters
from .errors import TranslationFailed
from .params import Params
from .properties import property_access, property_filters_to_hogql

__all__ = [
    "AUTOCAPTURE",
    "ActionDefinition",
    "Actions",
    "action_condition",
    "action_events",
    "action_size",
    "normalized_step",
    "step_condition",
]


@dataclass(frozen=True)
class ActionDefinition:
    """One action of the project, as the compiler and the query runners read it: its steps as stored (PostHog's
    ``ActionStepJSON`` dicts). ``bytecode_error`` says why hoglab cannot compile it (a copied ``$autocapture``
    step with a CSS ``selector``); a query that uses such an action is refused with it.

    >>> ActionDefinition(7, "Signed up", ({"event": "signed_up"},)).steps[0]["event"]
    'signed_up'
    """

    id: int
    name: str | None
    steps: tuple[Mapping[str, Any], ...]
    deleted: bool = False
    bytecode_error: str | None = None

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of everything that decides which events the action selects (and what it is called); taken
        once per definition (the query service reuses definitions while the project's actions are unchanged)."""
        text = json.dumps([self.id, self.name, list(self.steps), self.deleted, self.bytecode_error],
                          sort_keys=True, default=str)  # fmt: skip
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


Actions = Mapping[int, ActionDefinition]
"""A project's actions by id (the query service's ``RunContext.actions``; the toolkit reads them over the API)."""


AUTOCAPTURE = "$autocapture"
_HREF = r'(?::|")href="(.*?)"'
_TEXTS = r'(?::|")text="(.*?)"'
_SELECTOR_REFUSED = (
    "A CSS selector is not supported by hoglab: match the element with tag_name, text and href, or the event's "
    "properties."
)


def normalized_step(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step with exactly PostHog's ten keys (missing ones ``None``; ``url_matching`` ``contains`` when absent),
    unknown keys dropped, as PostHog's ``ActionStepJSON`` dataclass stores it.

    >>> normalized_step({"event": "x", "extra": 1})["url_matching"], len(normalized_step({}))
    ('contains', 10)
    """
    out = {key: step.get(key) for key in ACTION_STEP_KEYS}
    if "url_matching" not in step:
        out["url_matching"] = "contains"
    return out


def _re2_escape(text: str) -> str:
    # RE2 accepts a backslash before any punctuation; letters, digits and "_" stay as they are (RE2 would read
    # "\d" as a class), and so do bytes beyond ASCII, which carry no meaning in a pattern.
    return "".join("\\" + c if c.isascii() and not (c.isalnum() or c == "_") else c for c in text)


def _like_any(text: str) -> str:
    # PostHog's "contains" wraps the text in % as it is: % and _ inside it stay LIKE wildcards.
    return f"%{text}%"


def _text_test(value_sql: str, matching: Any, pattern: str, p: Params) -> str:
    if matching == "regex":
        return f"match({value_sql}, {p.add(pattern)})"
    if matching == "contains":
        return f"{value_sql} ILIKE {p.add(_like_any(pattern))}"
    return f"{value_sql} = {p.add(pattern)}"


def _element_conditions(step: Mapping[str, Any], p: Params, attr: str) -> list[str]:
    parts: list[str] = []
    if step.get("selector"):
        raise TranslationFailed(_SELECTOR_REFUSED, attr=f"{attr}.selector")
    tag = step.get("tag_name")
    if tag is not None:
        pattern = "(^|;)" + _re2_escape(str(tag)) + r"(\.|$|;|:)"
        parts.append(f"match(elements_chain, {p.add(pattern)})")
    href = step.get("href")
    if href is not None:
        first_href = f"arrayElement(extractAll(elements_chain, {p.add(_HREF)}), 1)"
        parts.append(f"ifNull({_text_test(first_href, step.get('href_matching'), str(href), p)}, 0)")
    text = step.get("text")
    if text is not None:
        test = _text_test("x", step.get("text_matching"), str(text), p)
        parts.append(f"arrayExists(x -> ifNull({test}, 0), extractAll(elements_chain, {p.add(_TEXTS)}))")
    return parts


def _url_condition(url: str, matching: Any, p: Params) -> str:
    prop = property_access("$current_url")
    if matching == "exact":
        return f"ifNull({prop} = {p.add(url)}, 0)"
    if matching == "regex":
        return f"ifNull(match({prop}, {p.add(url)}), 0)"
    return f"ifNull({prop} LIKE {p.add(_like_any(url))}, 0)"


def step_condition(step: Mapping[str, Any], p: Params, *, timezone: str = "UTC", attr: str = "steps.0") -> str:
    """One step as a HogQL condition (``true`` when it holds none)."""
    parts: list[str] = []
    event = step.get("event")
    if event:
        parts.append(f"event = {p.add(str(event))}")
    if event == AUTOCAPTURE:
        parts += _element_conditions(step, p, attr)
    url = step.get("url")
    if url:
        parts.append(_url_condition(str(url), step.get("url_matching"), p))
    properties = step.get("properties")
    if properties:
        own = property_filters_to_hogql(properties, p, attr=f"{attr}.properties", timezone=timezone)
        if own:
            parts.append(own)
    return "(" + " AND ".join(parts) + ")" if parts else "true"


def _refused(action: ActionDefinition, attr: str) -> None:
    if action.bytecode_error:
        raise TranslationFailed(
            f"Action {action.id} ({action.name or 'unnamed'}) can't be used: {action.bytecode_error}", attr=attr
        )


def action_condition(
    action: ActionDefinition, p: Params, *, timezone: str = "UTC", attr: str = "action", counted: bool = False
) -> str:
    """The action as one HogQL condition over ``events`` (``true`` when it has no steps, as PostHog's).

    A stored action whose steps hoglab cannot compile (copied by ``hoglab pull``) is a 400 naming it. Its steps
    and filters are spent from the query's allowance (``budget.py``) first, unless the caller already did
    (``counted``: ``matchesAction()`` counts every call of a statement before expanding any).
    """
    _refused(action, attr)
    if not action.steps:
        return "true"
    if not counted:
        spend_action_filters(action_size(action.steps))  # before the work: the query's allowance (budget.py)
    steps = [
        step_condition(step, p, timezone=timezone, attr=f"{attr}.steps.{i}") for i, step in enumerate(action.steps)
    ]
    return steps[0] if len(steps) == 1 else "(" + " OR ".join(steps) + ")"


def action_size(steps: Sequence[Mapping[str, Any]]) -> int:
    """An action's steps and their property filters, what expanding it costs (``budget.py``'s allowance, the
    actions API's caps).

    >>> action_size([{"event": "a", "properties": [{"key": "x", "value": 1}, {"key": "y", "value": 2}]}, {}])
    4
    """
    return sum(1 + (len(s["properties"]) if isinstance(s.get("properties"), list) else 0) for s in steps)


def action_events(action: ActionDefinition) -> list[str] | None:
    """The event names the action can match (for a pre-filter on the sort key), or ``None`` when a step takes
    any event (or there are no steps).

    >>> action_events(ActionDefinition(1, "a", ({"event": "b"}, {"event": "a"})))
    ['a', 'b']
    >>> action_events(ActionDefinition(2, "x", ())) is None
    True
    """
    names: set[str] = set()
    for step in action.steps or [{}]:
        event = step.get("event")
        if not event:
            return None
        names.add(str(event))
    return sorted(names)
