"""The client: configuration, one pooled httpx connection, retries, and errors raised as :mod:`hoglab.errors`."""

from __future__ import annotations

import copy
import logging
import os
import random
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import httpx
import pandas as pd

from .. import __version__
from ..errors import AnswerTimeout, ConfigurationError, RateLimited, RedirectRefused, TransportError
from ..schema import Paginated, Project
from ._errors import error_from_response, json_or_none
from ._retry import IDEMPOTENT_METHODS, Clock, RetryPolicy, SystemClock

if TYPE_CHECKING:
    from ._actions import Actions
    from ._experiments import Experiments
    from ._groups import Groups
    from ._jobs import QueryJob

__all__ = ["Client"]

log = logging.getLogger("hoglab.client")

DEFAULT_HOST = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)  # PostHog lets a query run 60 s; leave room for the answer
PROGRESS_DELAY = 0.5  # seconds before a progress bar shows: quick answers stay quiet
_ENV = {
    "host": ("HOGLAB_HOST", "POSTHOG_HOST"),
    "api_key": ("HOGLAB_API_KEY", "POSTHOG_PERSONAL_API_KEY"),
    "project_id": ("HOGLAB_PROJECT_ID", "POSTHOG_PROJECT_ID"),
}
Output = Literal["pandas", "arrow", "polars"]


def _read_whole(http: httpx.Client, request: httpx.Request, stop: threading.Event) -> httpx.Response:
    """Send ``request`` and read its answer to the end, giving up between two reads once ``stop`` is set."""
    response = http.send(request, stream=True)
    try:
        _ = response.content  # an in-memory transport's answer (httpx.MockTransport) is read already
        return response
    except httpx.ResponseNotRead:
        pass
    chunks: list[bytes] = []
    try:
        for chunk in response.iter_raw():
            if stop.is_set():  # abandoned by the caller: stop reading a remote that is still trickling
                break
            chunks.append(chunk)
    finally:
        response.close()
    # The raw bytes with the original headers: httpx decodes them (gzip...) as it would have.
    return httpx.Response(response.status_code, headers=response.headers, content=b"".join(chunks),
                          request=response.request)  # fmt: skip


def _within(seconds: float, work: Callable[[threading.Event], httpx.Response], what: str, limit: str) -> httpx.Response:
    """``work`` run in a helper thread, waited for at most ``seconds``.

    The wait ends on time however the network stalls (connecting, a header or a body a byte at a time); the thread
    stops reading at its next chunk, or at the transport's read timeout.
    """
    done, stop = threading.Event(), threading.Event()
    outcome: list[httpx.Response | BaseException] = []

    def run() -> None:
        try:
            outcome.append(work(stop))
        except BaseException as exc:  # handed to the caller's thread, which raises it
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="hoglab-answer", daemon=True).start()
    try:
        if not done.wait(seconds):
            raise AnswerTimeout(f"{what}: no complete answer within {limit} (the remote stalled or trickles)")
    finally:
        if not done.is_set():
            stop.set()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _from_env(name: str) -> str | None:
    for var in _ENV[name]:
        value = os.environ.get(var, "").strip()
        if value:
            return value
    return None


