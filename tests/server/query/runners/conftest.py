"""Insight runner tests: a fresh project per data set on the session's engine, runners called directly.

``world(events, timezone=...)`` loads events (dicts in PostHog's export shape) into a new project through the
real file loader (so persons, merges and overrides are made as in production) and returns a :class:`World`
whose ``run(query)`` validates the query with the schema and calls the registered runner with a fixed ``now``
(and the project's actions, as the query service hands them in).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hoglab.local import LocalService
from hoglab.schema import parse_query
from hoglab.server.ingest import load_file
from hoglab.server.query.request import project_actions, project_catalog
from hoglab.server.query.runners import RunContext, has_person_overrides, load_runners
from hoglab.server.store import ProjectRecord, Store

pytestmark = pytest.mark.xdist_group("insights")

_counter = itertools.count()


@dataclass
class World:
    project: ProjectRecord
    engine: Any
    now: datetime
    store: Store | None = None

    def context(self, now: datetime | None = None) -> RunContext:
        return RunContext(
            project=self.project,
            engine=self.engine,
            now=now or self.now,
            tag=f"test-{next(_counter)}",
            person_overrides=has_person_overrides(self.engine, self.project.id),
            catalog=project_catalog(project_actions(self.store, self.project.id)),
        )

    def run(self, query: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
        model = parse_query(query)
        runner = load_runners()[model.kind]
        answer = runner(model, self.context(now))
        assert isinstance(answer, dict)
        return answer


def _jsonable(event: dict[str, Any]) -> dict[str, Any]:
    out = dict(event)
    ts = out["timestamp"]
    if isinstance(ts, datetime):
        out["timestamp"] = ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return out


@pytest.fixture(scope="session")
def engine(hoglab_service: LocalService) -> Any:
    return hoglab_service.state.engine


@pytest.fixture(scope="session")
def make_world(
    hoglab_service: LocalService, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., World]]:
    """``make_world(events, timezone="UTC", now=...) -> World`` with the events loaded into a new project."""
    folder = tmp_path_factory.mktemp("insight-worlds")

    def make(events: list[dict[str, Any]], *, timezone: str = "UTC", now: datetime | None = None) -> World:
        store = hoglab_service.state.store
        project = store.projects.create(f"insights {next(_counter)}", timezone=timezone)
        engine = hoglab_service.state.engine
        if events:
            path = Path(folder) / f"events-{project.id}.jsonl"
            path.write_text("\n".join(json.dumps(_jsonable(e)) for e in events) + "\n")
            load_file(engine, project.id, path)
        return World(project, engine, now or datetime(2025, 6, 15, 12, tzinfo=UTC), store)

    yield make
