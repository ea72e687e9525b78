"""One chDB engine per test process (chDB allows one data directory per process): the tests that read or write it
directly (engine, ingestion, demo) share it and each keep to its own project through a fresh random ``team_id``.
Tests through the service use its engine instead (``hoglab_service``; ``query/runners/conftest.py``)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoglab.server.engine.chdb import ChdbEngine

_ids = random.SystemRandom()


@pytest.fixture(scope="module")
def engine(chdb_dir: Path) -> Iterator[ChdbEngine]:
    # If another fixture of this process already has the engine open, share its directory instead of failing.
    opened = ChdbEngine(ChdbEngine.current_path() or chdb_dir)
    yield opened
    opened.close()


@pytest.fixture
def team() -> int:
    """A project id no other test uses, so tests can share the engine's tables."""
    return _ids.randrange(10**9, 2**62)
