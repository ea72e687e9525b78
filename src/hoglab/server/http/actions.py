"""Actions, with PostHog's semantics (``posthog/api/action.py``).

GET    /api/projects/{project_id}/actions/          action:read    every live action, newest first
POST   /api/projects/{project_id}/actions/          action:write   201
GET    /api/projects/{project_id}/actions/{id}/     action:read    deleted ones too
PUT    /api/projects/{project_id}/actions/{id}/     action:write   the fields given
PATCH  /api/projects/{project_id}/actions/{id}/     action:write   ``{"deleted": true}`` removes it
DELETE /api/projects/{project_id}/actions/{id}/     action:write   405: actions are removed with a PATCH

Steps are checked before anything is stored (``filters/actions.py`` ``check_steps``): a bad regular expression,
a property filter the translator refuses, a CSS ``selector`` on an ``$autocapture`` step are 400s naming the
field (``steps__0__url``). The list answers ``count``, ``next`` and ``previous`` besides ``results`` (PostHog's
document declares them, its server sends ``results`` alone); ``limit``/``offset`` page it when given.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from hoglab.schema import ActionWrite
from hoglab.translate.budget import CompileBudget

from ..errors import MethodNotAllowed, ResourceNotFound, ValidationFailed
from ..filters.actions import check_size, check_steps
from ..state import ServiceState, get_state
from ..store import ActionRecord, DuplicateActionName
from ..store.db import utcnow
from ..validation import MAX_ID, validate_body
from .auth import AuthContext, require_scope
from .bodies import MAX_PAGE_LIMIT, json_body_openapi, page_links, parse_json_object, raw_body
from .ratelimit import ACTION_WRITE_GROUP
from .routing import SlashRouter

__all__ = ["action_body", "router"]

router = SlashRouter(tags=["actions"])

BASE = "/api/projects/{project_id}/actions/"
Read = Annotated[AuthContext, Depends(require_scope("action:read"))]
# Writes compile the action (within the compile budget): their own rate, not the cheap endpoints' one.
Write = Annotated[AuthContext, Depends(require_scope("action:write", throttle=ACTION_WRITE_GROUP))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
ActionId = Annotated[int, Path(ge=1, le=MAX_ID, description="The action's id.")]
_NOT_NULL = ("description", "tags", "post_to_slack", "slack_message_format", "steps", "deleted")


def action_body(state: ServiceState, record: ActionRecord) -> dict[str, Any]:
    """PostHog's ``Action`` answer: the record and its creator."""
    user = state.store.users.get(record.created_by_id) if record.created_by_id is not None else None
    return {**record.to_api(), "created_by": None if user is None else user.to_api()}


def _fields(
    data: dict[str, Any], current: ActionRecord | None, timezone: str, budget: CompileBudget
) -> dict[str, Any]:
    """The columns a create or update body sets, checked; a 400 naming the field otherwise."""
    if isinstance(data.get("steps"), list):
        try:
            check_size(data["steps"])  # the caps first: a 100 x 100 body is refused before it is validated
        except ValidationFailed as exc:
            raise ValidationFailed(exc.detail, attr=(exc.attr or "steps").replace(".", "__"), code=exc.code) from None
    payload = validate_body(ActionWrite, data)
    given = payload.model_fields_set
    for name in _NOT_NULL:
        if name in given and getattr(payload, name) is None:
            raise ValidationFailed("This field may not be null.", attr=name, code="null")
    fields: dict[str, Any] = {}
    if "name" in given:
        if payload.name is not None and not payload.name.strip():
            raise ValidationFailed("This field may not be blank.", attr="name", code="blank")
        fields["name"] = payload.name
    for name in ("description", "tags", "post_to_slack", "slack_message_format", "deleted"):
        if name in given:
            fields[name] = getattr(payload, name)
    if "steps" in given and payload.steps is not None:
        raw = [step.model_dump(mode="json") for step in payload.steps]
        try:
            fields["steps"] = check_steps(raw, timezone=timezone, budget=budget)
        except ValidationFailed as exc:
            raise ValidationFailed(exc.detail, attr=(exc.attr or "steps").replace(".", "__"), code=exc.code) from None
        fields["bytecode_error"] = None  # the steps compile now, whatever a copy held before
    if "pinned_at" in given:
        # PostHog pins at the server's time (a client's clock is not trusted) and keeps an earlier pin.
        if payload.pinned_at is None:
            fields["pinned_at"] = None
        elif current is None or current.pinned_at is None:
            fields["pinned_at"] = utcnow()
    return fields


