"""Every failure while answering a query, as the HTTP error PostHog gives for it (docs/api.md, "Query")."""

from __future__ import annotations

import logging
import re

from hoglab.schema import ErrorBody

from ..engine.base import EngineError, MemoryLimitExceeded, QueryCancelled, QueryError, QueryTimeout, TooManyRows
from ..engine.memory import AnswerMemoryExceeded
from ..errors import APIError, QueryTimedOut, ServerError, Throttled, ValidationFailed
from ..hogql import HogQLError
from ..hogql.budget import CompileBudgetExceeded
from .fairness import ProjectBusy
from .jobs import TooManyQueries

__all__ = ["AnswerTooLarge", "EngineFailed", "HogQLInvalid", "MemoryLimitReached", "QueryWasCancelled", "api_error",
           "describe_failure", "is_result_bytes_overflow", "scrub_engine_message"]  # fmt: skip

log = logging.getLogger("hoglab.server.query")


class HogQLInvalid(ValidationFailed):
    """A HogQL statement the compiler refuses: the body also says where (``start``/``end``/``line``/``column``)."""

    def __init__(self, error: HogQLError) -> None:
        super().__init__(str(error))
        self.position = {k: v for k, v in error.to_dict().items() if k != "message"}

    def body(self) -> ErrorBody:
        return ErrorBody(type=self.error_type, code=self.code, detail=self.detail, attr=self.attr, **self.position)


class QueryWasCancelled(APIError):
    status_code = 400
    error_type = "invalid_request"
    default_code = "query_cancelled"
    default_detail = "The query was cancelled."


class MemoryLimitReached(ValidationFailed):
    """A memory limit stopped the query: its own, its project's share of the budget, or the whole budget's."""

    default_code = "memory_limit_exceeded"
    default_detail = (
        "Query has reached the max memory limit before completing. Narrow the date range, aggregate before "
        "selecting rows, or select fewer columns."
    )

    @classmethod
    def of(cls, exc: MemoryLimitExceeded) -> MemoryLimitReached:
        """The detail says whose limit it was (``exc.scope``), never the engine's internals."""
        if isinstance(exc, AnswerMemoryExceeded):
            return cls(f"{exc.message} Select fewer rows or columns, or wait for this project's other queries.")
        if exc.scope == "project":
            return cls(
                "This project's queries running at once reached its share of the service's memory budget "
                "(memory_budget). Narrow the date range, aggregate before selecting rows, or run fewer queries "
                "at once."
            )
        if exc.scope == "process":
            return cls(
                "The service's memory budget (memory_budget) was reached while the query ran. Try again shortly."
            )
        return cls()


class AnswerTooLarge(ValidationFailed):
    """An answer over the service's ``max_result_bytes``: refused whole (never cut short), naming the limit."""

    default_code = "max_result_bytes_exceeded"

    def __init__(self, limit: int | None, name: str = "max_result_bytes") -> None:
        size = f" ({limit} bytes)" if limit else ""
        super().__init__(
            f"The answer is larger than the {name} limit{size}. Select fewer rows or columns, or "
            "aggregate before selecting."
        )


def is_result_bytes_overflow(exc: BaseException) -> bool:
    """Whether the engine stopped a result at ``max_result_bytes`` (rather than at ``max_result_rows``).

    >>> is_result_bytes_overflow(TooManyRows("Limit for result exceeded, max bytes: 9.54 MiB, current bytes: 9.6"))
    True
    """
    return isinstance(exc, TooManyRows) and "max bytes" in exc.message


class EngineFailed(ServerError):
    default_detail = "The engine failed while executing the query."


_CUT_MARKERS = (" In scope ", "In scope SELECT", " while processing query", " While processing ")
_QUALIFIERS = re.compile(r"\b(?:__hq_\w+|hoglab)\.")


def scrub_engine_message(message: str) -> str:
    """An engine message for the user: without the compiled statement it quotes (which shows the guard views,
    internal aliases and database) and without internal qualifiers.

    >>> scrub_engine_message("Illegal types String and UInt8 of arguments of function plus: In scope SELECT ...")
    'Illegal types String and UInt8 of arguments of function plus.'
    """
    text = message
    for marker in _CUT_MARKERS:
        at = text.find(marker)
        if at >= 0:
            text = text[:at]
    text = _QUALIFIERS.sub("", text)
    for secret in ("team_id", "__hq"):
        at = text.find(secret)
        if at >= 0:
            text = text[:at]
    text = text.strip().rstrip(":;,").strip()
    if not text:
        return "The engine could not run the query."
    return text if text.endswith((".", "?", "!", ")")) else text + "."


def api_error(exc: BaseException) -> APIError:
    """The HTTP error for a failure while answering a query (the table of errors in docs/api.md, "Query")."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, CompileBudgetExceeded):
        return ValidationFailed(exc.message, attr="query", code="query_too_complex")
    if isinstance(exc, HogQLError):
        if exc.internal:
            log.error("HogQL compiler failure surfaced as a 400: %s", exc)
        return HogQLInvalid(exc)
    if isinstance(exc, QueryTimeout):
        return QueryTimedOut()
    if isinstance(exc, MemoryLimitExceeded):
        return MemoryLimitReached.of(exc)
    if isinstance(exc, QueryCancelled):
        return QueryWasCancelled()
    if is_result_bytes_overflow(exc):
        return AnswerTooLarge(None)
    if isinstance(exc, TooManyRows):
        return ValidationFailed(scrub_engine_message(exc.message), code="too_many_rows")
    if isinstance(exc, QueryError):
        return ValidationFailed(scrub_engine_message(exc.message), code=(exc.name or "invalid_input").lower())
    if isinstance(exc, TooManyQueries):
        return Throttled(5, str(exc))
    if isinstance(exc, ProjectBusy):
        return Throttled(2, str(exc))
    if isinstance(exc, EngineError):
        log.error("engine failure while answering a query: %s", exc)
        return EngineFailed()
    if isinstance(exc, ValueError):  # runners signal a bad combination of query fields this way
        return ValidationFailed(str(exc) or "Invalid query.")
    log.error("unexpected failure while answering a query", exc_info=exc)
    return ServerError()


def describe_failure(exc: BaseException) -> str | None:
    """A failed async query's ``error_message``: what the synchronous request would have said, or ``None`` for
    an internal failure (then ``GET /query/:id`` answers 500, as PostHog)."""
    error = api_error(exc)
    if error.status_code >= 500 and not isinstance(error, QueryTimedOut):
        return None
    return error.detail
