"""Plots render off-screen (Agg) and every test's figures are closed; the magic's tests share a project with
known events on the session's real service, the picker's and the report's the seeded demo experiment."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib
import pytest
from notebooktesting import DEMO_USERS, Demo, EventsProject, events_frame, make_events

from hoglab.local import LocalService

matplotlib.use("Agg")  # before pyplot is imported anywhere: no display, deterministic rendering

import matplotlib.pyplot as plt


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def events_project(hoglab_service: LocalService) -> EventsProject:
    from hoglab.server.ingest import Ingestor

    store = hoglab_service.state.store
    a = store.projects.create("notebook A")
    b = store.projects.create("notebook B")
    _, key = store.keys.create(store.users.default().id, ["*"], [a.id, b.id], label="notebook tests")
    a_events, b_events = make_events(60), make_events(17, offset=3)
    engine = hoglab_service.state.engine
    assert engine is not None
    Ingestor.for_engine(engine).capture_batch(a.id, a_events)
    Ingestor.for_engine(engine).capture_batch(b.id, b_events)
    return EventsProject(hoglab_service.url, key, a.id, b.id, events_frame(a_events), events_frame(b_events))


@pytest.fixture(scope="session")
def demo(hoglab_service: LocalService) -> Iterator[Demo]:
    """The demo experiment on the real service, seeded once per test process."""
    import orjson

    from hoglab.client import Client
    from hoglab.server.demo import generate_events, seed

    store = hoglab_service.state.store
    project = store.projects.create("notebook demo")
    _, key = store.keys.create(store.users.default().id, ["*"], [project.id], label="notebook demo")
    seed(hoglab_service.state, project, users=DEMO_USERS)
    client = Client(hoglab_service.url, key, project.id, progress=False)
    [experiment_id] = client.experiments.list()["id"].tolist()
    events = generate_events(users=DEMO_USERS).to_pandas()
    events["props"] = [orjson.loads(p) for p in events["properties"]]
    yield Demo(client, int(experiment_id), events)
    client.close()
