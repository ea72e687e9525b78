"""What checking every remote answer costs ``hoglab pull``: one page of 10,000 events, read as before (JSON decoded,
rows zipped with their columns) against read through :mod:`hoglab.pulling.answers` (decoded, each row's shape and each
field checked: UUIDs, ISO timestamps, properties as JSON objects, keyset order).

    python bench/bench_pull_checks.py [--repeat 7] [--rows 10000]

The page is PostHog-shaped (``HogQLQueryResponse``: ``columns``, ``types``, ``results``), with properties of about
300 bytes as product events carry. Prints the median milliseconds of each reading, their ratio, and what the
checks add to a page next to the wait the rate limit puts between two pages (30 s at 120 queries an hour).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hoglab.frames.columns import json_loads

COLUMNS = ["uuid", "event", "distinct_id", "person_id", "timestamp", "properties", "elements_chain", "created_at"]


def _page(rows: int) -> bytes:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    results = []
    for i in range(rows):
        moment = (start + timedelta(seconds=3 * i, microseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        properties = {"$browser": "Chrome", "$os": "Mac OS X", "$current_url": f"https://shop.example/p/{i % 500}",
                      "$device_type": "Desktop", "$lib": "web", "$lib_version": "1.200.0", "price": i % 97,
                      "$session_id": str(uuid.UUID(int=i // 20)),
                      "utm_source": ("google", "newsletter")[i % 2]}  # fmt: skip
        results.append([str(uuid.UUID(int=2**64 + i)), ("$pageview", "signup", "purchase")[i % 3], f"user-{i % 3000}",
                        str(uuid.UUID(int=2**96 + i % 3000)), moment, json.dumps(properties), "", moment])  # fmt: skip
    answer = {"columns": COLUMNS, "types": [[c, "String"] for c in COLUMNS], "results": results, "hasMore": False,
              "hogql": "SELECT ...", "clickhouse": "SELECT ...", "limit": rows, "offset": 0, "timings": []}  # fmt: skip
    return json.dumps(answer).encode()


def _before(body: bytes) -> list[dict[str, Any]]:
    """The reading before the checks: decode, zip each row with the columns."""
    answer = json_loads()(body)
    return [dict(zip(answer["columns"], row, strict=True)) for row in answer["results"]]


def _after(body: bytes) -> list[dict[str, Any]]:
    """The reading of ``hoglab pull`` now: decode and check the shape, every field and the keyset order."""
    import httpx

    answers = importlib.import_module("hoglab.pulling.answers")
    rows: list[dict[str, Any]] = answers.table(answers.decode(httpx.Response(200, content=body)), answers.EVENT,
                                               COLUMNS)  # fmt: skip
    keys = [(row["timestamp"], row["uuid"]) for row in rows]
    assert all(a < b for a, b in itertools.pairwise(keys))
    return rows


def _median_ms(read: Any, body: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        read(body)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    body = _page(args.rows)
    assert len(_before(body)) == len(_after(body)) == args.rows
    before, after = [], []
    for _ in range(3):  # alternate, so a busy machine weighs on both alike
        before.append(_median_ms(_before, body, args.repeat))
        after.append(_median_ms(_after, body, args.repeat))
    b, a = statistics.median(before), statistics.median(after)
    print(f"one page: {args.rows:,} events, {len(body) / 1e6:.1f} MB of JSON")
    print(f"read as before (decode, zip):                 {b:8.1f} ms")
    print(f"read with every check (hoglab.pulling.answers):  {a:8.1f} ms")
    print(f"ratio checked / before: {a / b:.2f}x; the checks add {a - b:.0f} ms a page, "
          f"{(a - b) / 30_000:.2%} of the 30 s between pages at 120 queries an hour")


if __name__ == "__main__":
    main()
