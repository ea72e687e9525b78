"""The toolkit end to end for retention, lifecycle, stickiness and paths: each builder through the client to the real
service and back as a frame, every number equal to a pandas restatement over the events this module captured
(through ``/batch/``, as an SDK sends them).

The events are built to have known shapes: people start on different days (cohorts), skip days (so they come back
as resurrecting), and browse in several sessions a day (30-minute gaps split paths, as PostHog splits them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from clienttesting import batch_client

import hoglab
from hoglab.client import Client
from hoglab.frames import retention_table
from posthog_openapi import assert_valid

pytestmark = pytest.mark.xdist_group("client_live")

START = datetime(2025, 3, 2, tzinfo=UTC)  # a Sunday: PostHog's weeks start on Sundays
DAYS = 14
RANGE = {"date_from": "2025-03-02", "date_to": "2025-03-15"}
SITE = "https://hog.example"
PAGES = ["/", "/pricing", "/docs", "/signup", "/blog/1", "/blog/2"]
BROWSERS = ("Chrome", "Safari", "Firefox")
SESSION_GAP = timedelta(minutes=30)  # PostHog's paths start a new path after 30 minutes without an event


def _events(seed: int = 14) -> pd.DataFrame:
    """30 people over two weeks: each starts on one of the first ten days, is active on later days at random (gaps
    included), browses one or two sessions of 2-5 pages on an active day; two in three sign up on their first."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for k in range(30):
        person, browser, first = f"person-{k:02d}", BROWSERS[k % 3], k % 10
        active = [first] + [d for d in range(first + 1, DAYS) if rng.random() < 0.45]
        for day in active:
            sessions = [9 + k % 5] + ([15] if rng.random() < 0.4 else [])
            for hour in sessions:
                at = START + timedelta(days=day, hours=hour, minutes=int(rng.integers(0, 20)))
                for _ in range(int(rng.integers(2, 6))):
                    page = PAGES[int(rng.integers(0, len(PAGES)))]
                    rows.append({"event": "$pageview", "distinct_id": person, "browser": browser, "timestamp": at,
                                 "url": SITE + page})  # fmt: skip
                    at += timedelta(seconds=int(rng.integers(20, 400)))
        if k % 3:
            signed_up = START + timedelta(days=first, hours=9 + k % 5, minutes=45)
            rows.append({"event": "signup", "distinct_id": person, "browser": browser, "timestamp": signed_up,
                         "url": None})  # fmt: skip
    return pd.DataFrame(rows).sort_values("timestamp", kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def captured(hoglab_service: Any) -> Iterator[tuple[Client, pd.DataFrame]]:
    events = _events()
    batch = [
        {"event": r.event, "distinct_id": r.distinct_id, "timestamp": r.timestamp.isoformat(),
         "properties": {"$browser": r.browser, **({"$current_url": r.url} if isinstance(r.url, str) else {})}}
        for r in events.itertuples()
    ]  # fmt: skip
    with batch_client(hoglab_service, "product analytics toolkit", batch) as client:
        yield client, events


def _day(events: pd.DataFrame) -> pd.Series:
    return (events["timestamp"] - START).dt.days


# ------------------------------------------------------------------------------------------------------ retention


def _retention_oracle(events: pd.DataFrame, target: str, returning: str, intervals: int, *, recurring: bool,
                      browser: str | None = None) -> dict[tuple[int, int], int]:  # fmt: skip
    """(cohort day, period) -> people: the cohort's people who did ``returning`` ``period`` days later."""
    if browser is not None:
        events = events[events["browser"] == browser]
    days = events.assign(day=_day(events))
    starts = days[days["event"] == target].groupby("distinct_id")["day"]
    # Recurring: a cohort for each day a person did the target event; first time: only their first day.
    members = {(p, d) for p, ds in starts for d in (set(ds) if recurring else {ds.min()})}
    back = set(zip(days.loc[days["event"] == returning, "distinct_id"], days.loc[days["event"] == returning, "day"],
                   strict=True))  # fmt: skip
    cells: dict[tuple[int, int], int] = {}
    for cohort in range(DAYS):
        people = {p for p, d in members if d == cohort}
        for period in range(intervals):
            if period == 0:
                cells[(cohort, 0)] = len(people)
            elif cohort + period < DAYS:
                cells[(cohort, period)] = sum((p, cohort + period) in back for p in people)
    return cells


@pytest.mark.parametrize("recurring", [False, True])
def test_retention_cohorts_counts_and_rates_equal_pandas(
    captured: tuple[Client, pd.DataFrame], recurring: bool
) -> None:
    client, events = captured
    query = hoglab.retention("signup", returning="$pageview", intervals=8,
                             retention_type="recurring" if recurring else "first_time", **RANGE)  # fmt: skip
    assert_valid(hoglab.actors(source=query).to_json_dict(), "ActorsQuery", drop=())
    df = client.query(query)
    expected = _retention_oracle(events, "signup", "$pageview", 8, recurring=recurring)
    assert df["cohort"].max() == DAYS - 1 and df["period"].max() == 7
    got = {(int(r.cohort), int(r.period)): r.count for r in df.itertuples() if r.count is not pd.NA}
    assert got == expected  # periods after 2025-03-15 are <NA>, not 0
    sizes = {c: n for (c, p), n in expected.items() if p == 0}
    for r in df.dropna(subset=["count"]).itertuples():
        if sizes[r.cohort]:
            assert r.rate == pytest.approx(expected[(r.cohort, r.period)] / sizes[r.cohort])
    assert (df["cohort_date"] == START + pd.to_timedelta(df["cohort"], unit="D")).all()
    table = retention_table(df, "count")
    assert table.shape == (DAYS, 8) and table.iloc[0, 0] == sizes[0]


def test_retention_broken_down_by_browser_equals_pandas_per_browser(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.retention("$pageview", intervals=4, breakdown="$browser", **RANGE))
    assert set(df["breakdown_value"]) == set(BROWSERS)
    for browser in BROWSERS:
        expected = _retention_oracle(events, "$pageview", "$pageview", 4, recurring=False, browser=browser)
        mine = df[df["breakdown_value"] == browser]
        got = {(int(r.cohort), int(r.period)): r.count for r in mine.itertuples() if r.count is not pd.NA}
        assert got == expected, browser


def test_weekly_retention_of_everyone(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.retention(None, period="week", intervals=2, **RANGE))
    weeks = events.assign(week=_day(events) // 7)
    first = weeks.groupby("distinct_id")["week"].min()
    active = set(zip(weeks["distinct_id"], weeks["week"], strict=True))
    assert df.attrs["period"] == "week"
    cells = df.set_index(["cohort", "period"])["count"]
    assert cells[(0, 0)] == (first == 0).sum() and cells[(1, 0)] == (first == 1).sum()
    assert cells[(0, 1)] == sum((p, 1) in active for p in first[first == 0].index)
    assert cells[(1, 1)] is pd.NA  # the week after the range


# ------------------------------------------------------------------------------------------------------ lifecycle


def _lifecycle_oracle(events: pd.DataFrame, event: str) -> pd.DataFrame:
    """Per day of the range and status, the people (dormant negative), restated from each person's active days."""
    days = events.assign(day=_day(events))
    created = days.groupby("distinct_id")["day"].min()  # a person is created at their first event of any kind
    active = days[days["event"] == event].groupby("distinct_id")["day"].agg(set)
    rows = []
    for day in range(DAYS):
        counts = dict.fromkeys(("new", "returning", "resurrecting", "dormant"), 0)
        for person, on in active.items():
            now, before = day in on, day - 1 in on
            if now and created[person] == day:
                counts["new"] += 1
            elif now and before:
                counts["returning"] += 1
            elif now:
                counts["resurrecting"] += 1
            elif before:
                counts["dormant"] -= 1
        rows += [{"date": START + timedelta(days=day), "status": s, "count": n} for s, n in counts.items()]
    return pd.DataFrame(rows)


def test_lifecycle_statuses_per_day_equal_pandas(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.lifecycle("$pageview", **RANGE))
    expected = _lifecycle_oracle(events, "$pageview")
    assert list(df.columns) == ["date", "status", "count"]
    got = df.set_index(["date", "status"])["count"].astype(int).sort_index()
    assert got.to_dict() == expected.set_index(["date", "status"])["count"].sort_index().to_dict()
    assert (expected[expected.status == "resurrecting"]["count"] > 0).any()  # the data has gaps to come back from


def test_lifecycle_shows_only_the_statuses_asked_for(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.lifecycle("$pageview", statuses=["new", "dormant"], **RANGE))
    assert set(df["status"]) == {"new", "dormant"}
    expected = _lifecycle_oracle(events, "$pageview")
    new = expected[expected.status == "new"].set_index("date")["count"]
    assert df[df.status == "new"].set_index("date")["count"].astype(int).to_dict() == new.to_dict()


# ----------------------------------------------------------------------------------------------------- stickiness


def _stickiness_oracle(events: pd.DataFrame, event: str, *, at_least: int = 1, days: int = DAYS) -> dict[int, int]:
    """Active days -> people: days in the range with at least ``at_least`` of the person's ``event``s."""
    mine = events[(events["event"] == event) & (_day(events) < days)]
    per_day = mine.groupby(["distinct_id", _day(mine)]).size()
    active = (per_day >= at_least).groupby(level=0).sum()
    counts = active[active > 0].value_counts()
    return {n: int(counts.get(n, 0)) for n in range(1, days + 1)}


def test_stickiness_per_series_equals_pandas(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.stickiness(["$pageview", "signup"], **RANGE))
    assert list(df.columns) == ["series", "label", "intervals", "persons"] and df.attrs["interval"] == "day"
    for series, event in enumerate(["$pageview", "signup"]):
        mine = df[df["series"] == series]
        assert set(mine["label"]) == {event}
        assert dict(zip(mine["intervals"], mine["persons"], strict=True)) == _stickiness_oracle(events, event)
    assert df[df["series"] == 1]["persons"].sum() == events.loc[events.event == "signup", "distinct_id"].nunique()


def test_stickiness_cumulative_with_a_minimum_of_events(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.stickiness("$pageview", active_when=(">=", 4), cumulative=True, **RANGE))
    exactly = _stickiness_oracle(events, "$pageview", at_least=4)
    at_least = {n: sum(v for m, v in exactly.items() if m >= n) for n in exactly}
    assert dict(zip(df["intervals"], df["persons"], strict=True)) == at_least
    assert at_least[1] > at_least[3] > 0  # a real spread: some people are active on more days than others


def test_stickiness_against_the_previous_period(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.stickiness("$pageview", compare=True, **RANGE))
    current = df[df["compare_label"] == "current"]
    assert dict(zip(current["intervals"], current["persons"], strict=True)) == _stickiness_oracle(events, "$pageview")
    assert (df[df["compare_label"] == "previous"]["persons"] == 0).all()  # nothing happened before the range


# ---------------------------------------------------------------------------------------------------------- paths

CLEAN = {r"^https://hog\.example$": "/", r"^https://hog\.example": ""}  # the site alone is "/", else its path


def _session_paths(events: pd.DataFrame, *, steps: int, start: str | None = None) -> list[tuple[str, list[Any]]]:
    """Each session's path, restated in pandas: pageview URLs without a trailing slash, cleaned in order, cut into
    sessions at 30-minute gaps, consecutive repeats collapsed (the last kept), from ``start``, ``steps`` long:
    ``[(person, [(item, timestamp), ...]), ...]``."""
    views = events[events["event"] == "$pageview"].sort_values(["distinct_id", "timestamp"], kind="stable")
    items = views["url"].str.replace(r"(.)/$", r"\1", regex=True)
    for regex, alias in CLEAN.items():
        items = items.str.replace(regex, alias, regex=True)
    views = views.assign(item=items)
    new_session = views["timestamp"].diff().ge(SESSION_GAP) | views["distinct_id"].ne(views["distinct_id"].shift())
    paths = []
    for _, session in views.groupby(new_session.cumsum()):
        kept = session[session["item"].ne(session["item"].shift(-1))]  # the last of each run of repeats
        path = list(zip(kept["item"], kept["timestamp"], strict=True))
        if start is not None:
            names = [name for name, _ in path]
            if start not in names:
                continue
            path = path[names.index(start) :]
        paths.append((session["distinct_id"].iloc[0], path[:steps]))
    return paths


def _sessions(events: pd.DataFrame, *, steps: int) -> list[tuple[str, list[str]]]:
    return [(person, [item for item, _ in path]) for person, path in _session_paths(events, steps=steps)]


def _paths_oracle(events: pd.DataFrame, *, steps: int, start: str | None = None) -> dict[tuple[str, str], Any]:
    """Edges: (``"i_source"``, ``"i+1_target"``) -> (session paths along it, mean milliseconds between the steps)."""
    edges: dict[tuple[str, str], list[float]] = {}
    for _, path in _session_paths(events, steps=steps, start=start):
        for i, ((a, t0), (b, t1)) in enumerate(itertools.pairwise(path), start=1):
            edges.setdefault((f"{i}_{a}", f"{i + 1}_{b}"), []).append((t1 - t0).total_seconds() * 1000)
    return {edge: (len(ms), float(np.mean(ms))) for edge, ms in edges.items()}


def _edges(df: pd.DataFrame) -> dict[tuple[str, str], tuple[int, float]]:
    names = zip(df["step_from"].astype(str) + "_" + df["source"], df["step_to"].astype(str) + "_" + df["target"],
                strict=True)  # fmt: skip
    return dict(zip(names, zip(df["value"].astype(int), df["average_conversion_time"], strict=True), strict=True))


@pytest.mark.parametrize("start", [None, "/pricing"])
def test_paths_edges_equal_pandas_over_multi_session_browsing(captured: tuple[Client, pd.DataFrame],
                                                              start: str | None) -> None:  # fmt: skip
    client, events = captured
    df = client.query(hoglab.paths("$pageview", start=start, steps=4, edge_limit=1000, clean=CLEAN, **RANGE))
    expected = _paths_oracle(events, steps=4, start=start)
    got = _edges(df)
    assert set(got) == set(expected)
    for edge, (value, ms) in expected.items():
        assert got[edge][0] == value, edge
        assert got[edge][1] == pytest.approx(ms), edge
    assert list(df["value"]) == sorted(df["value"], reverse=True)  # heaviest first
    if start is not None:
        assert set(df.loc[df["step_from"] == 1, "source"]) == {start}
    assert df["step_to"].max() == 4


def test_paths_edge_weights_and_limits(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    everything = _paths_oracle(events, steps=3)
    df = client.query(hoglab.paths("$pageview", steps=3, min_weight=3, max_weight=10, clean=CLEAN, **RANGE))
    kept = {edge for edge, (value, _) in everything.items() if 3 <= value <= 10}
    # Edges in the weight range survive when a first step still leads to them (PostHog's reachability pass).
    assert set(_edges(df)) <= kept
    assert df["value"].between(3, 10).all() and (df["step_from"] == 1).any()
    top = client.query(hoglab.paths("$pageview", steps=3, edge_limit=5, clean=CLEAN, **RANGE))
    assert len(top) <= 5 and top["value"].max() == max(value for value, _ in everything.values())


# ------------------------------------------------------------------------------------------- answers as models too


@pytest.mark.parametrize(
    "build",
    [
        lambda: hoglab.retention("signup", returning="$pageview", **RANGE),
        lambda: hoglab.lifecycle("$pageview", **RANGE),
        lambda: hoglab.stickiness(["$pageview", "signup"], **RANGE),
        lambda: hoglab.paths("$pageview", steps=3, clean=CLEAN, **RANGE),
    ],
    ids=["retention", "lifecycle", "stickiness", "paths"],
)
def test_query_raw_parses_every_answer_and_frames_the_same(captured: tuple[Client, pd.DataFrame], build: Any) -> None:
    client, _ = captured
    query = build()
    model = client.query_raw(query)
    assert type(model).__name__ == f"{query.kind}Response" and model.results
    from_model = hoglab.frames.to_frame(model, query.kind)
    pd.testing.assert_frame_equal(from_model, client.query(query), check_like=False)


# ------------------------------------------------------------------------------------------ the people in a number


def _people(client: Client, **cell: Any) -> set[str]:
    frame = client.query(hoglab.actors(["person", "id"], limit=1000, **cell))
    return {distinct_id for person in frame["person"] for distinct_id in person["distinct_ids"]}


def test_people_behind_a_retention_cell(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    query = hoglab.retention("signup", returning="$pageview", intervals=8, **RANGE)
    days = events.assign(day=_day(events))
    first = days[days["event"] == "signup"].groupby("distinct_id")["day"].min()
    viewed = set(zip(days.loc[days.event == "$pageview", "distinct_id"], days.loc[days.event == "$pageview", "day"],
                     strict=True))  # fmt: skip
    counts = client.query(query).set_index(["cohort", "period"])["count"]
    checked = 0
    for cohort, period in [(1, 0), (1, 2), (4, 1), (7, 3)]:
        expected = {p for p in first[first == cohort].index if period == 0 or (p, cohort + period) in viewed}
        got = _people(client, source=query, cohort=cohort, period=period)
        assert got == expected, (cohort, period)
        assert len(got) == counts[(cohort, period)]
        checked += len(got)
    assert checked > 0


def test_people_behind_lifecycle_bars(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    query = hoglab.lifecycle("$pageview", **RANGE)
    days = events.assign(day=_day(events))
    created = days.groupby("distinct_id")["day"].min()
    active = days[days["event"] == "$pageview"].groupby("distinct_id")["day"].agg(set)
    for day in (4, 9):
        on = {p for p, ds in active.items() if day in ds}
        before = {p for p, ds in active.items() if day - 1 in ds}
        new = {p for p in on if created[p] == day}
        expected = {"new": new, "returning": (on & before) - new, "resurrecting": on - before - new,
                    "dormant": before - on}  # fmt: skip
        date = (START + timedelta(days=day)).date()
        for status, people in expected.items():
            assert _people(client, source=query, status=status, day=date) == people, (status, day)
    assert any(p for p in expected.values())


def test_people_behind_a_stickiness_bar(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    views = events[events["event"] == "$pageview"]
    active_days = views.groupby("distinct_id")["timestamp"].agg(lambda t: t.dt.floor("D").nunique())
    query = hoglab.stickiness("$pageview", **RANGE)
    for days in (2, 5):
        assert _people(client, source=query, day=days) == set(active_days[active_days == days].index)


def test_people_behind_a_paths_edge_and_a_dropoff(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    query = hoglab.paths("$pageview", steps=4, edge_limit=1000, clean=CLEAN, **RANGE)
    sessions = _sessions(events, steps=4)
    top = client.query(query).iloc[0]
    source, target = f"{top.step_from}_{top.source}", f"{top.step_to}_{top.target}"
    took = {person for person, path in sessions for i in range(1, len(path))
            if (f"{i}_{path[i - 1]}", f"{i + 1}_{path[i]}") == (source, target)}  # fmt: skip
    assert _people(client, source=query, edge=(source, target)) == took and took
    ended = {person for person, path in sessions if f"{len(path)}_{path[-1]}" == target}
    assert _people(client, source=query, dropoff=target) == ended
