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
PLANS = ["free", "pro", None]
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
            plan = PLANS[(k + i) % 3]  # changes from event to event (funnel attribution); no draw from rng
            if plan is not None:
                props["plan"] = plan
            rows.append({"event": EVENTS[int(rng.choice(4, p=[0.55, 0.2, 0.15, 0.1]))], "distinct_id": did,
                         "timestamp": ts, "person": k, "browser": browser, "price": props.get("price"),
                         "session": props["$session_id"], "variant": variant, "plan": plan or "",
                         "properties": props})  # fmt: skip
        if merged:
            last = max(r["timestamp"] for r in rows if r["person"] == k)
            rows.append({"event": "$identify", "distinct_id": f"user-{k}", "timestamp": last + timedelta(seconds=1),
                         "person": k, "browser": None, "price": None, "session": "", "variant": variant, "plan": "",
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


def funnel_replay(
    events: list[tuple[float, set[int], set[int], str]],
    n: int,
    window: float,
    *,
    strict: bool,
    step_value: tuple[int, str] | None = None,
) -> tuple[int, list[float]]:
    """PostHog's ordered/strict funnel for one person, event by event (the rules in ``funnels_sql``'s docstring).

    ``events``: (time, steps the event matches, exclusion gaps it matches: i = between step i and i+1, breakdown
    value), sorted by time then first step; ``step_value`` (step, value): that step only counts events with the
    value. -> (furthest step 0-based, -1 none, -2 excluded; that attempt's step times).
    Attempt state per step k: the entry time of the attempt that last reached k, whether it is tainted, its times.
    """
    entry: list[float | None] = [None] * n
    tainted = [False] * n
    times: list[list[float]] = [[] for _ in range(n)]
    best, best_entry, best_tainted, best_times = 0, 0.0, False, []
    for t, steps, gaps, value in events:
        if entry[n - 1] is not None:
            break
        before = (list(entry), list(tainted), [list(x) for x in times])
        for k in sorted(steps, reverse=True):  # the highest step first: one event moves an attempt one step
            start = t if k == 0 else before[0][k - 1]
            if start is None or t - start > window or before[0][k] == start:
                continue
            if step_value is not None and k == step_value[0] and value != step_value[1]:
                continue
            carried = False if k == 0 else before[1][k - 1]
            if not carried:
                entry[k], tainted[k], times[k] = start, False, ([] if k == 0 else before[2][k - 1]) + [t]
            if k + 1 > best or (k + 1 == best and best_tainted):
                best, best_entry, best_tainted = k + 1, start, carried
                best_times = ([] if k == 0 else before[2][k - 1]) + [t]
        if not steps:
            for i in gaps:
                e = before[0][i]
                if e is not None and t - e <= window and before[0][i + 1] != e:
                    tainted[i] = True
                    if best == i + 1 and t - best_entry <= window:
                        best_tainted = True
        if strict:
            for k in range(n):
                if k not in steps:
                    entry[k], times[k] = None, []
    return (-2 if best_tainted else best - 1), best_times
