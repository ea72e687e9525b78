"""LifecycleQuery against an independent pandas restatement on seeded events, in UTC and in a zone with DST."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from posthog_openapi import assert_valid

from .insight_oracle import interval_key, lifecycle
from .oracle import generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 22, 9, tzinfo=UTC)
ZONES = ["UTC", "America/Los_Angeles"]


@pytest.fixture(scope="module", params=ZONES)
def world(request, make_world):
    # Sparse activity over three weeks: people start on different days, stop and come back (resurrect).
    df = generate(seed=ZONES.index(request.param) + 51, persons=60, days=21, events_per_person=12)
    w = make_world(to_events(df), timezone=request.param, now=NOW)
    return w, df, request.param


def _created(df: pd.DataFrame, tz: str, interval: str) -> dict[int, str]:
    first = df.sort_values("timestamp").groupby("person")["timestamp"].first()
    return dict(zip(first.index.astype(int), interval_key(first, tz, interval), strict=True))


def _check(answer: dict, expected: dict, keys: list[str], statuses=("new", "returning", "resurrecting", "dormant")):
    assert [r["status"] for r in answer["results"]] == list(statuses)
    for item in answer["results"]:
        sign = -1 if item["status"] == "dormant" else 1
        assert item["days"][0][:10] == keys[0][:10] and len(item["days"]) == len(keys)
        want = [float(sign * len(expected.get((k, item["status"]), ()))) for k in keys]
        assert item["data"] == want, item["status"]
        assert item["count"] == sum(want)


@pytest.mark.parametrize("event", ["$pageview", "purchase", None])
def test_daily_statuses_match_pandas(world, event):
    w, df, tz = world
    answer = w.run({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": event}],
                    "dateRange": {"date_from": "2025-06-03", "date_to": "2025-06-18"}})  # fmt: skip
    keys = [d.strftime("%Y-%m-%d") for d in pd.date_range("2025-06-03", "2025-06-18")]
    expected = lifecycle(df, tz=tz, interval="day", keys=keys, before="2025-06-02", event=event,
                         created=_created(df, tz, "day"))  # fmt: skip
    _check(answer, expected, keys)
    assert all(any(r["data"]) for r in answer["results"])  # every status occurs in this data
    assert answer["results"][0]["label"] == f"{event or 'All events'} - new"
    assert_valid(answer, "LifecycleQueryResponse")


def test_weekly_with_property_filter_and_toggles(world):
    w, df, tz = world
    answer = w.run({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}],
                    "interval": "week", "dateRange": {"date_from": "2025-06-08", "date_to": "2025-06-21"},
                    "properties": [{"key": "$browser", "value": ["Chrome", "Safari"], "type": "event"}],
                    "lifecycleFilter": {"toggledLifecycles": ["new", "dormant"]}})  # fmt: skip
    keys = ["2025-06-08", "2025-06-15"]
    chosen = df[df["browser"].isin(["Chrome", "Safari"])]
    expected = lifecycle(chosen, tz=tz, interval="week", keys=keys, before="2025-06-01", event="$pageview",
                         created=_created(df, tz, "week"))  # fmt: skip
    _check(answer, expected, keys, statuses=("new", "dormant"))


def test_hourly(world):
    w, df, tz = world
    answer = w.run({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": None}], "interval": "hour",
                    "dateRange": {"date_from": "2025-06-05T00:00:00", "date_to": "2025-06-06T23:00:00"}})  # fmt: skip
    keys = [d.strftime("%Y-%m-%d %H:00:00") for d in pd.date_range("2025-06-05", periods=48, freq="h")]
    expected = lifecycle(df, tz=tz, interval="hour", keys=keys, before="2025-06-04 23:00:00", event=None,
                         created=_created(df, tz, "hour"))  # fmt: skip
    _check(answer, expected, keys)
    assert any(answer["results"][0]["data"]) and any(answer["results"][3]["data"])
