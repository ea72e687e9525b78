"""``client.actions``: PostHog's Actions API, listings as DataFrames, and action names turned into ids.

The builders take an action by id or by name (``hoglab.trends(action="Signed up")``); PostHog's queries name
actions by id only, so :func:`resolve_action_names` fills the id of every ``ActionsNode`` (and retention entity
of type ``actions``) that carries only a name, from the project's actions, before a query or an experiment is
sent. It works the same against hoglab and PostHog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InvalidArgument, InvalidArgumentType
from ..queries._args import call_errors, model_errors, where_filters
from ..schema import Action, ActionStepJSON, ActionWrite

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Actions", "resolve_action_names"]

LIST_COLUMNS = ["id", "name", "description", "steps", "tags", "deleted", "pinned_at", "created_by", "created_at",
                "last_calculated_at", "bytecode_error"]  # fmt: skip


def _needs_id(node: Mapping[str, Any]) -> bool:
    named = node.get("id") is None and isinstance(node.get("name"), str)
    return named and (node.get("kind") == "ActionsNode" or node.get("type") == "actions")


def resolve_action_names(client: Client, data: Any) -> Any:
    """``data`` (a JSON body, walked in place) with the id of every action named only by name filled in.

    An :class:`~hoglab.InvalidArgument` names an action the project does not have. One listing per call, and none
    when nothing is named by name.

    >>> resolve_action_names(None, {"series": [{"kind": "ActionsNode", "id": 3}]})
    {'series': [{'kind': 'ActionsNode', 'id': 3}]}
    """
    pending: list[dict[str, Any]] = []
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if _needs_id(node):
                pending.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if pending:
        ids = client.actions.ids_by_name()
        for node in pending:
            name = node["name"]
            if name not in ids:
                raise InvalidArgument(
                    f"action: project {client.project_id} has no action named {name!r} "
                    f"(client.actions.list() shows them).",
                    argument="action",
                )
            node["id"] = ids[name]
    return data


def _step(step: Any) -> dict[str, Any]:
    if isinstance(step, ActionStepJSON):
        return step.model_dump(mode="json")
    if isinstance(step, Mapping):
        with model_errors("steps"):
            return ActionStepJSON.model_validate(dict(step)).model_dump(mode="json")
    raise InvalidArgumentType(f"steps: expected step dicts, got {type(step).__name__}.", argument="steps")


def list_frame(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Actions as rows; ``created_by`` is the creator's email."""
    rows = []
    for item in items:
        creator = item.get("created_by") or {}
        rows.append({**{k: item.get(k) for k in LIST_COLUMNS},
                     "created_by": creator.get("email") if isinstance(creator, Mapping) else None})  # fmt: skip
    df = pd.DataFrame(rows, columns=LIST_COLUMNS)
    df["id"] = pd.array(df["id"].tolist(), dtype="Int64")
    df["name"] = pd.array(df["name"].tolist(), dtype=pd.StringDtype())
    df["deleted"] = pd.array([bool(v) for v in df["deleted"]], dtype="boolean")
    for name in ("created_at", "last_calculated_at", "pinned_at"):
        df[name] = pd.to_datetime(df[name], utc=True, format="ISO8601")
    return df


class Actions:
    """The project's actions: ``list()``, ``get()``, ``create()``, ``update()``, ``delete()``.

    An action is named by id or by name wherever one is taken. ``delete`` marks it deleted (PostHog forbids
    removing one): queries naming it by id still run.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def _path(self, suffix: str = "") -> str:
        return self._client.path(f"actions/{suffix}")

    def _all(self) -> list[dict[str, Any]]:
        return self._client.paginate(self._path())

    def list(self) -> pd.DataFrame:
        """The live actions, one row each (newest first, as PostHog lists them)."""
        return list_frame(self._all())

    def ids_by_name(self) -> dict[str, int]:
        """``{name: id}`` of the live actions (names are unique among them)."""
        return {str(a["name"]): int(a["id"]) for a in self._all() if a.get("name") is not None}

    def get(self, action: int | str) -> Action:
        """One action by id (deleted ones too) or by name (live ones)."""
        if isinstance(action, str):
            found = [a for a in self._all() if a.get("name") == action]
            if not found:
                raise InvalidArgument(f"action: no action named {action!r} in project {self._client.project_id}.",
                                      argument="action")  # fmt: skip
            return Action.model_validate(found[0])
        return Action.model_validate(self._client.get_json(self._path(f"{self._id(action)}/")))

    def _id(self, action: int | str) -> int:
        if isinstance(action, str):
            return self.get(action).id
        if isinstance(action, bool) or not isinstance(action, int):
            raise InvalidArgumentType(f"action: expected an id or a name, got {action!r}.", argument="action")
        return action

    def create(
        self,
        name: str,
        steps: Sequence[Mapping[str, Any] | ActionStepJSON] | None = None,
        *,
        event: str | None = None,
        url: str | None = None,
        url_matching: str = "contains",
        where: Any = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Action:
        """A new action, from PostHog's steps or from one step's fields.

        ``steps`` are PostHog's step dicts, OR-ed; or one step is made from ``event``, ``url`` (matched
        ``contains``, ``exact`` or ``regex``) and ``where`` (property filters, as the builders take them).

        >>> client.actions.create("Signed up", event="$pageview", url="/signup/done")   # doctest: +SKIP
        """
        if steps is None:
            if event is None and url is None and where is None:
                raise InvalidArgument("create: give steps, or an event, url or where for one step.", argument="steps")
            filters = where_filters(where, None)
            one: dict[str, Any] = {"event": event, "url": url, "url_matching": url_matching}
            if filters:
                one["properties"] = [f.to_json_dict() for f in filters]
            steps = [one]
        elif event is not None or url is not None or where is not None:
            raise InvalidArgument("create: give steps, or event/url/where for one step, not both.", argument="steps")
        with call_errors("create"):
            body = ActionWrite(name=name, steps=[_step(s) for s in steps], description=description,
                               tags=list(tags) if tags is not None else None)  # fmt: skip
        payload = body.model_dump(mode="json", exclude_unset=True, exclude_none=True)
        response = self._client.request("POST", self._path(), json=payload)
        return Action.model_validate(response.json())

    def update(self, action: int | str, **fields: Any) -> Action:
        """Change fields (``name``, ``description``, ``steps``, ``tags``, ``deleted``, ``pinned_at``)."""
        if not fields:
            raise InvalidArgument("update: name at least one field to change.", argument="fields")
        unknown = sorted(set(fields) - set(ActionWrite.model_fields))
        if unknown:
            raise InvalidArgument(f"update: {unknown[0]!r} is not a field of an action.", argument=unknown[0])
        if fields.get("steps") is not None:
            fields["steps"] = [_step(s) for s in fields["steps"]]
        with call_errors("update"):
            body = ActionWrite(**fields)
        payload = body.model_dump(mode="json", exclude_unset=True)
        response = self._client.request("PATCH", self._path(f"{self._id(action)}/"), json=payload)
        return Action.model_validate(response.json())

    def delete(self, action: int | str) -> Action:
        """Mark the action deleted (PostHog's way: ``DELETE`` is refused); it leaves the listing."""
        return self.update(action, deleted=True)
