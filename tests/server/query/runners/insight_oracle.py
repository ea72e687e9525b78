"""Independent pandas/Python restatements of retention, lifecycle, stickiness and paths, for the oracle tests.

Each function reads a frame of events (``generate``'s columns: ``event, timestamp (UTC), person, ...``) and
answers what PostHog's documentation says the insight means, without looking at hoglab's SQL.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

import pandas as pd

__all__ = ["interval_key", "lifecycle", "paths", "retention", "stickiness"]


def interval_key(ts: pd.Series, tz: str, interval: str) -> pd.Series:
    """The start of each timestamp's interval in ``tz`` as text (weeks start on Sunday)."""
    local = pd.to_datetime(ts, utc=True).dt.tz_convert(tz).dt.tz_localize(None)
    if interval == "hour":
        return local.dt.floor("h").dt.strftime("%Y-%m-%d %H:00:00")
    day = local.dt.normalize()
    if interval == "day":
        return day.dt.strftime("%Y-%m-%d")
    if interval == "week":
        return (day - pd.to_timedelta((day.dt.day_of_week + 1) % 7, unit="D")).dt.strftime("%Y-%m-%d")
    return day.dt.to_period("M").dt.start_time.dt.strftime("%Y-%m-%d")


def retention(
    df: pd.DataFrame,
    *,
    tz: str,
    interval: str,
    keys: list[str],
    lookahead: int,
    target: str | None,
    returning: str | None,
    first_time: bool,
    minimum: int = 1,
    cumulative: bool = False,
    breakdown: str | None = None,
) -> dict[tuple[str, int, int], set[int]]:
    """``(breakdown value, cohort index, period) -> persons``; cohorts are ``keys`` (interval starts)."""
    frame = df.assign(key=interval_key(df["timestamp"], tz, interval))
    frame = frame.assign(bv=frame[breakdown].map(lambda v: "" if v is None or pd.isna(v) else str(v))
                         if breakdown else "")  # fmt: skip
    position = {k: i for i, k in enumerate(keys)}
    end_key_index = len(keys)
    out: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    for (person, bv), events in frame.groupby(["person", "bv"]):
        targets = events if target is None else events[events["event"] == target]
        returns = events if returning is None else events[events["event"] == returning]
        in_range = lambda e: [position[k] for k in e["key"] if k in position]  # noqa: E731
        if first_time:
            if targets.empty:
                continue
            first_key = targets.sort_values("timestamp")["key"].iloc[0]
            starts = {position[first_key]} if first_key in position else set()
        else:
            starts = set(in_range(targets))
        counted = pd.Series(in_range(returns)).value_counts() if len(returns) else pd.Series(dtype=int)
        qualified = {int(i) for i, n in counted.items() if n >= minimum and i < end_key_index}
        for s in starts:
            offsets = {0} | {r - s for r in qualified if 0 < r - s < lookahead}
            if cumulative:
                offsets = set(range(max(offsets) + 1))
            for k in offsets:
                out[(bv, s, k)].add(int(person))
    return out


def lifecycle(
    df: pd.DataFrame, *, tz: str, interval: str, keys: list[str], before: str, event: str | None,
    created: dict[int, str],
) -> dict[tuple[str, str], set[int]]:  # fmt: skip
    """``(interval key, status) -> persons``: new (first active interval is the one the person was created in),
    returning (active in the previous interval too), resurrecting (not), dormant (active before, not now).
    ``before`` is the key of the interval just before the range; ``created`` each person's created-at key."""
    frame = df if event is None else df[df["event"] == event]
    frame = frame.assign(key=interval_key(frame["timestamp"], tz, interval))
    window = [before, *keys]
    index = {k: i for i, k in enumerate(window)}
    frame = frame[frame["key"].isin(index)]
    out: dict[tuple[str, str], set[int]] = defaultdict(set)
    for person, events in frame.groupby("person"):
        active = sorted({index[k] for k in events["key"]})
        for n, a in enumerate(active):
            if n == 0:
                status = "new" if created[int(person)] == window[a] else "resurrecting"
            else:
                status = "returning" if active[n - 1] == a - 1 else "resurrecting"
            if a >= 1:
                out[(window[a], status)].add(int(person))
            if a + 1 not in active and a + 1 < len(window):
                out[(window[a + 1], "dormant")].add(int(person))
    return out


