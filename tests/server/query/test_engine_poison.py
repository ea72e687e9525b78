"""Regression: chDB keeps the output a statement wrote before failing and prepends it to the next answer on the
same connection, which may be another project's. The engine must never reuse such a connection."""

from __future__ import annotations

import pytest

from hoglab.server.engine import StatementFailed


def test_a_failed_statement_does_not_leak_into_the_next_answer(hoglab_service) -> None:
    engine = hoglab_service.state.engine
    for _ in range(3):
        with pytest.raises(StatementFailed, match="Division by zero"):
            # Fails while it runs (row 6), after the JSON head was written.
            engine.execute_json("SELECT intDiv(10, toInt64(number) - 5) AS x FROM numbers(10)")
        answer = engine.execute_json("SELECT 42 AS answer")
        assert (answer.columns, answer.data.replace(b"\n", b"").replace(b"\t", b"")) == (["answer"], b"[[42]]")
        table = engine.execute("SELECT 7 AS seven")
        assert table.to_pylist() == [{"seven": 7}]