class Client:
    """A connection to a hoglab service or to PostHog: every answer as a pandas DataFrame.

    Arguments fall back to ``HOGLAB_HOST``/``HOGLAB_API_KEY``/``HOGLAB_PROJECT_ID``, then PostHog's
    ``POSTHOG_HOST``/``POSTHOG_PERSONAL_API_KEY``/``POSTHOG_PROJECT_ID`` (each variable on its own); the host
    defaults to ``http://127.0.0.1:8000`` (``hoglab serve``). Without ``project_id`` the client asks
    ``GET /api/projects/`` on first use and takes the project when the key reaches exactly one.

    ``transport`` replaces the network (an ``httpx.MockTransport`` in tests); ``max_retries`` bounds retries
    (see :class:`RetryPolicy`, or pass ``retry=``); ``progress`` shows tqdm bars while paging or waiting
    (``None``: only in a terminal or a notebook). The API key never appears in a repr, a log line or an error.

    ``answer_timeout`` (seconds, default none) bounds each answer from request to last byte, which ``timeout``
    (between two reads) cannot: a server that sends a byte every few seconds never trips a read timeout. The
    ``deadline`` attribute (a ``time.monotonic()`` moment, default none) ends every wait at that moment. Both raise
    :class:`~hoglab.AnswerTimeout` and are not retried. Redirects are followed within the client's own host (and
    from ``http`` to ``https`` on it); a redirect to another host is :class:`~hoglab.RedirectRefused`.

    >>> client = Client("http://localhost:8000", api_key="phx_secret", project_id=1)
    >>> client
    Client(host='http://localhost:8000', project_id=1)
    >>> client.close()
    """

    def __init__(
        self,
        host: str | None = None,
        api_key: str | None = None,
        project_id: int | str | None = None,
        *,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        max_retries: int = 3,
        retry: RetryPolicy | None = None,
        progress: bool | None = None,
        answer_timeout: float | None = None,
    ) -> None:
        host = (host or _from_env("host") or DEFAULT_HOST).rstrip("/")
        if "://" not in host:
            # A bare name is a remote service (https), except this machine, where `hoglab serve` speaks http.
            local = host.split(":")[0] in ("localhost", "127.0.0.1", "0.0.0.0", "[::1]")
            host = f"{'http' if local else 'https'}://{host}"
        # A key pasted from a file often ends with a newline: strip it, as the environment's value is.
        api_key = (api_key or "").strip() or _from_env("api_key")
        if not api_key:
            raise ConfigurationError(
                "No API key: pass api_key=, or set HOGLAB_API_KEY (or POSTHOG_PERSONAL_API_KEY). "
                "`hoglab key create --project ID --scopes experiment:read,experiment:write,query:read` makes one."
            )
        if not (api_key.isascii() and api_key.isprintable()) or " " in api_key:
            # httpx would refuse the header later with the key in its message; say what is wrong without it.
            raise ConfigurationError(
                "The API key contains spaces, control or non-ASCII characters, which no API key has: copy it again."
            )
        project = project_id if project_id is not None else _from_env("project_id")
        self.host = host
        self._project_id: int | None = self._check_project(project) if project is not None else None
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.progress = progress
        self.answer_timeout = answer_timeout
        self.deadline: float | None = None
        self._clock: Clock = SystemClock()
        self._rng = random.Random()
        self._http = httpx.Client(
            base_url=host,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": f"hoglab/{__version__}"},
            timeout=timeout,
            transport=transport,
            follow_redirects=True,  # a service may redirect between /path and /path/; same origin keeps auth
            event_hooks={"request": [self._same_host]},  # runs for every hop of a redirect, before it is sent
        )
        self._experiments: Experiments | None = None
        self._groups: Groups | None = None
        self._actions: Actions | None = None
        self._bulk_rows: bool | None = None  # does the server answer POST /query/arrow/ (hoglab)? None: not yet known

    @staticmethod
    def _check_project(value: int | str) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigurationError(f"project_id must be an integer, got {value!r}.") from None

    def __repr__(self) -> str:
        return f"Client(host={self.host!r}, project_id={self._project_id!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    # -- projects -------------------------------------------------------------------------------------------------

    @property
    def project_id(self) -> int:
        """The project every call goes to; resolved from ``GET /api/projects/`` when not given."""
        if self._project_id is None:
            projects = self.projects()
            if len(projects) != 1:
                listed = ", ".join(f"{p.id} ({p.name})" for p in projects[:10]) or "none"
                raise ConfigurationError(
                    f"This key reaches {len(projects)} projects ({listed}): pass project_id= or set HOGLAB_PROJECT_ID."
                )
            self._project_id = projects[0].id
        return self._project_id

    def for_project(self, project_id: int | str) -> Client:
        """This client on another project: same host, key, settings and connections (closing one closes both)."""
        other = copy.copy(self)
        other._project_id = self._check_project(project_id)
        other._experiments = None
        other._actions = None
        return other

    def projects(self) -> list[Project]:
        """The projects this key reaches."""
        return [Project.model_validate(p) for p in self.paginate("/api/projects/")]

    def path(self, suffix: str) -> str:
        """The URL path of ``suffix`` under the current project: ``/api/projects/<id>/<suffix>``."""
        return f"/api/projects/{self.project_id}/{suffix.lstrip('/')}"

    # -- HTTP -----------------------------------------------------------------------------------------------------

    def _same_host(self, request: httpx.Request) -> None:
        """Refuse a request to another host than the client's (the hop of a redirect).

        A first request always goes to the client's host. ``http`` to ``https`` on the same host is an upgrade,
        followed.
        """
        home, url = httpx.URL(self.host), request.url
        upgrade = home.scheme == "http" and url.scheme == "https" and url.port in (None, 443)
        if url.host != home.host or not ((url.scheme == home.scheme and url.port == home.port) or upgrade):
            origin = f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")
            raise RedirectRefused(
                f"{self.host} redirected to another host, {origin}, which hoglab does not follow: the API key is not"
                f" sent there and its answer would not be this project's (if {origin} is the service, use it as the"
                " host)",
                location=str(url.copy_with(query=None)),
            )

    def _budget(self) -> tuple[float, str] | None:
        """How long the next answer may take, and which limit that is; ``None`` when nothing bounds it."""
        limits: list[tuple[float, str]] = []
        if self.answer_timeout is not None:
            limits.append((self.answer_timeout, f"the answer timeout, {self.answer_timeout:g} s"))
        if self.deadline is not None:
            left = self.deadline - self._clock.monotonic()
            if left <= 0:
                raise AnswerTimeout("the deadline passed: no further request is sent")
            limits.append((left, "the deadline"))
        return min(limits) if limits else None

    def _pause(self, seconds: float) -> None:
        """Wait before a retry, unless the wait would pass the deadline."""
        if self.deadline is not None and self._clock.monotonic() + seconds > self.deadline:
            raise AnswerTimeout(f"a retry would wait {seconds:.0f} s, past the deadline")
        self._clock.sleep(seconds)

    def _send(self, method: str, path: str, json: Any, params: Mapping[str, Any] | None) -> httpx.Response:
        """One attempt: the answer in full, within the answer budget when there is one."""
        budget = self._budget()
        if budget is None:
            return self._http.request(method, path, json=json, params=params)
        seconds, limit = budget
        request = self._http.build_request(method, path, json=json, params=params)
        return _within(seconds, lambda stop: _read_whole(self._http, request, stop), f"{method} {path}", limit)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
        accept_error: bool = False,
    ) -> httpx.Response:
        """Send one request with the retry policy; an error answer raises its :mod:`hoglab.errors` class.

        ``idempotent`` overrides the method's default (``POST /query`` passes ``True``). With ``accept_error``
        an error answer that carries a ``query_status`` is returned rather than raised (async job polling).
        """
        method = method.upper()
        is_query = "/query" in path
        safe = method in IDEMPOTENT_METHODS if idempotent is None else idempotent
        attempt = 0
        while True:
            try:
                response = self._send(method, path, json, params)
            except httpx.TransportError as exc:
                if attempt < self.retry.max_retries and self.retry.retries_transport_error(exc, safe):
                    wait = self.retry.delay(attempt, self._rng)
                    log.info("%s %s: %s; retrying in %.1fs", method, path, type(exc).__name__, wait)
                    self._pause(wait)
                    attempt += 1
                    continue
                raise TransportError(f"{method} {path} failed: {type(exc).__name__}: {self._redact(str(exc))}") from exc
            except (httpx.TooManyRedirects, httpx.DecodingError) as exc:  # an answer, but not one to read
                raise TransportError(f"{method} {path} failed: {type(exc).__name__}: {self._redact(str(exc))}") from exc
            if response.is_success:
                return response
            if accept_error and isinstance(body := json_or_none(response), dict) and "query_status" in body:
                return response
            error = error_from_response(response, query_endpoint=is_query)
            if attempt < self.retry.max_retries and self.retry.retries_status(response.status_code, safe, is_query):
                pause = self._wait_for(error, attempt)
                if pause is not None:
                    log.info("%s %s: HTTP %s; retrying in %.1fs", method, path, response.status_code, pause)
                    self._pause(pause)
                    attempt += 1
                    continue
            raise error

    def _redact(self, text: str) -> str:
        """``text`` with the API key blanked out (a transport library may quote the header it refused)."""
        key = self._http.headers.get("authorization", "").removeprefix("Bearer ")
        return text.replace(key, "<api key>") if key else text

    def _wait_for(self, error: Exception, attempt: int) -> float | None:
        if isinstance(error, RateLimited) and error.retry_after is not None:
            if error.retry_after > self.retry.max_retry_after:
                return None  # longer than we are willing to block: let the caller decide
            return error.retry_after + self._rng.uniform(0, 0.1 * error.retry_after + 0.05)
        return self.retry.delay(attempt, self._rng)

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """``GET`` and decode."""
        return json_or_none(self.request("GET", path, params=params))

    def paginate(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        decode: Callable[[httpx.Response], Any] = json_or_none,
    ) -> list[dict[str, Any]]:
        """Every item of a ``{count, next, previous, results}`` listing, following ``next``.

        ``next`` is followed by its ``limit``/``offset`` only, against this client's host: a service behind a proxy
        may write its own address into ``next``. ``decode`` reads each page's answer (default: its JSON, ``None``
        when it is not JSON); a stricter one raises on an answer that is not a listing (``hoglab pull``).
        """
        items: list[dict[str, Any]] = []
        query: dict[str, Any] = dict(params or {})
        seen_pages: set[str] = set()
        while True:
            body = decode(self.request("GET", path, params=query))
            if isinstance(body, list):  # an endpoint without pagination
                return items + body
            page = Paginated[dict[str, Any]].model_validate({"count": 0, **(body or {})})
            items.extend(page.results)
            if not page.next or not page.results:
                return items
            next_params = httpx.URL(page.next).params
            query.update({k: next_params[k] for k in ("limit", "offset", "cursor") if k in next_params})
            marker = str(sorted(query.items()))
            if marker in seen_pages:  # a server that ignores offset would otherwise loop forever
                return items
            seen_pages.add(marker)

    def show_progress(self) -> bool:
        """Whether progress bars are shown: the ``progress`` setting, else only in a terminal or a notebook."""
        if self.progress is not None:
            return self.progress
        return "ipykernel" in sys.modules or sys.stderr.isatty()

    def progress_bar(self, desc: str, unit: str) -> Any:
        """A tqdm bar for a wait that may be long.

        It appears only after half a second (a quick answer shows nothing, not even in a saved notebook) and is
        removed when done.
        """
        from tqdm.auto import tqdm

        return tqdm(desc=desc, unit=unit, disable=not self.show_progress(), leave=False, delay=PROGRESS_DELAY)

    # -- resources --------------------------------------------------------------------------------------------------

    @property
    def groups(self) -> Groups:
        """The project's group types and groups: ``types()``, ``list(type)``, ``find(type, key)``."""
        if self._groups is None:
            from ._groups import Groups

            self._groups = Groups(self)
        return self._groups

    @property
    def experiments(self) -> Experiments:
        """The project's experiments: list, create, results... (see :class:`~hoglab.client.Experiments`)."""
        if self._experiments is None:
            from ._experiments import Experiments

            self._experiments = Experiments(self)
        return self._experiments

    @property
    def actions(self) -> Actions:
        """The project's actions: list, get, create, update, delete (see :class:`~hoglab.client.Actions`)."""
        if self._actions is None:
            from ._actions import Actions

            self._actions = Actions(self)
        return self._actions

    # -- queries (implemented in _query.py) -------------------------------------------------------------------------

    @overload
    def hogql(
        self,
        sql: str,
        values: Mapping[str, Any] | None = ...,
        *,
        limit: int | None = ...,
        run_async: Literal[False] = ...,
        all_rows: bool = ...,
        parse_json: bool | Sequence[str] = ...,
        output: Literal["pandas"] = ...,
    ) -> pd.DataFrame: ...

    @overload
    def hogql(
        self,
        sql: str,
        values: Mapping[str, Any] | None = ...,
        *,
        limit: int | None = ...,
        run_async: Literal[True],
        all_rows: bool = ...,
        parse_json: bool | Sequence[str] = ...,
        output: Output = ...,
    ) -> QueryJob: ...

    @overload
    def hogql(
        self,
        sql: str,
        values: Mapping[str, Any] | None = ...,
        *,
        limit: int | None = ...,
        run_async: bool = ...,
        all_rows: bool = ...,
        parse_json: bool | Sequence[str] = ...,
        output: Output = ...,
    ) -> Any: ...

    def hogql(
        self,
        sql: str,
        values: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        run_async: bool = False,
        all_rows: bool = False,
        parse_json: bool | Sequence[str] = False,
        output: Output = "pandas",
    ) -> Any:
        """Run a HogQL statement; a DataFrame typed from the answer's ``types`` (metadata in ``df.attrs``).

        ``values`` bind ``{name}`` placeholders server-side (never pasted into the SQL). ``limit`` caps the rows
        (``LIMIT`` appended when the statement has none). ``all_rows`` pages past one answer's cap (keyset on
        ``timestamp`` when the statement ends ``ORDER BY timestamp``, else ``LIMIT/OFFSET``). ``run_async``
        returns a :class:`QueryJob` at once. ``parse_json`` decodes JSON text columns. ``output`` is
        ``"pandas"``, ``"arrow"`` (a ``pyarrow.Table``) or ``"polars"``.
        """
        from ._query import run_hogql

        return run_hogql(
            self, sql, values, limit=limit, run_async=run_async, all_rows=all_rows, parse_json=parse_json, output=output
        )

    def hogql_pages(
        self,
        sql: str,
        values: Mapping[str, Any] | None = None,
        *,
        page_size: int = 10_000,
        parse_json: bool | Sequence[str] = False,
    ) -> Any:
        """Iterate over the pages of a statement's rows, one DataFrame each (see ``hogql(all_rows=True)``)."""
        from ._query import hogql_pages

        return hogql_pages(self, sql, values, page_size=page_size, parse_json=parse_json)

    def query(
        self,
        query: Any,
        *,
        all_rows: bool = False,
        parse_json: bool | Sequence[str] = False,
        flatten: bool | Sequence[str] | None = None,
        output: Output = "pandas",
    ) -> Any:
        """Run any query model and return its tidy frame.

        ``query`` is ``hoglab.trends(...)``, ``hoglab.funnel(...)``, a :mod:`hoglab.schema` model or its dict; the
        frame has trends in long form, funnels one row per step, events/actors as tables.
        ``all_rows`` pages EventsQuery/ActorsQuery/GroupsQuery through ``offset``; ``flatten`` spreads their dict
        columns (``True``, or the columns' names). By default (``None``) an EventsQuery's ``*`` is spread: one column
        per field of the event and per property (``properties.$browser``); ``flatten=False`` keeps it one dict column.
        """
        from ._query import run_query

        return run_query(self, query, all_rows=all_rows, parse_json=parse_json, flatten=flatten, output=output)

    def query_raw(self, query: Any, *, refresh: str | bool | None = None) -> Any:
        """Run any query and return its answer as the :mod:`hoglab.schema` response model of its kind."""
        from ._query import query_raw

        return query_raw(self, query, refresh=refresh)

    def submit(self, query: Any, *, client_query_id: str | None = None) -> QueryJob:
        """Start a query asynchronously (``refresh="force_async"``); returns its :class:`QueryJob` at once."""
        from ._jobs import submit

        return submit(self, query, client_query_id=client_query_id)

    def job(self, query_id: str, query: Any = None) -> QueryJob:
        """A handle on an async query started earlier (by id), to poll, wait for or cancel."""
        from ._jobs import QueryJob
        from ._query import as_query

        return QueryJob(self, query_id, as_query(query) if query is not None else None)

    def trends(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        """``client.query(hoglab.trends(...))`` in one call."""
        from ..queries import trends

        return self.query(trends(*args, **kwargs))  # type: ignore[no-any-return]

    def funnel(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        """``client.query(hoglab.funnel(...))`` in one call."""
        from ..queries import funnel

        return self.query(funnel(*args, **kwargs))  # type: ignore[no-any-return]

    def events(
        self, *args: Any, all_rows: bool = False, flatten: bool | Sequence[str] | None = None, **kwargs: Any
    ) -> pd.DataFrame:
        """``client.query(hoglab.events(...))`` in one call; ``events(["*"])`` has a column per event field and per
        property (``flatten=False``: the event as one dict column)."""
        from ..queries import events

        return self.query(events(*args, **kwargs), all_rows=all_rows, flatten=flatten)  # type: ignore[no-any-return]

    def actors(self, *args: Any, all_rows: bool = False, **kwargs: Any) -> pd.DataFrame:
        """``client.query(hoglab.actors(...))`` in one call."""
        from ..queries import actors

        return self.query(actors(*args, **kwargs), all_rows=all_rows)  # type: ignore[no-any-return]
