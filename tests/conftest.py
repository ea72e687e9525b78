"""Shared fixtures: one real hoglab service per test session, and an isolated project per test.

chDB serves one data path per process, so every test of a session shares one running service (uvicorn on
127.0.0.1, a random free port, a temporary data dir) and gets isolation from its own project:

    def test_something(make_project):
        project = make_project(scopes=["experiment:read"])
        answer = project.http.get(f"/api/projects/{project.id}/experiments/")

Services started by tests for other reasons (a tiny rate limit, a restart) use the same data dir
(``hoglab_service.data_dir``): a second data dir in one process would not work once events live in chDB.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
import pytest
from hypothesis import settings

from hoglab.client import Client
from hoglab.local import LocalService, start_local_service
from hoglab.server.engine import chdb_path
from hoglab.server.store import ProjectRecord

# CI must not fail by chance: property tests draw the same examples in every run (a bug they reach fails every
# time). HYPOTHESIS_PROFILE=explore draws new examples each run, for a deeper search before a release.
settings.register_profile("stable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "stable"))

# The automatic materialization job writes usage counts every few minutes, and any write refreshes the result
# caches some tests check; tests that want it run it by hand (tests/server/engine/test_engine_materialized.py).
os.environ.setdefault("HOGLAB_AUTO_MATERIALIZE", "0")

# Generous limits: tests share nothing but the service, and rate limiting has its own tests and services.
SESSION_LIMITS = {
    "rate_limit_burst": "1000000/minute",
    "rate_limit_sustained": "10000000/hour",
    "query_rate_limit": "1000000/hour",
    "action_write_rate_limit": "1000000/hour",
    # The tests of automatic materialization run jobs of their own; the service's, every 5 minutes at a phase of its
    # own, took the usage those tests had just counted (a timed-out "four columns" once in a full run).
    "auto_materialize": False,
}


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test process's one service data directory (SQLite metadata and the chDB files under it)."""
    return tmp_path_factory.mktemp("hoglab-data")


@pytest.fixture(scope="session")
def chdb_dir(data_dir: Path) -> Path:
    """The process's one chDB directory: chDB serves a single data path per process, so every test that opens
    the engine (directly, through the service, or with a raw connection) must use this one."""
    return chdb_path(data_dir)


@pytest.fixture(scope="session")
def hoglab_service(data_dir: Path) -> Iterator[LocalService]:
    """The session's running service (``.url``, ``.state.store``, ``.state.engine``, ``.data_dir``)."""
    service = start_local_service(data_dir, config_overrides=SESSION_LIMITS)
    yield service
    service.stop()


@dataclass
class TestProject:
    """A project of its own on the shared service, with a personal API key and an HTTP client using it."""

    __test__ = False  # not a test class, despite the name

    id: int
    api_token: str
    key: str
    http: httpx.Client
    record: ProjectRecord
    service: LocalService
    _clients: list[httpx.Client] = field(default_factory=list, repr=False)

    def new_key(self, scopes: Sequence[str], projects: Sequence[int] | Literal["all"] | None = None) -> str:
        """Another key of the local user: ``projects`` defaults to this project, ``"all"`` reaches every one."""
        store = self.service.state.store
        project_ids = None if projects == "all" else list(projects or [self.id])
        _, plaintext = store.keys.create(store.users.default().id, scopes, project_ids, label="test")
        return plaintext

    def client(self, key: str | None = None) -> httpx.Client:
        """An HTTP client on the service: Bearer ``key`` (none when ``key`` is None)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        client = httpx.Client(base_url=self.service.url, headers=headers, timeout=30)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture
def make_project(hoglab_service: LocalService) -> Iterator[Callable[..., TestProject]]:
    """``make_project(scopes=("*",), projects=None, name=None, timezone="UTC") -> TestProject``.

    ``projects``: what the key reaches: ``None`` this project only, ``"all"`` every project, or a list of other
    project ids (this project is added).
    """
    made: list[TestProject] = []

    def make(
        scopes: Sequence[str] = ("*",),
        *,
        projects: Sequence[int] | Literal["all"] | None = None,
        name: str | None = None,
        timezone: str = "UTC",
    ) -> TestProject:
        store = hoglab_service.state.store
        record = store.projects.create(name or f"test project {len(made) + 1}", timezone=timezone)
        reach: list[int] | None = None if projects == "all" else [record.id, *(projects or [])]
        _, key = store.keys.create(store.users.default().id, scopes, reach, label="test")
        http = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        project = TestProject(record.id, record.api_token, key, http, record, hoglab_service, _clients=[http])
        made.append(project)
        return project

    yield make
    for project in made:
        project.close()


@pytest.fixture
def live_project(make_project: Callable[..., TestProject]) -> TestProject:
    """A fresh project (every scope) on the session's real service."""
    return make_project()


@pytest.fixture
def live_client(live_project: TestProject) -> Iterator[Client]:
    """A :class:`hoglab.Client` of the real service, on a fresh project."""
    c = Client(str(live_project.http.base_url).rstrip("/"), live_project.key, live_project.id, progress=False)
    yield c
    c.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The conformance suite's totals (tests/conformance): how many of PostHog's questions hoglab answers alike."""
    counts: dict[str, int] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == "conformance":
                    counts[value] = counts.get(value, 0) + 1
    if counts:
        total = sum(counts.values())
        parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("equal", "different", "refused"))
        terminalreporter.write_line(f"conformance with PostHog: {total} cases: {parts}")
