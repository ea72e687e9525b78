"""The compile budget (``hogql/budget.py``): the compiler stops once a statement's CPU time is spent, printed SQL
longer than ClickHouse parses is refused by its size in bytes, and outside a budget nothing changes."""

from __future__ import annotations

import gc
import time

import pytest

from hoglab.server.hogql import compile_hogql
from hoglab.translate.budget import CompileBudget, CompileBudgetExceeded, checkpoint


def subqueries(n: int) -> str:
    return "select " + " + ".join(f"(select count() from events where event = 'e{i}')" for i in range(n))


def test_the_compiler_stops_when_the_time_is_spent() -> None:
    text = subqueries(400)
    # Late in a full run the test process holds a large heap, and a full garbage collection landing inside the
    # short budgeted compile counts as its CPU time (it once took 0.71 s against 0.51 s for the whole compile):
    # collected first and paused, so the two timings compare compiling alone.
    gc.collect()
    gc.disable()
    try:
        started = time.thread_time()
        with pytest.raises(CompileBudgetExceeded) as refused, CompileBudget(seconds=0.05).applied():
            compile_hogql(text, team_id=1)
        spent = time.thread_time() - started
        # it stopped soon after its time, not at the end (this statement takes many times longer in full)
        full_started = time.thread_time()
        compiled = compile_hogql(text, team_id=1)
        full = time.thread_time() - full_started
    finally:
        gc.enable()
    assert refused.value.limit == "max_compile_seconds" and "0.05 s of CPU" in refused.value.message
    assert not refused.value.internal  # a refusal, not a compiler failure
    assert spent < full / 2
    assert len(compiled.sql) > 200_000  # outside the budget the same statement compiles


def test_printed_sql_is_measured_in_bytes_as_clickhouse_counts() -> None:
    budget = CompileBudget(max_sql_bytes=1000)
    budget.check_sql("é" * 500)  # 1,000 bytes: at the limit
    with pytest.raises(CompileBudgetExceeded, match="1002 bytes of SQL") as refused:
        budget.check_sql("é" * 501)
    assert refused.value.limit == "max_compiled_sql_bytes"


def test_checkpoints_do_nothing_outside_a_budget() -> None:
    for _ in range(1000):
        checkpoint()
    with CompileBudget(seconds=60).applied():
        for _ in range(1000):
            checkpoint()
    assert compile_hogql("select 1", team_id=1).sql