def stickiness(
    df: pd.DataFrame, *, tz: str, interval: str, keys: list[str], event: str | None, at_least: int = 1,
    interval_count: int | None = None, period_of: dict[str, int] | None = None,
) -> dict[int, set[int]]:  # fmt: skip
    """``number of active periods -> persons``; a period is active with at least ``at_least`` events in it.
    Periods are the intervals ``keys``, or with ``interval_count`` the groups ``period_of`` maps keys to."""
    frame = df if event is None else df[df["event"] == event]
    frame = frame.assign(key=interval_key(frame["timestamp"], tz, interval))
    frame = frame[frame["key"].isin(set(keys))]
    if interval_count:
        assert period_of is not None
        frame = frame.assign(key=frame["key"].map(period_of))
    per = frame.groupby(["person", "key"]).size()
    active = per[per >= at_least].groupby(level="person").size()
    out: dict[int, set[int]] = defaultdict(set)
    for person, n in active.items():
        out[int(n)].add(int(person))
    return out


def _split_sessions(times: list[float], gap: float = 1800.0) -> list[list[int]]:
    sessions: list[list[int]] = []
    for i, t in enumerate(times):
        if i == 0 or t - times[i - 1] >= gap:
            sessions.append([])
        sessions[-1].append(i)
    return sessions


def paths(
    items: list[tuple[int, float, str]], *, step_limit: int = 5, start: str | None = None, end: str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Per session path (30-minute gaps split a person's events), consecutive repeats collapsed, cut at the start
    or end point and to ``step_limit`` steps: rows ``{person, steps: [(item, seconds since previous)]}``.
    ``items``: (person, unix seconds, path item), any order."""
    by_person: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for person, t, item in items:
        by_person[person].append((t, item))
    out = []
    for person, evs in by_person.items():
        evs.sort()
        times = [t for t, _ in evs]
        for session in _split_sessions(times):
            seq = [evs[i] for i in session]
            compact = [seq[i] for i in range(len(seq)) if i + 1 == len(seq) or seq[i][1] != seq[i + 1][1]]
            if compact and compact[-1][1] == "":  # PostHog's sentinel drops a trailing empty item
                compact = compact[:-1]
            names = [x[1] for x in compact]
            if start and end:
                if start not in names:
                    continue
                compact = compact[names.index(start) :]
                names = [x[1] for x in compact]
                if end not in names:
                    continue
                compact = compact[: names.index(end) + 1]
                if len(compact) > step_limit:
                    half = step_limit // 2
                    compact = [*compact[:half], (compact[half][0], "..."), *compact[-half:]]
            elif start:
                if start not in names:
                    continue
                compact = compact[names.index(start) :][:step_limit]
            elif end:
                if end not in names:
                    continue
                compact = compact[: names.index(end) + 1][-step_limit:]
            else:
                compact = compact[:step_limit]
            steps = [(item, 0.0 if i == 0 else t - compact[i - 1][0]) for i, (t, item) in enumerate(compact)]
            out.append({"person": person, "steps": steps})
    return out


def path_edges(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[float]]:
    """``(source, target) -> conversion times`` with PostHog's ``N_`` step prefixes, one entry per session path."""
    edges: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        steps = row["steps"]
        for i in range(1, len(steps)):
            edges[(f"{i}_{steps[i - 1][0]}", f"{i + 1}_{steps[i][0]}")].append(steps[i][1])
    return edges


def clean_path(url: str, cleaning: list[tuple[str, str]], groupings: list[str]) -> str:
    """PostHog's path item of a pageview URL: no trailing slash, cleaning rules in order, then the first grouping."""
    item = re.sub(r"(.)/$", r"\1", url)
    for regex, alias in cleaning:
        item = re.sub(regex, alias, item)
    for grouping in groupings:
        if re.search(re.escape(grouping).replace(r"\*", ".*"), item):
            return grouping
    return item


def ceil_div(a: int, b: int) -> int:
    return math.ceil(a / b)
