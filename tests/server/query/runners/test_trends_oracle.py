"""TrendsQuery against pandas on seeded random events, in UTC and in zones with DST and half-hour offsets."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from .oracle import day_keys, generate, local_days, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 16, 9, tzinfo=UTC)
RANGE = {"date_from": "2025-05-30", "date_to": "2025-06-16"}
ZONES = ["UTC", "America/Los_Angeles", "Asia/Kolkata"]


@pytest.fixture(scope="module", params=ZONES)
def world(request, make_world):
    df = generate(seed=ZONES.index(request.param) + 7)
    w = make_world(to_events(df), timezone=request.param, now=NOW)
    df = df[df["event"] != "$identify"].assign(day=local_days(df[df["event"] != "$identify"], request.param))
    return w, df, request.param


def _trend(w, series, **extra):
    return w.run({"kind": "TrendsQuery", "series": series, "dateRange": RANGE, **extra})


def _expected(df, per_day):
    keys = day_keys("2025-05-30", "2025-06-16")
    return [float(per_day.get(k, 0)) for k in keys], keys


def test_total_and_daily_unique_persons_per_local_day(world):
    w, df, _ = world
    views = df[df["event"] == "$pageview"]
    answer = _trend(
        w, [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "$pageview", "math": "dau"}]
    )
    total, keys = _expected(df, views.groupby("day").size())
    dau, _ = _expected(df, views.groupby("day")["person"].nunique())
    assert answer["results"][0]["days"] == keys
    assert answer["results"][0]["data"] == total
    assert answer["results"][1]["data"] == dau
    assert answer["results"][0]["count"] == sum(total)
    assert 0.0 in total  # the range has empty days, and they are zeros, not missing


def test_weekly_active_counts_the_seven_days_ending_each_day(world):
    w, df, _ = world
    views = df[df["event"] == "$pageview"]
    keys = day_keys("2025-05-30", "2025-06-16")
    expected = []
    for k in keys:
        days = set(day_keys((pd.Timestamp(k) - pd.Timedelta(days=6)).strftime("%Y-%m-%d"), k))
        expected.append(float(views[views["day"].isin(days)]["person"].nunique()))
    answer = _trend(w, [{"kind": "EventsNode", "event": "$pageview", "math": "weekly_active"}])
    assert answer["results"][0]["data"] == expected


@pytest.mark.parametrize("math", ["sum", "avg", "max", "median", "p90"])
def test_property_math_per_day(world, math):
    w, df, _ = world
    views = df[(df["event"] == "$pageview")]
    grouped = views.groupby("day")["price"]
    if math in ("median", "p90"):
        q = 0.5 if math == "median" else 0.9
        per_day = grouped.apply(lambda s: np.quantile(s.dropna(), q) if s.notna().any() else 0.0)
    else:
        per_day = grouped.agg({"avg": "mean"}.get(math, math)).fillna(0)
    expected, _ = _expected(df, per_day)
    answer = _trend(w, [{"kind": "EventsNode", "event": "$pageview", "math": math, "math_property": "price"}])
    # quantileExactInclusive is numpy's default linear interpolation: equal up to float rounding.
    assert answer["results"][0]["data"] == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_hogql_math_and_filter_may_end_in_a_comment(world):
    """A user's HogQL expression is embedded whole: a trailing ``--`` comment does not swallow what follows it."""
    w, df, _ = world
    chrome = df[(df["event"] == "$pageview") & (df["browser"] == "Chrome")]
    series = {"kind": "EventsNode", "event": "$pageview", "math": "hogql", "math_hogql": "count() -- every view",
              "properties": [{"type": "hogql", "key": "properties.$browser = 'Chrome' -- exactly"}]}  # fmt: skip
    expected, _ = _expected(df, chrome.groupby("day").size())
    assert _trend(w, [series])["results"][0]["data"] == expected


def test_breakdown_top_values_other_and_null_buckets(world):
    w, df, _ = world
    views = df[df["event"] == "$pageview"].copy()
    views["bv"] = views["browser"].map(lambda b: "$$_posthog_breakdown_null_$$" if pd.isna(b) or b == "" else b)
    totals = views.groupby("bv").size().sort_values(ascending=False)
    ranked = sorted(totals.index, key=lambda v: (-totals[v], v))
    top = ranked[:2]
    answer = _trend(
        w,
        [{"kind": "EventsNode", "event": "$pageview"}],
        breakdownFilter={"breakdown": "$browser", "breakdown_limit": 2},
    )
    got = {r["breakdown_value"]: r["data"] for r in answer["results"]}
    for value in top:
        assert got[value] == _expected(df, views[views["bv"] == value].groupby("day").size())[0]
    rest = views[~views["bv"].isin(top)]
    assert answer["hasMore"] is (len(ranked) > 2)
    if len(ranked) > 2:
        assert got["$$_posthog_breakdown_other_$$"] == _expected(df, rest.groupby("day").size())[0]
        assert answer["results"][-1]["breakdown_value"] == "$$_posthog_breakdown_other_$$"
    ordered_regular = [r["breakdown_value"] for r in answer["results"] if not r["breakdown_value"].startswith("$$")]
    assert ordered_regular == [v for v in top if not v.startswith("$$")]


