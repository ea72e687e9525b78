"""Errors the service answers with, each one ``{type, code, detail, attr}`` with the right status.

Their names are the service's own (DRF's ``APIException`` root), not the client's: the client's ``hoglab.APIError``,
``NotFound``, ``PermissionDenied`` and ``ServerError`` are what a caller receives from these answers.

Raise an ``APIException`` subclass anywhere below the routers; ``http/errors.py`` turns it (and FastAPI's own
validation and routing errors) into PostHog's error body. A field the HogQL writer refuses (``hoglab.translate``'s
``TranslationFailed``) is answered as a ``ValidationFailed``: :meth:`ValidationFailed.from_translation` is the one
mapping, used by the error handlers and the query service alike. Anything else is a 500 ``server_error`` whose
detail never leaks internals; it is logged with a traceback instead.

    APIException
     ├── ValidationFailed        400 validation_error / invalid_input (or a specific code)
     ├── InvalidRequest          400 invalid_request / parse_error
     ├── NotAuthenticated        401 authentication_error / not_authenticated
     ├── AuthenticationFailed    401 authentication_error / authentication_failed
     ├── Forbidden               403 authentication_error / permission_denied
     ├── ResourceNotFound        404 invalid_request / not_found
     ├── MethodNotAllowed        405 invalid_request / method_not_allowed
     ├── UnsupportedMediaType    415 invalid_request / unsupported_media_type
     ├── Throttled               429 throttled_error / throttled (+ Retry-After)
     ├── QueryTimedOut           504 server_error / query_timeout
     └── InternalError           500 server_error / error
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

from hoglab.errors import HoglabError
from hoglab.schema import ErrorBody, ErrorType
from hoglab.translate.errors import TranslationFailed

__all__ = [
    "APIException",
    "AuthenticationFailed",
    "Forbidden",
    "InternalError",
    "InvalidRequest",
    "MethodNotAllowed",
    "NotAuthenticated",
    "QueryTimedOut",
    "ResourceNotFound",
    "Throttled",
    "UnsupportedMediaType",
    "ValidationFailed",
]

log = logging.getLogger("hoglab.server")


class APIException(HoglabError):
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


class ValidationFailed(APIException):
    status_code = 400
    error_type = "validation_error"
    default_code = "invalid_input"
    default_detail = "Invalid input."

    @classmethod
    def from_translation(cls, error: TranslationFailed) -> ValidationFailed:
        """The 400 of a field ``hoglab.translate`` refused: the body the service gives its own refusals.

        >>> error = TranslationFailed("Expected a number, got 'x'.", attr="properties.0")
        >>> ValidationFailed.from_translation(error).body().attr
        'properties.0'
        """
        return cls(error.detail, attr=error.attr, code=error.code)


class InvalidRequest(APIException):
    status_code = 400
    error_type = "invalid_request"
    default_code = "parse_error"
    default_detail = "Malformed request."


class NotAuthenticated(APIException):
    status_code = 401
    error_type = "authentication_error"
    default_code = "not_authenticated"
    default_detail = "Authentication credentials were not provided."


class AuthenticationFailed(APIException):
    status_code = 401
    error_type = "authentication_error"
    default_code = "authentication_failed"
    default_detail = "Personal API key found in request Authorization header is invalid."


class Forbidden(APIException):
    status_code = 403
    error_type = "authentication_error"
    default_code = "permission_denied"
    default_detail = "You do not have permission to perform this action."


class ResourceNotFound(APIException):
    status_code = 404
    error_type = "invalid_request"
    default_code = "not_found"
    default_detail = "Not found."


class MethodNotAllowed(APIException):
    status_code = 405
    error_type = "invalid_request"
    default_code = "method_not_allowed"
    default_detail = "Method not allowed."


class UnsupportedMediaType(APIException):
    status_code = 415
    error_type = "invalid_request"
    default_code = "unsupported_media_type"
    default_detail = "Unsupported media type in request."


class Throttled(APIException):
    status_code = 429
    error_type = "throttled_error"
    default_code = "throttled"

    def __init__(self, wait_seconds: float, detail: str | None = None) -> None:
        self.wait_seconds = max(1, math.ceil(wait_seconds))
        super().__init__(
            detail or f"Request was throttled. Expected available in {self.wait_seconds} seconds.",
            headers={"Retry-After": str(self.wait_seconds)},
        )


class QueryTimedOut(APIException):
    status_code = 504
    error_type = "server_error"
    default_code = "query_timeout"
    default_detail = "Query has hit the max execution time before completing. Narrow the date range or simplify it."


class InternalError(APIException):
    pass
