"""Every error hoglab raises on purpose, in one hierarchy rooted at :class:`HoglabError`.

``except hoglab.HoglabError`` catches them all; anything else is a bug. Errors that specialise a builtin also
inherit it (a bad argument is a ``ValueError``, an unknown id a ``LookupError``). The client's errors live here;
the other parts define theirs beside their code, under the same root::

    HoglabError                          (Exception)
    │   -- the client (this module) --
    ├── ConfigurationError               (also ValueError)   no host/key/project, or an ambiguous project
    ├── InvalidArgument                  (also ValueError)   a builder or method argument is wrong; no request sent
    │   └── InvalidArgumentType          (also TypeError)
    ├── TransportError                   (also ConnectionError) the service could not be reached (after retries)
    │   └── AnswerTimeout                (also TimeoutError) an answer took longer than ``answer_timeout``/deadline
    ├── RedirectRefused                                      a redirect to another host (never followed)
    ├── RemoteAnswerError                (also ValueError)   an answer unusable as what it should be (``hoglab pull``)
    ├── QueryTimeout                     (also TimeoutError) an async query did not finish within ``timeout``
    ├── QueryWarning                     (also UserWarning)  warned, not raised: an answer's warning (a property
    │                                                        or event the project has never seen)
    ├── APIError                                             the service answered with an error body
    │   ├── AuthenticationError                              bad or missing personal API key
    │   ├── PermissionDenied             (also PermissionError) key lacks a scope or the project
    │   ├── NotFound                     (also LookupError)  no such experiment, project or query id
    │   ├── ValidationError              (also ValueError)   the body was refused; ``attr`` names the field
    │   │   └── QueryError                                   a HogQL/SQL mistake or a failed query
    │   ├── RateLimited                                      429; ``retry_after`` in seconds (or None)
    │   └── ServerError                                      5xx
    │   -- statistics (hoglab.stats) --
    ├── StatsError                                           hoglab.stats._errors
    │   ├── StatsInputError              (also ValueError)   counts or settings that cannot be analysed
    │   │   └── PostHogStatsError                            a case PostHog's engine refuses
    │   └── StatsComputationError        (also ArithmeticError)
    │   -- the command line --
    ├── CommandError                                         hoglab.cli.common: one line, exit status 1 or 2
    │   -- the notebook --
    ├── notebook.magic.placeholders.UndefinedName (also NameError) a {name} of a %%hogql cell not defined
    │   -- the HogQL writer both halves call (hoglab.translate) --
    ├── translate.errors.HogQLError      (also ValueError)   a statement refused, with its position
    ├── translate.errors.TranslationFailed                   a field that can't be written as HogQL (attr); the
    │                                                        service answers it as its ValidationFailed
    │   -- the service (hoglab.server; the answer a user gets is always an APIException's body) --
    ├── server.errors.APIException                           answered as {type, code, detail, attr}
    │   ├── ValidationFailed  (400) ── query.failures.HogQLInvalid, MemoryLimitReached
    │   ├── InvalidRequest (400) · NotAuthenticated, AuthenticationFailed (401) · Forbidden (403)
    │   ├── ResourceNotFound (404) · MethodNotAllowed (405) · UnsupportedMediaType (415) ·
    │   │   http.capture.PayloadTooLarge
    │   ├── Throttled (429, Retry-After) · QueryTimedOut (504) · query.failures.QueryWasCancelled
    │   └── InternalError (500) ── query.failures.EngineFailed
    ├── server.engine.base.EngineError                       the engine refused or failed a statement
    │   └── StatementFailed, StatementTimedOut, MemoryLimitExceeded, TooManyRows, QueryCancelled,
    │       errors.EngineInUse, materialized.MaterializeError (a key that cannot become a column)
    ├── server.ingest.errors.IngestError (also ValueError)   events or files that cannot be stored
    │   └── LoadError
    ├── server.store.db.StoreError · server.store.flags.DuplicateFlagKey
    ├── server.query.jobs.TooManyQueries                     the async queue is full (answered 429)
    └── server.flags: request.FlagsRequestError, properties.UnsupportedFilter,
        cohorts.CohortNotComputable (also ValueError)

Service errors below the HTTP layer are turned into an ``APIException`` in one place each (``query/failures.py``
for queries, the routers for the rest), so a user's mistake is a 4xx with a body, never a 500.

An :class:`APIError` carries the answer's ``status``, its PostHog error body (``type``, ``code``, ``detail``,
``attr``), the request's ``method`` and ``path`` (never its headers: the API key stays out of messages) and the
server's request id when it sent one. Branch on the class; the class is chosen from the body's ``type``/``code``
first and the status second, because PostHog answers some bad keys with 403 rather than 401.

>>> err = NotFound(404, detail="Not found.", method="GET", path="/api/projects/1/experiments/9/")
>>> isinstance(err, LookupError), err.status, str(err)
(True, 404, 'Not found. (404 GET /api/projects/1/experiments/9/)')
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APIError",
    "AnswerTimeout",
    "AuthenticationError",
    "ConfigurationError",
    "HoglabError",
    "InvalidArgument",
    "InvalidArgumentType",
    "NotFound",
    "PermissionDenied",
    "QueryError",
    "QueryTimeout",
    "QueryWarning",
    "RateLimited",
    "RedirectRefused",
    "RemoteAnswerError",
    "ServerError",
    "TransportError",
    "ValidationError",
]


class HoglabError(Exception):
    """The root: ``except hoglab.HoglabError`` catches everything the client raises on purpose."""


class ConfigurationError(HoglabError, ValueError):
    """The client is missing its host, API key or project, or the project cannot be chosen alone."""


class InvalidArgument(HoglabError, ValueError):
    """A wrong argument, found in Python before any request; ``argument`` names it.

    >>> InvalidArgument("interval: expected one of 'hour', 'day'", argument="interval").argument
    'interval'
    """

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument of the wrong type (also a ``TypeError``)."""


