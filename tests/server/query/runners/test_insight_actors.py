"""InsightActorsQuery over retention, lifecycle, stickiness and paths: the persons behind a cell are exactly the
persons the independent restatement puts in it (merged persons included), and the count matches the cell."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from .insight_oracle import interval_key, lifecycle, paths, retention, stickiness
from .oracle import generate, to_events
from .test_paths_oracle import _items, browsing

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 22, 9, tzinfo=UTC)
KEYS = [d.strftime("%Y-%m-%d") for d in pd.date_range("2025-06-01", "2025-06-14")]
RANGE = {"date_from": "2025-06-01", "date_to": "2025-06-14"}


@pytest.fixture(scope="module")
def world(make_world):
    df = generate(seed=91, persons=45, days=21)
    return make_world(to_events(df), now=NOW), df


def _persons(w, source: dict, limit: int = 1000) -> set[int]:
    """The oracle's person numbers of an ActorsQuery over ``source`` (from the distinct ids anon-k / user-k)."""
    answer = w.run({"kind": "ActorsQuery", "select": ["pdi_ids"], "limit": limit,
                    "source": {"kind": "InsightActorsQuery", **source}})  # fmt: skip
    assert answer["hasMore"] is False
    return {int(ids[0].split("-")[1]) for (ids,) in answer["results"]}


def test_retention_cell(world):
    w, df = world
    query = {"kind": "RetentionQuery", "dateRange": RANGE,
             "retentionFilter": {"retentionType": "retention_recurring", "totalIntervals": 5}}  # fmt: skip
    expected = retention(df, tz="UTC", interval="day", keys=KEYS, lookahead=5, target="$pageview",
                         returning="$pageview", first_time=False)  # fmt: skip
    answer = w.run(query)
    checked = 0
    for cohort, period in [(2, 0), (2, 1), (5, 3), (9, 4)]:
        got = _persons(w, {"source": query, "interval": cohort, "day": f"Day {period}" if period else period})
        assert got == expected.get(("", cohort, period), set())
        assert len(got) == answer["results"][cohort]["values"][period]["count"]
        checked += len(got)
    assert checked > 0


def test_lifecycle_status_on_a_day(world):
    w, df = world
    query = {"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}], "dateRange": RANGE}
    first = df.sort_values("timestamp").groupby("person")["timestamp"].first()
    created = dict(zip(first.index.astype(int), interval_key(first, "UTC", "day"), strict=True))
    expected = lifecycle(df, tz="UTC", interval="day", keys=KEYS, before="2025-05-31", event="$pageview",
                         created=created)  # fmt: skip
    nonempty = 0
    for status in ("new", "returning", "resurrecting", "dormant"):
        for day in ("2025-06-04", "2025-06-10"):
            got = _persons(w, {"source": query, "status": status, "day": day})
            assert got == expected.get((day, status), set()), (status, day)
            nonempty += bool(got)
    assert nonempty >= 4


@pytest.mark.parametrize("cumulative", [False, True])
def test_stickiness_bucket(world, cumulative):
    w, df = world
    query = {"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "purchase"},
                                                   {"kind": "EventsNode", "event": "$pageview"}], "dateRange": RANGE,
             "stickinessFilter": {"computedAs": "cumulative" if cumulative else "non_cumulative"}}  # fmt: skip
    expected = stickiness(df, tz="UTC", interval="day", keys=KEYS, event="$pageview")
    for active in (1, 3):
        got = _persons(w, {"source": query, "series": 1, "day": active})
        wanted = set().union(*(v for n, v in expected.items() if n >= active)) if cumulative else expected[active]
        assert got == wanted and got


def test_paths_edge_and_dropoff(make_world):
    events = browsing(seed=8, persons=40)
    w = make_world([{k: v for k, v in e.items() if k != "person"} for e in events], now=NOW)
    rows = paths(_items(events), step_limit=5)
    query = {"kind": "PathsQuery", "dateRange": {"date_from": "2025-06-01", "date_to": "2025-06-20"},
             "pathsFilter": {"includeEventTypes": ["$pageview"]}}  # fmt: skip
    top = w.run(query)["results"][0]
    on_edge = {
        r["person"] for r in rows
        for i in range(1, len(r["steps"]))
        if (f"{i}_{r['steps'][i - 1][0]}", f"{i + 1}_{r['steps'][i][0]}") == (top["source"], top["target"])
    }  # fmt: skip
    source = {**query, "pathsFilter": {**query["pathsFilter"], "pathStartKey": top["source"],
                                       "pathEndKey": top["target"]}}  # fmt: skip
    answer = w.run({"kind": "ActorsQuery", "select": ["pdi_ids"], "limit": 1000,
                    "source": {"kind": "InsightActorsQuery", "source": source}})  # fmt: skip
    assert {int(ids[0].split("-")[1]) for (ids,) in answer["results"]} == on_edge and on_edge
    last = rows[0]["steps"]
    key = f"{len(last)}_{last[-1][0]}"
    ended = {r["person"] for r in rows if f"{len(r['steps'])}_{r['steps'][-1][0]}" == key}
    source = {**query, "pathsFilter": {**query["pathsFilter"], "pathDropoffKey": key}}
    answer = w.run({"kind": "ActorsQuery", "select": ["pdi_ids"], "limit": 1000,
                    "source": {"kind": "InsightActorsQuery", "source": source}})  # fmt: skip
    assert {int(ids[0].split("-")[1]) for (ids,) in answer["results"]} == ended


def test_persons_of_a_cell_come_in_pages(world):
    w, _ = world
    query = {"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": None}], "dateRange": RANGE}
    source = {"kind": "InsightActorsQuery", "source": query, "status": "returning", "day": "2025-06-06"}
    whole = _persons(w, {k: v for k, v in source.items() if k != "kind"})
    assert len(whole) > 4
    pages, offset = [], 0
    while True:
        page = w.run({"kind": "ActorsQuery", "select": ["pdi_ids"], "orderBy": ["id"], "limit": 3, "offset": offset,
                      "source": source})  # fmt: skip
        pages += [int(ids[0].split("-")[1]) for (ids,) in page["results"]]
        offset += 3
        if not page["hasMore"]:
            break
    assert len(pages) == len(set(pages)) and set(pages) == whole
