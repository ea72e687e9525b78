"""Group analytics' objects: a project's group types and its groups, in PostHog's shapes.

GET    /api/projects/{project_id}/groups_types/                        group:read    a plain array, by index
PATCH  /api/projects/{project_id}/groups_types/update_metadata/        group:write   an array of rows; the list
PUT    /api/projects/{project_id}/groups_types/set_default_columns/    group:write   the type
DELETE /api/projects/{project_id}/groups_types/{group_type_index}/     group:write   204
GET    /api/projects/{project_id}/groups/?group_type_index=N           group:read    cursor pages of 100, newest first
POST   /api/projects/{project_id}/groups/                              group:write   201, the new group
GET    /api/projects/{project_id}/groups/find/?group_type_index&group_key          the group (404 if none)
POST   /api/projects/{project_id}/groups/update_property/?group_type_index&group_key   body {key, value}
POST   /api/projects/{project_id}/groups/delete_property/?group_type_index&group_key   body {"$unset": key}
GET    /api/projects/{project_id}/groups/property_definitions/        {"0": [{"name", "count"}], ...}
GET    /api/projects/{project_id}/groups/property_values/?group_type_index&key[&value]   the 20 commonest values

Group types and groups are created by ingestion (``$groups``, ``$groupidentify``: ``ingest/groups.py``); these
endpoints read them, name the types (``name_singular``/``name_plural``, which PostHog's UI and hoglab's frames show)
and edit a group's properties. The list's cursor is opaque (``next``/``previous`` carry it); PostHog's answer has no
``count``. A created group is written directly (PostHog also emits a ``$groupidentify`` event: hoglab does not).
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response

from hoglab.schema import CreateGroup, Group, GroupType, GroupTypeMetadata

from ..errors import InternalError, ResourceNotFound, ValidationFailed
from ..ingest.events import writable_properties
from ..ingest.groups import GroupState, GroupStore
from ..query.groups import find_group, list_groups, property_definitions, property_values
from ..state import ServiceState, get_state
from ..validation import validate_body
from .auth import AuthContext, require_scope
from .bodies import json_body_openapi, parse_json_array, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["router"]

router = SlashRouter(tags=["groups"])

GROUPS = "/api/projects/{project_id}/groups/"
TYPES = "/api/projects/{project_id}/groups_types/"
State = Annotated[ServiceState, Depends(get_state)]
Read = Annotated[AuthContext, Depends(require_scope("group:read"))]
Write = Annotated[AuthContext, Depends(require_scope("group:write"))]
Body = Annotated[bytes, Depends(raw_body)]
_INDEX_HELP = "The group type's index (0-4): see /groups_types/."
_MISSING_INDEX = (
    "You must pass ?group_type_index= in this URL. To get a list of valid group types, call "
    "/api/:project_id/groups_types/."
)


def _store(state: ServiceState) -> GroupStore:
    if state.engine is None:
        raise InternalError("The events engine is not running.")
    return GroupStore.for_engine(state.engine)


def _index(value: int | None) -> int:
    if value is None:
        raise ValidationFailed(_MISSING_INDEX, attr="group_type_index")
    return value


def _key(value: str | None) -> str:
    if value is None or value == "":
        raise ValidationFailed("You must pass ?group_key= in this URL.", attr="group_key")
    return value


Index = Annotated[int | None, Query(ge=0, le=4, description=_INDEX_HELP)]


# -- group types ----------------------------------------------------------------------------------------------


def _types(store: GroupStore, project_id: int) -> list[dict[str, Any]]:
    return [t.to_api() for t in store.types(project_id)]


@router.get(TYPES, response_model=list[GroupType], summary="List the project's group types")
def list_group_types(auth: Read, state: State) -> list[dict[str, Any]]:
    return _types(_store(state), auth.project.id)


@router.patch(
    TYPES + "update_metadata/",
    response_model=list[GroupType],
    summary="Name group types (an array of rows)",
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "array", "items": {"$ref": "#/components/schemas/GroupTypeMetadata"}}}}}},
)  # fmt: skip
def update_group_type_metadata(request: Request, auth: Write, state: State, raw: Body) -> list[dict[str, Any]]:
    json_body_openapi(GroupTypeMetadata)  # registers the row's schema in the document
    rows = parse_json_array(raw, request.headers.get("content-type"))
    parsed = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValidationFailed("Each row is an object naming a group_type_index.", attr=str(i))
        try:
            parsed.append((validate_body(GroupTypeMetadata, row), row))
        except ValidationFailed as exc:
            raise ValidationFailed(exc.detail, attr=f"{i}__{exc.attr}" if exc.attr else str(i)) from None
    store = _store(state)
    with store.lock:
        group_state = store.state(auth.project.id)
        for i, (meta, _) in enumerate(parsed):
            if group_state.by_index(meta.group_type_index) is None:
                raise ResourceNotFound(f"Group type {meta.group_type_index} not found.", attr=f"{i}__group_type_index")
        for meta, row in parsed:
            found = group_state.by_index(meta.group_type_index)
            assert found is not None
            for name in ("name_singular", "name_plural", "default_columns"):
                if name in row:
                    setattr(found, name, getattr(meta, name))
            group_state.touch_type(found.index)
        store.commit(group_state)
    return _types(store, auth.project.id)


@router.put(
    TYPES + "set_default_columns/",
    response_model=GroupType,
    summary="Set the columns PostHog's groups table shows for a type",
    openapi_extra=json_body_openapi(GroupTypeMetadata),
)
def set_group_type_default_columns(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    meta = validate_body(GroupTypeMetadata, parse_json_object(raw, request.headers.get("content-type")))
    store = _store(state)
    with store.lock:
        group_state = store.state(auth.project.id)
        found = group_state.by_index(meta.group_type_index)
        if found is None:
            raise ResourceNotFound("Group type not found.")
        found.default_columns = meta.default_columns
        group_state.touch_type(found.index)
        store.commit(group_state)
        return found.to_api()


@router.delete(TYPES + "{group_type_index}/", status_code=204, summary="Delete a group type")
def delete_group_type(
    auth: Write, state: State, group_type_index: Annotated[int, Path(ge=0, le=4)]
) -> Response:
    store = _store(state)
    with store.lock:
        group_state = store.state(auth.project.id)
        if not group_state.delete_type(group_type_index):
            raise ResourceNotFound("Group type not found.")
        store.commit(group_state)
    return Response(status_code=204)


# -- groups ---------------------------------------------------------------------------------------------------


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o={offset}".encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not text.startswith("o="):
            raise ValueError(text)
        offset = int(text[2:])
        if not 0 <= offset <= 2**62:
            raise ValueError(text)
        return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ResourceNotFound("Invalid cursor") from None


@router.get(GROUPS, summary="List one type's groups (cursor pages, newest first)")
def list_project_groups(
    request: Request,
    auth: Read,
    state: State,
    group_type_index: Index = None,
    search: Annotated[str | None, Query(max_length=400, description="In the properties or the exact key.")] = None,
    group_key: Annotated[str | None, Query(max_length=400, description="A part of the key.")] = None,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
) -> dict[str, Any]:
    index = _index(group_type_index)
    offset = _offset(cursor)
    results, more = list_groups(state, auth.project, index, search=search, group_key=group_key, offset=offset)
    following = str(request.url.include_query_params(cursor=_cursor(offset + len(results)))) if more else None
    previous = None
    if offset > 0:
        previous = str(request.url.include_query_params(cursor=_cursor(max(0, offset - 100))))
    return {"next": following, "previous": previous, "results": results}


@router.post(
    GROUPS, status_code=201, response_model=Group, summary="Create a group",
    openapi_extra=json_body_openapi(CreateGroup),
)  # fmt: skip
def create_group(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    body = validate_body(CreateGroup, parse_json_object(raw, request.headers.get("content-type")))
    store = _store(state)
    now = datetime.now(UTC)
    with store.lock:
        group_state = store.with_groups(auth.project.id, [(body.group_type_index, body.group_key)])
        if group_state.by_index(body.group_type_index) is None:
            raise ResourceNotFound("Group type not found.", attr="group_type_index")
        if (body.group_type_index, body.group_key) in group_state.groups:
            raise ValidationFailed("A group with this key already exists", attr="group_key")
        properties = _writable(body.group_properties or {}, "group_properties")
        group = group_state.upsert(body.group_type_index, body.group_key, properties, now)
        store.commit(group_state, now)
    return _group_body(group_state, group.index, group.key)


def _writable(properties: dict[str, Any], attr: str) -> dict[str, Any]:
    """Properties as capture stores them (a number beyond 64 bits as a double), or a 400 if they cannot be."""
    written = writable_properties(properties)
    if written is None:
        raise ValidationFailed("The properties are nested too deeply (over 255 levels).", attr=attr)
    return written[0]


def _group_body(group_state: GroupState, index: int, key: str) -> dict[str, Any]:
    group = group_state.groups[(index, key)]
    return {
        "group_type_index": index,
        "group_key": key,
        "group_properties": dict(group.properties),
        "created_at": group.created_at.isoformat().replace("+00:00", "Z"),
    }


@router.get(GROUPS + "find/", summary="Retrieve one group by type and key")
def find_project_group(
    auth: Read, state: State, group_type_index: Index = None,
    group_key: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:  # fmt: skip
    found = find_group(state, auth.project, _index(group_type_index), _key(group_key))
    if found is None:
        raise ResourceNotFound()
    return {**found, "notebook": None}


def _edit(auth: AuthContext, state: ServiceState, index: int | None, key: str | None, change: Any) -> dict[str, Any]:
    store = _store(state)
    index, key = _index(index), _key(key)
    with store.lock:
        group_state = store.with_groups(auth.project.id, [(index, key)])
        if (index, key) not in group_state.groups:
            raise ResourceNotFound()
        change(group_state, index, key)
        store.commit(group_state)
        return _group_body(group_state, index, key)


@router.post(GROUPS + "update_property/", response_model=Group, summary="Set one property of a group")
def update_group_property(
    request: Request, auth: Write, state: State, raw: Body, group_type_index: Index = None,
    group_key: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:  # fmt: skip
    data = parse_json_object(raw, request.headers.get("content-type"))
    for name in ("key", "value"):
        if name not in data:
            raise ValidationFailed("This field is required.", attr=name, code="required")
    if not isinstance(data["key"], str) or not data["key"]:
        raise ValidationFailed("The property key is a non-empty string.", attr="key")
    now = datetime.now(UTC)
    update = _writable({data["key"]: data["value"]}, "value")
    return _edit(auth, state, group_type_index, group_key, lambda s, i, k: s.upsert(i, k, update, now))


@router.post(GROUPS + "delete_property/", response_model=Group, summary="Remove one property of a group")
def delete_group_property(
    request: Request, auth: Write, state: State, raw: Body, group_type_index: Index = None,
    group_key: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:  # fmt: skip
    data = parse_json_object(raw, request.headers.get("content-type"))
    name = data.get("$unset")
    if not isinstance(name, str) or not name:
        raise ValidationFailed("This field is required.", attr="$unset", code="required")
    return _edit(auth, state, group_type_index, group_key, lambda s, i, k: s.unset(i, k, [name]))


@router.get(GROUPS + "property_definitions/", summary="The property keys of each group type, with counts")
def group_property_definitions(auth: Read, state: State) -> dict[str, list[dict[str, Any]]]:
    return property_definitions(state, auth.project)


@router.get(GROUPS + "property_values/", summary="The commonest values of one group property")
def group_property_values(
    auth: Read, state: State, group_type_index: Index = None,
    key: Annotated[str | None, Query(max_length=400)] = None,
    value: Annotated[str | None, Query(max_length=400)] = None,
) -> list[dict[str, Any]]:  # fmt: skip
    if not key:
        raise ValidationFailed("You must pass ?key= in this URL.", attr="key")
    return property_values(state, auth.project, _index(group_type_index), key, value)
