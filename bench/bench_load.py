"""Loading events: ``load_file`` (hoglab load) against chDB reading the same file itself, in the same run.

    python bench/bench_load.py [--events 1000000] [--repeat 1] [--keep DIR]

Generates N events with the demo generator (realistic persons: anonymous ids, $identify, $set), writes them as
JSONL, CSV and Parquet in PostHog's export shape, then for each file times

* ``load_file``: everything ``hoglab load`` does (parse, validate every row, persons, insert), and
* the baseline: chDB's own ``INSERT INTO events SELECT ... FROM file(...)`` of the same file, with the least
  work that still stores the events (parse the timestamp and uuid; no validation, no persons).

and prints events/s and the ratio load_file / baseline (1.0 would mean no overhead over the engine's own load).
Each run goes to a fresh project of one engine in a temporary data directory, after the background merges of
the previous runs have finished.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from hoglab.demo import generate_events
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.settings import quote_string
from hoglab.server.ingest import load_file

BASELINE_SQL = {
    "jsonl": ("JSONEachRow", "uuid String, event String, distinct_id String, timestamp String, properties String, "
                             "elements_chain String", {"input_format_json_read_objects_as_strings": 1}),
    "csv": ("CSVWithNames", "uuid String, event String, distinct_id String, timestamp String, properties String, "
                            "elements_chain String", {}),
    "parquet": ("Parquet", "uuid String, event String, distinct_id String, timestamp DateTime64(6, 'UTC'), "
                           "properties String, elements_chain String", {}),
}  # fmt: skip


def make_files(n: int, directory: Path) -> dict[str, Path]:
    table = generate_events(users=max(100, n // 10), seed=1)
    while table.num_rows < n:
        table = pa.concat_tables([table, generate_events(users=max(100, n // 10), seed=table.num_rows)])
    table = table.slice(0, n)
    files = {fmt: directory / f"events.{fmt}" for fmt in ("parquet", "csv", "jsonl")}
    pq.write_table(table, files["parquet"], compression="zstd")
    pcsv.write_csv(table.set_column(3, "timestamp", pc.strftime(table["timestamp"], "%Y-%m-%dT%H:%M:%SZ")),
                   files["csv"])  # fmt: skip
    iso = pc.strftime(table["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
    lines = pc.binary_join_element_wise(
        '{"uuid":"', table["uuid"], '","event":"', table["event"], '","distinct_id":"', table["distinct_id"],
        '","timestamp":"', iso, '","properties":', table["properties"], ',"elements_chain":""}', "",
    )  # fmt: skip
    with files["jsonl"].open("w") as handle:
        for chunk in lines.chunks:
            handle.write("\n".join(chunk.to_pylist()))
            handle.write("\n")
    return files


def quiesce(engine: ChdbEngine, limit: float = 120) -> None:
    """Wait for background merges of earlier loads, so each timing starts from an idle engine (2 cores)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and engine.query_bytes("SELECT count() FROM system.merges").strip() != b"0":
        time.sleep(0.2)


def baseline(engine: ChdbEngine, team: int, fmt: str, path: Path) -> float:
    ch_format, structure, settings = BASELINE_SQL[fmt]
    ts = "timestamp" if fmt == "parquet" else "parseDateTime64BestEffort(timestamp, 6, 'UTC')"
    started = time.perf_counter()
    engine.command(
        f"INSERT INTO hoglab.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties, "
        f"elements_chain, created_at) SELECT {team}, toUUID(uuid), event, distinct_id, generateUUIDv4(), {ts}, "
        f"properties, elements_chain, now64(6, 'UTC') "
        f"FROM file({quote_string(str(path))}, {ch_format}, {quote_string(structure)})",
        settings=settings,
    )
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="hoglab-bench-load-"))
    files_dir = args.keep or work
    files_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    files = make_files(args.events, files_dir)
    sizes = ", ".join(f"{fmt} {path.stat().st_size / 1e6:.0f} MB" for fmt, path in files.items())
    print(f"{args.events:,} events generated in {time.perf_counter() - started:.1f}s ({sizes})")
    engine = ChdbEngine(work / "chdb")
    teams = iter(random.Random(0).sample(range(1, 10**9), 1000))
    try:
        warm = files_dir / "warm.jsonl"
        warm.write_text('{"event": "w", "distinct_id": "w", "timestamp": "2026-01-01T00:00:00Z"}\n')
        load_file(engine, next(teams), warm)  # imports and first-use costs out of the timings
        print(f"{'format':8} {'load_file':>16} {'baseline':>16} {'ratio':>6}")
        for fmt, path in files.items():
            for _ in range(args.repeat):
                quiesce(engine)
                base = baseline(engine, next(teams), fmt, path)
                quiesce(engine)
                report = load_file(engine, next(teams), path)
                assert report.rows == args.events, report
                ours = report.seconds
                print(f"{fmt:8} {args.events / ours:>10,.0f} ev/s {args.events / base:>10,.0f} ev/s "
                      f"{ours / base:>5.2f}x   ({ours:.2f}s vs {base:.2f}s)")  # fmt: skip
                sys.stdout.flush()
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
