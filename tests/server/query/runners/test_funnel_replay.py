"""Ordered and strict funnels with exclusions and breakdown attributions against a Python restatement.

The runner replays each person's events in one ``arrayFold`` whose state and inputs depend on the query (the
exclusion state only with exclusions, the breakdown array only for ``step`` and ``all_events`` attribution), so
each of those shapes is checked on seeded random events against ``oracle.funnel_replay``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from .oracle import funnel_replay, generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 16, 9, tzinfo=UTC)
STEPS = ["$pageview", "signup", "purchase"]
RANGE = {"date_from": "2025-05-30", "date_to": "2025-06-16"}
DAY_US = 86400 * 1_000_000


@pytest.fixture(scope="module")
def world(make_world):
    df = generate(seed=29, persons=70)
    return make_world(to_events(df), timezone="UTC", now=NOW), df


def _events(group, *, strict, exclusions, keep=lambda value: True):
    out = []
    for r in group.itertuples():
        steps = {i for i, name in enumerate(STEPS) if r.event == name}
        gaps = set() if steps else {g for name, a, b in exclusions if r.event == name for g in range(a, b)}
        if (steps or gaps or strict) and keep(r.plan):
            out.append((r.timestamp.value // 1000, steps, gaps, r.plan))
    return sorted(out, key=lambda e: (e[0], min(e[1], default=99)))


def _by_person(df):
    return df.sort_values("timestamp").groupby("person")


def _query(ff, breakdown=None):
    query = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": e} for e in STEPS], "dateRange": RANGE,
             "funnelsFilter": ff}  # fmt: skip
    if breakdown:
        query["breakdownFilter"] = {"breakdown": breakdown, "breakdown_type": "event"}
    return query


@pytest.mark.parametrize("order", ["ordered", "strict"])
@pytest.mark.parametrize("days", [1, 14])
@pytest.mark.parametrize(("start", "end"), [(0, 1), (1, 2), (0, 2)])
def test_exclusions_counts_and_conversion_times(world, order, days, start, end):
    w, df = world
    exclusion = {"kind": "EventsNode", "event": "logout", "funnelFromStep": start, "funnelToStep": end}
    ff = {"funnelOrderType": order, "funnelWindowInterval": days, "funnelWindowIntervalUnit": "day",
          "exclusions": [exclusion]}  # fmt: skip
    answer = w.run(_query(ff))["results"]
    strict = order == "strict"
    expected = [
        funnel_replay(_events(g, strict=strict, exclusions=[("logout", start, end)]), 3, days * DAY_US, strict=strict)
        for _, g in _by_person(df)
    ]
    if order == "ordered" or days == 14:  # strict 1-day funnels rarely last long enough for a logout between steps
        assert any(r == -2 for r, _ in expected), "the data should exclude someone"
    assert [s["count"] for s in answer] == [sum(1 for r, _ in expected if r >= j) for j in range(3)]
    for j in (1, 2):
        seconds = [(t[j] - t[j - 1]) / 1e6 for r, t in expected if r >= j and t[j] > t[j - 1]]
        assert answer[j]["average_conversion_time"] == (pytest.approx(np.mean(seconds)) if seconds else None)
        assert answer[j]["median_conversion_time"] == (pytest.approx(np.median(seconds)) if seconds else None)


def _expected_by_value(df, attribution):
    per_value: dict[str, list[int]] = {}
    for _, group in _by_person(df):
        relevant = _events(group, strict=False, exclusions=[])
        plans = [e[3] for e in relevant]
        if attribution == "first_touch":
            runs = [(next((p for p in plans if p), ""), None, relevant)]
        elif attribution == "last_touch":
            runs = [(next((p for p in reversed(plans) if p), ""), None, relevant)]
        elif attribution == "all_events":
            runs = [(v, None, [e for e in relevant if e[3] == v]) for v in set(plans)]
        else:  # step 1: the values seen on signups; the step must have that value
            seen = {e[3] for e in relevant if 1 in e[1]} or {""}
            runs = [(v, (1, v), relevant) for v in seen]
        for value, step_value, events in runs:
            reached, _ = funnel_replay(events, 3, 14 * DAY_US, strict=False, step_value=step_value)
            if reached >= 0:
                counts = per_value.setdefault(value, [0, 0, 0])
                for j in range(reached + 1):
                    counts[j] += 1
    return per_value


@pytest.mark.parametrize("attribution", ["first_touch", "last_touch", "all_events", "step"])
def test_breakdown_attribution(world, attribution):
    w, df = world
    ff = {"breakdownAttributionType": attribution}
    if attribution == "step":
        ff["breakdownAttributionValue"] = 1
    answer = w.run(_query(ff, breakdown="plan"))["results"]
    got = {steps[0]["breakdown_value"][0]: [s["count"] for s in steps] for steps in answer}
    assert got == _expected_by_value(df, attribution)
    assert len(got) >= 2


def test_twenty_ordered_steps_that_share_events(world):
    """The most steps a funnel may have, each event matching every other step: the whole-array replay's query
    stays small (one layer per step), and its counts and times are the restatement's."""
    w, df = world
    names = [STEPS[i % 2] for i in range(20)]  # $pageview, signup, $pageview, ...: an event is ten steps at once
    query = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": e} for e in names], "dateRange": RANGE,
             "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"}}  # fmt: skip
    answer = w.run(query)["results"]
    expected = []
    for _, group in _by_person(df):
        events = sorted(
            ((r.timestamp.value // 1000, {i for i, name in enumerate(names) if r.event == name}, set(), "")
             for r in group.itertuples() if r.event in names),
            key=lambda e: (e[0], min(e[1])),
        )  # fmt: skip
        expected.append(funnel_replay(events, 20, 14 * DAY_US, strict=False))
    counts = [sum(1 for r, _ in expected if r >= j) for j in range(20)]
    assert [s["count"] for s in answer] == counts
    assert counts[3] > 0, "some persons go past a few steps"
    seconds = [(t[1] - t[0]) / 1e6 for r, t in expected if r >= 1 and t[1] > t[0]]
    assert answer[1]["average_conversion_time"] == (pytest.approx(np.mean(seconds)) if seconds else None)
