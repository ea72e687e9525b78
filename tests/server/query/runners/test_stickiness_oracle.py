"""StickinessQuery against an independent pandas restatement on seeded events, in UTC and in a zone with DST."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from posthog_openapi import assert_valid

from .insight_oracle import stickiness
from .oracle import generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 22, 9, tzinfo=UTC)
ZONES = ["UTC", "America/Los_Angeles"]
RANGE = {"date_from": "2025-06-01", "date_to": "2025-06-14"}
KEYS = [d.strftime("%Y-%m-%d") for d in pd.date_range("2025-06-01", "2025-06-14")]


@pytest.fixture(scope="module", params=ZONES)
def world(request, make_world):
    df = generate(seed=ZONES.index(request.param) + 71, persons=50, days=21)
    w = make_world(to_events(df), timezone=request.param, now=NOW)
    return w, df, request.param


def _series(*events):
    return [{"kind": "EventsNode", "event": e} for e in events]


def test_two_series_match_pandas(world):
    w, df, tz = world
    answer = w.run({"kind": "StickinessQuery", "series": _series("$pageview", "purchase"), "dateRange": RANGE})
    assert len(answer["results"]) == 2
    for item, event in zip(answer["results"], ["$pageview", "purchase"], strict=True):
        expected = stickiness(df, tz=tz, interval="day", keys=KEYS, event=event)
        assert item["days"] == list(range(1, 15))
        assert item["data"] == [len(expected.get(n, ())) for n in range(1, 15)]
        assert item["count"] == sum(item["data"]) > 0
        assert item["labels"][:2] == ["1 day", "2 days"] and item["label"] == event
    assert_valid(answer, "StickinessQueryResponse")


def test_cumulative_criteria_and_filters(world):
    w, df, tz = world
    answer = w.run({"kind": "StickinessQuery", "series": _series("$pageview"), "dateRange": RANGE,
                    "properties": [{"key": "$browser", "operator": "is_set", "type": "event"}],
                    "stickinessFilter": {"computedAs": "cumulative",
                                         "stickinessCriteria": {"operator": "gte", "value": 2}}})  # fmt: skip
    chosen = df[df["browser"].notna()]
    expected = stickiness(chosen, tz=tz, interval="day", keys=KEYS, event="$pageview", at_least=2)
    exact = [len(expected.get(n, ())) for n in range(1, 15)]
    item = answer["results"][0]
    assert item["data"] == [sum(exact[i:]) for i in range(14)]
    assert item["count"] == sum(exact) > 0
    assert item["labels"][1] == "2 days or more"


def test_interval_count_groups_back_from_date_to(world):
    w, df, tz = world
    answer = w.run({"kind": "StickinessQuery", "series": _series(None), "dateRange": RANGE, "intervalCount": 3})
    period_of = {k: (len(KEYS) - 1 - i) // 3 for i, k in enumerate(KEYS)}
    expected = stickiness(df, tz=tz, interval="day", keys=KEYS, event=None, interval_count=3, period_of=period_of)
    item = answer["results"][0]
    assert item["days"] == [1, 2, 3, 4, 5]
    assert item["data"] == [len(expected.get(n, ())) for n in range(1, 6)]


def test_weekly_and_previous_period(world):
    w, df, tz = world
    answer = w.run({"kind": "StickinessQuery", "series": _series("$pageview"), "interval": "week",
                    "dateRange": {"date_from": "2025-06-15", "date_to": "2025-06-28"},
                    "compareFilter": {"compare": True}})  # fmt: skip
    current, previous = answer["results"]
    assert (current["compare_label"], previous["compare_label"]) == ("current", "previous")
    for item, keys in ((current, ["2025-06-15", "2025-06-22"]), (previous, ["2025-06-01", "2025-06-08"])):
        expected = stickiness(df, tz=tz, interval="week", keys=keys, event="$pageview")
        assert item["data"] == [len(expected.get(n, ())) for n in (1, 2)]
        assert item["labels"] == ["1 week", "2 weeks"]
    assert sum(previous["data"]) > 0
