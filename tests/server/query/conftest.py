"""Fixtures of the Query endpoint tests: two projects with known events on the session's service, and a second
app ("tight") on the same data with tiny limits, a short status TTL and one worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from querytesting import MARKER, TIGHT, Seeded, capture, frame, make_events, new_project

from hoglab.local import LocalService, start_local_service


@pytest.fixture(scope="module")
def seeded(hoglab_service: LocalService) -> Iterator[Seeded]:
    """Project A (400 events) and project B (150 events whose texts all hold ``MARKER``), on the session service."""
    a = new_project(hoglab_service, "query A")
    b = new_project(hoglab_service, "query B")
    a_events, b_events = make_events(400), make_events(150, marker=MARKER)
    capture(hoglab_service, a.id, a_events)
    capture(hoglab_service, b.id, b_events)
    yield Seeded(a, b, frame(a_events, a.id), frame(b_events, b.id))
    a.close()
    b.close()


@pytest.fixture(scope="module")
def tight(hoglab_service: LocalService) -> Iterator[LocalService]:
    """A second app on the session's data dir (one data dir per process) with ``TIGHT`` settings."""
    with start_local_service(hoglab_service.data_dir, config_overrides=TIGHT) as service:
        yield service
