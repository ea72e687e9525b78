"""PathsQuery against an independent Python restatement on seeded multi-session browsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from posthog_openapi import assert_valid

from .insight_oracle import clean_path, path_edges, paths

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 22, 9, tzinfo=UTC)
START = datetime(2025, 6, 2, 8, tzinfo=UTC)
SITE = "https://shop.io"
PAGES = ["/", "/home/", "/pricing", "/blog/1", "/blog/22/", "/user/123", "/user/77/settings", "/checkout"]
CUSTOM = ["signup", "purchase"]
SCREENS = ["Home", "Cart"]


def browsing(seed: int, persons: int = 70) -> list[dict]:
    """Each person browses in 1-3 sessions (gaps of hours between, seconds to 20 minutes within), with repeats."""
    rng = np.random.default_rng(seed)
    events = []
    for k in range(persons):
        t = START + timedelta(hours=float(rng.uniform(0, 96)))
        for _ in range(int(rng.integers(1, 4))):
            for _ in range(int(rng.integers(1, 9))):
                kind = rng.choice(3, p=[0.75, 0.15, 0.1])
                if kind == 0:
                    page = PAGES[int(rng.choice(len(PAGES), p=[0.2, 0.2, 0.15, 0.1, 0.1, 0.1, 0.1, 0.05]))]
                    props = {"$current_url": SITE + page}
                    events.append({"event": "$pageview", "properties": props})
                elif kind == 1:
                    events.append({"event": CUSTOM[int(rng.integers(2))], "properties": {}})
                else:
                    events.append({"event": "$screen", "properties": {"$screen_name": SCREENS[int(rng.integers(2))]}})
                events[-1].update(distinct_id=f"p-{k}", timestamp=t, person=k)
                t += timedelta(seconds=float(rng.uniform(1, 1200)), microseconds=int(rng.integers(1, 10**6)))
            t += timedelta(minutes=float(rng.uniform(31, 600)))
    return events


@pytest.fixture(scope="module")
def world(make_world):
    events = browsing(seed=5)
    w = make_world([{k: v for k, v in e.items() if k != "person"} for e in events], now=NOW)
    return w, events


def _items(events, types=("$pageview",), cleaning=(), groupings=(), exclude=()):
    out = []
    for e in events:
        if e["event"] == "$pageview" and "$pageview" in types:
            item = clean_path(e["properties"]["$current_url"], list(cleaning), list(groupings))
        elif e["event"] == "$screen" and "$screen" in types:
            item = e["properties"]["$screen_name"]
        elif not e["event"].startswith("$") and "custom_event" in types:
            item = e["event"]
        else:
            continue
        if item not in exclude:
            out.append((e["person"], e["timestamp"].timestamp(), item))
    return out


def _expected(rows, limit=50):
    edges = path_edges(rows)
    ranked = sorted(edges.items(), key=lambda kv: (-len(kv[1]), kv[0][0], kv[0][1]))[:limit]
    return {(s, t): (len(v), sum(v) / len(v) * 1000) for (s, t), v in ranked}


def _run(w, **paths_filter):
    return w.run({"kind": "PathsQuery", "dateRange": {"date_from": "2025-06-01", "date_to": "2025-06-20"},
                  "pathsFilter": paths_filter})  # fmt: skip


def _check(answer, expected):
    got = {(r["source"], r["target"]): (r["value"], r["average_conversion_time"]) for r in answer["results"]}
    assert set(got) == set(expected)
    for key, (value, ms) in expected.items():
        assert got[key][0] == value, key
        assert got[key][1] == pytest.approx(ms, rel=1e-6, abs=1e-3), key


def test_pageview_paths_split_by_inactivity(world):
    w, events = world
    answer = _run(w, includeEventTypes=["$pageview"], edgeLimit=1000)
    expected = _expected(paths(_items(events), step_limit=5), limit=1000)
    _check(answer, expected)
    assert any(s.startswith("4_") for s, _ in expected)
    assert all(r["source"].split("_")[0].isdigit() for r in answer["results"])
    assert_valid(answer, "PathsQueryResponse")


def test_all_kinds_with_cleaning_groupings_and_exclusions(world):
    w, events = world
    cleaning = [(r"/user/\d+", "/user/:id")]
    answer = _run(w, includeEventTypes=["$pageview", "$screen", "custom_event"], stepLimit=4, edgeLimit=1000,
                  localPathCleaningFilters=[{"regex": r"/user/\d+", "alias": "/user/:id"}],
                  pathGroupings=["*/blog/*"], excludeEvents=["purchase"])  # fmt: skip
    items = _items(events, ("$pageview", "$screen", "custom_event"), cleaning, ["*/blog/*"], exclude=["purchase"])
    expected = _expected(paths(items, step_limit=4), limit=1000)
    _check(answer, expected)
    names = {r["target"].split("_", 1)[1] for r in answer["results"]}
    assert {"*/blog/*", "Cart", "signup", SITE + "/user/:id"} <= names and "purchase" not in names


@pytest.mark.parametrize(("start", "end"), [(SITE + "/home/", None), (None, SITE + "/checkout"),
                                            (SITE + "/home", SITE + "/checkout"),
                                            (SITE + "/home/", SITE + "/checkout/")])  # fmt: skip
def test_start_and_end_points(world, start, end):
    w, events = world
    answer = _run(w, includeEventTypes=["$pageview"], startPoint=start, endPoint=end, stepLimit=3, edgeLimit=1000)
    strip = lambda x: x[:-1] if x and x.endswith("/") else x  # noqa: E731
    rows = paths(_items(events), step_limit=3, start=strip(start), end=strip(end))
    _check(answer, _expected(rows, limit=1000))
    assert answer["results"]


def test_edge_limit_and_weights_keep_the_heaviest_reachable(world):
    w, events = world
    answer = _run(w, includeEventTypes=["$pageview"], edgeLimit=6, minEdgeWeight=2)
    full = _expected(paths(_items(events)), limit=10_000)
    heavy = sorted(((k, v) for k, v in full.items() if v[0] >= 2), key=lambda kv: (-kv[1][0], kv[0]))[:6]
    kept = {k for k, _ in heavy}
    sources = {s for s, _ in kept if s.startswith("1_")}
    reachable, frontier = set(sources), list(sources)
    while frontier:
        node = frontier.pop()
        for s, t in kept:
            if s == node and t not in reachable:
                reachable.add(t)
                frontier.append(t)
    assert {(r["source"], r["target"]) for r in answer["results"]} == {k for k in kept if k[0] in reachable}
    assert all(r["value"] >= 2 for r in answer["results"])
