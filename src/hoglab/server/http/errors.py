"""Every error, ours or the framework's, answered with PostHog's body ``{type, code, detail, attr}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hoglab.schema import validation_error_body
from hoglab.translate.errors import TranslationFailed

from ..errors import (
    APIException,
    Forbidden,
    InternalError,
    InvalidRequest,
    MethodNotAllowed,
    NotAuthenticated,
    ResourceNotFound,
    UnsupportedMediaType,
    ValidationFailed,
)

__all__ = ["error_response", "install_error_handlers"]

log = logging.getLogger("hoglab.server")


def error_response(error: APIException) -> JSONResponse:
    return JSONResponse(error.body().model_dump(), status_code=error.status_code, headers=error.headers)


_STATUS_TO_ERROR: dict[int, type[APIException]] = {
    400: InvalidRequest,
    401: NotAuthenticated,
    403: Forbidden,
    404: ResourceNotFound,
    405: MethodNotAllowed,
    415: UnsupportedMediaType,
}


def install_error_handlers(app: FastAPI) -> None:
    """Make every error, ours or the framework's, answer with PostHog's body."""

    @app.exception_handler(APIException)
    async def _api_error(_: Request, exc: APIException) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(TranslationFailed)
    async def _untranslatable(_: Request, exc: TranslationFailed) -> JSONResponse:
        return error_response(ValidationFailed.from_translation(exc))

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
        cls = _STATUS_TO_ERROR.get(exc.status_code, InternalError)
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
            await error_response(InternalError())(scope, receive, send)
