"""Errors the service answers with, each one ``{type, code, detail, attr}`` with the right status.

Raise an ``APIError`` subclass anywhere below the routers; ``install_error_handlers`` turns it (and FastAPI's
own validation and routing errors) into PostHog's error body. Anything else is a 500 ``server_error`` whose
detail never leaks internals; it is logged with a traceback instead.

    APIError
     ├── ValidationFailed        400 validation_error / invalid_input (or a specific code)
     ├── InvalidRequest          400 invalid_request / parse_error
     ├── NotAuthenticated        401 authentication_error / not_authenticated
     ├── AuthenticationFailed    401 authentication_error / authentication_failed
     ├── PermissionDenied        403 authentication_error / permission_denied
     ├── NotFound                404 invalid_request / not_found
     ├── MethodNotAllowed        405 invalid_request / method_not_allowed
     ├── UnsupportedMediaType    415 invalid_request / unsupported_media_type
     ├── Throttled               429 throttled_error / throttled (+ Retry-After)
     ├── QueryTimedOut           504 server_error / query_timeout
     └── ServerError             500 server_error / error
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hoglab.schema import ErrorBody, ErrorType, validation_error_body

__all__ = [
    "APIError",
    "AuthenticationFailed",
    "InvalidRequest",
    "MethodNotAllowed",
    "NotAuthenticated",
    "NotFound",
    "PermissionDenied",
    "QueryTimedOut",
    "ServerError",
    "Throttled",
    "UnsupportedMediaType",
    "ValidationFailed",
    "error_response",
    "install_error_handlers",
]

log = logging.getLogger("hoglab.server")


class APIError(Exception):
    status_code: ClassVar[int] = 500
    error_type: ClassVar[ErrorType] = "server_error"
    default_code: ClassVar[str] = "error"
    default_detail: ClassVar[str] = "A server error occurred."

    def __init__(
        self,
        detail: str | None = None,
        *,
        attr: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.detail = detail or self.default_detail
        self.attr = attr
        self.code = code or self.default_code
        self.headers = headers or {}
        super().__init__(self.detail)

    def body(self) -> ErrorBody:
        return ErrorBody(type=self.error_type, code=self.code, detail=self.detail, attr=self.attr)


class ValidationFailed(APIError):
    status_code = 400
    error_type = "validation_error"
    default_code = "invalid_input"
    default_detail = "Invalid input."


class InvalidRequest(APIError):
    status_code = 400
    error_type = "invalid_request"
    default_code = "parse_error"
    default_detail = "Malformed request."


class NotAuthenticated(APIError):
    status_code = 401
    error_type = "authentication_error"
    default_code = "not_authenticated"
    default_detail = "Authentication credentials were not provided."


class AuthenticationFailed(APIError):
    status_code = 401
    error_type = "authentication_error"
    default_code = "authentication_failed"
    default_detail = "Personal API key found in request Authorization header is invalid."


class PermissionDenied(APIError):
    status_code = 403
    error_type = "authentication_error"
    default_code = "permission_denied"
    default_detail = "You do not have permission to perform this action."


class NotFound(APIError):
    status_code = 404
    error_type = "invalid_request"
    default_code = "not_found"
    default_detail = "Not found."


class MethodNotAllowed(APIError):
    status_code = 405
    error_type = "invalid_request"
    default_code = "method_not_allowed"
    default_detail = "Method not allowed."


class UnsupportedMediaType(APIError):
    status_code = 415
    error_type = "invalid_request"
    default_code = "unsupported_media_type"
    default_detail = "Unsupported media type in request."


class Throttled(APIError):
    status_code = 429
    error_type = "throttled_error"
    default_code = "throttled"

    def __init__(self, wait_seconds: float, detail: str | None = None) -> None:
        self.wait_seconds = max(1, math.ceil(wait_seconds))
        super().__init__(
            detail or f"Request was throttled. Expected available in {self.wait_seconds} seconds.",
            headers={"Retry-After": str(self.wait_seconds)},
        )


class QueryTimedOut(APIError):
    status_code = 504
    error_type = "server_error"
    default_code = "query_timeout"
    default_detail = "Query has hit the max execution time before completing. Narrow the date range or simplify it."


class ServerError(APIError):
    pass


def error_response(error: APIError) -> JSONResponse:
    return JSONResponse(error.body().model_dump(), status_code=error.status_code, headers=error.headers)


_STATUS_TO_ERROR: dict[int, type[APIError]] = {
    400: InvalidRequest,
    401: NotAuthenticated,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
    415: UnsupportedMediaType,
}


def install_error_handlers(app: FastAPI) -> None:
    """Make every error, ours or the framework's, answer with PostHog's body."""

    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors: list[Any] = list(exc.errors())
        first = errors[0] if errors else {}
        loc = tuple(p for p in first.get("loc", ()) if p not in {"body", "query", "path"})
        attr = "__".join(str(p) for p in loc) or None
        if first.get("type") == "json_invalid":
            return error_response(InvalidRequest("Malformed JSON in request body."))
        detail = str(first.get("msg", "Invalid input.")).removeprefix("Value error, ")
        return error_response(ValidationFailed(detail, attr=attr))

    @app.exception_handler(ValidationError)
    async def _pydantic_validation(_: Request, exc: ValidationError) -> JSONResponse:
        body = validation_error_body(exc)
        return error_response(ValidationFailed(body.detail, attr=body.attr))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        cls = _STATUS_TO_ERROR.get(exc.status_code, ServerError)
        detail = exc.detail if isinstance(exc.detail, str) and exc.detail not in {"Not Found"} else None
        error = cls(detail)
        return JSONResponse(
            error.body().model_dump(),
            status_code=exc.status_code,
            headers=dict(exc.headers or {}),
        )

    app.add_middleware(_UnexpectedErrors)


class _UnexpectedErrors:
    """Answer an unexpected exception with the 500 body, and keep the connection usable.

    (An ``exception_handler(Exception)`` would run in Starlette's outermost middleware, which re-raises after
    answering, so the server drops the keep-alive connection and the client's next request on it fails.)
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await error_response(ServerError())(scope, receive, send)
