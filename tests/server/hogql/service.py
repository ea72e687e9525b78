"""A project of its own on the session's real service: capture events through the ingestor, query over HTTP.

The HogQL tests in this folder mostly compile and run on chDB directly (conftest.py); the ones that need the
Query endpoint (runners, request unwrapping, property types) use this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from hoglab.local import LocalService
from hoglab.server.ingest import Ingestor


@dataclass
class ServiceProject:
    id: int
    http: httpx.Client
    service: LocalService

    def capture(self, events: list[dict[str, Any]]) -> None:
        engine = self.service.state.engine
        assert engine is not None
        Ingestor.for_engine(engine).capture_batch(self.id, events)

    def post(self, query: dict[str, Any], **body: Any) -> httpx.Response:
        body = {"query": query, "refresh": "force_blocking", **body}
        return self.http.post(f"/api/projects/{self.id}/query/", json=body)

    def answer(self, query: dict[str, Any]) -> dict[str, Any]:
        response = self.post(query)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def rows(self, hogql: str, **query: Any) -> list[list[Any]]:
        rows: list[list[Any]] = self.answer({"kind": "HogQLQuery", "query": hogql, **query})["results"]
        return rows

    def error(self, hogql: str, **query: Any) -> dict[str, Any]:
        response = self.post({"kind": "HogQLQuery", "query": hogql, **query})
        assert response.status_code == 400, response.text
        body: dict[str, Any] = response.json()
        return body


def new_service_project(service: LocalService, name: str) -> ServiceProject:
    store = service.state.store
    record = store.projects.create(name)
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="hogql tests")
    http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return ServiceProject(record.id, http, service)
