"""Seeded events for metric experiments and an independent pandas restatement of PostHog's ExperimentQuery.

Each person ``k`` has a variant and sends events as ``u-k`` (every fifth one also as ``v-k``, then identifies, so
two ids merge into one person). For each flag of ``FLAGS`` a person sends one to three ``$feature_flag_called``
around the experiment's window (a day either side), a few with the other variant (persons seen in both), a few
answering ``holdout`` (not a variant); ``checkout_seen`` (a custom exposure event, ``plan`` pro or free, with
``$feature/<flag>``); and metric events: ``$pageview`` in one to three sessions, ``cart``, ``purchase`` with a
``price`` (some zero, some missing), spread from a day before the start to two days after the end.

The restatement reads the rules in PostHog's words (``posthog/hogql_queries/experiments/``), not hoglab's SQL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

START = datetime(2025, 5, 5, 10, 0, 0, 123_456, tzinfo=UTC)
END = START + timedelta(days=8)
FLAGS = ("mx-exclude", "mx-first", "mx-custom")
PRO = [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]
CRITERIA = {
    "mx-exclude": {"multiple_variant_handling": "exclude"},
    "mx-first": {"multiple_variant_handling": "first_seen"},
    "mx-custom": {"exposure_config": {"kind": "ExperimentEventExposureConfig", "event": "checkout_seen",
                                      "properties": PRO}},
}  # fmt: skip
"""Each flag's exposure criteria, as its experiment sets them: how persons seen in both variants count, or the
custom exposure event (``checkout_seen`` with plan pro)."""
VARIANTS = ("control", "test")
US = timedelta(microseconds=1)
MULTIPLE = "$multiple"


def _time(rng: np.random.Generator, low: datetime, high: datetime) -> datetime:
    return low + int(rng.integers(0, int((high - low) / US))) * US


def generate(seed: int, *, persons: int = 360) -> pd.DataFrame:
    """Events with columns ``event, distinct_id, timestamp, person, properties`` (a dict)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    early, late = START - timedelta(days=1), END + timedelta(days=2)

    def add(event: str, person: int, did: str, ts: datetime, **props: Any) -> None:
        rows.append({"event": event, "distinct_id": did, "timestamp": ts, "person": person, "properties": props})

    for k in range(persons):
        variant = VARIANTS[int(rng.integers(2))]
        other = VARIANTS[1 - VARIANTS.index(variant)]
        ids = [f"u-{k}", f"v-{k}"] if k % 5 == 0 else [f"u-{k}"]

        def did(ids: list[str] = ids) -> str:
            return ids[int(rng.integers(len(ids)))]

        flagged = {f"$feature/{flag}": variant for flag in FLAGS}
        if rng.random() < 0.9:  # a tenth of the persons are never exposed
            for flag in FLAGS:
                for _ in range(int(rng.integers(1, 4))):
                    add("$feature_flag_called", k, did(), _time(rng, early, END + timedelta(days=1)),
                        **{"$feature_flag": flag, "$feature_flag_response": variant})  # fmt: skip
                roll = rng.random()
                if roll < 0.08:
                    add("$feature_flag_called", k, did(), _time(rng, early, END),
                        **{"$feature_flag": flag, "$feature_flag_response": other})  # fmt: skip
                elif roll < 0.12:
                    add("$feature_flag_called", k, did(), _time(rng, early, END),
                        **{"$feature_flag": flag, "$feature_flag_response": "holdout"})  # fmt: skip
            add("$feature_flag_called", k, did(), _time(rng, early, late),
                **{"$feature_flag": "unrelated", "$feature_flag_response": variant})  # fmt: skip
            for _ in range(int(rng.integers(0, 3))):
                seen = {**flagged, f"$feature/{FLAGS[2]}": other if rng.random() < 0.05 else variant}
                add("checkout_seen", k, did(), _time(rng, early, END + timedelta(days=1)),
                    plan="pro" if rng.random() < 0.6 else "free", **seen)  # fmt: skip
        sessions = [f"s-{k}-{i}" for i in range(int(rng.integers(1, 4)))]
        for _ in range(int(rng.integers(0, 6))):
            session = sessions[int(rng.integers(len(sessions)))]
            add("$pageview", k, did(), _time(rng, early, late), **{"$session_id": session, **flagged})
        for _ in range(int(rng.integers(0, 3))):
            add("cart", k, did(), _time(rng, early, late), **flagged)
        for _ in range(int(rng.poisson(1.4 if variant == "control" else 1.9))):
            roll = rng.random()
            amount = 0.0 if roll < 0.2 else round(float(rng.gamma(2.0, 20.0)), 2)
            price: dict[str, Any] = {} if roll < 0.1 else {"price": amount}
            add("purchase", k, did(), _time(rng, early, late), **price, **flagged)
        if len(ids) == 2:
            add("$identify", k, ids[1], late + timedelta(hours=1), **{"$anon_distinct_id": ids[0]})
    return pd.DataFrame(rows).sort_values("timestamp", kind="stable").reset_index(drop=True)


def prop(df: pd.DataFrame, key: str) -> pd.Series:
    return df["properties"].map(lambda p: p.get(key))


