"""``POST /query/arrow/`` (``query/bulk.py``): every step inside the project's share of the engine, and the
statement run once. ClickHouse runs a statement's scalar subqueries while describing it, so describing it as
it was (outside the gate, then running it) did the work twice, and ten concurrent Arrow requests of one project
took the engine from the others (issue 23: 10.3 s against 5.3 s on ``/query/``; another project's ``select 1``
waited 19 s). How much the engine read is its own count (``system.events`` ``SelectedRows``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pyarrow as pa
import pytest
from querytesting import Project, new_project

from hoglab.local import LocalService
from hoglab.server.query.fairness import FairGate

ROWS = 10_000_000
SCALAR = f"select (select count() from numbers({ROWS})) as c, number from numbers(3)"
HEAVY = "select count() as c from numbers(10000000) where sipHash64(number + {i}) % 7 = 3"


def _selected_rows(service: LocalService) -> int:
    engine = service.state.engine
    assert engine is not None
    raw = engine.query_bytes("SELECT value FROM system.events WHERE event = 'SelectedRows'")  # type: ignore[attr-defined]
    return int(raw.strip() or 0)


def _arrow(project: Project, sql: str) -> pa.Table:
    answer = project.http.post(project.path("arrow/"), json={"query": {"kind": "HogQLQuery", "query": sql}})
    assert answer.status_code == 200, answer.text[:300]
    return pa.ipc.open_stream(answer.content).read_all()


@pytest.fixture
def two(hoglab_service: LocalService) -> Iterator[tuple[Project, Project]]:
    a, b = new_project(hoglab_service, "bulk A"), new_project(hoglab_service, "bulk B")
    yield a, b
    a.close()
    b.close()


def test_a_scalar_subquery_runs_once(hoglab_service: LocalService, two) -> None:
    a, _ = two
    before = _selected_rows(hoglab_service)
    table = _arrow(a, SCALAR)
    read = _selected_rows(hoglab_service) - before
    assert table.column("c").to_pylist() == [ROWS] * 3  # the real run was whole: describing cut nothing short
    assert ROWS <= read < 1.5 * ROWS, read  # once; describing it first used to read all of it again
    # /query/ reads the same for the same statement
    before = _selected_rows(hoglab_service)
    assert a.rows(SCALAR) == [[ROWS, n] for n in range(3)]
    assert _selected_rows(hoglab_service) - before < 1.5 * ROWS


def test_nothing_runs_before_the_project_has_a_slot(hoglab_service: LocalService, two) -> None:
    """While project A holds every slot of its share, its Arrow request waits without compiling, describing or
    reading anything; project B's goes through; A's runs once a slot is free."""
    a, b = two
    state = hoglab_service.state
    gate = FairGate.for_engine(state.engine, state.config)
    answers: dict[str, pa.Table] = {}
    with ExitStack() as held:
        for _ in range(gate.slots):
            held.enter_context(gate.hold(project_id=a.id, key_id=None))
        before = _selected_rows(hoglab_service)
        waiting = threading.Thread(target=lambda: answers.update(a=_arrow(a, SCALAR)))
        waiting.start()
        time.sleep(1.0)
        assert waiting.is_alive() and _selected_rows(hoglab_service) - before < ROWS  # not even described
        assert _arrow(b, "select 1 as one").column("one").to_pylist() == [1]  # B is not held up
    waiting.join(60)
    assert answers["a"].column("c").to_pylist() == [ROWS] * 3


def test_an_arrow_flood_of_one_project_leaves_another_answered(hoglab_service: LocalService, two) -> None:
    a, b = two
    state = hoglab_service.state
    gate = FairGate.for_engine(state.engine, state.config)
    most = 0
    done: list[int] = []

    def flood(i: int) -> None:
        table = _arrow(a, HEAVY.format(i=i))
        done.append(table.num_rows)

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    bystander: list[float] = []
    while any(thread.is_alive() for thread in threads):
        most = max(most, gate.running(a.id))
        started = time.perf_counter()
        assert b.rows("select 1") == [[1]]
        bystander.append(time.perf_counter() - started)
        time.sleep(0.05)
    for thread in threads:
        thread.join(120)
    assert done == [1] * 10
    assert 0 < most <= gate.slots  # A never held more than its share, compiling and describing included
    assert len(bystander) >= 3 and max(bystander) < 5.0  # B was answered all along, while A's were running
