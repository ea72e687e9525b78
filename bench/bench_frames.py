"""Client-side cost of a 10,000-row HogQL answer: JSON bytes to a typed DataFrame.

Compares hoglab's path (orjson when installed, then one vectorised conversion per column following ``types``)
with the naive ``pd.DataFrame(json.loads(body)["results"])`` on the same bytes in the same run. The naive frame
has no column names and object/str dtypes (timestamps as strings, NULLs as None); ours has the real dtypes.

Run: ``.venv/bin/python bench/bench_frames.py [--rows 10000] [--repeat 15]``. Goal: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import pandas as pd

from hoglab.frames import table_frame
from hoglab.frames.columns import json_loads

TYPES = [
    ["timestamp", "DateTime64(6, 'UTC')"],
    ["event", "String"],
    ["person_id", "UUID"],
    ["views", "UInt64"],
    ["browser", "Nullable(String)"],
    ["price", "Float64"],
    ["tags", "Array(String)"],
    ["properties", "String"],
]


def make_body(rows: int, seed: int = 7) -> bytes:
    """A HogQL answer shaped like PostHog's: results, columns, types, hogql, timings, hasMore."""
    rng = random.Random(seed)
    start = datetime(2025, 6, 1, tzinfo=UTC)
    events = ["$pageview", "$autocapture", "signup", "purchase", "$pageleave"]
    browsers = ["Chrome", "Safari", "Firefox", None]
    results = []
    for i in range(rows):
        ts = start + timedelta(seconds=i * 13, microseconds=rng.randrange(1_000_000))
        props = {
            "$browser": rng.choice(browsers[:3]),
            "$current_url": f"https://example.com/p/{rng.randrange(500)}",
            "$screen_width": rng.choice([1280, 1440, 1920]),
            "plan": rng.choice(["free", "pro"]),
        }
        results.append(
            [
                ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                rng.choice(events),
                f"0190{rng.getrandbits(112):028x}",
                rng.randrange(10_000),
                rng.choice(browsers),
                round(rng.uniform(0, 500), 2),
                rng.sample(["a", "b", "c", "d"], rng.randrange(4)),
                json.dumps(props),
            ]
        )
    answer = {
        "results": results,
        "columns": [name for name, _ in TYPES],
        "types": TYPES,
        "hogql": "SELECT timestamp, event, person_id, ... FROM events ORDER BY timestamp LIMIT 10000",
        "clickhouse": "SELECT ...",
        "timings": [{"k": "./parse_select", "t": 0.001}, {"k": ".", "t": 0.08}],
        "hasMore": True,
        "limit": rows,
        "offset": 0,
        "is_cached": False,
        "timezone": "UTC",
    }
    return json.dumps(answer).encode()


def naive(body: bytes) -> pd.DataFrame:
    return pd.DataFrame(json.loads(body)["results"])


LOADS = json_loads()


def hoglab_path(body: bytes) -> pd.DataFrame:
    return table_frame(LOADS(body))


def best_and_median(fn, body: bytes, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        gc.collect()  # start each run clean, so one run's garbage is not collected inside the next one's timing
        t0 = time.perf_counter()
        fn(body)
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--stdlib-json", action="store_true", help="parse with json.loads, as without orjson")
    args = parser.parse_args()
    global LOADS
    if args.stdlib_json:
        LOADS = json.loads
    body = make_body(args.rows)
    df = hoglab_path(body)  # warm-up, and a check that the dtypes are the real ones
    assert str(df["timestamp"].dtype) == "datetime64[us, UTC]" and str(df["views"].dtype) == "Int64", df.dtypes
    naive(body)
    # Interleave the two so machine noise hits both alike.
    ours, base = [], []
    for _ in range(args.repeat):
        ours.append(best_and_median(hoglab_path, body, 1)[0])
        base.append(best_and_median(naive, body, 1)[0])
    o_med, b_med = statistics.median(ours), statistics.median(base)
    print(f"answer: {args.rows} rows x {len(TYPES)} columns, {len(body) / 1e6:.2f} MB of JSON")
    print(f"naive  pd.DataFrame(json.loads(body)['results']) median {b_med * 1e3:6.2f} ms, best {min(base) * 1e3:.2f}")
    parser_name = "json" if LOADS is json.loads else "orjson"
    print(
        f"hoglab table_frame({parser_name}.loads(body)), typed median {o_med * 1e3:6.2f} ms, best {min(ours) * 1e3:.2f}"
    )
    print(f"ratio hoglab/naive: median {o_med / b_med:.2f}x  best {min(ours) / min(base):.2f}x  (goal <= 1.5x)")
    print("dtypes: " + ", ".join(f"{c}={t}" for c, t in df.dtypes.astype(str).items()))


if __name__ == "__main__":
    main()
