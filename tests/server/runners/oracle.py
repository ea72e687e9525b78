"""Seeded random event sets and the independent pandas/Python answers the runners are checked against.

Persons: user ``k`` sends events as ``anon-k`` and (for some) later as ``user-k``, then identifies, which merges
the two persons (an override); the oracle's person is simply ``k``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

BROWSERS = ["Chrome", "Safari", "Firefox", "Edge", None, ""]
EVENTS = ["$pageview", "signup", "purchase", "logout"]
START = datetime(2025, 6, 1, tzinfo=UTC)


def generate(seed: int, *, persons: int = 40, days: int = 14, events_per_person: int = 25) -> pd.DataFrame:
    """Events with columns ``event, distinct_id, timestamp (UTC), person, browser, price, session, variant``."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for k in range(persons):
        merged = k % 3 == 0
        browser = BROWSERS[rng.integers(len(BROWSERS))]
        variant = ["control", "test"][k % 2]
        n = int(rng.integers(1, events_per_person))
        stamps = sorted(START + timedelta(seconds=float(s)) for s in rng.uniform(0, days * 86400, n))
        if k % 7 == 0:  # events exactly on local and UTC midnights
            stamps.append(START + timedelta(days=int(rng.integers(1, days))))
        for i, ts in enumerate(stamps):
            ts = ts.replace(microsecond=int(rng.integers(0, 10**6)))
            did = f"user-{k}" if merged and i >= len(stamps) // 2 else f"anon-{k}"
            props: dict[str, Any] = {"$session_id": f"s-{k}-{i // 4}", "$feature/flag": variant}
            if browser is not None:
                props["$browser"] = browser
            if rng.random() < 0.7:
                props["price"] = round(float(rng.gamma(2.0, 20.0)), 2)
            rows.append({"event": EVENTS[int(rng.choice(4, p=[0.55, 0.2, 0.15, 0.1]))], "distinct_id": did,
                         "timestamp": ts, "person": k, "browser": browser, "price": props.get("price"),
                         "session": props["$session_id"], "variant": variant, "properties": props})  # fmt: skip
        if merged:
            last = max(r["timestamp"] for r in rows if r["person"] == k)
            rows.append({"event": "$identify", "distinct_id": f"user-{k}", "timestamp": last + timedelta(seconds=1),
                         "person": k, "browser": None, "price": None, "session": "", "variant": variant,
                         "properties": {"$anon_distinct_id": f"anon-{k}"}})  # fmt: skip
    return pd.DataFrame(rows)


def to_events(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{"event": r.event, "distinct_id": r.distinct_id, "timestamp": r.timestamp, "properties": r.properties}
            for r in df.itertuples()]  # fmt: skip


def local_days(df: pd.DataFrame, tz: str) -> pd.Series:
    return pd.to_datetime(df["timestamp"], utc=True).dt.tz_convert(tz).dt.strftime("%Y-%m-%d")


def day_keys(first: str, last: str) -> list[str]:
    return [d.strftime("%Y-%m-%d") for d in pd.date_range(first, last, freq="D")]


# ---- funnels: PostHog's ordered/strict/unordered semantics restated per person, independently of the SQL ----


def funnel_person(events: list[tuple[float, int]], n: int, window: float, order: str) -> tuple[int, list[float]]:
    """``events``: (time in seconds, step index or -1 for other events), sorted. -> (steps reached, step times)."""
    if order == "unordered":
        best, best_times = 0, []
        for t_end, _ in events:
            firsts: dict[int, float] = {}
            for t, s in events:
                if s >= 0 and t_end - window <= t <= t_end and s not in firsts:
                    firsts[s] = t
            if len(firsts) > best:
                best, best_times = len(firsts), sorted(firsts.values())
        return best, best_times
    results = []
    for i, (t0, s0) in enumerate(events):
        if s0 != 0:
            continue
        times, step = [t0], 1
        for t, s in events[i + 1 :]:
            if t - t0 > window or step == n:
                break
            if s == step:
                times.append(t)
                step += 1
            elif order == "strict" and s != step - 1:
                # Strict: anything else breaks the chain; a repeat of the step just done does not (PostHog's
                # UDF clears only the steps an event does not match, and the attempt is still at that step).
                break
        results.append((step, times[-1], t0, times))
    if not results:
        return 0, []
    best = max(r[0] for r in results)
    # The path PostHog reports: the first attempt to reach the furthest step (latest start among equals).
    done = min(r[1] for r in results if r[0] == best)
    path = max((r for r in results if r[0] == best and r[1] == done), key=lambda r: r[2])
    return best, path[3]
