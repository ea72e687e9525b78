"""Asynchronous queries: submit with ``refresh="force_async"``, poll ``GET /query/:id``, cancel with DELETE."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import HoglabError, QueryError, QueryTimeout
from ..frames import to_frame
from ..frames.columns import json_loads
from ..schema import QueryRequest, QueryStatus
from ._actions import resolve_action_names
from ._errors import error_from_response

if TYPE_CHECKING:
    from ._client import Client
    from ._query import AnyQueryModel

__all__ = ["QueryJob", "new_query_id", "submit"]

FIRST_POLL = 0.25
MAX_POLL = 5.0  # PostHog keeps a status 20 minutes; polling faster than this only spends rate limit


def new_query_id() -> str:
    """A fresh ``client_query_id`` (hex, so it fits PostHog's and hoglab's id patterns)."""
    return uuid.uuid4().hex


def submit(
    client: Client,
    query: Any,
    *,
    client_query_id: str | None = None,
    frame_options: dict[str, Any] | None = None,
) -> QueryJob:
    from ._query import as_query

    q = as_query(query)
    query_id = client_query_id or new_query_id()
    body = QueryRequest(query=q, refresh="force_async", client_query_id=query_id).to_json_dict()
    resolve_action_names(client, body["query"])
    # Retrying is safe: the server de-duplicates a submit by its client_query_id.
    response = client.request("POST", client.path("query/"), json=body, idempotent=True)
    data: dict[str, Any] = json_loads()(response.content)
    job = QueryJob(client, query_id, q, frame_options=frame_options)
    status = data.get("query_status")
    if "results" in data and not (status and status.get("complete") is False):
        job._answer = data  # answered at once (a cached result): nothing to poll
    elif isinstance(status, dict):
        job.id = str(status.get("id") or query_id)
        job._last = QueryStatus.model_validate(status)
        if job._last.complete and not job._last.error and isinstance(job._last.results, dict):
            job._answer = dict(job._last.results)
    return job


class QueryJob:
    """A query running on the server. ``status()`` asks once; ``result()`` waits and returns the frame.

    While ``result()`` waits, Ctrl-C cancels the query on the server, then raises ``KeyboardInterrupt``. With
    ``client`` a :class:`~hoglab.Client` of a running service:

    >>> job = client.submit("select number from numbers(3)")
    >>> job.result(timeout=60)["number"].tolist()
    [0, 1, 2]
    >>> job.done
    True
    """

    def __init__(
        self,
        client: Client,
        query_id: str,
        query: AnyQueryModel | None = None,
        *,
        frame_options: dict[str, Any] | None = None,
    ) -> None:
        self.id = query_id
        self.query = query
        self._client = client
        self._options = dict(frame_options or {})
        self._answer: dict[str, Any] | None = None
        self._last: QueryStatus | None = None

    def __repr__(self) -> str:
        state = "complete" if self._answer is not None else ("failed" if self._last and self._last.error else "running")
        kind = self.query.kind if self.query is not None else "query"
        return f"<QueryJob {self.id} {kind} {state}>"

    @property
    def done(self) -> bool:
        """Whether the last answer seen said the query finished (no request made)."""
        return self._answer is not None or bool(self._last and self._last.complete)

    def _has_answer(self) -> bool:
        return self._answer is not None

    def status(self) -> QueryStatus:
        """Ask the server once: ``GET /query/:id/``. A failed query raises its :class:`~hoglab.QueryError`."""
        if self._answer is not None and self._last is None:
            return QueryStatus(id=self.id, team_id=self._client.project_id, complete=True, results=self._answer)
        response = self._client.request(
            "GET", self._client.path(f"query/{self.id}/"), params={"show_progress": "true"}, accept_error=True
        )
        body = json_loads()(response.content) if response.content else {}
        status = QueryStatus.model_validate(body["query_status"])
        self._last = status
        if status.error:
            if response.is_success:  # a server that reports the failure in a 200: still the query's error
                raise QueryError(
                    response.status_code,
                    code="query_failed",
                    detail=status.error_message or "The query failed on the server.",
                    method="GET",
                    path=response.request.url.path,
                )
            raise error_from_response(response, query_endpoint=True)
        if status.complete and isinstance(status.results, dict):
            self._answer = dict(status.results)
        return status

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the answer and return it as parsed JSON (``result()`` turns it into a frame)."""
        clock = self._client._clock
        start = clock.monotonic()
        delay = FIRST_POLL
        bar = self._client.progress_bar(f"hoglab query {self.id[:8]}", "polls")
        try:
            while self._answer is None:
                status = self.status()
                bar.update(1)
                progress = status.query_progress or {}
                if progress.get("rows_read"):
                    bar.set_postfix(rows_read=progress["rows_read"], refresh=False)
                if self._has_answer():
                    break
                if status.complete:
                    raise HoglabError(f"Query {self.id} completed without results.")
                elapsed = clock.monotonic() - start
                if timeout is not None and elapsed + delay > timeout:
                    raise QueryTimeout(
                        f"Query {self.id} still running after {elapsed:.1f}s; wait again with job.result() "
                        "or stop it with job.cancel().",
                        job=self,
                    )
                clock.sleep(delay)
                delay = min(MAX_POLL, delay * 1.5)
        except KeyboardInterrupt:
            self._cancel_quietly()
            raise
        finally:
            bar.close()
        assert self._answer is not None  # the loop only ends with an answer
        return self._answer

    def result(self, timeout: float | None = None) -> Any:
        """Wait (at most ``timeout`` seconds; ``None``: as long as it takes) and return the tidy frame."""
        from ._query import convert_output, warn_about

        answer = warn_about(self.wait(timeout))
        kind = self.query.kind if self.query is not None else _guess_kind(answer)
        output = self._options.get("output", "pandas")
        options = {k: v for k, v in self._options.items() if k != "output"}

        return convert_output(to_frame(answer, kind, **options), output)

    def response(self, timeout: float | None = None) -> Any:
        """Wait and return the answer as its :mod:`hoglab.schema` response model."""
        from ._query import RESPONSE_MODELS

        answer = self.wait(timeout)
        kind = self.query.kind if self.query is not None else _guess_kind(answer)
        return RESPONSE_MODELS[kind].model_validate(answer)

    def cancel(self) -> None:
        """Cancel the query on the server (``DELETE /query/:id/``); unknown or finished ids are not an error."""
        from ..errors import NotFound

        with contextlib.suppress(NotFound):
            self._client.request("DELETE", self._client.path(f"query/{self.id}/"))

    def _cancel_quietly(self) -> None:
        # Already interrupted: the interrupt matters more than a cancel that failed.
        with contextlib.suppress(Exception):
            self.cancel()


def _guess_kind(answer: dict[str, Any]) -> str:
    types = answer.get("types")
    if types and isinstance(types[0], list | tuple):
        return "HogQLQuery"
    return "EventsQuery" if "columns" in answer else "TrendsQuery"
