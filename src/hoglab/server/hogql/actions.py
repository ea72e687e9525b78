"""``matchesAction(id or name)``: a stored action's condition, inside a user's HogQL.

PostHog's HogQL function (``posthog/hogql/functions/action.py``) takes one constant, an action's integer id or
its name, and stands for the action's condition over the events row it is evaluated on. The compiler expands
each call before its allow-lists run, so the action's condition is checked, resolved and team-guarded like the
rest of the statement. The action comes from the catalog (:meth:`.catalog.Catalog.actions`: the caller's
project only, so another project's id is "not found" and its events are never read); its condition is written
by ``hoglab.translate.actions``, the one writer of actions the insight runners use too, and bound by
``filters/actions.py`` ``action_to_expr``, which the catalog is handed (:meth:`.catalog.Catalog.action_condition`;
this package never imports ``filters/``, which imports it).

The condition names ``event``, ``properties.$current_url``, ``properties.<key>`` and ``elements_chain`` without a
table, so it reads the ``events`` row of the ``FROM`` it is used in (``FROM events AS e`` works; in a join,
qualify nothing else by those names).

>>> from hoglab.translate.actions import ActionDefinition
>>> from .catalog import WithActions, NO_MATERIALIZED
>>> from hoglab.translate.parse import parse_hogql
>>> from sqlglot import exp
>>> condition = lambda action, *, timezone: exp.paren(exp.condition(f"event = '{action.steps[0]['event']}'"))
>>> catalog = WithActions(NO_MATERIALIZED, [ActionDefinition(3, "Paid", ({"event": "paid"},))], condition)
>>> expand_matches_action(parse_hogql("select count() from events where matchesAction('Paid')"), catalog).sql()
"SELECT COUNT() FROM events WHERE (event = 'paid')"
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from hoglab.translate.actions import ActionDefinition, action_size
from hoglab.translate.budget import CompileBudgetExceeded, spend_action_filters
from hoglab.translate.errors import HogQLError, node_span

from .catalog import Catalog

__all__ = ["FUNCTION", "expand_matches_action", "find_action"]

FUNCTION = "matchesaction"
"""The function's name, as the compiler compares names (case-insensitively)."""


def _error(message: str, node: exp.Expr) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def _reference(call: exp.Anonymous) -> int | str:
    arguments = list(call.expressions)
    if len(arguments) != 1:
        raise _error("matchesAction() takes one argument: an action's id (an integer) or its name (a string)", call)
    argument = arguments[0]
    negative = isinstance(argument, exp.Neg)
    literal = argument.this if negative else argument
    if not isinstance(literal, exp.Literal):
        raise _error("matchesAction() takes only a constant: an action's id (an integer) or its name (a string)", call)
    if literal.is_string and not negative:
        return str(literal.this)
    text = str(literal.this)
    if not text.isascii() or not text.isdigit():
        raise _error("matchesAction() takes an action's id (an integer) or its name (a string)", call)
    return -int(text) if negative else int(text)


def expand_matches_action(tree: exp.Expr, catalog: Catalog, *, timezone: str = "UTC") -> exp.Expr:
    """``tree`` with every ``matchesAction(...)`` replaced by its action's condition; a ``HogQLError`` at the call
    for a wrong argument, an unknown action, or an action that can't be used."""
    # A quoted name (`matchesAction`) is left for the allow-list, which refuses quoted function names.
    calls = [
        node for node in tree.find_all(exp.Anonymous)
        if node.name.lower() == FUNCTION and not (isinstance(node.this, exp.Identifier) and node.this.quoted)
    ]  # fmt: skip
    if not calls:
        return tree
    actions = catalog.actions()
    found = []
    for call in calls:
        reference = _reference(call)
        try:
            found.append((call, find_action(actions, reference)))
        except HogQLError as exc:
            raise _error(exc.message, call) from None
    # Every call's steps and filters against the query's allowance before any is expanded (translate/budget.py).
    spend_action_filters(sum(action_size(action.steps) for _, action in found if not action.bytecode_error))
    for call, action in found:
        try:
            condition = catalog.action_condition(action, timezone)
        except CompileBudgetExceeded:
            raise  # the query's allowance for actions, not this call's mistake: a 400 naming the bound
        except HogQLError as exc:
            raise _error(exc.message, call) from None
        if call is tree:
            return condition
        call.replace(condition)
    return tree


def find_action(actions: Mapping[int, ActionDefinition], ref: int | str) -> ActionDefinition:
    """The action an id or a name names, for ``matchesAction``: by id (deleted ones too, as PostHog), or by the
    name of exactly one action; ``HogQLError`` says what is wrong.

    >>> found = {4: ActionDefinition(4, "Paid", ())}
    >>> find_action(found, 4).name, find_action(found, "Paid").id
    ('Paid', 4)
    >>> find_action(found, 5)
    Traceback (most recent call last):
    ...
    hoglab.translate.errors.HogQLError: There is no action with id 5 in this project
    """
    if isinstance(ref, int):
        action = actions.get(ref)
        if action is None:
            raise HogQLError(f"There is no action with id {ref} in this project")
        return action
    named = [a for a in actions.values() if a.name == ref]
    live = [a for a in named if not a.deleted] or named
    if not live:
        raise HogQLError(f"There is no action named {ref[:200]!r} in this project")
    if len(live) > 1:
        ids = ", ".join(str(a.id) for a in live[:10])
        raise HogQLError(f"Several actions are named {ref[:200]!r}: name one by its id ({ids})")
    return live[0]
