"""Actions against their event-filter twins, same run: what naming an action costs a query.

    python bench/bench_actions.py [--events 2000000] [--runs 5] [--actions 500] [--without prefilter|cache]

Data: bench_insights.py's generator (N events over 100 days: 55% ``$pageview``, a fifth of them on ``/checkout``;
``$autocapture``, ``signup``, ``purchase``; persons with merges). Two questions, each asked over HTTP to the real
service in this process (``refresh: "force_blocking"``, medians of ``--runs`` after a warm-up, the two forms
alternating):

* trend: 90-day daily unique persons of an action "Checkout" (``$pageview`` whose URL contains ``/checkout``, OR
  ``purchase``) against the same series written as two ``EventsNode`` twins' HogQL condition (one EventsNode with
  a ``hogql`` property filter of the same meaning);
* ``select 1`` with ``--actions`` actions in the project against the same in a project without actions: the
  per-request cost of reading the project's actions (the snapshot the cache key and the compiler use).

Both trend answers are compared before timing. ``--without`` measures what one of the two speed-ups is worth by
switching it off in this process: ``prefilter`` (an action series also says its step events as one ``event IN``,
read against the sort key) or ``cache`` (the project's actions read again on every request instead of once per
revision).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from bench_insights import generate  # the same data (this script runs from bench/)
from bench_query import bench_arguments, bench_service

CHECKOUT = [{"event": "$pageview", "url": "/checkout", "url_matching": "contains"}, {"event": "purchase"}]
TWIN = ("(event = '$pageview' AND ifNull(properties.$current_url LIKE '%/checkout%', 0)) "
        "OR event = 'purchase'")  # fmt: skip


def _timed(client: httpx.Client, url: str, query: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    response = client.post(url, json={"query": query, "refresh": "force_blocking"})
    response.raise_for_status()
    return time.perf_counter() - start, response.json()


def _execute(answer: dict[str, Any]) -> float:
    """The engine's share of an answer, from its own ``timings``."""
    return sum(t["t"] for t in answer.get("timings") or [] if t["k"] == "./execute")


def _switch_off(part: str) -> None:
    if part == "prefilter":
        from hoglab.server.query.runners import common

        common.action_events = lambda action: None  # type: ignore[assignment]  # no step events: no IN
    elif part == "cache":
        from hoglab.server.query import request

        class _Forget(dict):  # type: ignore[type-arg]  # keeps nothing: every request reads the actions
            def setdefault(self, key: Any, default: Any = None) -> Any:
                return {}

        request._ACTIONS = _Forget()  # type: ignore[assignment]


def main() -> None:
    parser = bench_arguments(__doc__, runs=5, events=2_000_000)
    parser.add_argument("--actions", type=int, default=500)
    parser.add_argument("--without", choices=["prefilter", "cache"], default=None)
    args = parser.parse_args()
    if args.without:
        _switch_off(args.without)
    data_dir = Path(tempfile.mkdtemp(prefix="hoglab-bench-actions-"))
    service, team, other, _ = bench_service(data_dir)
    try:
        engine, store = service.state.engine, service.state.store
        generate(engine, team, other, args.events, datetime.now(UTC).replace(minute=0, second=0, microsecond=0))
        key = store.keys.create(store.users.default().id, ["*"], [team, other])[1]
        action = store.actions.create(team, {"name": "Checkout", "steps": CHECKOUT}).id
        for i in range(args.actions - 1):
            store.actions.create(team, {"name": f"filler {i}", "steps": [{"event": f"e{i}"}]})
        client = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=600)
        url = f"/api/projects/{team}/query/"
        by_action = {"kind": "TrendsQuery", "dateRange": {"date_from": "-90d"},
                     "series": [{"kind": "ActionsNode", "id": action, "math": "dau"}]}  # fmt: skip
        by_filter = {"kind": "TrendsQuery", "dateRange": {"date_from": "-90d"}, "series": [
            {"kind": "EventsNode", "math": "dau", "properties": [{"type": "hogql", "key": TWIN}]}]}  # fmt: skip
        _, a = _timed(client, url, by_action)
        _, b = _timed(client, url, by_filter)
        assert a["results"][0]["data"] == b["results"][0]["data"], "the twins must answer the same"
        times: dict[str, list[float]] = {"action": [], "filter": []}
        engine_times: dict[str, list[float]] = {"action": [], "filter": []}
        for run in range(args.runs):  # each goes first in half of the runs
            pair = [("action", by_action), ("filter", by_filter)]
            for name, query in pair if run % 2 == 0 else pair[::-1]:
                seconds, answer = _timed(client, url, query)
                times[name].append(seconds)
                engine_times[name].append(_execute(answer))
        trend = {k: statistics.median(v) * 1000 for k, v in times.items()}
        execute = {k: statistics.median(v) * 1000 for k, v in engine_times.items()}
        off = f"; without the {args.without}" if args.without else ""
        print(f"{args.events:,} events; {args.actions} actions in the project{off}\n")
        print("| question | with the action ms | baseline ms | ratio |")
        print("|---|---:|---:|---:|")
        print(f"| trend: 90-day DAU of an action vs its HogQL twin, end to end | {trend['action']:.0f} "
              f"| {trend['filter']:.0f} | {trend['action'] / trend['filter']:.2f} |")
        print(f"| the same, the engine's execute only | {execute['action']:.0f} | {execute['filter']:.0f} "
              f"| {execute['action'] / execute['filter']:.2f} |")
        one = {"kind": "HogQLQuery", "query": "select 1"}
        small: dict[str, list[float]] = {"action": [], "filter": []}
        for _ in range(3):
            _timed(client, url, one), _timed(client, f"/api/projects/{other}/query/", one)
        for run in range(args.runs * 20):
            pair = [("action", url), ("filter", f"/api/projects/{other}/query/")]
            for name, where in pair if run % 2 == 0 else pair[::-1]:
                small[name].append(_timed(client, where, one)[0])
        ms = {k: statistics.median(v) * 1000 for k, v in small.items()}
        print(f"| `select 1`: {args.actions} actions vs none | {ms['action']:.1f} | {ms['filter']:.1f} "
              f"| {ms['action'] / ms['filter']:.2f} |")
        client.close()
    finally:
        service.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
