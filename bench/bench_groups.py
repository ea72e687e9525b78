"""Groups at ingestion: what the events' ``$group_0..4`` columns cost an INSERT, and what ``$groups`` costs capture.

    python bench/bench_groups.py [--events 200000] [--capture 20000] [--repeat 3]

1. INSERT cost of the columns. The same Arrow batch of demo events is inserted into a table made with the events
   table's DDL and into one made with that DDL without the five ``$group_N`` columns (the baseline: the events
   table as it was before groups; same run, same engine; neither has the sessions view that the real ``events``
   feeds), the two alternating, median of ``--repeat``. Two batches: events without
   ``$groups`` (most events of most projects) and the same events with ``$groups`` and ``$group_0`` on every one.
   Ratio = with columns / baseline. The columns are PostHog's JSON expression behind a substring test, so an event
   without groups pays a ``position()``, not five JSON parses.
2. Capture with groups. ``Ingestor.capture_batch`` (validation, persons, the writer) of the same demo events in
   batches of 1,000, as they are (one project) and with ``$groups`` on every event plus a ``$groupidentify`` every
   50 events (another project), the two alternating batch by batch. Ratio = time with / time without: the
   writer's group step (resolving types, writing ``$group_N`` into the event's JSON, upserting group rows).

The machine is shared: compare the ratios of one run, not times across runs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from hoglab.server.demo import generate_events
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.ddl import DATABASE, TABLES, create_statements
from hoglab.server.ingest import Ingestor
from hoglab.server.ingest.rows import events_table

# Staging-table names (insert_arrow accepts them): the events DDL as it is, and without the group columns. Both
# are plain tables, so the sessions view that also reads each INSERT into ``events`` is in neither.
OURS = f"_load_{'a' * 32}_groups"
BASELINE = f"_load_{'b' * 32}_base"
NO_PERSON = "00000000-0000-0000-0000-000000000000"


def demo_rows(n: int) -> pa.Table:
    """``n`` demo events (the demo generator, repeated with other seeds when ``n`` is more than one run gives)."""
    parts, total, seed = [], 0, 1
    while total < n:
        part = generate_events(seed=seed, users=max(1_000, n // 40))
        parts.append(part)
        total += part.num_rows
        seed += 1
    return pa.concat_tables(parts).slice(0, n)


def with_groups(props: list[str]) -> list[str]:
    """Each event's JSON with ``$groups`` and ``$group_0`` as ingestion writes them (500 companies)."""
    out = []
    for i, text in enumerate(props):
        data = json.loads(text)
        company = f"company-{i % 500}"
        data["$groups"] = {"company": company}
        data["$group_0"] = company
        out.append(json.dumps(data))
    return out


def arrow_batch(table: pa.Table, team: int, properties: list[str]) -> pa.Table:
    ts = table.column("timestamp").to_pylist()
    n = table.num_rows
    rows = list(
        zip([team] * n, table.column("uuid").to_pylist(), table.column("event").to_pylist(),
            table.column("distinct_id").to_pylist(), [NO_PERSON] * n, ts, properties, [""] * n, ts, strict=True)
    )  # fmt: skip
    return events_table(rows)


def events_ddl(name: str, *, groups: bool) -> str:
    """The events table's DDL as ``hoglab.<name>``, with or without the ``$group_N`` columns."""
    if groups:  # exactly what the service creates
        sql = next(s for s in create_statements() if s.startswith(f"CREATE TABLE IF NOT EXISTS {DATABASE}.events "))
    else:
        sql = " ".join(re.sub(r",\s*\{group_columns\}", "", TABLES["events"]).split()).format(db=DATABASE)
    return sql.replace(f"{DATABASE}.events", f"{DATABASE}.{name}")


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def insert_ratio(engine: ChdbEngine, data: pa.Table, repeat: int) -> tuple[float, float]:
    """Median seconds of one INSERT of ``data`` with the group columns and into the baseline, alternating."""
    ours, base = [], []
    for _ in range(repeat):
        ours.append(timed(lambda: engine.insert_arrow(OURS, data)))
        base.append(timed(lambda: engine.insert_arrow(BASELINE, data)))
    return statistics.median(ours), statistics.median(base)


def capture_seconds(
    engine: ChdbEngine, plain: list[list[dict[str, Any]]], tagged: list[list[dict[str, Any]]]
) -> tuple[float, float]:
    """Seconds of capturing every batch of ``plain`` (project 11) and of ``tagged`` (project 12), the two
    alternating batch by batch so that the machine's load falls on both alike."""
    ingestor = Ingestor.for_engine(engine)
    spent = [0.0, 0.0]
    for one, other in zip(plain, tagged, strict=True):
        spent[0] += timed(lambda one=one: ingestor.capture_batch(11, one))
        spent[1] += timed(lambda other=other: ingestor.capture_batch(12, other))
    return spent[0], spent[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--capture", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    table = demo_rows(max(args.events, args.capture))
    plain = table.column("properties").to_pylist()
    with tempfile.TemporaryDirectory() as folder, ChdbEngine(Path(folder) / "engine") as engine:
        engine.command(events_ddl(OURS, groups=True))
        engine.command(events_ddl(BASELINE, groups=False))
        insert = table.slice(0, args.events)
        print(f"INSERT of {args.events:,} events (median of {args.repeat}, alternating):")
        for team, (name, props) in enumerate(
            (("without $groups", plain[: args.events]), ("with $groups", with_groups(plain[: args.events]))), 1
        ):
            data = arrow_batch(insert, team, props)
            ours, base = insert_ratio(engine, data, args.repeat)
            print(f"  {name:16s} events DDL {ours:6.2f} s, baseline (no $group_N columns) {base:6.2f} s: "
                  f"ratio {ours / base:.2f}")  # fmt: skip
            del data
        n = args.capture
        head = table.slice(0, n)
        events = [
            {"event": e, "distinct_id": d, "uuid": u, "timestamp": t.isoformat(), "properties": json.loads(p)}
            for e, d, u, t, p in zip(
                head.column("event").to_pylist(), head.column("distinct_id").to_pylist(),
                head.column("uuid").to_pylist(), head.column("timestamp").to_pylist(), plain[:n], strict=True)
        ]  # fmt: skip
        plain_batches, tagged_batches = [], []
        for start in range(0, n, 1000):
            batch = events[start : start + 1000]
            tagged: list[dict[str, Any]] = []
            for i, event in enumerate(batch, start):
                company = f"company-{i % 500}"
                tagged.append({**event, "properties": {**event["properties"], "$groups": {"company": company}}})
                if i % 50 == 0:
                    identify = {"$group_type": "company", "$group_key": company, "$group_set": {"n": i}}
                    tagged.append({"event": "$groupidentify", "distinct_id": event["distinct_id"],
                                   "timestamp": event["timestamp"], "properties": identify})  # fmt: skip
            plain_batches.append(batch)
            tagged_batches.append(tagged)
        Ingestor.for_engine(engine).capture_batch(10, events[:2000])  # warm-up (first persons, the writer thread)
        without, grouped = capture_seconds(engine, plain_batches, tagged_batches)
        extra = sum(map(len, tagged_batches)) - n
        print(f"capture of {n:,} events in batches of 1,000 (+{extra:,} $groupidentify), alternating: without $groups "
              f"{n / without:,.0f} events/s, with $groups {n / grouped:,.0f} events/s: "
              f"ratio {grouped / without:.2f} (time with / without)")  # fmt: skip
        Ingestor.for_engine(engine).close()


if __name__ == "__main__":
    main()
