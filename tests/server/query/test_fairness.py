"""The fair share of the engine (``query/fairness.py``) on its own: slots per project and per key, the waiting
cap that answers 429 to the busy project only, the timeout, and the switch that turns it off; the settings."""

from __future__ import annotations

import threading
import time

import pytest

from hoglab.server.config import ServerConfig
from hoglab.server.query.fairness import FairGate, ProjectBusy


def _occupy(gate: FairGate, project_id: int, key_id: int | None, release: threading.Event) -> threading.Thread:
    entered = threading.Event()

    def hold() -> None:
        with gate.hold(project_id=project_id, key_id=key_id):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(5)
    return thread


def test_a_busy_project_waits_and_another_does_not() -> None:
    gate = FairGate(slots=2, max_waiting=1, timeout=5)
    release = threading.Event()
    holders = [_occupy(gate, 1, None, release) for _ in range(2)]
    try:
        assert gate.running(1) == 2
        with gate.hold(project_id=2, key_id=None):  # another project: at once
            assert gate.running(2) == 1
        waited: list[float] = []

        def third() -> None:
            start = time.monotonic()
            with gate.hold(project_id=1, key_id=None):
                waited.append(time.monotonic() - start)

        waiter = threading.Thread(target=third)
        waiter.start()
        time.sleep(0.2)
        # one waits already: the next is refused
        with pytest.raises(ProjectBusy, match="This project"), gate.hold(project_id=1, key_id=None):
            pass
        assert not waited  # still waiting for a slot of project 1
    finally:
        release.set()
        for t in holders:
            t.join()
    waiter.join(5)
    assert len(waited) == 1


def test_a_key_has_its_own_share_across_projects() -> None:
    gate = FairGate(slots=1, max_waiting=0, timeout=5)
    release = threading.Event()
    holder = _occupy(gate, 1, 42, release)
    try:
        with pytest.raises(ProjectBusy, match="personal API key"), gate.hold(project_id=2, key_id=42):
            pass
        with gate.hold(project_id=2, key_id=7):
            pass
    finally:
        release.set()
        holder.join()


def test_waiting_longer_than_the_timeout_is_a_429() -> None:
    gate = FairGate(slots=1, max_waiting=5, timeout=0.2)
    release = threading.Event()
    holder = _occupy(gate, 1, None, release)
    try:
        with pytest.raises(ProjectBusy), gate.hold(project_id=1, key_id=None):
            pass
    finally:
        release.set()
        holder.join()


def test_off_means_no_share() -> None:
    gate = FairGate(slots=1, max_waiting=0, timeout=0, enabled=False)
    with gate.hold(project_id=1, key_id=None), gate.hold(project_id=1, key_id=None):
        assert gate.running(1) == 0


def test_a_project_compiles_one_statement_at_a_time_and_others_do_not_wait() -> None:
    gate = FairGate(slots=4, max_waiting=16, timeout=5)
    release = threading.Event()
    entered = threading.Event()

    def compile_long() -> None:
        with gate.compiling(1):
            entered.set()
            release.wait(10)

    first = threading.Thread(target=compile_long)
    first.start()
    assert entered.wait(5)
    order: list[str] = []

    def compile_next() -> None:
        with gate.compiling(1):
            order.append("project 1")

    second = threading.Thread(target=compile_next)
    second.start()
    time.sleep(0.2)
    with gate.compiling(2):  # another project compiles at once
        order.append("project 2")
    assert order == ["project 2"]  # project 1's second compile still waits for its first
    release.set()
    first.join(5)
    second.join(5)
    assert order == ["project 2", "project 1"]
    short = FairGate(slots=4, max_waiting=16, timeout=0.2)
    with short.compiling(1), pytest.raises(ProjectBusy, match="compiling"), short.compiling(1):
        pass
    off = FairGate(slots=1, max_waiting=0, timeout=0, enabled=False)
    with off.compiling(1), off.compiling(1):
        pass


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOGLAB_MAX_RESULT_BYTES", "1000")
    monkeypatch.setenv("HOGLAB_MAX_MEMORY_USAGE", "2000")
    monkeypatch.setenv("HOGLAB_PROJECT_QUERY_SLOTS", "3")
    monkeypatch.setenv("HOGLAB_PROJECT_ASYNC_QUEUE", "5")
    monkeypatch.setenv("HOGLAB_FAIR_SHARE", "off")
    config = ServerConfig.from_env(max_result_bytes=None)
    assert (config.max_result_bytes, config.max_memory_usage) == (1000, 2000)
    assert (config.project_query_slots, config.project_async_queue, config.fair_share) == (3, 5, False)
    assert ServerConfig.from_env(max_result_bytes=99).max_result_bytes == 99  # hoglab serve's flag wins
    monkeypatch.setenv("HOGLAB_MAX_RESULT_BYTES", "2MiB")
    assert ServerConfig.from_env().max_result_bytes == 2 * 1024**2
    monkeypatch.setenv("HOGLAB_MAX_RESULT_BYTES", "lots")
    with pytest.raises(ValueError, match="HOGLAB_MAX_RESULT_BYTES"):
        ServerConfig.from_env()


def test_the_memory_and_compile_budgets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = ServerConfig.from_env()
    assert (defaults.memory_budget, defaults.project_memory_share) == (0, 0.5)
    assert (defaults.max_compile_seconds, defaults.max_compiled_sql_bytes) == (3.0, 262_144)
    monkeypatch.setenv("HOGLAB_MEMORY_BUDGET", "12GiB")
    monkeypatch.setenv("HOGLAB_PROJECT_MEMORY_SHARE", "0.25")
    monkeypatch.setenv("HOGLAB_MAX_COMPILE_SECONDS", "1.5")
    monkeypatch.setenv("HOGLAB_MAX_COMPILED_SQL_BYTES", "100KiB")
    config = ServerConfig.from_env()
    assert (config.memory_budget, config.project_memory_share) == (12 * 1024**3, 0.25)
    assert (config.max_compile_seconds, config.max_compiled_sql_bytes) == (1.5, 100 * 1024)
    assert ServerConfig.from_env(memory_budget=1024**3).memory_budget == 1024**3  # hoglab serve's flag wins
    for name, bad in (("HOGLAB_PROJECT_MEMORY_SHARE", "2"), ("HOGLAB_PROJECT_MEMORY_SHARE", "half"),
                      ("HOGLAB_MAX_COMPILE_SECONDS", "0"), ("HOGLAB_MEMORY_BUDGET", "lots")):  # fmt: skip
        with monkeypatch.context() as bad_env:
            bad_env.setenv(name, bad)
            with pytest.raises(ValueError, match=name):
                ServerConfig.from_env()
