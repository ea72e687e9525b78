"""Projects with events loaded through the real file loader, for the experiment results tests.

``results_project(events, timezone=...)`` (module scope) makes a project on the session's service with its own
``*`` key and HTTP client, loads ``events`` (an oracle frame) and returns a :class:`ResultsProject`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pandas as pd
import pytest

from hoglab.local import LocalService
from hoglab.server.ingest import load_file

from .legacy.oracle import write_jsonl

_counter = itertools.count()


@dataclass
class ResultsProject:
    id: int
    http: httpx.Client
    service: LocalService

    @property
    def base(self) -> str:
        return f"/api/projects/{self.id}/experiments/"

    def create(self, **body: Any) -> dict[str, Any]:
        response = self.http.post(self.base, json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def results(self, experiment_id: int, secondary: int | None = None, **params: Any) -> httpx.Response:
        if secondary is None:
            return self.http.get(f"{self.base}{experiment_id}/results/", params=params)
        return self.http.get(f"{self.base}{experiment_id}/secondary_results/", params={"id": secondary, **params})

    def load(self, events: pd.DataFrame, folder: Any) -> None:
        path = write_jsonl(events, folder / f"events-{self.id}-{next(_counter)}.jsonl")
        load_file(self.service.state.engine, self.id, path)


@pytest.fixture(scope="module")
def results_project(
    hoglab_service: LocalService, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., ResultsProject]]:
    made: list[httpx.Client] = []
    folder = tmp_path_factory.mktemp("experiment-results")

    def make(events: pd.DataFrame | None = None, *, timezone: str = "UTC") -> ResultsProject:
        store = hoglab_service.state.store
        record = store.projects.create(f"results {next(_counter)}", timezone=timezone)
        _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="results tests")
        http = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        made.append(http)
        project = ResultsProject(record.id, http, hoglab_service)
        if events is not None:
            project.load(events, folder)
        return project

    yield make
    for http in made:
        http.close()
