"""Fixtures of the client tests.

Two kinds of tests live here:

* transport-level tests use ``httpx.MockTransport`` to stand in for a REMOTE PostHog (Cloud) service: the
  behaviour they check (202 flows, 50,000-row answers, 429 with Retry-After, 403 for bad keys) is PostHog's,
  which no local service reproduces on demand. They never mock hoglab's own server.
* integration tests (``test_*_live.py``) talk HTTP to a real hoglab service through ``live_client`` and
  ``make_project`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from clienttesting import HOST, KEY, FakeClock, Remote

from hoglab.client import Client


@pytest.fixture
def remote() -> Remote:
    return Remote()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(remote: Remote, clock: FakeClock) -> Iterator[Client]:
    """A client of the scripted remote, project 2, fake clock, no progress bars."""
    c = Client(HOST, KEY, 2, transport=httpx.MockTransport(remote.handler), progress=False)
    c._clock = clock
    yield c
    c.close()
