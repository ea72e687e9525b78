"""Personal API keys, scopes and project access, as PostHog's ``PersonalAPIKeyAuthentication`` and
``APIScopePermission``.

A route that works on a project declares ``auth: AuthContext = Depends(require_scope("experiment:read"))``. The
dependency answers, in this order (as PostHog):

1. no key: 401 ``not_authenticated``; a key we don't know: 401 ``authentication_failed``;
2. a key limited to other projects: 403 "API key does not have access to the requested project: ID {id}.";
3. a key without the scope: 403 "API key missing required scope '{scope}'" (``*`` grants all, write implies read);
4. the per-key rate limit: 429 with ``Retry-After``;
5. a project that doesn't exist: 404.

A revoked key is invalid (401), an expired one a 401 saying so. The key is read from
``Authorization: Bearer <key>``, else from a ``personal_api_key`` field of a JSON body,
else from the ``personal_api_key`` query parameter.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Path, Request

from ..errors import AuthenticationFailed, NotAuthenticated, NotFound, PermissionDenied, ValidationFailed
from ..state import ServiceState, get_state
from ..store import KeyRecord, ProjectRecord, UserRecord
from ..store.db import utcnow
from ..validation import MAX_ID
from .ratelimit import DEFAULT_GROUP

__all__ = [
    "CURRENT_PROJECT",
    "AuthContext",
    "KeyContext",
    "authenticated_key",
    "has_scope",
    "require_scope",
]

CURRENT_PROJECT = "@current"
_BEARER = re.compile(r"^Bearer\s+(\S.*)$")
_PROJECT_ID = re.compile(r"^[0-9]{1,30}$")  # ASCII digits only: int("１") is 1
_WWW_AUTHENTICATE = {"WWW-Authenticate": 'Bearer realm="api"'}

KeySource = Literal["Authorization header", "body", "query string"]


def has_scope(scopes: frozenset[str] | set[str] | tuple[str, ...], required: str) -> bool:
    """Whether ``scopes`` grant ``required``: ``*`` grants everything and ``x:write`` grants ``x:read``.

    >>> has_scope(("experiment:write",), "experiment:read"), has_scope(("experiment:read",), "experiment:write")
    (True, False)
    """
    if "*" in scopes or required in scopes:
        return True
    obj, _, level = required.partition(":")
    return level == "read" and f"{obj}:write" in scopes


@dataclass(frozen=True)
class KeyContext:
    """Who is calling: the key, its owner and its scopes."""

    user: UserRecord
    key: KeyRecord
    scopes: frozenset[str]

    def reaches(self, project_id: int) -> bool:
        return self.key.project_ids is None or project_id in self.key.project_ids

    @property
    def rate_limit_identity(self) -> str:
        return f"key:{self.key.id}"


@dataclass(frozen=True)
class AuthContext(KeyContext):
    """A ``KeyContext`` cleared for one project."""

    project: ProjectRecord


async def _read_credentials(request: Request) -> tuple[str, KeySource] | None:
    header = request.headers.get("authorization")
    if header:
        match = _BEARER.match(header.strip())
        if match:
            return match.group(1).strip(), "Authorization header"
    if request.method in {"POST", "PUT", "PATCH", "DELETE"}:
        body = await request.body()  # Starlette caches it, the route reads it again for free
        if body and len(body) < 1_000_000 and b"personal_api_key" in body:
            try:
                data = json.loads(body)
            except (ValueError, RecursionError):
                data = None
            if isinstance(data, dict) and isinstance(data.get("personal_api_key"), str):
                return data["personal_api_key"], "body"
    query_key = request.query_params.get("personal_api_key")
    if query_key:
        return query_key, "query string"
    return None


def _authenticate(state: ServiceState, credentials: tuple[str, KeySource] | None) -> KeyContext:
    if credentials is None:
        raise NotAuthenticated(headers=_WWW_AUTHENTICATE)
    plaintext, source = credentials
    key = state.store.keys.authenticate(plaintext) if plaintext.isascii() else None
    user = state.store.users.get(key.user_id) if key is not None else None
    if key is None or user is None:
        # A revoked key reads as PostHog's deleted one (invalid); an expired one says so, so its owner knows why.
        known = state.store.keys.find(plaintext) if key is None and plaintext.isascii() else None
        why = "has expired" if known is not None and known.status(utcnow()) == "expired" else "is invalid"
        raise AuthenticationFailed(f"Personal API key found in request {source} {why}.", headers=_WWW_AUTHENTICATE)
    return KeyContext(user=user, key=key, scopes=frozenset(key.scopes))


async def _credentials_dependency(request: Request) -> tuple[str, KeySource] | None:
    return await _read_credentials(request)


Credentials = Annotated[tuple[str, KeySource] | None, Depends(_credentials_dependency)]


def authenticated_key(request: Request, credentials: Credentials) -> KeyContext:
    """Dependency for routes outside a project (``GET /api/projects/``): a valid key, any scope, rate limited."""
    state = get_state(request)
    context = _authenticate(state, credentials)
    state.limiter.check(context.rate_limit_identity, DEFAULT_GROUP)
    return context


def _resolve_project_id(state: ServiceState, context: KeyContext, raw: str) -> int | None:
    """The numeric id named by the path, ``None`` when it can't exist (bigger than any id, no project yet)."""
    if raw == CURRENT_PROJECT:
        if context.key.project_ids:
            return min(context.key.project_ids)
        projects = state.store.projects.list()
        return projects[0].id if projects else None
    if not _PROJECT_ID.match(raw):
        raise ValidationFailed(
            f"Project id must be an integer or {CURRENT_PROJECT}, got {raw[:50]!r}.", attr="project_id"
        )
    value = int(raw)
    return value if value <= MAX_ID else None


@functools.cache
def require_scope(
    scope: str | None, *, throttle: str | None = DEFAULT_GROUP
) -> Callable[[Request, str, tuple[str, KeySource] | None], AuthContext]:
    """A dependency for routes under ``/api/projects/{project_id}/`` (``@current`` is the key's first project).

    ``scope=None`` checks the key and project access only. ``throttle`` names the rate-limit group charged
    (``None``: none). The same arguments give the same function, so FastAPI runs it once per request.

    >>> @router.get("/api/projects/{project_id}/experiments/")  # doctest: +SKIP
    ... def list_experiments(auth: AuthContext = Depends(require_scope("experiment:read"))):
    ...     return auth.project.id
    """

    def dependency(
        request: Request,
        project_id: Annotated[str, Path(description=f"A project id, or {CURRENT_PROJECT}.")],
        credentials: Credentials,
    ) -> AuthContext:
        state = get_state(request)
        context = _authenticate(state, credentials)
        resolved = _resolve_project_id(state, context, project_id)
        if resolved is not None and not context.reaches(resolved):
            raise PermissionDenied(f"API key does not have access to the requested project: ID {resolved}.")
        if resolved is None and context.key.project_ids is not None and project_id != CURRENT_PROJECT:
            raise PermissionDenied(f"API key does not have access to the requested project: ID {project_id}.")
        if scope is not None and not has_scope(context.scopes, scope):
            raise PermissionDenied(f"API key missing required scope '{scope}'")
        if throttle is not None:
            state.limiter.check(context.rate_limit_identity, throttle)
        project = state.store.projects.get(resolved) if resolved is not None else None
        if project is None:
            raise NotFound("Project not found." if resolved is not None else "No project found for this key.")
        return AuthContext(user=context.user, key=context.key, scopes=context.scopes, project=project)

    dependency.__name__ = f"require_scope_{(scope or 'any').replace(':', '_').replace('*', 'all')}"
    return dependency
