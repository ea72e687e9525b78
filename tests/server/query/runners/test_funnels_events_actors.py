"""FunnelsQuery, EventsQuery and ActorsQuery against an independent Python restatement; bad input; HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pydantic
import pytest

from hoglab.schema import parse_query
from hoglab.translate.errors import TranslationFailed

from .oracle import funnel_person, generate, to_events

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 16, 9, tzinfo=UTC)
STEPS = ["$pageview", "signup", "purchase"]
RANGE = {"date_from": "2025-05-30", "date_to": "2025-06-16"}


@pytest.fixture(scope="module")
def world(make_world):
    df = generate(seed=11, persons=60)
    return make_world(to_events(df), timezone="Europe/Berlin", now=NOW), df


def _funnel(w, **ff):
    query = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": e} for e in STEPS], "dateRange": RANGE}
    if ff:
        query["funnelsFilter"] = ff
    return w.run(query)


def _oracle(df, order, window):
    per_person = {}
    for person, group in df.sort_values("timestamp").groupby("person"):
        events = [
            (r.timestamp.timestamp(), STEPS.index(r.event) if r.event in STEPS else -1) for r in group.itertuples()
        ]
        if order != "strict":
            events = [e for e in events if e[1] >= 0]
        per_person[person] = funnel_person(events, len(STEPS), window, order)
    return per_person


@pytest.mark.parametrize("order", ["ordered", "strict", "unordered"])
@pytest.mark.parametrize("window_days", [1, 14])
def test_step_counts_and_conversion_times(world, order, window_days):
    w, df = world
    answer = _funnel(w, funnelOrderType=order, funnelWindowInterval=window_days, funnelWindowIntervalUnit="day")
    expected = _oracle(df, order, window_days * 86400)
    counts = [sum(1 for r, _ in expected.values() if r > j) for j in range(len(STEPS))]
    assert [s["count"] for s in answer["results"]] == counts
    for j in range(1, len(STEPS)):
        times = [t[j] - t[j - 1] for r, t in expected.values() if r > j and t[j] - t[j - 1] > 0]
        step = answer["results"][j]
        if times:
            assert step["average_conversion_time"] == pytest.approx(np.mean(times), rel=1e-9)
            assert step["median_conversion_time"] == pytest.approx(np.median(times), rel=1e-9)
        else:
            assert step["average_conversion_time"] is None


def test_time_to_convert_histogram(world):
    w, df = world
    answer = _funnel(w, funnelVizType="time_to_convert", binCount=4)["results"]
    expected = _oracle(df, "ordered", 14 * 86400)
    seconds = sorted(t[2] - t[0] for r, t in expected.values() if r == 3)
    assert answer["average_conversion_time"] == pytest.approx(np.mean(seconds))
    assert sum(b[1] for b in answer["bins"]) == len(seconds)
    width = answer["bins"][1][0] - answer["bins"][0][0]
    for start, count in answer["bins"][:-1]:
        assert count == sum(1 for s in seconds if start <= s < start + width)


def test_breakdown_by_variant_first_touch(world):
    w, df = world
    query = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": e} for e in STEPS], "dateRange": RANGE,
             "breakdownFilter": {"breakdown": "$feature/flag", "breakdown_type": "event"}}  # fmt: skip
    answer = w.run(query)["results"]
    expected = _oracle(df, "ordered", 14 * 86400)
    variant_of = df.groupby("person")["variant"].first()
    got = {tuple(steps[0]["breakdown_value"]): [s["count"] for s in steps] for steps in answer}
    for variant in ("control", "test"):
        members = {p: v for p, v in expected.items() if variant_of[p] == variant}
        assert got[(variant,)] == [sum(1 for r, _ in members.values() if r > j) for j in range(3)]


def _small_world(make_world, events):
    t0 = datetime(2025, 6, 10, 12, tzinfo=UTC)
    rows = [{"event": e, "distinct_id": d, "timestamp": t0 + timedelta(seconds=s)} for d, e, s in events]
    return make_world(rows, now=NOW)


def test_window_edge_and_exclusions(make_world):
    day = 86400
    w = _small_world(make_world, [
        ("edge", "a", 0), ("edge", "b", day),             # exactly one window later: converts
        ("late", "a", 0), ("late", "b", day + 0.001),     # a millisecond past the window: does not
        ("excl", "a", 0), ("excl", "x", 10), ("excl", "b", 20),   # excluded between a and b: leaves the funnel
        ("retry", "a", 0), ("retry", "x", 10), ("retry", "a", 30), ("retry", "b", 40),  # a clean later attempt
    ])  # fmt: skip
    base = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],  # noqa: E501
            "dateRange": RANGE}  # fmt: skip
    plain = w.run({**base, "funnelsFilter": {"funnelWindowInterval": 1}})["results"]
    assert [s["count"] for s in plain] == [4, 3]
    excluded = w.run({**base, "funnelsFilter": {"funnelWindowInterval": 1, "exclusions": [
        {"kind": "EventsNode", "event": "x", "funnelFromStep": 0, "funnelToStep": 1}]}})["results"]  # fmt: skip
    assert [s["count"] for s in excluded] == [3, 2]
    actors = w.run({"kind": "ActorsQuery", "select": ["pdi_ids"],
                    "source": {"kind": "FunnelsActorsQuery", "funnelStep": -2, "source": {**base, "funnelsFilter": {"funnelWindowInterval": 1}}}})  # fmt: skip  # noqa: E501
    assert sorted(r[0][0] for r in actors["results"]) == ["late"]


def test_events_query_rows_order_and_paging(world):
    w, df = world
    after = "2025-06-10T00:00:00"
    page = w.run(
        {
            "kind": "EventsQuery",
            "select": ["*", "event", "timestamp"],
            "event": "signup",
            "after": after,
            "limit": 5,
            "offset": 5,
        }
    )
    expected = df[(df["event"] == "signup") & (df["timestamp"] > datetime(2025, 6, 9, 22, tzinfo=UTC))].sort_values(
        "timestamp", ascending=False
    )
    assert [r[0]["uuid"] is not None for r in page["results"]] == [True] * len(page["results"])
    got = [r[2] for r in page["results"]]
    want = [t.strftime("%Y-%m-%dT%H:%M:%S.%f") for t in expected["timestamp"].iloc[5:10]]
    assert [g[:26] for g in got] == want
    assert page["hasMore"] is (len(expected) > 10)
    assert page["results"][0][0]["team_id"] == w.project.id
    counts = w.run(
        {"kind": "EventsQuery", "select": ["event", "count() -- Count"], "after": "all", "orderBy": ["count() DESC"]}
    )
    assert dict((e, c) for e, c in counts["results"]) == df["event"].value_counts().to_dict()
    assert counts["columns"] == ["event", "count() -- Count"]


def test_actors_behind_a_trend_point_include_merged_persons(world):
    w, df = world
    trend = {
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "purchase", "math": "dau"}],
        "dateRange": RANGE,
    }
    day = "2025-06-05"
    answer = w.run(
        {
            "kind": "ActorsQuery",
            "select": ["person"],
            "source": {"kind": "InsightActorsQuery", "source": trend, "day": day, "series": 0},
        }
    )
    local = df["timestamp"].dt.tz_convert("Europe/Berlin").dt.strftime("%Y-%m-%d")
    people = df[(df["event"] == "purchase") & (local == day)]["person"].unique()
    got = sorted(sorted(r[0]["distinct_ids"]) for r in answer["results"])
    want = sorted(sorted({f"anon-{p}"} | ({f"user-{p}"} if p % 3 == 0 else set())) for p in people)
    assert got == want


@pytest.mark.parametrize(("date_from", "attr"), [("-7x", "dateRange.date_from"), ("2025-13-01", "dateRange.date_from")])
def test_malformed_dates_name_the_field(world, date_from, attr):
    w, _ = world
    with pytest.raises(TranslationFailed) as caught:  # the date translator's refusal: a 400 naming the field
        w.run(
            {
                "kind": "TrendsQuery",
                "series": [{"kind": "EventsNode", "event": "a"}],
                "dateRange": {"date_from": date_from},
            }
        )
    assert caught.value.attr == attr


@pytest.mark.parametrize("query", [
    {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "math": "nope"}]},
    {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "math": "sum"}]},
    {"kind": "FunnelsQuery", "series": []},
    {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}] * 21},
])  # fmt: skip
def test_schema_refuses_bad_math_and_step_counts(query):
    with pytest.raises(pydantic.ValidationError):
        parse_query(query)


def test_over_http(make_project):
    project = make_project()
    body = {"query": {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}]}}
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["results"][0]["data"]) == 8


_EVENT = {"kind": "EventsNode", "event": "a"}


@pytest.mark.parametrize(("query", "attr"), [
    ({"kind": "NopeQuery"}, "query__kind"),
    ({"kind": "TrendsQuery", "series": [{**_EVENT, "math": "nope"}]}, "query__series__0__math"),
    ({"kind": "TrendsQuery", "series": [{**_EVENT, "math": "p90"}]}, "query__series__0"),
    ({"kind": "FunnelsQuery", "series": []}, "query__series"),
    ({"kind": "FunnelsQuery", "series": [_EVENT] * 21}, "query__series"),
    ({"kind": "TrendsQuery", "series": [_EVENT], "dateRange": {"date_from": "-7x"}}, "dateRange.date_from"),
    ({"kind": "FunnelsQuery", "series": [_EVENT] * 2, "dateRange": {"date_to": "2025-13-01"}}, "dateRange.date_to"),
    # The user's own HogQL is parsed alone: its mistake is named, and it can't reach past its parentheses.
    ({"kind": "TrendsQuery", "series": [{**_EVENT, "math": "hogql", "math_hogql": "sum(("}]},
     "series.0.math_hogql"),
    ({"kind": "TrendsQuery", "series": [{**_EVENT, "properties": [{"type": "hogql", "key": "1) OR (1"}]}]},
     "series.0.properties.0.key"),
    ({"kind": "EventsQuery", "select": ["event"], "properties": [{"type": "hogql", "key": "nope("}]},
     "properties.0.key"),
    ({"kind": "TrendsQuery", "series": [_EVENT], "breakdownFilter": {"breakdown": "x((", "breakdown_type": "hogql"}},
     "breakdownFilter.breakdown"),
    ({"kind": "FunnelsQuery", "series": [_EVENT] * 2, "funnelsFilter": {"funnelAggregateByHogQL": "x(("}},
     "funnelsFilter.funnelAggregateByHogQL"),
])  # fmt: skip
def test_bad_input_is_a_400_naming_the_field(make_project, query, attr):
    project = make_project()
    answer = project.http.post(f"/api/projects/{project.id}/query/", json={"query": query})
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == "validation_error" and answer.json()["attr"] == attr
