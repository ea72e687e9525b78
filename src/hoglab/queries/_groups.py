"""Group types in builder arguments: ``aggregate_by="company"`` (a name) or ``aggregate_by=0`` (an index).

A builder has no connection, so a name is kept on the model (``RequestModel.group_type_names``) with the index
0 standing in, and :class:`hoglab.Client` looks the real index up in the project's ``/groups_types/`` before
sending (``.to_json_dict()`` refuses a model whose names are not resolved yet, so a stand-in never leaves).

>>> group_type_arg("aggregate_by", "company"), group_type_arg("aggregate_by", 2), group_type_arg("x", "1")
((0, 'company'), (2, None), (1, None))
>>> group_type_arg("aggregate_by", 7)
Traceback (most recent call last):
hoglab.errors.InvalidArgument: aggregate_by: a group type is its name ('company') or its index (0-4), got 7.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import GroupPropertyFilter, GroupsQuery, HogQLPropertyFilter, RequestModel

__all__ = ["group_type_arg", "groups", "named"]

M = TypeVar("M", bound=RequestModel)


def group_type_arg(argument: str, value: Any) -> tuple[int, str | None]:
    """``(index, name)`` of a group type argument: an index as given (no name), a name with the stand-in 0."""
    if isinstance(value, bool):
        raise InvalidArgumentType(f"{argument}: expected a group type name or index, got a bool.", argument=argument)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int):
        if not 0 <= value <= 4:
            raise InvalidArgument(
                f"{argument}: a group type is its name ('company') or its index (0-4), got {value}.", argument=argument
            )
        return value, None
    if isinstance(value, str) and value.strip():
        return 0, value.strip()
    raise InvalidArgumentType(
        f"{argument}: expected a group type name ('company') or index (0-4), got {value!r}.", argument=argument
    )


def named(model: M, field: str, name: str | None) -> M:
    """``model`` with ``field``'s group type left to resolve by ``name`` (nothing to do when ``name`` is None)."""
    if name is not None:
        model.group_type_names[field] = name
    return model


def groups(
    group_type: str | int,
    *,
    select: Sequence[str] | None = None,
    where: Any = None,
    search: str | None = None,
    order_by: Sequence[str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> GroupsQuery:
    """A GroupsQuery: the groups of one type as a table (``group_name``, ``key`` and the ``select`` columns).

    ``group_type`` is the type's name (``"company"``) or index. ``where`` filters on the groups' own properties
    (``{"plan": "pro", "seats__gt": 10}``, or HogQL text); ``search`` keeps groups whose name or key contains it;
    ``order_by`` defaults to the newest first (``"group_name"`` sorts by name).

    >>> q = groups("company", select=["properties.plan"], where={"plan": "pro"})
    >>> q.group_type_names, q.properties[0].type, q.properties[0].key
    ({'group_type_index': 'company'}, 'group', 'plan')
    """
    from ._args import model_errors, positive_int, property_filters

    index, name = group_type_arg("group_type", group_type)
    positive_int("limit", limit)
    positive_int("offset", offset, low=0)
    filters: list[Any] = []
    for found in property_filters("where", where):
        if isinstance(found, HogQLPropertyFilter):
            filters.append(found)
            continue
        if found.type not in ("event", "group"):
            raise InvalidArgument("where: groups are filtered by their own properties or HogQL.", argument="where")
        with model_errors("where"):
            own = GroupPropertyFilter(key=found.key, value=found.value, operator=found.operator,
                                      group_type_index=index)  # fmt: skip
        filters.append(named(own, "group_type_index", name))
    with model_errors("groups"):
        query = GroupsQuery(
            group_type_index=index,
            select=list(select) if select else None,
            search=search,
            properties=filters or None,
            orderBy=list(order_by) if order_by else None,
            limit=limit,
            offset=offset,
        )
    return named(query, "group_type_index", name)
