"""RetentionQuery against an independent pandas restatement on seeded events, in UTC and in a zone with DST."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

from posthog_openapi import assert_valid

from .insight_oracle import interval_key, retention
from .oracle import generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 16, 9, tzinfo=UTC)
ZONES = ["UTC", "America/Los_Angeles"]


@pytest.fixture(scope="module", params=ZONES)
def world(request, make_world):
    df = generate(seed=ZONES.index(request.param) + 31, persons=50, days=21)
    w = make_world(to_events(df), timezone=request.param, now=NOW)
    return w, df, request.param


def _keys(first: str, n: int, interval: str) -> list[str]:
    freq = {"day": "D", "week": "W-SUN", "month": "MS", "hour": "h"}[interval]
    stamps = pd.date_range(first, periods=n, freq=freq)
    return [s.strftime("%Y-%m-%d %H:00:00" if interval == "hour" else "%Y-%m-%d") for s in stamps]


def _restated(df: pd.DataFrame, tz: str, keys: list[str], lookahead: int, *, interval: str = "day",
              target: str | None = "$pageview", returning: str | None = "$pageview", first_time: bool = False,
              **options: Any) -> dict:  # fmt: skip
    """The pandas restatement of the cohorts ``keys``; by default what a query naming none of these gets:
    $pageview as target and return, recurring (not first time)."""
    return retention(df, tz=tz, interval=interval, keys=keys, lookahead=lookahead, target=target,
                     returning=returning, first_time=first_time, **options)  # fmt: skip


def _check(answer: dict, expected: dict, keys: list[str], lookahead: int, bv: str = "") -> None:
    cohorts = [c for c in answer["results"] if c.get("breakdown_value", "") == bv]
    assert [c["date"][:10] for c in cohorts] == [k[:10] for k in keys]
    for i, cohort in enumerate(cohorts):
        assert cohort["label"] == f"{cohort['values'][0]['label'].split()[0]} {i}"
        got = [v["count"] for v in cohort["values"]]
        assert got == [len(expected.get((bv, i, k), ())) for k in range(lookahead)], (i, cohort["date"])


def _run(w, **retention_filter):
    date_range = retention_filter.pop("dateRange", {"date_from": "2025-06-01", "date_to": "2025-06-14"})
    query = {"kind": "RetentionQuery", "dateRange": date_range, "retentionFilter": retention_filter}
    extra = retention_filter.pop("extra", {})
    return w.run({**query, **extra})


@pytest.mark.parametrize("retention_type", ["retention_first_time", "retention_recurring"])
@pytest.mark.parametrize(("target", "returning"), [("signup", "$pageview"), ("$pageview", "$pageview")])
def test_daily_cohorts_match_pandas(world, retention_type, target, returning):
    w, df, tz = world
    answer = _run(
        w,
        retentionType=retention_type,
        totalIntervals=6,
        targetEntity={"id": target, "type": "events"},
        returningEntity={"id": returning, "type": "events"},
    )
    keys = _keys("2025-06-01", 14, "day")
    expected = _restated(df, tz, keys, 6, target=target, returning=returning,
                         first_time=retention_type == "retention_first_time")  # fmt: skip
    _check(answer, expected, keys, 6)
    assert sum(c["values"][0]["count"] for c in answer["results"]) > 0
    assert_valid(answer, "RetentionQueryResponse")


def test_weekly_cumulative_minimum_occurrences(world):
    w, df, tz = world
    answer = _run(
        w,
        period="Week",
        totalIntervals=3,
        cumulative=True,
        minimumOccurrences=2,
        retentionType="retention_recurring",
        dateRange={"date_from": "2025-06-01", "date_to": "2025-06-21"},
        targetEntity={"id": "$pageview", "type": "events"},
        returningEntity={"id": None, "type": "events"},
    )
    keys = _keys("2025-06-01", 3, "week")
    expected = _restated(df, tz, keys, 3, interval="week", returning=None, minimum=2, cumulative=True)
    _check(answer, expected, keys, 3)


def test_default_range_is_total_intervals_ending_at_date_to(world):
    w, df, tz = world
    answer = _run(w, dateRange={"date_to": "2025-06-10"})
    keys = _keys("2025-06-03", 8, "day")
    assert len(answer["results"]) == 8
    _check(answer, _restated(df, tz, keys, 8), keys, 8)


def test_breakdown_by_event_property(world):
    w, df, tz = world
    answer = _run(
        w,
        retentionType="retention_recurring",
        totalIntervals=4,
        extra={"breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}},
    )
    keys = _keys("2025-06-01", 14, "day")
    expected = _restated(df, tz, keys, 4, breakdown="browser")
    values = {c["breakdown_value"] for c in answer["results"]}
    assert values == {bv for bv, _, _ in expected}
    for bv in values:
        _check(answer, expected, keys, 4, bv=bv)
    sizes = [sum(c["values"][0]["count"] for c in answer["results"] if c["breakdown_value"] == v) for v in values]
    assert len(set(sizes)) > 1
    assert_valid(answer, "RetentionQueryResponse")


def test_property_filters_and_entity_properties(world):
    w, df, tz = world
    answer = _run(
        w,
        retentionType="retention_first_time",
        totalIntervals=5,
        targetEntity={
            "id": "$pageview",
            "type": "events",
            "properties": [{"key": "$browser", "value": "Chrome", "type": "event"}],
        },
        extra={"properties": [{"key": "plan", "value": "free", "operator": "is_not", "type": "event"}]},
    )
    plan_ok = df[df["plan"] != "free"]
    plan_ok = plan_ok.assign(key=interval_key(plan_ok["timestamp"], tz, "day"))
    keys = _keys("2025-06-01", 14, "day")
    # The target's own filter applies to target events only; the query's filter to every event.
    targets = plan_ok[(plan_ok["event"] == "$pageview") & (plan_ok["browser"] == "Chrome")]
    first_key = targets.sort_values("timestamp").groupby("person")["key"].first()
    views = plan_ok[plan_ok["event"] == "$pageview"]
    viewers = {k: set(group["person"]) for k, group in views.groupby("key")}
    for i, key in enumerate(keys):
        cohort = set(first_key[first_key == key].index)
        assert answer["results"][i]["values"][0]["count"] == len(cohort)
        for k in range(1, 5):
            came_back = cohort & viewers.get(keys[i + k], set()) if i + k < len(keys) else set()
            assert answer["results"][i]["values"][k]["count"] == len(came_back), (i, k)
    assert sum(c["values"][0]["count"] for c in answer["results"]) > 0


def test_hourly_labels(world):
    w, df, tz = world
    answer = _run(
        w,
        period="Hour",
        totalIntervals=3,
        dateRange={"date_from": "2025-06-05T10:00:00", "date_to": "2025-06-05T13:30:00"},
    )
    assert [c["label"] for c in answer["results"]] == ["Hour 0", "Hour 1", "Hour 2", "Hour 3"]
    assert [v["label"] for v in answer["results"][0]["values"]] == ["Hour 0", "Hour 1", "Hour 2"]
    keys = _keys("2025-06-05 10:00", 4, "hour")
    _check(answer, _restated(df, tz, keys, 3, interval="hour"), keys, 3)


def test_monthly_cohorts(make_world):
    df = generate(seed=33, persons=30, days=80, events_per_person=20)
    w = make_world(to_events(df), timezone="Asia/Kolkata", now=NOW)
    answer = _run(w, period="Month", totalIntervals=3, retentionType="retention_first_time",
                  dateRange={"date_from": "2025-06-01", "date_to": "2025-08-31"})  # fmt: skip
    keys = ["2025-06-01", "2025-07-01", "2025-08-01"]
    _check(answer, _restated(df, "Asia/Kolkata", keys, 3, interval="month", first_time=True), keys, 3)
    assert answer["results"][0]["values"][2]["count"] > 0
