"""Helpers for the flags tests: flags made in the store, events captured into the session's service."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from hoglab.server.ingest import Ingestor

TWO_WAY = [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]


def make_flag(project, key: str, groups: list[dict[str, Any]] | None = None, **options: Any):
    """A flag of ``project`` straight in the store (``variants=``, ``payloads=``, ``active=``, ``continuity=``)."""
    everyone = [{"properties": [], "rollout_percentage": 100}]
    filters: dict[str, Any] = {"groups": groups if groups is not None else everyone}
    if options.get("variants"):
        filters["multivariate"] = {"variants": options["variants"]}
    if options.get("payloads"):
        filters["payloads"] = options["payloads"]
    return project.service.state.store.flags.create(
        project.id,
        key,
        filters=filters,
        active=options.get("active", True),
        ensure_experience_continuity=options.get("continuity", False),
    )


def capture(project, events: list[dict[str, Any]]) -> None:
    """Store raw SDK events for ``project`` and wait until they are on disk."""
    Ingestor.for_engine(project.service.state.engine).capture_batch(project.id, events)


def ask(project, body: dict[str, Any] | None = None, *, path: str = "/flags/?v=2", **kwargs: Any) -> httpx.Response:
    """POST a flags request with the project's API key (unless the body brings its own)."""
    payload = {"api_key": project.api_token, **(body or {})}
    return httpx.post(project.service.url + path, json=payload, timeout=30, **kwargs)


def values(response: httpx.Response) -> dict[str, Any]:
    """flag key -> value from a ``/flags?v=2`` answer."""
    assert response.status_code == 200, response.text
    flags = response.json()["flags"]
    return {key: (f["variant"] if f["variant"] is not None else f["enabled"]) for key, f in flags.items()}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()