def exposures(df: pd.DataFrame, flag: str, *, handling: str = "exclude", event: str = "$feature_flag_called",
              plan: str | None = None, end: datetime = END) -> pd.DataFrame:  # fmt: skip
    """One row per exposed person: ``variant, first, last`` (index: person)."""
    w = df[(df["timestamp"] >= START) & (df["timestamp"] <= end) & (df["event"] == event)]
    if event == "$feature_flag_called":
        w = w[prop(w, "$feature_flag") == flag].assign(variant=lambda x: prop(x, "$feature_flag_response"))
    else:
        w = w.assign(variant=prop(w, f"$feature/{flag}"))
    if plan is not None:
        w = w[prop(w, "plan") == plan]
    w = w[w["variant"].isin(VARIANTS)]
    out = []
    for person, events in w.groupby("person"):
        events = events.sort_values("timestamp", kind="stable")
        seen = set(events["variant"])
        single = seen.pop() if len(seen) == 1 else MULTIPLE
        variant = events["variant"].iloc[0] if handling == "first_seen" else single
        out.append({"person": person, "variant": variant, "first": events["timestamp"].min(),
                    "last": events["timestamp"].max()})  # fmt: skip
    return pd.DataFrame(out).set_index("person")


def person_values(df: pd.DataFrame, exposed: pd.DataFrame, event: str, math: str = "total",
                  prop_key: str | None = None, window: timedelta | None = None,
                  end: datetime = END) -> pd.Series:  # fmt: skip
    """Each exposed person's value of one metric source (0 without events)."""
    stop = end + (window or timedelta(0))
    ev = df[(df["event"] == event) & (df["timestamp"] >= START) & (df["timestamp"] < stop)]
    ev = ev[ev["person"].isin(exposed.index)]
    ev = ev.assign(first=exposed.loc[ev["person"], "first"].to_numpy(),
                   last=exposed.loc[ev["person"], "last"].to_numpy())  # fmt: skip
    keep = ev["timestamp"] >= ev["first"]
    if window is not None:
        keep &= ev["timestamp"] < ev["last"] + window
    ev = ev[keep]
    if math == "unique_session":
        per = ev.assign(s=prop(ev, "$session_id")).groupby("person")["s"].nunique()
    elif math == "dau":
        per = ev.groupby("person").size().clip(upper=1)
    elif math == "total":
        per = ev.groupby("person").size()
    else:
        # A missing property counts as 0 (PostHog coalesces before aggregating, so it lowers an average).
        values = prop(ev, str(prop_key)).map(lambda v: 0.0 if v is None or pd.isna(v) else float(v))
        how = {"sum": "sum", "avg": "mean", "min": "min", "max": "max"}[math]
        per = ev.assign(v=values).groupby("person")["v"].agg(how)
    return per.reindex(exposed.index, fill_value=0).astype(float)


def capped(values: pd.Series, low: float | None, high: float | None, ignore_zeros: bool = False) -> pd.Series:
    """PostHog's outlier handling: values capped at pooled percentiles (linear interpolation)."""
    lo = values.min() if low is None else np.quantile(values, low)
    pool = values[values != 0] if ignore_zeros else values
    hi = values.max() if high is None else np.quantile(pool, high)
    return values.clip(lower=lo, upper=hi)


def sums(exposed: pd.DataFrame, values: pd.Series) -> dict[str, tuple[int, float, float]]:
    """``{variant: (n, sum, sum of squares)}`` without ``$multiple``."""
    frame = pd.DataFrame({"variant": exposed["variant"], "v": values})
    frame = frame[frame["variant"] != MULTIPLE]
    return {v: (len(g), float(g["v"].sum()), float((g["v"] ** 2).sum())) for v, g in frame.groupby("variant")}


def funnel_steps(df: pd.DataFrame, exposed: pd.DataFrame, flag: str, steps: list[str], order: str,
                 window: timedelta | None, end: datetime = END) -> pd.Series:  # fmt: skip
    """Metric steps each exposed person reached after an exposure (``$feature_flag_called`` of ``flag``)."""
    span = window or timedelta(days=3 * 365)
    stop = end + (window or timedelta(0))
    called = (df["event"] == "$feature_flag_called") & (prop(df, "$feature_flag") == flag)
    called &= prop(df, "$feature_flag_response").isin(VARIANTS) & (df["timestamp"] <= end)
    step_of = pd.Series(-1, index=df.index)
    step_of[called] = 0
    for i, name in enumerate(steps, 1):
        step_of[(df["event"] == name) & (df["timestamp"] <= stop)] = i
    ev = df.assign(step=step_of)
    ev = ev[(ev["step"] >= 0) & (ev["timestamp"] >= START) & ev["person"].isin(exposed.index)]
    reached = {}
    for person, events in ev.groupby("person"):
        events = events.sort_values(["timestamp", "step"], kind="stable")
        times, marks = list(events["timestamp"]), list(events["step"])
        if order == "unordered":
            first = exposed.loc[person, "first"]
            pairs = [(t, s) for t, s in zip(times, marks, strict=True) if t >= first]
            best = max(len({s for t2, s in pairs if t - span <= t2 <= t}) for t, _ in pairs)
            reached[person] = best - 1
            continue
        best = 0
        for i, (t0, s0) in enumerate(zip(times, marks, strict=True)):
            if s0 != 0:
                continue
            depth, j = 0, i + 1
            while j < len(times) and depth < len(steps) and times[j] - t0 <= span:
                if marks[j] == depth + 1:
                    depth += 1
                elif order == "strict" and marks[j] != depth:
                    break  # strict: only the next step, or the last one again (PostHog keeps that attempt), may follow
                j += 1
            best = max(best, depth)
        reached[person] = best
    return pd.Series(reached).reindex(exposed.index, fill_value=0)