def _duplicate(exc: DuplicateActionName) -> ValidationFailed:
    return ValidationFailed(
        f"An action named {exc.name[:200]!r} already exists in this project (ID {exc.other_id}).",
        attr="name",
        code="unique",
    )


def _load(state: ServiceState, auth: AuthContext, action_id: int) -> ActionRecord:
    record = state.store.actions.get(auth.project.id, action_id)
    if record is None:
        raise ResourceNotFound()
    return record


@router.get(BASE, summary="List actions")
def list_actions(
    request: Request,
    auth: Read,
    state: State,
    limit: Annotated[int | None, Query(ge=1, description="Results per page (default: all of them).")] = None,
    offset: Annotated[int | None, Query(ge=0, le=2**62, description="Initial index of the results.")] = None,
) -> dict[str, Any]:
    actions = state.store.actions.list(auth.project.id)
    following = previous = None
    if limit is not None or offset:
        page_limit, page_offset = min(limit or MAX_PAGE_LIMIT, MAX_PAGE_LIMIT), offset or 0
        following, previous = page_links(request.url, total=len(actions), limit=page_limit, offset=page_offset)
        page = actions[page_offset : page_offset + page_limit]
    else:
        page = actions  # PostHog answers every action at once
    return {
        "count": len(actions),
        "next": following,
        "previous": previous,
        "results": [action_body(state, a) for a in page],
    }


@router.post(BASE, status_code=201, summary="Create an action", openapi_extra=json_body_openapi(ActionWrite))
def create_action(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
    data = parse_json_object(raw, request.headers.get("content-type"))
    fields = _fields(data, None, auth.project.timezone or "UTC", CompileBudget.from_config(state.config))
    fields.pop("bytecode_error", None)
    try:
        record = state.store.actions.create(auth.project.id, fields, created_by_id=auth.user.id)
    except DuplicateActionName as exc:
        raise _duplicate(exc) from None
    return action_body(state, record)


@router.get(BASE + "{id}/", summary="Retrieve an action")
def retrieve_action(auth: Read, state: State, id: ActionId) -> dict[str, Any]:
    return action_body(state, _load(state, auth, id))


def _update(request: Request, auth: AuthContext, state: ServiceState, action_id: int, raw: bytes) -> dict[str, Any]:
    current = _load(state, auth, action_id)
    data = parse_json_object(raw, request.headers.get("content-type"))
    fields = _fields(data, current, auth.project.timezone or "UTC", CompileBudget.from_config(state.config))
    try:
        record = state.store.actions.update(auth.project.id, action_id, fields)
    except DuplicateActionName as exc:
        raise _duplicate(exc) from None
    if record is None:
        raise ResourceNotFound()
    return action_body(state, record)


@router.patch(BASE + "{id}/", summary="Update an action", openapi_extra=json_body_openapi(ActionWrite))
def update_action(request: Request, auth: Write, state: State, id: ActionId, raw: Body) -> dict[str, Any]:
    return _update(request, auth, state, id, raw)


@router.put(BASE + "{id}/", summary="Replace an action's given fields", openapi_extra=json_body_openapi(ActionWrite))
def replace_action(request: Request, auth: Write, state: State, id: ActionId, raw: Body) -> dict[str, Any]:
    return _update(request, auth, state, id, raw)


@router.delete(BASE + "{id}/", status_code=405, summary="Actions are not deleted: PATCH deleted=true")
def delete_action(auth: Write, id: ActionId) -> None:
    # Whatever the id, as PostHog's: the answer says nothing of which actions exist.
    raise MethodNotAllowed(
        'Hard delete of an action is not allowed: PATCH {"deleted": true} to remove it.', code="method_not_allowed"
    )
