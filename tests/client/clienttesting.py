"""Helpers of the client tests: a scripted REMOTE PostHog (for httpx.MockTransport), a fake clock, and projects
with known events on the session's real service (``batch_client``, ``loaded_project``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from hoglab.client import Client
from hoglab.server.ingest import load_file

HOST = "https://eu.posthog.example"
KEY = "phx_SECRET_key_never_shown_0123456789"


class FakeClock:
    """A clock whose sleeps only add up (no test waits for real)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: Callable[[float], None] | None = None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(seconds)


class Remote:
    """A scripted REMOTE PostHog: routes ``(method, path)`` to queued answers and records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Any]] = {}
        self.requests: list[httpx.Request] = []

    def add(self, method: str, path: str, *answers: Any) -> None:
        """Queue answers: an ``httpx.Response``, a callable ``(request) -> Response``, or an exception to raise.
        The last answer repeats."""
        self.routes.setdefault((method.upper(), path), []).extend(answers)

    def json_bodies(self, method: str | None = None, path: str | None = None) -> list[Any]:
        return [
            json.loads(r.content) if r.content else None
            for r in self.requests
            if (method is None or r.method == method) and (path is None or r.url.path == path)
        ]

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        queue = self.routes.get((request.method, request.url.path))
        if queue is None:  # a route ending in "*" matches every path under it
            queue = next(
                (
                    q
                    for (m, p), q in self.routes.items()
                    if m == request.method and p.endswith("*") and request.url.path.startswith(p[:-1])
                ),
                None,
            )
        if not queue:
            return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found."})
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(request)  # type: ignore[no-any-return]
        return answer  # type: ignore[no-any-return]


def hogql_answer(rows: list[list[Any]], types: list[tuple[str, str]], **extra: Any) -> dict[str, Any]:
    """A HogQLQuery answer shaped like PostHog's."""
    return {
        "results": rows,
        "columns": [name for name, _ in types],
        "types": [list(t) for t in types],
        "hogql": "SELECT ...",
        "clickhouse": "SELECT ... SETTINGS readonly=2",
        "timings": [{"k": ".", "t": 0.01}],
        "hasMore": extra.pop("hasMore", False),
        "is_cached": False,
        "timezone": "UTC",
        **extra,
    }


@contextmanager
def batch_client(
    service: Any, name: str, batch: list[dict[str, Any]], scopes: Sequence[str] = ("query:read",)
) -> Iterator[Client]:
    """A client of a new project on the session's ``service`` whose events were captured through ``/batch/``, as
    an SDK sends them, with a key of ``scopes`` on that project."""
    store = service.state.store
    project = store.projects.create(name)
    key = store.keys.create(store.users.default().id, list(scopes), [project.id])[1]
    answer = httpx.post(f"{service.url}/batch/", json={"api_key": project.api_token, "batch": batch})
    assert answer.status_code == 200, answer.text
    with Client(service.url, key, project.id, progress=False) as client:
        yield client


def loaded_project(service: Any, name: str, lines: list[dict[str, Any]], folder: Path) -> tuple[int, str]:
    """A new project on the session's ``service`` holding the events ``lines`` (loaded from a JSON-lines file
    written in ``folder``, loaded straight into the engine) and a key for everything in it: ``(project id, key)``."""
    store = service.state.store
    record = store.projects.create(name)
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label=name)
    path = folder / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    load_file(service.state.engine, record.id, path)
    return record.id, key
