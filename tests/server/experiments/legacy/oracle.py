"""Seeded experiment data and the independent pandas answers ``/results`` is checked against.

A person ``k`` has a variant and sends events as ``anon-k``; every third person also as ``user-k`` and then
identifies (the two persons merge). Around the experiment's window (a day either side) they send:

* ``$feature_flag_called`` for the flag (one or two, from either id; a few answer ``holdout``, not a variant), and
  for another flag;
* ``$pageview`` on a checkout URL (``/Checkout`` in some case) or elsewhere, and ``purchase`` (with a ``price``) a
  random delay after a checkout view, some beyond the funnel window, a few with no view before;
* ``$feature/<flag>`` on 92% of metric events, a stale variant on a few, ``$feature/other`` on some.

Plus persons whose events sit exactly on the window's edges (counted) and a microsecond outside (not counted).

The oracle restates PostHog's definitions over that frame: events in ``[start, end]``, persons = ``k``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

START = datetime(2025, 3, 3, 14, 30, 15, 250_000, tzinfo=UTC)
END = START + timedelta(days=9, hours=5)
WINDOW = timedelta(days=2)
VARIANTS = ("control", "test", "test-2")
CONVERSION = {"control": 0.25, "test": 0.42, "test-2": 0.3}
US = timedelta(microseconds=1)


def _time(rng: np.random.Generator, low: datetime, high: datetime) -> datetime:
    span = int((high - low) / US)
    return low + int(rng.integers(0, span)) * US


def generate(seed: int, flag: str, *, persons: int = 660) -> pd.DataFrame:
    """Events with columns ``event, distinct_id, timestamp, person, properties`` (a dict)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    early, late = START - timedelta(days=1), END + timedelta(days=1)

    def add(event: str, person: int, did: str, ts: datetime, **props: Any) -> None:
        rows.append({"event": event, "distinct_id": did, "timestamp": ts, "person": person, "properties": props})

    def flagged(variant: str) -> dict[str, Any]:
        roll = rng.random()
        if roll < 0.08:
            return {}
        if roll < 0.1:
            return {f"$feature/{flag}": "old-variant"}
        extra = {"$feature/other": "on"} if rng.random() < 0.2 else {}
        return {f"$feature/{flag}": variant, **extra}

    for k in range(persons):
        variant = VARIANTS[int(rng.choice(3, p=[0.34, 0.33, 0.33]))]
        ids = [f"anon-{k}", f"user-{k}"] if k % 3 == 0 else [f"anon-{k}"]

        def did(ids: list[str] = ids) -> str:
            return ids[int(rng.integers(len(ids)))]

        response = "holdout" if rng.random() < 0.04 else variant
        for _ in range(int(rng.integers(1, 3))):
            add("$feature_flag_called", k, did(), _time(rng, early, late), **{
                "$feature_flag": flag, "$feature_flag_response": response})  # fmt: skip
        if rng.random() < 0.3:
            add("$feature_flag_called", k, did(), _time(rng, early, late),
                **{"$feature_flag": "other", "$feature_flag_response": variant})  # fmt: skip
        views = [_time(rng, early, late) for _ in range(int(rng.integers(0, 4)))]
        for ts in views:
            url = "https://shop.example/" + ("Checkout/pay" if rng.random() < 0.3 else "checkout")
            add("$pageview", k, did(), ts, **{"$current_url": url, **flagged(variant)})
            if rng.random() < CONVERSION[variant]:
                delay = timedelta(hours=float(rng.uniform(0, 72)))
                add("purchase", k, did(), ts + delay, price=round(float(rng.gamma(3.0, 15.0)), 2), **flagged(variant))
        for _ in range(int(rng.integers(0, 3))):
            add("$pageview", k, did(), _time(rng, early, late), **{"$current_url": "https://shop.example/home",
                                                                     **flagged(variant)})  # fmt: skip
        if rng.random() < 0.05:
            add("purchase", k, did(), _time(rng, early, late), price=5.0, **flagged(variant))
        if len(ids) == 2:
            last = max(r["timestamp"] for r in rows if r["person"] == k) if views else late
            add("$identify", k, ids[1], last + timedelta(seconds=1), **{"$anon_distinct_id": ids[0]})
    # Edge persons: inside, everything exactly on the window's edges; outside, a microsecond beyond them.
    for inside, base in ((True, 10 * persons), (False, 10 * persons + 2)):
        first, last = (START, END) if inside else (START - US, END + US)
        for i, variant in enumerate(("control", "test")):
            pid, did = base + i, f"edge-{base + i}"
            for ts in (first, last):
                add("$feature_flag_called", pid, did, ts, **{"$feature_flag": flag, "$feature_flag_response": variant})
            add("$pageview", pid, did, first, **{"$current_url": "https://shop.example/checkout",
                                                 f"$feature/{flag}": variant})  # fmt: skip
            add("purchase", pid, did, first, price=1.0, **{f"$feature/{flag}": variant})
            add("purchase", pid, did, last, price=1.0, **{f"$feature/{flag}": variant})
    return pd.DataFrame(rows).sort_values("timestamp", kind="stable").reset_index(drop=True)


