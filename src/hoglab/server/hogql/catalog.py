"""What the compiler must know of the engine and of the project, handed to it: a :class:`Catalog`.

The compiler prints SQL and runs nothing, so it reads no engine or store state of its own. Two facts change how
it prints:

* which ``properties`` keys of ``events`` and ``persons`` are materialized as columns (``mat_<key>``,
  ``pmat_<key>``): where one is, the compiler reads the column instead of extracting the key from the JSON (the
  same values by construction, ``engine/materialized.py``);
* the project's **actions** (:class:`ActionDefinition`), which ``matchesAction(id or name)`` expands into the
  action's condition (``hogql/actions.py``). The condition is written by ``filters/actions.py``, the one
  compiler of actions, which the compiler does not import (it imports the compiler): the catalog is handed it
  (:class:`ActionCondition`), as the compiler is handed ``{filters}``' translation.

Whoever compiles passes a catalog: the query service passes the engine's (``query/catalog.py``, which also
counts each key read, for automatic materialization) with the project's actions and their compiler added
(:class:`WithActions`);
without one, nothing is materialized and there are no actions (:data:`NO_MATERIALIZED`), which answers the same
for any statement that names no action, only slower.

A catalog's :meth:`~Catalog.version` changes whenever its answers change, so a cache of compiled statements
keyed on it never serves a statement printed for another set of columns or another definition of an action.

>>> from hoglab.server.hogql import compile_hogql
>>> columns = StaticCatalog({("hoglab", "events"): {"$browser": "mat_$browser"}})
>>> "`mat_$browser`" in compile_hogql("select properties.$browser from events", team_id=1, catalog=columns).sql
True
>>> "`mat_$browser`" in compile_hogql("select properties.$browser from events", team_id=1).sql
False
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp

from .errors import HogQLError

__all__ = [
    "NO_MATERIALIZED",
    "ActionCondition",
    "ActionDefinition",
    "Catalog",
    "StaticCatalog",
    "WithActions",
    "actions_version",
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


class Catalog(Protocol):
    """The engine's materialized properties, as the compiler reads them (``table`` is ``events`` or ``persons``),
    and the project's actions."""

    def version(self) -> Hashable:
        """A value that changes whenever :meth:`column` or :meth:`columns` would answer differently."""
        ...

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        """The column holding ``<database>.<table>.properties.<key>``, if there is one. The compiler asks once
        for each property it reads with a single key, naming the project it compiles for (the engine's catalog
        counts those reads per project)."""
        ...

    def columns(self, database: str, table: str) -> Mapping[str, str]:
        """Every materialized ``key -> column`` of ``<database>.<table>`` (the views carry them all)."""
        ...

    def actions(self) -> Mapping[int, ActionDefinition]:
        """The project's actions by id, deleted ones included (PostHog's queries still read those by id); the
        actions of no other project, so another project's id is simply not found."""
        ...

    def action_condition(self, action: ActionDefinition, timezone: str) -> exp.Expr:
        """One of :meth:`actions` as a condition over the ``events`` row (values bound); ``HogQLError`` when the
        action can't be used."""
        ...


class ActionCondition(Protocol):
    """How an action becomes a condition: ``filters/actions.py`` ``action_to_expr``, handed to the catalog."""

    def __call__(self, action: ActionDefinition, *, timezone: str) -> exp.Expr: ...


def _no_actions(action: ActionDefinition, timezone: str) -> exp.Expr:
    # A catalog without actions never finds one to expand; this says so if it is ever asked.
    raise HogQLError(f"There is no action with id {action.id} in this project")


def actions_version(actions: Iterable[ActionDefinition]) -> str:
    """A digest of a project's action definitions (``""`` for none): what query cache keys take of them.

    >>> actions_version([]), len(actions_version([ActionDefinition(1, "a", ())]))
    ('', 64)
    """
    digest = hashlib.sha256()
    found = False
    for action in sorted(actions, key=lambda a: a.id):
        digest.update(action.fingerprint.encode())
        found = True
    return digest.hexdigest() if found else ""


class StaticCatalog:
    """A catalog of fixed columns, ``{(database, table): {key: column}}``: for tools and tests without an engine.

    >>> StaticCatalog({("hoglab", "persons"): {"email": "pmat_email"}}).column("email", "hoglab", "persons")
    'pmat_email'
    """

    def __init__(self, columns: Mapping[tuple[str, str], Mapping[str, str]] | None = None) -> None:
        self._columns = {place: dict(found) for place, found in (columns or {}).items()}
        self._version = tuple(sorted((place, tuple(sorted(found.items()))) for place, found in self._columns.items()))

    def version(self) -> Hashable:
        return self._version

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        return self._columns.get((database, table), {}).get(key)

    def columns(self, database: str, table: str) -> Mapping[str, str]:
        return dict(self._columns.get((database, table), {}))

    def actions(self) -> Mapping[int, ActionDefinition]:
        return {}

    def action_condition(self, action: ActionDefinition, timezone: str) -> exp.Expr:
        return _no_actions(action, timezone)


class WithActions:
    """Another catalog's columns, and a project's actions with the compiler of actions: what the query service
    hands the compiler.

    Its version moves with the columns' and with any action's definition, so a statement using
    ``matchesAction`` is compiled again after the action changes.

    >>> condition = lambda action, *, timezone: exp.condition(f"event = '{action.steps[0]['event']}'")
    >>> catalog = WithActions(NO_MATERIALIZED, [ActionDefinition(3, "Paid", ({"event": "paid"},))], condition)
    >>> catalog.actions()[3].name, catalog.action_condition(catalog.actions()[3], "UTC").sql()
    ('Paid', "event = 'paid'")
    >>> catalog.version() != WithActions(NO_MATERIALIZED, [], condition).version()
    True
    """

    def __init__(self, base: Catalog, actions: Iterable[ActionDefinition], condition: ActionCondition) -> None:
        self._base = base
        self._actions: dict[int, ActionDefinition] = {a.id: a for a in actions}
        self._condition = condition
        self.actions_version = actions_version(self._actions.values())

    def version(self) -> Hashable:
        return (self._base.version(), self.actions_version)

    def column(self, key: str, database: str, table: str, team_id: int | None = None) -> str | None:
        return self._base.column(key, database, table, team_id)

    def columns(self, database: str, table: str) -> Mapping[str, str]:
        return self._base.columns(database, table)

    def actions(self) -> Mapping[int, ActionDefinition]:
        return self._actions

    def action_condition(self, action: ActionDefinition, timezone: str) -> exp.Expr:
        return self._condition(action, timezone=timezone)


NO_MATERIALIZED = StaticCatalog()
"""The catalog of an engine without materialized columns: every property is read from its JSON; no actions."""
