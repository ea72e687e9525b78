"""``hoglab pull`` throughput against a remote with its row cap, and what the remote's rate limit makes of it.

    python bench/bench_pull.py [--repeat 2]

Starts a remote, ``hoglab serve --demo`` in its own process (≈220,000 events, 20,000 persons), with rate limits
off so the pull's own speed shows; then, alternating, ``--repeat`` times each:

* ``hoglab pull`` (a fresh mirror each time, in its own process): events in keyset pages of 10,000 rows, persons,
  distinct ids, flags, experiments;
* the baseline, what a notebook does without hoglab: ``client.hogql(..., all_rows=True)`` over the same event
  columns into a DataFrame (the same keyset pages through the same API), in this process.

Prints rows per second of both, their ratio, rows per query, and the arithmetic of caps and rates: how long a
project of 1M / 10M events takes at PostHog's limits (120 and 2,400 queries per hour), the pull's real ceiling.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hoglab import Client

PAGE = 10_000
COLUMNS = "uuid, event, distinct_id, person_id, timestamp, properties, elements_chain, created_at"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pull(url: str, key: str, into: Path) -> tuple[float, int, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hoglab.cli", "pull", "--from", url, "--project", "1", "--data-dir", str(into),
         "--rate", "1000000/hour"],
        capture_output=True, text=True, env={**os.environ, "POSTHOG_PERSONAL_API_KEY": key}, check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    summary = next(line for line in done.stdout.splitlines() if " queries in " in line)
    rows = int(re.search(r"of ([\d,]+) read", summary)[1].replace(",", ""))  # type: ignore[index]
    queries = int(re.search(r"; (\d+) queries", summary)[1])  # type: ignore[index]
    return seconds, rows, queries


def _notebook(url: str, key: str) -> tuple[float, int]:
    start = time.perf_counter()
    with Client(url, key, 1, progress=False) as client:
        frame = client.hogql(f"select {COLUMNS} from events order by timestamp", all_rows=True)
    return time.perf_counter() - start, len(frame)


def _hours(rows: int, per_hour: int) -> str:
    hours = rows / PAGE / per_hour
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:,.0f} min"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hoglab-bench-pull-") as tmp:
        port = _port()
        command = [sys.executable, "-m", "hoglab.cli", "serve", "--demo", "--data-dir", f"{tmp}/remote", "--port"]
        remote = subprocess.Popen(
            [*command, str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "HOGLAB_RATE_LIMITS": "off"},
        )  # fmt: skip
        key = ""
        assert remote.stdout is not None
        for line in remote.stdout:
            key = line.split()[3] if line.startswith("personal API key:") else key
            if "Application startup complete" in line:
                break
        url = f"http://127.0.0.1:{port}"
        threading.Thread(target=lambda: [None for _ in remote.stdout or ()], daemon=True).start()  # a full pipe blocks
        try:
            pulls, books = [], []
            for i in range(args.repeat):
                pulls.append(_pull(url, key, Path(tmp) / f"mirror-{i}"))
                books.append(_notebook(url, key))
        finally:
            remote.terminate()
            remote.wait(30)
    pull_seconds = statistics.median(p[0] for p in pulls)
    rows, queries = pulls[0][1], pulls[0][2]
    book_seconds = statistics.median(b[0] for b in books)
    print(f"remote: {rows:,} events; pull: {queries} queries ({rows / queries:,.0f} rows per query)")
    print(f"hoglab pull (events, persons, flags, experiments, stored):  {pull_seconds:6.2f} s  "
          f"{rows / pull_seconds:9,.0f} rows/s")  # fmt: skip
    print(f"notebook all_rows=True (events into a DataFrame):           {book_seconds:6.2f} s  "
          f"{books[0][1] / book_seconds:9,.0f} rows/s")  # fmt: skip
    print(f"ratio pull / notebook: {pull_seconds / book_seconds:.2f}x")
    per_hour = 3600 * queries / pull_seconds
    print(f"unthrottled ceiling here: {per_hour:,.0f} queries/hour = {per_hour * PAGE:,.0f} rows/hour")
    for limit in (120, 2400):
        print(f"at {limit:,} queries/hour: {limit * PAGE:,} rows/hour; 1M events {_hours(1_000_000, limit)},"
              f" 10M events {_hours(10_000_000, limit)}")  # fmt: skip


if __name__ == "__main__":
    main()
