"""Capture within the memory budget (issue 35, F1): the red team's bodies at the 20 MB cap against ``hoglab serve``.

    python bench/bench_capture_bounds.py [--budget 3GiB] [--repeat 3] [--normal 100]

Runs ``hoglab serve --memory-budget BUDGET`` in a subprocess on a fresh data dir with one project, then times and
measures the serving process (RSS from /proc, its high-water mark reset before each part; CPU as utime + stime):

* **baseline**: ``--repeat`` normal batches of ``--normal`` events each (posthog-python's shape), the same run;
* **empty events, 2.9 MB**: the red team's body, 1,000,000 empty events (``[{}, {}, ...]``);
* **empty events, 20 MB**: the same at the body cap, ~7 million;
* **tiny events, 20 MB**: ``{"event":"e","distinct_id":"u"}`` up to the cap, ~600,000 (over the events cap).

Prints, per part, the statuses, the RSS growth of the peak over the RSS before, the CPU seconds per request and the
ratio of each to the baseline's, and the ingestion-warning rows written. Before issue 35 the 2.9 MB body took RSS
from 1,274 to 3,097 MiB, 13.6 s of CPU and wrote 1,000,000 warning rows (the red team's figures, 3 GiB budget).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from bench_capture_fairness import Served  # (this script runs from bench/)

from hoglab.server.store import Store

CAP = 20 * 1024 * 1024


def _proc(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def _fill(token: str, item: bytes, size: int | None = None, count: int | None = None) -> bytes:
    head = b'{"api_key": "' + token.encode() + b'", "batch": ['
    if count is None:
        assert size is not None
        count = (size - len(head) - 2) // (len(item) + 1)
    return head + b",".join([item] * count) + b"]}"


def measure(url: str, pid: int, body: bytes, repeat: int) -> tuple[list[int], float, float]:
    """Statuses, peak RSS growth (bytes) and CPU seconds per request of ``repeat`` posts of ``body``."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before, cpu = _proc(pid, "VmRSS"), _cpu(pid)
    statuses = []
    with httpx.Client(timeout=300) as http:
        for _ in range(repeat):
            statuses.append(http.post(f"{url}/batch/", content=body, headers={"content-type": "application/json"})
                            .status_code)  # fmt: skip
    time.sleep(0.5)  # the writer's last commit
    return statuses, _proc(pid, "VmHWM") - before, (_cpu(pid) - cpu) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="3GiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--normal", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with Store.open_at(data) as store:
            project = store.projects.create("bench")
            _, key = store.keys.create(store.users.default().id, ["*"], [project.id])
            token = project.api_token
        served = Served(data, 5_000, "--memory-budget", args.budget)
        pid = served.process.pid
        try:
            normal = orjson.dumps({"api_key": token, "batch": [
                {"event": "view", "distinct_id": f"u{i}", "properties": {"$current_url": f"/p/{i}", "n": i}}
                for i in range(args.normal)]})  # fmt: skip
            parts = [
                (f"baseline: {args.normal} normal events", normal),
                ("empty events, 2.9 MB (1,000,000)", _fill(token, b"{}", count=1_000_000)),
                ("empty events, 20 MB", _fill(token, b"{}", size=CAP)),
                ("tiny events, 20 MB", _fill(token, b'{"event":"e","distinct_id":"u"}', size=CAP)),
            ]
            base_rss = base_cpu = 0.0
            print(f"hoglab serve --memory-budget {args.budget}; each part {args.repeat} requests")
            print(f"{'part':38} {'bytes':>10} {'statuses':>16} {'peak RSS +MiB':>14} {'CPU s/req':>10}")
            for name, body in parts:
                statuses, grown, cpu = measure(served.url, pid, body, args.repeat)
                if name.startswith("baseline"):
                    base_rss, base_cpu = max(grown, 1), max(cpu, 0.01)
                print(f"{name:38} {len(body):>10,} {','.join(map(str, statuses)):>16} {grown / 2**20:>14.1f} "
                      f"{cpu:>10.3f}   x{grown / base_rss:.2f} RSS, x{cpu / base_cpu:.2f} CPU of the baseline")
            query = {"query": {"kind": "HogQLQuery", "query": "select count() from ingestion_warnings"},
                     "refresh": "force_blocking"}  # fmt: skip
            rows = httpx.post(f"{served.url}/api/projects/{project.id}/query/", json=query,
                              headers={"Authorization": f"Bearer {key}"}, timeout=60).json()["results"]  # fmt: skip
            print(f"ingestion-warning rows written in all: {rows[0][0]}; service RSS now "
                  f"{_proc(pid, 'VmRSS') / 2**20:.0f} MiB")
        finally:
            served.stop()


if __name__ == "__main__":
    main()
