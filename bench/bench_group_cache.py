"""The group cache under a flood of distinct groups (issue 35, F2): RSS flat once the cache is full.

    python bench/bench_group_cache.py [--groups 500000] [--batch 1000] [--budget 3GiB] [--pad 2000]

``Ingestor.capture_batch`` (the capture writer, in this process, over chDB in a temporary data dir opened with
``--budget`` as its memory budget) of ``$groupidentify`` events naming ``--groups`` distinct groups, each with
``--pad`` bytes of ``$group_set`` (the red team's 2 KB), in batches of ``--batch``. Every 10% it prints the
groups sent, the process's RSS, the cache's own estimate (``GroupStore.cached_bytes``) and its bound (a 64th of the
budget). The baseline is the same run's RSS once the cache first reaches its bound: after that, RSS should stay
flat (the ratio to it near 1.0); before issue 35 it grew ~3.2 KB per group without end (168,000 groups: +537 MiB).
chDB runs in this process, so its own memory (parts, marks, merges) is in the RSS too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hoglab.server.config import parse_bytes
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.engine.memory import MemoryBudget
from hoglab.server.ingest import GroupStore, Ingestor


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--budget", default="3GiB")
    parser.add_argument("--pad", type=int, default=2_000)
    args = parser.parse_args()
    budget = MemoryBudget(parse_bytes(args.budget))
    padding = "x" * args.pad
    with tempfile.TemporaryDirectory() as folder, ChdbEngine(Path(folder) / "engine", memory=budget) as engine:
        ingestor = Ingestor.for_engine(engine)
        store = GroupStore.for_engine(engine)
        print(f"budget {args.budget}: group cache bound {store.max_bytes / 2**20:.0f} MiB; "
              f"{args.groups:,} groups of {args.pad} bytes, batches of {args.batch}")  # fmt: skip
        print(f"{'groups':>9} {'RSS MiB':>8} {'cache MiB':>10} {'x full':>7} {'groups/s':>9}")
        full_rss = 0
        start = time.perf_counter()
        step = max(args.batch, args.groups // 10)
        for first in range(0, args.groups, args.batch):
            batch = [{"event": "$groupidentify", "distinct_id": "u", "properties": {
                "$group_type": "company", "$group_key": f"g{i}", "$group_set": {"pad": padding, "n": i}}}
                for i in range(first, min(first + args.batch, args.groups))]  # fmt: skip
            ingestor.capture_batch(1, batch)
            sent = first + len(batch)
            if not full_rss and store.cached_bytes >= store.max_bytes * 0.95:
                full_rss = rss()
            if sent % step == 0 or sent == args.groups:
                now = rss()
                ratio = f"{now / full_rss:.2f}" if full_rss else "-"
                print(f"{sent:>9,} {now / 2**20:>8.0f} {store.cached_bytes / 2**20:>10.1f} {ratio:>7} "
                      f"{sent / (time.perf_counter() - start):>9.0f}")
        ingestor.close()


if __name__ == "__main__":
    main()
