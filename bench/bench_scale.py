"""100 million events on one machine: load them, then a 90-day trend by a property and a 3-step funnel, with the
service's default settings (4 GiB per query, GROUP BY/ORDER BY spilling past 2 GiB).

    nohup python bench/bench_scale.py --events 100000000 --data-dir /tmp/hoglab-scale > scale.txt &

1. Generate: ``--files`` Parquet files in PostHog's export shape (``uuid``, ``event``, ``distinct_id``,
   ``timestamp``, ``properties``), written by the engine (``INSERT INTO FUNCTION file(...) SELECT ... FROM
   numbers``): 90 days, one person per 25 events, 55% ``$pageview``, 20% ``$autocapture``, 15% ``signup``, 10%
   ``purchase``; properties ``$browser`` (4 values), ``plan`` (3, missing on a fifth), ``price``, ``$current_url``.
2. Load: every file with ``load_file`` (what ``hoglab load`` runs: parse, check every row, persons, insert), timed
   per file (events/s and the process's peak RSS); ``--load-files N`` loads only the first N that way and the
   rest with a plain ``INSERT ... SELECT FROM file()`` (``person_id`` a hash of the distinct id, no persons rows),
   to reach the questions sooner. ``--resume`` goes on with the files a stopped run left in ``--data-dir``.
3. Ask over HTTP (the real service in this process, ``POST /query/`` with ``refresh: "force_blocking"``): the
   90-day DAU trend of ``$pageview`` by ``$browser`` and the funnel ``$pageview`` → ``signup`` → ``purchase``
   within 14 days, twice each; then again once ``$browser`` is a materialized column (filled).
4. Capture three events after emptying the person cache (what a restart does), timed: a project of millions of
   persons must not be read into Python for them.
5. Report: load rate, each query's time, the process's peak RSS (``ru_maxrss``: chDB runs in this process), and
   the events' size on disk (``system.parts``: compressed and uncompressed bytes).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

os.environ.setdefault("HOGLAB_AUTO_MATERIALIZE", "0")  # this run chooses what to materialize, and when

from hoglab.local import start_local_service
from hoglab.server.engine import materialized
from hoglab.server.engine.ddl import DATABASE
from hoglab.server.ingest import PersonStore, load_file

START = datetime(2025, 9, 1, tzinfo=UTC)
DAYS = 90
RANGE = {"date_from": START.date().isoformat(), "date_to": (START + timedelta(days=DAYS - 1)).date().isoformat()}
TREND = {"kind": "TrendsQuery", "dateRange": RANGE,
         "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
         "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}}  # fmt: skip
FUNNEL = {"kind": "FunnelsQuery", "dateRange": RANGE,
          "series": [{"kind": "EventsNode", "event": e} for e in ("$pageview", "signup", "purchase")],
          "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"}}  # fmt: skip


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # kilobytes on Linux


def write_files(engine: Any, events: int, files: int, directory: Path) -> list[Path]:
    people = max(events // 25, 1)
    per_file = events // files
    start_us = int(START.timestamp() * 1_000_000)
    span_us = DAYS * 86400 * 1_000_000
    paths = []
    for f in range(files):
        path = directory / f"events-{f:03d}.parquet"
        engine.command(
            f"""INSERT INTO FUNCTION file('{path}', Parquet)
            SELECT toString(generateUUIDv4(number)) AS uuid, event, concat('user-', toString(k)) AS distinct_id,
              fromUnixTimestamp64Micro(toInt64({start_us} + intHash64(number + 1) % {span_us}), 'UTC') AS timestamp,
              concat('{{"$browser":"', ['Chrome', 'Firefox', 'Safari', 'Edge'][k % 4 + 1], '"',
                     if(h % 5 = 0, '', concat(',"plan":"', ['free', 'pro', 'team'][intHash32(number) % 3 + 1], '"')),
                     ',"price":', toString(h % 100), ',"$current_url":"https://shop.example.com/p/',
                     toString(h % 5000), '"}}') AS properties
            FROM (SELECT number, intHash64(number) AS h, sipHash64(number) % {people} AS k,
                         multiIf(h % 100 < 55, '$pageview', h % 100 < 75, '$autocapture', h % 100 < 90, 'signup',
                                 'purchase') AS event
                  FROM numbers({f * per_file}, {per_file}))""",
            settings={"max_execution_time": 0, "output_format_parquet_compression_method": "zstd"},
        )
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/hoglab-scale"))
    parser.add_argument("--load-files", type=int, default=None,
                        help="files loaded with load_file (default: all; the rest by INSERT)")  # fmt: skip
    parser.add_argument("--resume", action="store_true", help="go on with the files a stopped run left")
    parser.add_argument("--keep", action="store_true", help="keep the data dir afterwards")
    parser.add_argument("--runs", type=int, default=2, help="times each question is asked")
    parser.add_argument("--max-execution-time", type=int, default=None, help="seconds (default: the service's 60)")
    args = parser.parse_args()

    files_dir = args.data_dir / "files"
    if not args.resume:
        shutil.rmtree(args.data_dir, ignore_errors=True)
        files_dir.mkdir(parents=True)
    overrides: dict[str, Any] = {"rate_limits_enabled": False}
    if args.max_execution_time:
        overrides["max_execution_time"] = args.max_execution_time
    service = start_local_service(args.data_dir / "service", config_overrides=overrides)
    store = service.state.store
    existing = [p for p in store.projects.list() if p.name == "scale"] if args.resume else []
    project = existing[0] if existing else store.projects.create("scale")
    team = project.id
    key = store.keys.create(store.users.default().id, ["query:read"], [team])[1]
    engine = service.state.engine
    print(f"{args.events:,} events, {args.files} files, data in {args.data_dir}; 2 shared cores, 24 GiB", flush=True)
    try:
        started = time.perf_counter()
        if args.resume:
            paths = sorted(files_dir.glob("events-*.parquet"))
        else:
            paths = write_files(engine, args.events, args.files, files_dir)
        size = sum(p.stat().st_size for p in paths)
        print(f"{len(paths)} Parquet files ({size / 1e9:.1f} GB) ready in {time.perf_counter() - started:.0f} s",
              flush=True)  # fmt: skip

        loaded, load_seconds = 0, 0.0
        for i, path in enumerate(paths):
            if (args.load_files is None or i < args.load_files) and not args.resume:
                report = load_file(engine, team, path)
                rows, seconds, how = report.rows, report.seconds, f"load_file, {report.persons_created:,} new persons"
                loaded += report.rows
                load_seconds += report.seconds
            else:
                begun = time.perf_counter()
                engine.command(
                    f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp,
                    properties, elements_chain, created_at)
                    SELECT {team}, toUUID(uuid), event, distinct_id,
                           reinterpretAsUUID(sipHash128(distinct_id)), timestamp, properties, '', now64(6)
                    FROM file('{path}', Parquet)""",
                    settings={"max_execution_time": 0},
                )
                rows = int(engine.execute(f"SELECT count() AS n FROM file('{path}', Parquet)").column("n")[0].as_py())
                seconds, how = time.perf_counter() - begun, "INSERT ... FROM file()"
            print(f"  {path.name}: {rows:,} events by {how}, {seconds:.0f} s ({rows / seconds:,.0f}/s); "
                  f"peak RSS {peak_rss_gib():.1f} GiB", flush=True)  # fmt: skip
            path.unlink()

        parts = engine.execute(
            f"SELECT sum(rows) AS rows, sum(data_compressed_bytes) AS c, sum(data_uncompressed_bytes) AS u "
            f"FROM system.parts WHERE database = '{DATABASE}' AND table = 'events' AND active"
        ).to_pylist()[0]
        if loaded:
            print(f"\nload_file: {loaded:,} events in {load_seconds:,.0f} s, {loaded / load_seconds:,.0f} events/s")
        print(f"\n{parts['rows']:,} events stored; on disk {parts['c'] / 1e9:.1f} GB compressed "
              f"({parts['u'] / 1e9:.1f} GB uncompressed); peak RSS {peak_rss_gib():.1f} GiB\n", flush=True)  # fmt: skip

        http = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=3600)

        def ask(name: str, query: dict[str, Any]) -> None:
            for attempt in range(1, args.runs + 1):
                begun = time.perf_counter()
                answer = http.post(f"/api/projects/{team}/query/", json={"query": query, "refresh": "force_blocking"})
                seconds = time.perf_counter() - begun
                if answer.status_code != 200:
                    print(f"| {name} (run {attempt}) | failed: HTTP {answer.status_code} {answer.text[:300]} |",
                          flush=True)  # fmt: skip
                    return
                body = answer.json()
                shape = (f"{len(body['results'])} series" if query["kind"] == "TrendsQuery"
                         else " → ".join(f"{s['count']:,}" for s in body["results"]))  # fmt: skip
                print(f"| {name} (run {attempt}) | {seconds:,.1f} s | {shape} | peak RSS {peak_rss_gib():.1f} GiB |",
                      flush=True)  # fmt: skip

        print("| question | time | answer | process |\n|---|---:|---|---|")
        ask("90-day DAU trend by $browser", TREND)
        ask("3-step funnel, 14 days", FUNNEL)
        materialized.materialize(engine, ["$browser"])
        begun = time.perf_counter()
        while not all(s.done for s in materialized.fill_status(engine)):
            time.sleep(5)
        print(f"| materialize `$browser` (background fill) | {time.perf_counter() - begun:,.0f} s | | |", flush=True)
        ask("90-day DAU trend by $browser, materialized", TREND)
        # Capture after a restart: the person cache starts empty, as in a new process; a known id that $sets.
        PersonStore.for_engine(engine).invalidate(team)
        for i in range(3):
            begun = time.perf_counter()
            event = {"api_key": project.api_token, "event": "bench", "distinct_id": f"user-{i}",
                     "properties": {"$set": {"bench": i}}}  # fmt: skip
            sent = http.post("/i/v0/e/", json=event)
            print(f"| captured event {i + 1} after a restart | {time.perf_counter() - begun:,.1f} s | HTTP "
                  f"{sent.status_code} | peak RSS {peak_rss_gib():.1f} GiB |", flush=True)  # fmt: skip
        http.close()
    finally:
        service.stop()
        if not args.keep:
            shutil.rmtree(args.data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
