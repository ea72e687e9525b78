"""Deduplicating captured events by ``(project, uuid)`` at insert (``ingest/dedup.py``): what the lookup costs.

    python bench/bench_dedup.py [--events 5000000] [--batches 200] [--batch-size 100]

Fills a project of a fresh engine with N events over 60 days (``INSERT ... SELECT FROM numbers``), then stores
``--batches`` capture batches of ``--batch-size`` events "now" through the real group-commit writer
(``Ingestor.capture_batch``: validation, persons, the INSERT), alternating batch by batch between

* with dedup: the writer as it is (one lookup of the batch's uuids on the sort-key prefix per group), and
* baseline: the same writer with the lookup replaced by "nothing is a duplicate", in the same run,

and prints the median time per batch of each and the ratio. It also resends every tenth batch and checks that
the table holds each event once.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.ddl import DATABASE
from hoglab.server.ingest import Ingestor, dedup, writer


def fill(engine: ChdbEngine, team: int, events: int) -> None:
    engine.command(
        f"""INSERT INTO {DATABASE}.events (team_id, uuid, event, distinct_id, person_id, timestamp, properties,
        elements_chain, created_at)
        SELECT {team}, generateUUIDv4(), ['$pageview', 'signup', 'purchase'][number % 3 + 1],
          concat('user-', toString(number % 100000)), generateUUIDv4(),
          now64(6) - toIntervalSecond(number * 7919 % (60 * 86400)), '{{}}', '', now64(6)
        FROM numbers({events})"""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="hoglab-dedup-")
    engine = ChdbEngine(folder)
    team = 1
    try:
        fill(engine, team, args.events)
        ingestor = Ingestor(engine, window=0)
        real = dedup.stored_uuids

        def nothing_is_a_duplicate(_engine: Any, _team: int, _events: Any) -> set[str]:
            return set()

        timings: dict[str, list[float]] = {"dedup": [], "baseline": []}
        sent: list[dict[str, Any]] = []
        for i in range(args.batches):
            batch = [{"event": "$pageview", "distinct_id": f"user-{(i * 31 + j) % 100000}", "uuid": str(uuid.uuid4())}
                     for j in range(args.batch_size)]  # fmt: skip
            mode = "dedup" if i % 2 == 0 else "baseline"
            setattr(writer, "stored_uuids", real if mode == "dedup" else nothing_is_a_duplicate)  # noqa: B010
            start = time.perf_counter()
            ingestor.capture_batch(team, batch, now=datetime.now(UTC))
            timings[mode].append(time.perf_counter() - start)
            if mode == "dedup":
                sent.extend(batch)
        setattr(writer, "stored_uuids", real)  # noqa: B010
        for i in range(0, len(sent), args.batch_size * 10):  # SDK retries of dedup batches
            ingestor.capture_batch(team, sent[i : i + args.batch_size], now=datetime.now(UTC))
        ids = ",".join(f"'{e['uuid']}'" for e in sent)
        count_sql = f"SELECT count() AS n FROM {DATABASE}.events WHERE team_id = {team} AND uuid IN ({ids})"
        stored = engine.execute(count_sql, settings={"max_query_size": 64 * 1024 * 1024})
        assert int(stored.column("n")[0].as_py()) == len(sent), "a resent event was stored twice"
        ingestor.close()
        with_dedup, baseline = statistics.median(timings["dedup"]), statistics.median(timings["baseline"])
        print(f"{args.events:,} events in the project; {args.batches} batches of {args.batch_size}")
        print(f"per batch: with dedup {with_dedup * 1000:.1f} ms, baseline {baseline * 1000:.1f} ms, "
              f"ratio {with_dedup / baseline:.2f}x; resent batches stored once: yes")  # fmt: skip
    finally:
        engine.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