def write_jsonl(df: pd.DataFrame, path: Path) -> Path:
    lines = [json.dumps({"event": r.event, "distinct_id": r.distinct_id, "properties": r.properties,
                         "timestamp": r.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
             for r in df.itertuples()]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- PostHog's definitions, restated over the frame -------------------------------------------------------------


def in_window(df: pd.DataFrame, start: datetime = START, end: datetime = END) -> pd.DataFrame:
    return df[(df["timestamp"] >= start) & (df["timestamp"] <= end)]


def prop(df: pd.DataFrame, key: str) -> pd.Series:
    return df["properties"].map(lambda p: p.get(key))


def exposures(df: pd.DataFrame, flag: str) -> dict[str, int]:
    """Persons with ``$feature_flag_called`` for ``flag`` in the window, by the variant answered."""
    w = in_window(df)
    called = w[(w["event"] == "$feature_flag_called") & (prop(w, "$feature_flag") == flag)]
    response = prop(called, "$feature_flag_response")
    called = called.assign(variant=response)[response.isin(VARIANTS)]
    return called.groupby("variant")["person"].nunique().to_dict()


def metric_events(df: pd.DataFrame, flag: str, event: str) -> pd.DataFrame:
    """``event`` in the window carrying one of the variants in ``$feature/<flag>``, with a ``variant`` column."""
    w = in_window(df)
    w = w[w["event"] == event].assign(variant=prop(w[w["event"] == event], f"$feature/{flag}"))
    return w[w["variant"].isin(VARIANTS)]


def event_counts(df: pd.DataFrame, flag: str, event: str) -> dict[str, int]:
    return metric_events(df, flag, event).groupby("variant").size().to_dict()


def property_sums(df: pd.DataFrame, flag: str, event: str, key: str) -> dict[str, float]:
    events = metric_events(df, flag, event)
    return events.assign(value=prop(events, key).astype(float)).groupby("variant")["value"].sum().to_dict()


def unique_persons(df: pd.DataFrame, flag: str, event: str) -> dict[str, int]:
    return metric_events(df, flag, event).groupby("variant")["person"].nunique().to_dict()


def mean_daily_count_per_person(df: pd.DataFrame, flag: str, event: str, tz: str) -> dict[str, float]:
    """PostHog's secondary value of ``avg_count_per_actor``: each day's mean events per active person, summed
    over the window's days (zero on days without any), divided by the number of days."""
    events = metric_events(df, flag, event)
    days = events["timestamp"].dt.tz_convert(tz).dt.strftime("%Y-%m-%d")
    per_day = events.assign(day=days).groupby(["variant", "day", "person"]).size().groupby(["variant", "day"]).mean()
    n_days = len(pd.date_range(START.astimezone(ZoneInfo(tz)).date(), END.astimezone(ZoneInfo(tz)).date()))
    return {v: float(per_day[v].sum()) / n_days for v in per_day.index.get_level_values(0).unique()}


def funnel(df: pd.DataFrame, flag: str, window: timedelta = WINDOW) -> dict[str, tuple[int, int]]:
    """Checkout view → purchase within ``window``, persons by first-touch variant: ``{variant: (entered,
    converted)}``. A person enters with any checkout view in the window and converts when a purchase follows one
    of those views by at most ``window`` (both in the experiment's window)."""
    w = in_window(df)
    url = prop(w, "$current_url").fillna("").str.lower()
    w = w.assign(step=np.where((w["event"] == "$pageview") & url.str.contains("/checkout"), 0,
                               np.where(w["event"] == "purchase", 1, -1)))  # fmt: skip
    w = w[w["step"] >= 0].assign(flag=prop(w[w["step"] >= 0], f"$feature/{flag}").fillna(""))
    out: dict[str, list[int]] = {}
    for _, events in w.groupby("person"):
        marked = events[events["flag"] != ""]
        variant = marked.sort_values("timestamp", kind="stable")["flag"].iloc[0] if len(marked) else ""
        views = [t for t, s in zip(events["timestamp"], events["step"], strict=True) if s == 0]
        if not views:
            continue
        buys = [t for t, s in zip(events["timestamp"], events["step"], strict=True) if s == 1]
        converted = any(timedelta(0) <= b - v <= window for b in buys for v in views)
        entered_converted = out.setdefault(variant, [0, 0])
        entered_converted[0] += 1
        entered_converted[1] += int(converted)
    return {v: (n, c) for v, (n, c) in out.items() if v in VARIANTS}
