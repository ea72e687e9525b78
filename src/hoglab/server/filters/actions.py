"""Actions in the service: the steps the API stores, checked by compiling each through the whole HogQL compiler
(:func:`check_steps`), and an action as a bound HogQL tree for ``matchesAction()`` (:func:`action_to_expr`).

The condition itself is written by ``hoglab.translate.actions`` (``action_condition``), the one writer of actions
that every insight, experiment and ``EventsQuery.actionId`` uses too (docs/insights.md, "Actions").

>>> check_steps([{"event": "signed_up", "url": "/done", "url_matching": "regex"}])[0]["url_matching"]
'regex'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from hoglab.translate.actions import ActionDefinition, action_condition, action_size, normalized_step, step_condition
from hoglab.translate.budget import CompileBudget, CompileBudgetExceeded
from hoglab.translate.errors import HogQLError, TranslationFailed
from hoglab.translate.params import Params
from hoglab.translate.parse import parse_hogql_expr
from hoglab.translate.values import bind_placeholders

from ..errors import ValidationFailed
from ..hogql import compile_hogql
from .patterns import compile_pattern, invalid_patterns

__all__ = ["MAX_ACTION_SIZE", "MAX_ACTION_STEPS", "MAX_STEP_FILTERS", "action_to_expr", "check_size", "check_steps"]

MAX_ACTION_STEPS = 50
"""Steps one action may have."""
MAX_STEP_FILTERS = 50
"""Property filters one step may have."""
MAX_ACTION_SIZE = 200
"""Steps and property filters of one action in all (``action_size``): what every query naming it expands."""


def action_to_expr(action: ActionDefinition, *, timezone: str = "UTC") -> exp.Expr:
    """The action's condition as a HogQL tree with its values bound, for ``matchesAction()`` in a statement (which
    spent the query's allowance for every call before expanding any: ``hogql/actions.py``).

    Raises ``HogQLError`` for an action that can't be used, or one whose definition itself calls
    ``matchesAction`` (which could name itself).
    """
    p = Params()
    try:
        condition = action_condition(action, p, timezone=timezone, counted=True)
    except TranslationFailed as exc:
        raise HogQLError(str(exc.detail)) from None
    tree = bind_placeholders(parse_hogql_expr(condition), p.values, timezone=timezone)
    if _calls_matches_action(tree):
        raise HogQLError(f"Action {action.id}'s definition uses matchesAction(), which an action can't use")
    return tree if isinstance(tree, exp.Paren) else exp.Paren(this=tree)


def _calls_matches_action(tree: exp.Expr) -> bool:
    return any(node.name.lower() == "matchesaction" for node in tree.find_all(exp.Anonymous))


def check_size(steps: Sequence[Any]) -> None:
    """A 400 ``action_too_complex`` for steps over the caps; cheap, so it comes before any other work (a body's
    steps before they are even validated)."""
    if len(steps) > MAX_ACTION_STEPS:
        raise ValidationFailed(f"An action has at most {MAX_ACTION_STEPS} steps, not {len(steps)}.", attr="steps",
                               code="action_too_complex")  # fmt: skip
    for index, step in enumerate(steps):
        filters = step.get("properties") if isinstance(step, Mapping) else None
        if isinstance(filters, list) and len(filters) > MAX_STEP_FILTERS:
            raise ValidationFailed(
                f"A step has at most {MAX_STEP_FILTERS} property filters, not {len(filters)}.",
                attr=f"steps.{index}.properties",
                code="action_too_complex",
            )
    size = action_size([s for s in steps if isinstance(s, Mapping)])
    if size > MAX_ACTION_SIZE:
        raise ValidationFailed(
            f"An action's steps and property filters are at most {MAX_ACTION_SIZE} in all, not {size}: every query "
            "naming it expands each of them.",
            attr="steps",
            code="action_too_complex",
        )


def check_steps(
    steps: Sequence[Mapping[str, Any]], *, timezone: str = "UTC", budget: CompileBudget | None = None
) -> list[dict[str, Any]]:
    """Steps ready to store (:func:`normalized_step`), or a ``ValidationFailed`` naming the step's field
    (``steps.1.url``): more steps or filters than the caps (:data:`MAX_ACTION_STEPS`, :data:`MAX_STEP_FILTERS`,
    :data:`MAX_ACTION_SIZE`, before any work), a regular expression RE2 can't compile (the engine's ``match`` is
    RE2), a ``selector`` on an ``$autocapture`` step, a property filter the translator refuses or whose HogQL the
    compiler refuses (a function outside the allow-list, ``team_id``, a subquery of another table), and
    ``matchesAction`` inside a step (an action could name itself). Each step is compiled as a query over
    ``events`` would compile it, all of them within one compile budget (``budget``, the queries' own: its CPU
    seconds for the whole action, its SQL bytes for the whole condition), as a query naming the action would.
    """
    check_size(steps)
    budget = budget or CompileBudget()
    try:
        with budget.applied():
            out = _checked_steps(steps, timezone)
            p = Params()
            whole = action_condition(ActionDefinition(0, None, tuple(out)), p, timezone=timezone)
            compiled = compile_hogql(f"SELECT 1 FROM events WHERE {whole}", team_id=0, values=p.values,
                                     timezone=timezone)  # fmt: skip
        budget.check_sql(compiled.sql)
    except CompileBudgetExceeded as exc:
        raise ValidationFailed(f"This action is too complex to store: {exc.message}", attr="steps",
                               code="action_too_complex") from None  # fmt: skip
    except TranslationFailed as exc:
        raise ValidationFailed.from_translation(exc) from None
    except HogQLError as exc:
        raise ValidationFailed(f"This action can't be compiled: {exc.message}", attr="steps") from None
    return out


def _checked_steps(steps: Sequence[Mapping[str, Any]], timezone: str) -> list[dict[str, Any]]:
    out = []
    for index, raw in enumerate(steps):
        step = normalized_step(raw)
        attr = f"steps.{index}"
        for field, matching in (("url", "url_matching"), ("href", "href_matching"), ("text", "text_matching")):
            if step.get(matching) == "regex" and step.get(field):
                reason = compile_pattern(str(step[field]))
                if reason is not None:
                    raise ValidationFailed(
                        f"{step[field][:200]!r} is not a valid regular expression (RE2: {reason}).",
                        attr=f"{attr}.{field}",
                    )
        for problem in invalid_patterns(step.get("properties") or [], f"{attr}.properties"):
            raise ValidationFailed(
                f"{problem.pattern[:200]!r} is not a valid regular expression (RE2: {problem.reason}).",
                attr=problem.attr.replace("__", "."),
            )
        p = Params()
        try:
            condition = step_condition(step, p, timezone=timezone, attr=attr)
        except TranslationFailed as exc:
            raise ValidationFailed.from_translation(exc) from None
        try:
            tree = bind_placeholders(parse_hogql_expr(condition), p.values, timezone=timezone)
            if _calls_matches_action(tree):
                raise ValidationFailed("An action's step can't use matchesAction().", attr=f"{attr}.properties")
            # The team is irrelevant here: the statement is compiled to be refused or not, never run.
            compile_hogql(f"SELECT 1 FROM events WHERE {condition}", team_id=0, values=p.values, timezone=timezone)
        except CompileBudgetExceeded:
            raise
        except HogQLError as exc:
            raise ValidationFailed(f"This step can't be compiled: {exc.message}", attr=attr) from None
        out.append(step)
    return out
