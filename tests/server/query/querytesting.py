"""Helpers of the Query endpoint tests: projects with their own key and client, deterministic events, and the
same events as a pandas frame (expected numbers are computed from it, never through the service)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd

from hoglab.local import LocalService
from hoglab.server.ingest import Ingestor, person_uuid

MARKER = "B-SECRET"
SLOW_HOGQL = (
    "SELECT count() FROM numbers(1000) AS a CROSS JOIN numbers(1000) AS b "
    "CROSS JOIN numbers(1000) AS c CROSS JOIN numbers(1000) AS d"
)
"""Allowed by the compiler, takes minutes, needs almost no memory: the query to time out and to cancel."""
BROWSERS = ("Chrome", "Safari", "Firefox")
PLANS = ("free", "pro", None)
START = datetime(2025, 3, 1, tzinfo=UTC)


@dataclass
class Project:
    """A project of its own with a key and an HTTP client on one service."""

    id: int
    key: str
    api_token: str
    http: httpx.Client
    service: LocalService
    _clients: list[httpx.Client] = field(default_factory=list)

    def path(self, tail: str = "") -> str:
        return f"/api/projects/{self.id}/query/{tail}"

    def query(self, hogql: str, **body: Any) -> httpx.Response:
        """``POST /query`` of a HogQL statement; ``body`` adds request fields (``refresh``, ``values``, ...)."""
        query: dict[str, Any] = {"kind": "HogQLQuery", "query": hogql}
        for name in ("values", "filters", "variables", "modifiers"):
            if name in body:
                query[name] = body.pop(name)
        return self.http.post(self.path(), json={"query": query, **body})

    def rows(self, hogql: str, **body: Any) -> list[list[Any]]:
        response = self.query(hogql, refresh="force_blocking", **body)
        assert response.status_code == 200, response.text
        results: list[list[Any]] = response.json()["results"]
        return results

    def new_key(self, scopes: Sequence[str] = ("query:read",), projects: Sequence[int] | None = None) -> str:
        store = self.service.state.store
        return store.keys.create(store.users.default().id, list(scopes), list(projects or [self.id]))[1]

    def client(self, key: str) -> httpx.Client:
        client = httpx.Client(base_url=self.service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        self._clients.append(client)
        return client

    def wait(self, query_id: str, *, timeout: float = 20.0, until: Callable[[httpx.Response], bool] | None = None):
        """Poll ``GET /query/:id`` until it is no longer 202 (or ``until`` holds); the last answer."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.http.get(self.path(f"{query_id}/"))
            done = until(response) if until is not None else response.status_code != 202
            if done or time.monotonic() > deadline:
                return response
            time.sleep(0.05)

    def close(self) -> None:
        for client in self._clients:
            client.close()


def new_project(service: LocalService, name: str, scopes: Sequence[str] = ("*",)) -> Project:
    store = service.state.store
    record = store.projects.create(name)
    _, key = store.keys.create(store.users.default().id, list(scopes), [record.id], label="query tests")
    http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return Project(record.id, key, record.api_token, http, service, [http])


def capture(service: LocalService, project_id: int, events: list[dict[str, Any]]) -> None:
    engine = service.state.engine
    assert engine is not None
    Ingestor.for_engine(engine).capture_batch(project_id, events)


def make_events(n: int, *, prefix: str = "u", marker: str | None = None) -> list[dict[str, Any]]:
    """``n`` deterministic events over ~17 days: three kinds, three browsers, a plan that is sometimes absent, a
    numeric price; ``marker`` goes into every text value."""
    events = []
    for i in range(n):
        properties: dict[str, Any] = {"$browser": BROWSERS[i % 3], "price": (i % 7) * 1.5, "n": i}
        plan = PLANS[(i // 3) % 3]
        if plan is not None:
            properties["plan"] = plan
        if marker:
            properties = {**properties, "$browser": f"{marker}-{properties['$browser']}", "secret": marker}
        events.append(
            {
                "event": ("$pageview", "$pageview", "signup", "purchase")[i % 4],
                "distinct_id": f"{marker or ''}{prefix}{i % 23}",
                "properties": properties,
                "timestamp": (START + timedelta(hours=i)).isoformat().replace("+00:00", "Z"),
            }
        )
    return events


def frame(events: list[dict[str, Any]], team_id: int) -> pd.DataFrame:
    """The events as pandas sees them: one row each, properties flattened, the person id as ingestion sets it."""
    rows = []
    for e in events:
        props = e["properties"]
        rows.append(
            {
                "event": e["event"],
                "distinct_id": e["distinct_id"],
                "person_id": str(person_uuid(team_id, e["distinct_id"])),
                "timestamp": pd.Timestamp(e["timestamp"]),
                "browser": props.get("$browser"),
                "plan": props.get("plan"),
                "price": props.get("price"),
                "n": props.get("n"),
            }
        )
    return pd.DataFrame(rows)


@dataclass
class Seeded:
    a: Project
    b: Project
    frame: pd.DataFrame
    b_frame: pd.DataFrame


TIGHT = {
    "query_rate_limit": "5/hour",
    "query_status_ttl_seconds": 2,
    "max_execution_time": 1,
    "max_memory_usage": 64 * 1024**2,
    "query_workers": 1,
    "rate_limit_burst": "100000/minute",
    "rate_limit_sustained": "1000000/hour",
}


def running_tags(service: LocalService, tag: str) -> int:
    """How many engine statements run under ``tag`` right now (``system.processes``)."""
    engine = service.state.engine
    assert engine is not None
    table = engine.execute(f"SELECT count() AS n FROM system.processes WHERE Settings['log_comment'] = '{tag}'")
    return int(table.column("n")[0].as_py())
