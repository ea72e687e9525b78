"""Groups (PostHog's group analytics): the ``GroupsQuery`` kind, its answer, and the ``Group`` and ``GroupType``
objects of ``/api/projects/{id}/groups/`` and ``/groups_types/``.

A project has up to five group types (``company``, ``project``...), numbered 0-4 in the order ingestion first saw
them; a group is one key of a type (``acme``) with properties set by ``$groupidentify`` events.

>>> GroupsQuery(group_type_index=0, search="acme").limit is None
True
>>> GroupsQuery(group_type_index=5)
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for GroupsQuery
group_type_index
  Input should be less than or equal to 4 ...
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import RequestModel, ResponseModel
from ._query_base import QueryBase
from .filters import GroupPropertyFilter, HogQLPropertyFilter

__all__ = [
    "CreateGroup",
    "Group",
    "GroupType",
    "GroupTypeMetadata",
    "GroupsQuery",
    "GroupsQueryResponse",
]

# The engine reads OFFSET as a signed 64-bit number.
_MAX_OFFSET = 2**63 - 1


class GroupsQuery(QueryBase):
    """The groups of one type as a table.

    Its columns are ``group_name`` (the ``name`` property, else the key), ``key`` and the ``select`` expressions
    over the ``groups`` table (``properties.plan``, ``created_at``).
    """

    kind: Literal["GroupsQuery"] = "GroupsQuery"
    group_type_index: int = Field(ge=0, le=4)
    select: list[str] | None = Field(default=None, max_length=100)
    search: str | None = Field(default=None, max_length=400)
    properties: (
        list[Annotated[GroupPropertyFilter | HogQLPropertyFilter, Field(discriminator="type")]] | None
    ) = None
    orderBy: list[str] | None = Field(default=None, max_length=20)
    limit: int | None = Field(default=None, ge=1)
    offset: int | None = Field(default=None, ge=0, le=_MAX_OFFSET)


class GroupsQueryResponse(ResponseModel):
    """``columns``, ``types`` and ``results`` rows of a GroupsQuery, with ``hasMore`` for the next page."""

    kind: str | None = "GroupsQuery"
    columns: list[Any] = Field(default_factory=list)
    types: list[str] | None = None
    results: list[list[Any]] = Field(default_factory=list)
    hasMore: bool | None = None
    limit: int | None = None
    offset: int | None = None
    hogql: str | None = None
    is_cached: bool | None = None
    last_refresh: datetime | None = None
    cache_key: str | None = None
    timings: list[dict[str, Any]] | None = None


class Group(ResponseModel):
    """One group: ``{"group_type_index": 0, "group_key": "acme", "group_properties": {...}, "created_at": ...}``."""

    group_type_index: int
    group_key: str
    group_properties: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None


class GroupType(ResponseModel):
    """One group type of a project: ``{"group_type": "company", "group_type_index": 0, "name_singular": ...}``."""

    group_type: str
    group_type_index: int
    name_singular: str | None = None
    name_plural: str | None = None
    detail_dashboard: int | None = None
    default_columns: list[str] | None = None
    created_at: datetime | None = None


class GroupTypeMetadata(RequestModel):
    """One row of ``PATCH /groups_types/update_metadata/``: the names PostHog's UI shows for a type."""

    group_type_index: int = Field(ge=0, le=4)
    name_singular: str | None = Field(default=None, max_length=400)
    name_plural: str | None = Field(default=None, max_length=400)
    group_type: str | None = None
    detail_dashboard: int | None = None
    default_columns: list[str] | None = None
    created_at: str | None = None


class CreateGroup(RequestModel):
    """The body of ``POST /groups/``: a group of an existing type, with its properties."""

    group_type_index: int = Field(ge=0, le=4)
    group_key: str = Field(min_length=1, max_length=400)
    group_properties: dict[str, Any] | None = None