class TransportError(HoglabError, ConnectionError):
    """The request never got an answer (connection refused, timeout, broken connection), retries included."""


class AnswerTimeout(TransportError, TimeoutError):
    """An answer did not arrive in full in time, or the client's ``deadline`` passed.

    The client's ``answer_timeout`` bounds each answer (a remote that stalls or trickles a byte at a time). Not
    retried: the same remote would do it again.
    """


class RedirectRefused(HoglabError):
    """The service answered with a redirect to another host.

    The client follows redirects within its own host only: another host would not get the API key (httpx drops
    it), and its answer would not be this project's. ``location`` is where the redirect pointed.
    """

    def __init__(self, message: str, *, location: str) -> None:
        super().__init__(message)
        self.location = location


_UNSAID: Any = object()  # a RemoteAnswerError that does not quote what came


class RemoteAnswerError(HoglabError, ValueError):
    """A remote answered something its API does not answer there, or a setting that cannot be stored.

    Raised by ``hoglab pull``, with the ``endpoint`` (``"POST /api/projects/2/query/ (events)"``), the ``field``
    (``"results[3][4] (timestamp)"``), what was ``expected`` and what came (``got``, shortened).

    >>> str(RemoteAnswerError("timezone", "an IANA time zone such as 'Europe/Berlin'", "Mars/Olympus",
    ...                       endpoint="GET /api/projects/2/"))
    "GET /api/projects/2/: timezone: expected an IANA time zone such as 'Europe/Berlin', got 'Mars/Olympus'"
    """

    def __init__(self, field: str | None, expected: str, got: Any = _UNSAID, *, endpoint: str | None = None) -> None:
        self.field = field
        self.expected = expected
        self.got = got
        self.endpoint = endpoint
        super().__init__(self._message())

    def _message(self) -> str:
        where = ": ".join(part for part in (self.endpoint, self.field) if part)
        got = "" if self.got is _UNSAID else f", got {shown(self.got)}"
        return f"{where + ': ' if where else ''}expected {self.expected}{got}"

    def located(self, endpoint: str) -> RemoteAnswerError:
        """This error said of ``endpoint`` (when it does not name one yet)."""
        if self.endpoint is None:
            self.endpoint = endpoint
            self.args = (self._message(),)
        return self


class Description(str):
    """What came, described rather than quoted (``"an empty body (HTTP 200)"``): shown as it is."""

    __slots__ = ()


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as an error message quotes it: its repr, shortened to ``limit`` characters.

    A remote's answer may be megabytes. Text of bytes is shown as text; a :class:`Description` as it is.

    >>> shown("x" * 100, 10), shown(3), shown(b"<html>"), shown(Description("an empty body"))
    ("'xxxxxxxx…", '3', "'<html>'", 'an empty body')
    """
    if isinstance(value, Description):
        return str(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class QueryTimeout(HoglabError, TimeoutError):
    """An asynchronous query was still running when ``timeout`` ran out; it keeps running on the server.

    ``job`` is the :class:`~hoglab.QueryJob`: wait again with ``job.result()`` or stop it with ``job.cancel()``.
    """

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job = job


class QueryWarning(HoglabError, UserWarning):
    """An answer came with a warning (PostHog's ``metadata.warnings``).

    For example a property the project has never seen, which reads as NULL. It is issued with
    :func:`warnings.warn`, and kept in the frame's ``attrs["warnings"]``.

    ``warnings.simplefilter("error", hoglab.QueryWarning)`` makes them errors; ``"ignore"`` silences them.
    """


class APIError(HoglabError):
    """The service answered with an error status."""

    def __init__(
        self,
        status: int,
        *,
        type: str | None = None,
        code: str | None = None,
        detail: str | None = None,
        attr: str | None = None,
        method: str | None = None,
        path: str | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.type = type
        self.code = code
        self.detail = detail or f"HTTP {status}"
        self.attr = attr
        self.method = method
        self.path = path
        self.request_id = request_id
        self.body = body
        super().__init__(self._message())

    def _message(self) -> str:
        where = " ".join(p for p in (str(self.status), self.method, self.path) if p)
        extra = f", attr={self.attr}" if self.attr else ""
        rid = f", request id {self.request_id}" if self.request_id else ""
        return f"{self.detail} ({where}{extra}{rid})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions with keyword-only fields do not pickle by default; keep them picklable for multiprocessing.
        return (_rebuild, (type(self), self.status, self.__dict__.copy()))


def _rebuild(cls: type[APIError], status: int, state: dict[str, Any]) -> APIError:
    err = cls.__new__(cls)
    err.__dict__.update(state)
    Exception.__init__(err, err._message())
    return err


class AuthenticationError(APIError):
    """The personal API key is missing, malformed or unknown."""


class PermissionDenied(APIError, PermissionError):
    """The key is valid but lacks the scope (``query:read``, ``experiment:write``...) or the project."""


class NotFound(APIError, LookupError):
    """No such resource: experiment, project, or async query id (expired after 20 minutes on PostHog)."""


class ValidationError(APIError, ValueError):
    """The service refused the request body; ``attr`` is the field path (``series__0__math``)."""


class QueryError(ValidationError):
    """The query itself is wrong (HogQL syntax, unknown column) or failed while running."""


class RateLimited(APIError):
    """Too many requests (429); ``retry_after`` is the server's ``Retry-After`` in seconds, or ``None``."""

    def __init__(self, status: int = 429, *, retry_after: float | None = None, **kwargs: Any) -> None:
        self.retry_after = retry_after
        super().__init__(status, **kwargs)


class ServerError(APIError):
    """The service failed (5xx)."""
