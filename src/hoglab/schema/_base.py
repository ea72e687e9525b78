"""Base classes shared by every schema model.

Requests are strict (unknown fields are a 400 naming the field), responses are lenient (PostHog adds fields over
time and the client must keep working against it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

__all__ = ["RequestModel", "ResponseModel", "SettingsModel", "pending_group_types"]


class RequestModel(BaseModel):
    """A model the service validates: unknown fields are rejected, values are validated on assignment.

    ``group_type_names`` holds group types a builder was given by name (``aggregate_by="company"``): field name
    -> type name, left for the client to turn into the index (``/groups_types/``) before the model is sent.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)
    _group_type_names: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def group_type_names(self) -> dict[str, str]:
        return self._group_type_names

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON body PostHog expects: aliases applied, unset and ``None`` fields left out.

        A group type given by name must be resolved first (``hoglab.Client`` does it; elsewhere give the index).
        """
        pending = [name for _, _, name in pending_group_types(self)]
        if pending:
            raise ValueError(
                f"group type {pending[0]!r} is a name: run the query with hoglab.Client (which looks the index up "
                "in /groups_types/), or give the group type's index (0-4)."
            )
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def pending_group_types(model: BaseModel) -> Iterator[tuple[RequestModel, str, str]]:
    """``(model, field, type name)`` for every group type named but not resolved, anywhere in ``model``'s tree."""
    stack: list[Any] = [model]
    while stack:
        node = stack.pop()
        if isinstance(node, RequestModel):
            for field, name in node.group_type_names.items():
                yield node, field, name
        if isinstance(node, BaseModel):
            stack.extend(getattr(node, f) for f in type(node).model_fields)
        elif isinstance(node, list | tuple):
            stack.extend(node)


class SettingsModel(RequestModel):
    """Display and UI settings nested in a query: kept as sent (PostHog's UI adds such keys often)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)


class ResponseModel(BaseModel):
    """A model of an answer: extra fields are kept, so newer PostHog answers still parse."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