def test_formula_and_previous_period(world):
    w, df, _ = world
    answer = _trend(
        w,
        [{"kind": "EventsNode", "event": "purchase"}, {"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
        trendsFilter={"formulaNodes": [{"formula": "A * 100 / B"}]},
        compareFilter={"compare": True},
    )
    current, previous = answer["results"]
    assert (current["compare_label"], previous["compare_label"]) == ("current", "previous")
    purchases = df[df["event"] == "purchase"].groupby("day").size()
    dau = df[df["event"] == "$pageview"].groupby("day")["person"].nunique()
    a, _ = _expected(df, purchases)
    b, _ = _expected(df, dau)
    assert current["data"] == pytest.approx([x * 100 / y if y else 0.0 for x, y in zip(a, b, strict=True)])
    assert len(previous["data"]) == len(current["data"])
    prev_keys = day_keys("2025-05-12", "2025-05-29")
    assert previous["days"] == prev_keys
    assert sum(previous["data"]) == 0  # no events before June: the previous period is all zeros


def test_first_time_for_user_and_count_per_actor(world):
    w, df, _ = world
    purchases = df[df["event"] == "purchase"]
    first_days = purchases.sort_values("timestamp").groupby("person")["day"].first().value_counts()
    expected, _ = _expected(df, first_days)
    answer = _trend(w, [{"kind": "EventsNode", "event": "purchase", "math": "first_time_for_user"},
                        {"kind": "EventsNode", "event": "purchase", "math": "avg_count_per_actor"}])  # fmt: skip
    assert answer["results"][0]["data"] == expected
    per_actor = purchases.groupby(["day", "person"]).size().groupby("day").mean()
    assert answer["results"][1]["data"] == pytest.approx(_expected(df, per_actor)[0])


def test_cumulative_and_total_value_displays(world):
    w, df, _ = world
    views = df[df["event"] == "$pageview"]
    daily, _ = _expected(df, views.groupby("day").size())
    cumulative = _trend(
        w, [{"kind": "EventsNode", "event": "$pageview"}], trendsFilter={"display": "ActionsLineGraphCumulative"}
    )
    assert cumulative["results"][0]["data"] == list(np.cumsum(daily))
    assert cumulative["results"][0]["count"] == sum(daily)
    bold = _trend(
        w, [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}], trendsFilter={"display": "BoldNumber"}
    )
    assert bold["results"][0]["data"] == []
    assert bold["results"][0]["aggregated_value"] == views["person"].nunique()


def test_series_and_global_property_filters(world):
    w, df, _ = world
    views = df[
        (df["event"] == "$pageview") & (df["price"].fillna(-1) > 30) & (df["browser"].isin(["Chrome", "Safari"]))
    ]
    answer = _trend(
        w,
        [{"kind": "EventsNode", "event": "$pageview", "properties": [{"key": "price", "value": 30, "operator": "gt", "type": "event"}]}],  # noqa: E501
        properties={"type": "AND", "values": [{"type": "OR", "values": [
            {"key": "$browser", "value": "Chrome", "type": "event"}, {"key": "$browser", "value": "safari", "operator": "icontains", "type": "event"}]}]},  # noqa: E501
    )  # fmt: skip
    assert answer["results"][0]["data"] == _expected(df, views.groupby("day").size())[0]


def test_an_explicit_range_starts_at_its_exact_moment(world):
    """``explicitDate``: events of the first day before ``date_from``'s time are out (PostHog's
    ``use_start_of_interval`` is false), and ``date_to`` is exact too; without it the first day counts whole."""
    w, df, zone = world
    start, end = pd.Timestamp("2025-06-03 15:20:00", tz=zone), pd.Timestamp("2025-06-09 08:00:00", tz=zone)
    views = df[df["event"] == "$pageview"]
    inside = views[(views["timestamp"] >= start) & (views["timestamp"] <= end)]
    whole_days = views[(views["timestamp"] >= start.normalize()) & (views["timestamp"] <= end.normalize()
                                                                     + pd.Timedelta(days=1, microseconds=-1))]
    series = [{"kind": "EventsNode", "event": "$pageview"}]
    dates = {"date_from": start.isoformat(), "date_to": end.isoformat()}
    exact = w.run({"kind": "TrendsQuery", "series": series, "dateRange": {**dates, "explicitDate": True}})
    loose = w.run({"kind": "TrendsQuery", "series": series, "dateRange": dates})
    assert exact["results"][0]["count"] == len(inside) < len(whole_days) == loose["results"][0]["count"]
