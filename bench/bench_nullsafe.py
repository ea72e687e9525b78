"""What PostHog's NULL rules (issue 33) cost the compiler: the DuckDB-peer questions, with and without them.

    python bench/bench_nullsafe.py [--runs 200]

The questions are bench_peers.py's (three HogQL statements, the 90-day DAU trend by ``$browser`` and the 3-step
funnel); the trend is also bench_scale.py's 100M trend, the same query. Each insight's HogQL is taken as its runner
hands it to the compiler, by answering it once on a small generated project (the runners compile every statement
through ``hoglab.server.hogql.compile_hogql``). Each statement is then compiled ``--runs`` times with the rules as
they are (``ifNull(a = b, isNull(a) AND isNull(b))`` where both operands may be NULL) and with the comparison's
NULL answer fixed at 0/1 (the rule before), the two in turn run after run; the table gives median compile ms of
both, their ratio, and whether the printed SQL differs at all (where it does not, the engine runs the very same
statement, so the rule costs the execution nothing at any size, 100M events included).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import questions

import hoglab.server.query.runners.base as runner_base
from hoglab.local import start_local_service
from hoglab.server.hogql import compile_hogql, nullsafe
from hoglab.server.ingest import Ingestor

START = datetime(2025, 9, 1, tzinfo=UTC)


def _before(node: exp.Expr, operands: list[exp.Expr], negated: bool) -> exp.Expr:
    return exp.Literal.number(1 if negated else 0)


def statements() -> list[tuple[str, str, dict[str, Any]]]:
    """``(question, HogQL, compile_hogql's keyword arguments)`` of every statement the peer questions compile."""
    seen: list[tuple[str, str, dict[str, Any]]] = []
    real = runner_base.compile_hogql
    current = [""]

    def recording(hogql: str, **kwargs: Any) -> Any:
        seen.append((current[0], hogql, dict(kwargs)))
        return real(hogql, **kwargs)

    runner_base.compile_hogql = recording
    with tempfile.TemporaryDirectory() as data, start_local_service(Path(data)) as service:
        events = [
            {"event": ("$pageview", "signup", "purchase")[i % 3], "distinct_id": f"u{i % 40}",
             "timestamp": (START + timedelta(hours=7 * i)).isoformat(),
             "properties": {"$browser": ("Chrome", "Safari")[i % 2], "plan": ("free", "pro", None)[i % 3]}}
            for i in range(600)
        ]  # fmt: skip
        assert service.state.engine is not None
        Ingestor.for_engine(service.state.engine).capture_batch(service.project_id, events)
        import httpx

        with httpx.Client(base_url=service.url, headers=service.headers, timeout=120) as http:
            for name, query, *_ in questions("unused.parquet"):
                current[0] = name
                body = query if isinstance(query, dict) else {"kind": "HogQLQuery", "query": query}
                answer = http.post(f"/api/projects/{service.project_id}/query/", json={"query": body,
                                   "refresh": "force_blocking"})  # fmt: skip
                assert answer.status_code == 200, answer.text
    runner_base.compile_hogql = real
    return seen


def paired(compile_all: Callable[[], Any], runs: int) -> tuple[float, float]:
    """Median ms of ``compile_all`` with the rules as they are and with the constant NULL answer, the two taken in
    turn run after run so the machine's load falls on both alike."""
    rule = nullsafe._default
    now, before = [], []
    for _ in range(runs):
        for variant, samples in ((rule, now), (_before, before)):
            nullsafe._default = variant  # type: ignore[assignment]
            start = time.perf_counter()
            compile_all()
            samples.append(time.perf_counter() - start)
    nullsafe._default = rule  # type: ignore[assignment]
    return statistics.median(now) * 1000, statistics.median(before) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    found = statements()
    rule = nullsafe._default
    print("| question | statements | compile ms, PostHog's NULL rules | compile ms, before | ratio | SQL differs |")
    print("|---|---|---|---|---|---|")
    names = list(dict.fromkeys(name for name, _, _ in found))
    for name in names:
        mine = [(hogql, kwargs) for n, hogql, kwargs in found if n == name]

        def compile_all(mine: list[tuple[str, dict[str, Any]]] = mine) -> list[str]:
            return [compile_hogql(hogql, **kwargs).sql for hogql, kwargs in mine]

        with_rule = compile_all()
        nullsafe._default = _before  # type: ignore[assignment]  # the rule before: a constant NULL answer
        without_rule = compile_all()
        nullsafe._default = rule  # type: ignore[assignment]
        a, b = paired(compile_all, args.runs)
        differs = "yes" if with_rule != without_rule else "no"
        print(f"| {name} | {len(mine)} | {a:.2f} | {b:.2f} | {a / b:.3f} | {differs} |")


if __name__ == "__main__":
    main()
