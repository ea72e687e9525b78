"""An error answer to the matching :mod:`hoglab.errors` class, chosen by the body's ``type``/``code`` first."""

from __future__ import annotations

from typing import Any

import httpx

from ..errors import (
    APIError,
    AuthenticationError,
    NotFound,
    PermissionDenied,
    QueryError,
    RateLimited,
    ServerError,
    ValidationError,
)
from ._retry import parse_retry_after

__all__ = ["error_from_response", "json_or_none"]

_AUTH_CODES = frozenset({"authentication_failed", "not_authenticated", "invalid_token", "invalid_api_key"})
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid", "cf-ray")


def json_or_none(response: httpx.Response) -> Any:
    """The body as JSON, or ``None`` when it is empty or not JSON (a proxy's HTML error page)."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _pick_class(status: int, type_: str | None, code: str | None, query_endpoint: bool) -> type[APIError]:
    if status == 429 or type_ == "throttled_error":
        return RateLimited
    if type_ == "authentication_error":
        # PostHog answers some bad keys with 403 and some missing scopes with 401: the code tells them apart.
        if code in _AUTH_CODES:
            return AuthenticationError
        return PermissionDenied if code == "permission_denied" or status == 403 else AuthenticationError
    if status == 401:
        return AuthenticationError
    if status == 403:
        return PermissionDenied
    if status == 404 or code == "not_found":
        return NotFound
    if status >= 500:
        return ServerError
    if status in (400, 422) or type_ == "validation_error":
        return QueryError if query_endpoint else ValidationError
    return APIError


def error_from_response(response: httpx.Response, *, query_endpoint: bool = False) -> APIError:
    """Build the exception for an error answer; the request's headers (and so the API key) are never read.

    >>> r = httpx.Response(403, json={"type": "authentication_error", "code": "authentication_failed",
    ...                               "detail": "Personal API key found in request Authorization header is invalid.",
    ...                               "attr": None}, request=httpx.Request("GET", "http://h/api/projects/"))
    >>> type(error_from_response(r)).__name__
    'AuthenticationError'
    """
    body = json_or_none(response)
    type_ = code = attr = None
    detail: str | None = None
    if isinstance(body, dict):
        status_body = body.get("query_status")
        if isinstance(status_body, dict) and status_body.get("error"):
            # GET /query/:id of a failed async query: 400 with its message, 500 without one.
            detail = status_body.get("error_message") or "The query failed on the server."
            code = "query_failed"
        else:
            type_ = body.get("type") if isinstance(body.get("type"), str) else None
            code = body.get("code") if isinstance(body.get("code"), str) else None
            attr = body.get("attr") if isinstance(body.get("attr"), str) else None
            raw = body.get("detail", body.get("message"))
            detail = raw if isinstance(raw, str) or raw is None else str(raw)
    elif response.text:
        detail = response.text.strip()[:300]
    request = response.request
    cls = _pick_class(response.status_code, type_, code, query_endpoint)
    kwargs: dict[str, Any] = {
        "type": type_,
        "code": code,
        "detail": detail or response.reason_phrase or None,
        "attr": attr,
        "method": request.method,
        "path": request.url.path,
        "request_id": next((response.headers[h] for h in _REQUEST_ID_HEADERS if h in response.headers), None),
        "body": body,
    }
    if cls is RateLimited:
        return RateLimited(
            response.status_code, retry_after=parse_retry_after(response.headers.get("retry-after")), **kwargs
        )
    return cls(response.status_code, **kwargs)
