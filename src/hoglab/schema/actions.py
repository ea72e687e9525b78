"""Actions: PostHog's named event definitions (``/api/projects/:id/actions/``) and their steps (the node that
puts one in a query, ``ActionsNode``, is a series node: :mod:`.nodes`).

An action is a list of **steps**, OR-ed; inside a step every condition given is AND-ed: the ``event`` name, the
page ``url`` (matched ``contains``, ``exact`` or ``regex``), property filters and, for ``$autocapture`` events,
the clicked element's ``tag_name``, ``text`` and ``href``. ``ActionsNode`` names an action by ``id`` wherever a
query takes an ``EventsNode`` (trends, funnels, lifecycle, stickiness, experiment metrics).

The request models follow PostHog's serializers, which drop the keys they do not know (a step read back from
PostHog, with its read-only ``selector_regex``, can be sent again as is); a step saved without ``url_matching``
reads back ``"contains"``, as PostHog's.

>>> step = ActionStepJSON.model_validate({"event": "$pageview", "url": " /signup ", "selector_regex": "x"})
>>> step.url, step.url_matching, step.to_json_dict()["text_matching"]
('/signup', 'contains', None)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from ._base import ResponseModel
from .experiments import User
from .filters import AnyPropertyFilter

__all__ = [
    "ACTION_STEP_KEYS",
    "Action",
    "ActionStepJSON",
    "ActionWrite",
    "UrlMatching",
]

UrlMatching = Literal["contains", "regex", "exact"]
"""How a step's ``url`` (and ``text``/``href``) is compared: PostHog's ``ActionStepMatching``."""

ACTION_STEP_KEYS = (
    "event", "properties", "selector", "tag_name", "text", "text_matching", "href", "href_matching", "url",
    "url_matching",
)  # fmt: skip
"""The keys of a stored step, in PostHog's order (its ``ActionStepJSON`` dataclass)."""

_filter: TypeAdapter[Any] = TypeAdapter(AnyPropertyFilter)


class _Lenient(BaseModel):
    # PostHog's serializers drop unknown and read-only keys instead of refusing them.
    model_config = ConfigDict(extra="ignore", populate_by_name=True, validate_assignment=True)

    def to_json_dict(self) -> dict[str, Any]:
        """Every field, ``None`` included (PostHog answers all ten keys of a step)."""
        return self.model_dump(mode="json", by_alias=True)


class ActionStepJSON(_Lenient):
    """One step: ``{"event": "$pageview", "url": "/pricing", "url_matching": "contains"}``.

    ``properties`` are property filters (``{"key", "value", "operator", "type"}``), checked here and kept as sent.
    ``text_matching``/``href_matching`` default to exact when ``None``; ``url_matching`` to contains.
    """

    event: str | None = Field(default=None, max_length=400)
    properties: list[dict[str, Any]] | None = Field(default=None, max_length=100)
    selector: str | None = Field(default=None, max_length=2000)
    tag_name: str | None = Field(default=None, max_length=400)
    text: str | None = Field(default=None, max_length=2000)
    text_matching: UrlMatching | None = None
    href: str | None = Field(default=None, max_length=2000)
    href_matching: UrlMatching | None = None
    url: str | None = Field(default=None, max_length=2000)
    url_matching: UrlMatching | None = "contains"

    @field_validator("url", "selector")
    @classmethod
    def _trimmed(cls, value: str | None) -> str | None:
        # PostHog's serializer trims these two (DRF's default) and keeps the whitespace of event, tag_name, ...
        return None if value is None else value.strip()

    @field_validator("properties")
    @classmethod
    def _filters(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for index, item in enumerate(value or []):
            try:
                # A filter without a type is an event property filter, as PostHog's Property reads it.
                _filter.validate_python({"type": "event", **item} if isinstance(item, dict) else item)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
                where = ".".join(str(p) for p in first.get("loc", ()) if not str(p)[:1].isupper())
                given = first.get("input")
                got = f" (got {given!r:.80})" if isinstance(given, str | int | float) else ""
                raise ValueError(f"properties[{index}]{'.' + where if where else ''}: {message}{got}") from None
        return value


class ActionWrite(_Lenient):
    """The body of ``POST``/``PUT``/``PATCH /actions/``: the writable fields (read-only ones are ignored).

    ``deleted: true`` is how an action is removed (``DELETE`` answers 405, as PostHog's); ``pinned_at`` set to any
    time pins the action at the server's now, ``null`` (or ``""``) unpins it.
    """

    name: str | None = Field(default=None, max_length=400)
    description: str | None = Field(default=None, max_length=100_000)
    tags: list[str] | None = Field(default=None, max_length=100)
    post_to_slack: bool | None = None
    slack_message_format: str | None = Field(default=None, max_length=1200)
    steps: list[ActionStepJSON] | None = Field(default=None, max_length=100)
    deleted: bool | None = None
    pinned_at: datetime | None = None

    @field_validator("pinned_at", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if value == "" else value


class Action(ResponseModel):
    """An action as the API answers it (PostHog's ``Action`` serializer)."""

    id: int
    name: str | None = None
    description: str = ""
    tags: list[Any] = Field(default_factory=list)
    post_to_slack: bool = False
    slack_message_format: str = ""
    steps: list[dict[str, Any]] = Field(default_factory=list)
    created_at: datetime | None = None
    created_by: User | None = None
    deleted: bool = False
    is_calculating: bool = False
    last_calculated_at: datetime | None = None
    team_id: int | None = None
    is_action: bool = True
    bytecode_error: str | None = None
    pinned_at: datetime | None = None
    creation_context: str | None = None
    user_access_level: str | None = None
