"""The Query endpoint end to end (HTTP, httpx) against the same questions as hand-written SQL on the engine.

    python bench/bench_query.py [--events 10000000] [--runs 7] [--keep DIR]

Generates N synthetic events in a fresh data directory (in the engine, ``INSERT ... SELECT FROM numbers``: 90% in
the benchmark's project, 10% in another; 60 days; one person per 25 events; JSON properties ``$browser``,
``plan``, ``price``, ``$current_url``), starts the real service in this process (uvicorn on 127.0.0.1), and for
each question times

* end to end: ``POST /api/projects/:id/query/`` with ``refresh: "force_blocking"`` (no cache), from sending the
  request to having the whole body (auth, rate limit, validation, compile, the engine, the answer, HTTP), and
* raw: the hand-written ClickHouse SQL of the same question, team filter inline, run with ``execute_json`` on the
  service's own engine (the same JSON output the endpoint sends, the same guard-rail settings),

alternating the two, medians of ``--runs`` after one warm-up each. The ratio is end to end / raw. The
endpoint's own ``timings`` say how much of the difference is the engine; compiling happens in the warm-up only
(compiled statements are kept), its time is shown apart.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from hoglab.local import start_local_service
from hoglab.server.engine.ddl import DATABASE

QUESTIONS: dict[str, tuple[str, str]] = {
    "count by event": (
        "select event, count() as c from events group by event order by event",
        f"SELECT event, count() AS c FROM {DATABASE}.events WHERE team_id = {{team}} GROUP BY event ORDER BY event",
    ),
    "daily unique users, 30 days": (
        "select toStartOfDay(timestamp) as day, count(distinct person_id) as users from events "
        "where timestamp >= '2026-01-01' and timestamp < '2026-01-31' group by day order by day",
        f"SELECT toStartOfDay(timestamp) AS day, count(DISTINCT person_id) AS users FROM {DATABASE}.events "
        "WHERE team_id = {team} AND timestamp >= toDateTime64('2026-01-01', 6, 'UTC') "
        "AND timestamp < toDateTime64('2026-01-31', 6, 'UTC') GROUP BY day ORDER BY day",
    ),
    "property filter + group by": (
        "select properties.plan as plan, count() as c from events where properties.$browser = 'Chrome' "
        "group by plan order by plan",
        f"SELECT JSONExtract(properties, 'plan', 'Nullable(String)') AS plan, count() AS c FROM {DATABASE}.events "
        "WHERE team_id = {team} AND JSONExtract(properties, '$browser', 'Nullable(String)') = 'Chrome' "
        "GROUP BY plan ORDER BY plan",
    ),
    "10,000-row select": (
        "select uuid, event, timestamp, distinct_id, properties from events order by timestamp desc limit 10000",
        f"SELECT uuid, event, timestamp, distinct_id, properties FROM {DATABASE}.events WHERE team_id = {{team}} "
        "ORDER BY timestamp DESC LIMIT 10000",
    ),
}


def generate(engine: Any, team: int, other: int, events: int) -> None:
    """``events`` synthetic events, straight in the engine (no persons table: these questions don't read it)."""
    people = max(events // 25, 1)
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT if(number % 10 = 0, {other}, {team}), generateUUIDv4(),
          ['$pageview', '$pageview', '$pageview', 'signup', 'purchase', '$autocapture'][number % 6 + 1],
          concat('user-', toString(number % {people})),
          reinterpretAsUUID(sipHash128(toString(number % {people}))),
          toDateTime64('2025-12-15 00:00:00', 6, 'UTC') + toIntervalSecond(number * 7919 % (60 * 86400)),
          concat('{{"$browser":"', ['Chrome', 'Firefox', 'Safari'][number % 3 + 1], '","plan":"',
                 ['free', 'pro', 'team'][intHash32(number) % 3 + 1], '","price":', toString(number % 100),
                 ',"$current_url":"https://shop.example.com/p/', toString(intHash32(number) % 5000), '"}}'),
          '', now64(6)
        FROM numbers({events})"""
    )
    engine.command(f"OPTIMIZE TABLE {DATABASE}.events FINAL")


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def bench_service(data_dir: Path) -> tuple[Any, int, int, str]:
    """The real service on ``data_dir`` in this process (rate limits off): ``(service, project id, neighbour's
    project id, a query:read key for the project)``. Also used by bench_insights.py."""
    service = start_local_service(data_dir, config_overrides={"rate_limits_enabled": False})
    store = service.state.store
    team = store.projects.create("bench").id
    other = store.projects.create("bench neighbour").id
    _, key = store.keys.create(store.users.default().id, ["query:read"], [team])
    return service, team, other, key


def bench_arguments(doc: str | None, *, runs: int, events: int = 10_000_000) -> argparse.ArgumentParser:
    """The options every end-to-end bench takes (``--events``, ``--runs``); a script adds its own to the parser."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=events)
    parser.add_argument("--runs", type=int, default=runs)
    return parser


def never_seen(client: httpx.Client, url: str, runs: int) -> None:
    """What the warning for a property the project has never seen costs (server/query/taxonomy.py): the same
    filter on a key the data has and on a misspelt one; the first request of the misspelt key looks it up in the
    data (a scan that finds nothing), later ones remember it until the data changes."""

    def post(key: str) -> httpx.Response:
        hogql = f"select count() as c from events where properties.{key} = 'pro'"
        body = {"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_blocking"}
        response = client.post(url, json=body)
        response.raise_for_status()
        return response

    post("plan")  # compiled, the property sample taken
    first = timed(lambda: post("plna"))
    assert post("plna").json()["metadata"]["warnings"][0]["fix"] == "plan"
    known = statistics.median(timed(lambda: post("plan")) for _ in range(runs))
    unseen = statistics.median(timed(lambda: post("plna")) for _ in range(runs))
    print(f"\nproperty filter on a key the data has: {known:.1f} ms; on a key it has never seen: first request "
          f"{first:.1f} ms (the lookup), then {unseen:.1f} ms (**{unseen / known:.2f}x**), with the warning")


def main() -> None:
    parser = bench_arguments(__doc__, runs=7)
    parser.add_argument("--keep", type=Path, help="data directory to use and keep (default: a temporary one)")
    args = parser.parse_args()

    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="hoglab-bench-query-"))
    service, team, other, key = bench_service(data_dir)
    try:
        engine = service.state.engine
        start = time.perf_counter()
        generate(engine, team, other, args.events)
        seconds = time.perf_counter() - start
        mine = engine.execute(f"SELECT count() AS n FROM {DATABASE}.events WHERE team_id = {team}").to_pylist()[0]["n"]
        print(f"{args.events:,} events generated in {seconds:.1f} s ({mine:,} in the benchmark's project)\n")
        client = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=300)
        url = f"/api/projects/{team}/query/"

        print("| question | raw engine ms | end to end ms | ratio | first compile ms | endpoint's execute ms | bytes |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, (hogql, raw_sql) in QUESTIONS.items():
            sql = raw_sql.format(team=team)
            body = {"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_blocking"}
            holder: dict[str, httpx.Response] = {}

            def http(body: dict[str, Any] = body, holder: dict[str, httpx.Response] = holder) -> None:
                response = client.post(url, json=body)
                response.raise_for_status()
                holder["r"] = response

            def raw(sql: str = sql) -> None:
                engine.execute_json(sql)

            raw_result = engine.execute_json(sql)
            http()  # the warm-up compiles the statement; later runs find it compiled (runners/hogql.py)
            answer = holder["r"].json()
            assert len(answer["results"]) == raw_result.rows, (name, len(answer["results"]), raw_result.rows)
            first_compile = {t["k"]: t["t"] for t in answer["timings"]}["./compile"] * 1000
            raw_ms, http_ms, execute_ms = [], [], []
            for _ in range(args.runs):
                raw_ms.append(timed(raw))
                http_ms.append(timed(http))
                timings = {t["k"]: t["t"] for t in holder["r"].json()["timings"]}
                execute_ms.append(timings.get("./execute", 0) * 1000)
            r, h = statistics.median(raw_ms), statistics.median(http_ms)
            print(f"| {name} | {r:.1f} | {h:.1f} | **{h / r:.2f}x** | {first_compile:.1f} | "
                  f"{statistics.median(execute_ms):.1f} | {len(holder['r'].content):,} |")  # fmt: skip

        hogql = QUESTIONS["count by event"][0]
        client.post(url, json={"query": {"kind": "HogQLQuery", "query": hogql}})
        cached = statistics.median(
            timed(lambda: client.post(url, json={"query": {"kind": "HogQLQuery", "query": hogql}}))
            for _ in range(args.runs)
        )
        print(f"\ncount by event answered from the cache (refresh: blocking): {cached:.1f} ms")
        never_seen(client, url, args.runs)
        client.close()
    finally:
        service.stop()
        if args.keep is None:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
