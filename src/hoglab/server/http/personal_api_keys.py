"""Personal API keys over HTTP, in the shape of PostHog's ``/api/personal_api_keys/``.

GET    /api/personal_api_keys/        the caller's keys (never their values)
POST   /api/personal_api_keys/        ``{"label", "scopes", "scoped_teams", "expires_at"}`` -> the key, ``value`` once
GET    /api/personal_api_keys/{id}/   one key
DELETE /api/personal_api_keys/{id}/   revoke it: from then on it answers 401 (204)

Managing keys needs a key with the ``*`` scope that reaches every project: a narrower key must not mint a
broader one. A key only sees and revokes keys of its own user. ``hoglab key list/create/revoke`` do the same
from a shell.

>>> KeyCreate.model_validate({"scopes": ["query:read"], "scoped_teams": [1]}).label
''
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response
from pydantic import Field, field_validator

from hoglab.schema._base import RequestModel

from ..errors import NotFound, PermissionDenied, ValidationFailed
from ..experiments.rules import to_utc
from ..state import ServiceState, get_state
from ..store import KeyRecord, validate_scopes
from ..store.db import utcnow
from ..validation import MAX_ID, validate_body
from .auth import KeyContext, authenticated_key
from .bodies import json_body_openapi, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["KeyCreate", "key_body", "router"]

router = SlashRouter(tags=["personal_api_keys"])
BASE = "/api/personal_api_keys/"
State = Annotated[ServiceState, Depends(get_state)]
KeyId = Annotated[int, Path(ge=1, le=MAX_ID, description="The key's id.")]


class KeyCreate(RequestModel):
    label: str = Field(default="", max_length=400)
    scopes: list[str] = Field(min_length=1, max_length=20)
    scoped_teams: list[Annotated[int, Field(ge=1, le=MAX_ID)]] | None = Field(default=None, max_length=1000)
    expires_at: datetime | None = None

    @field_validator("scopes")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        return list(validate_scopes(value))

    @field_validator("expires_at", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # ISO text only, as PostHog (Django REST framework) reads it: a number is not taken for a Unix time.
        if value is not None and not isinstance(value, str | datetime):
            raise ValueError("Datetime has wrong format. Use ISO 8601: YYYY-MM-DDThh:mm[:ss[.ffffff]][Z|+HH:MM].")
        return value

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # A naive time is UTC, as PostHog (Django's TIME_ZONE) reads one.
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def key_body(record: KeyRecord, value: str | None = None) -> dict[str, Any]:
    """PostHog's key object (``value`` only in the answer of a create), plus hoglab's ``status``."""
    body: dict[str, Any] = {
        "id": record.id,
        "label": record.label,
        "mask_value": record.mask_value,
        "scopes": list(record.scopes),
        "scoped_teams": None if record.project_ids is None else list(record.project_ids),
        "scoped_organizations": None,
        "created_at": record.created_at.isoformat(),
        "last_used_at": None if record.last_used_at is None else record.last_used_at.isoformat(),
        "expires_at": None if record.expires_at is None else record.expires_at.isoformat(),
        "revoked_at": None if record.revoked_at is None else record.revoked_at.isoformat(),
        "status": record.status(utcnow()),
    }
    if value is not None:
        body["value"] = value
    return body


def _manager(key: Annotated[KeyContext, Depends(authenticated_key)]) -> KeyContext:
    if "*" not in key.scopes or key.key.project_ids is not None:
        raise PermissionDenied("Managing personal API keys needs a key with scope '*' that reaches every project.")
    return key


Manager = Annotated[KeyContext, Depends(_manager)]


@router.get(BASE, summary="List personal API keys")
def list_keys(key: Manager, state: State) -> list[dict[str, Any]]:
    return [key_body(record) for record in state.store.keys.list(key.user.id)]


@router.post(BASE, status_code=201, summary="Create a personal API key", openapi_extra=json_body_openapi(KeyCreate))
def create_key(request: Request, key: Manager, state: State, raw: Annotated[bytes, Depends(raw_body)]) -> Any:
    payload = validate_body(KeyCreate, parse_json_object(raw, request.headers.get("content-type")))
    # In UTC, as it is stored: a 400 when the shift leaves the calendar (9999-12-31T23:59:59-14:00), as PostHog's
    # "Datetime value out of range." (Django REST framework's conversion), not an overflow later.
    expires_at = to_utc(payload.expires_at, "expires_at")
    if expires_at is not None and expires_at <= utcnow():
        raise ValidationFailed("expires_at must be in the future.", attr="expires_at")
    if payload.scoped_teams is not None:
        known = {p.id for p in state.store.projects.list(payload.scoped_teams)}
        missing = [p for p in payload.scoped_teams if p not in known]
        if missing:
            raise ValidationFailed(f"No project with id {missing[0]}.", attr="scoped_teams")
    record, value = state.store.keys.create(
        key.user.id, payload.scopes, payload.scoped_teams, label=payload.label, expires_at=expires_at
    )
    return key_body(record, value)


@router.get(BASE + "{id}/", summary="Retrieve a personal API key")
def retrieve_key(key: Manager, state: State, id: KeyId) -> dict[str, Any]:
    record = state.store.keys.get(id)
    if record is None or record.user_id != key.user.id:
        raise NotFound()
    return key_body(record)


@router.delete(BASE + "{id}/", status_code=204, response_class=Response, summary="Revoke a personal API key")
def revoke_key(key: Manager, state: State, id: KeyId) -> Response:
    if state.store.keys.revoke(id, key.user.id) is None:
        raise NotFound()
    return Response(status_code=204)
