"""The sessions table: what its materialized view costs a load, and what reading it saves, in the same run.

    python bench/bench_sessions.py [--events 1000000] [--repeat 2]

Generates N demo events (every one carries ``$session_id``) as Parquet and, on one chDB in a temporary data dir:

* **load**: ``load_file`` into a fresh project with the sessions view in place, against the same load after
  ``DROP VIEW sessions_mv`` (the view restored afterwards), alternating which goes first;
* **query**: PostHog's web-analytics question "sessions, average duration and bounce rate per entry page"
  through HogQL's ``sessions`` table (compiled, guarded), against hand-written SQL of the same meaning that
  groups the events by session itself.

Prints seconds and the ratios (load with/without the view; HogQL sessions/hand-written).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hoglab.server.demo import generate_events
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.ddl import create_statements
from hoglab.server.hogql import compile_hogql
from hoglab.server.ingest import load_file

HOGQL = (
    "SELECT $entry_pathname, count() AS n, avg($session_duration), avg($is_bounce) "
    "FROM sessions GROUP BY $entry_pathname ORDER BY n DESC, $entry_pathname"
)
HAND_WRITTEN = """
SELECT path(entry_url) AS entry_pathname, count() AS sessions, avg(duration),
       avg(if(pageviews + autocaptures = 0, NULL, NOT (pageviews > 1 OR autocaptures > 0 OR duration >= 10)))
FROM (
    SELECT `$session_id`,
           argMinIf(JSONExtractString(properties, '$current_url'), timestamp,
                    JSONExtractString(properties, '$current_url') != '') AS entry_url,
           dateDiff('second', min(timestamp), max(timestamp)) AS duration,
           countIf(event = '$pageview') AS pageviews, countIf(event = '$autocapture') AS autocaptures
    FROM hoglab.events WHERE team_id = {team} AND `$session_id` != '' GROUP BY `$session_id`
)
GROUP BY entry_pathname ORDER BY sessions DESC, entry_pathname
"""


def quiesce(engine: ChdbEngine, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and engine.query_bytes("SELECT count() FROM system.merges").strip() != b"0":
        time.sleep(0.2)


def timed_load(engine: ChdbEngine, team: int, path: Path, *, with_view: bool) -> float:
    if not with_view:
        engine.command("DROP VIEW IF EXISTS hoglab.sessions_mv")
    try:
        quiesce(engine)
        return load_file(engine, team, path).seconds
    finally:
        if not with_view:
            view = next(s for s in create_statements() if "MATERIALIZED VIEW" in s)
            engine.command(view)


def timed_query(engine: ChdbEngine, sql: str) -> tuple[float, list[tuple[object, ...]]]:
    started = time.perf_counter()
    table = engine.execute(sql, settings={"join_use_nulls": 1})
    return time.perf_counter() - started, [tuple(r.values()) for r in table.to_pylist()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="hoglab-bench-sessions-"))
    table = generate_events(users=max(100, args.events // 10), seed=1)
    while table.num_rows < args.events:
        table = pa.concat_tables([table, generate_events(users=max(100, args.events // 10), seed=table.num_rows)])
    path = work / "events.parquet"
    pq.write_table(table.slice(0, args.events), path, compression="zstd")
    engine = ChdbEngine(work / "chdb")
    try:
        team = 1000
        print(f"{args.events:,} events; load with the sessions view vs without")
        for run in range(args.repeat):
            order = (True, False) if run % 2 == 0 else (False, True)
            seconds = {}
            for with_view in order:
                team += 1
                seconds[with_view] = timed_load(engine, team, path, with_view=with_view)
            print(f"  load: {seconds[True]:.2f}s with the view, {seconds[False]:.2f}s without: "
                  f"{seconds[True] / seconds[False]:.2f}x")  # fmt: skip
            sys.stdout.flush()
        with_sessions = team - 1 if args.repeat % 2 == 0 else team  # the last project loaded with the view
        for candidate in (team, team - 1):
            if engine.query_bytes(f"SELECT count() FROM hoglab.sessions WHERE team_id = {candidate}").strip() != b"0":
                with_sessions = candidate
        quiesce(engine)
        compiled = compile_hogql(HOGQL, team_id=with_sessions, default_limit=None)
        hand = HAND_WRITTEN.format(team=with_sessions)
        ours, theirs = [], []
        for _ in range(max(3, args.repeat)):
            t_ours, rows_ours = timed_query(engine, compiled.sql)
            t_hand, rows_hand = timed_query(engine, hand)
            ours.append(t_ours)
            theirs.append(t_hand)
        assert [r[:2] for r in rows_ours] == [r[:2] for r in rows_hand], "the two queries disagree"
        o, h = statistics.median(ours), statistics.median(theirs)
        print(f"  query (median of {len(ours)}): HogQL sessions {o * 1000:.0f} ms, hand-written GROUP BY over "
              f"events {h * 1000:.0f} ms: {o / h:.2f}x")  # fmt: skip
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
