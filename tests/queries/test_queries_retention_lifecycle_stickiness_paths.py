"""hoglab.retention/lifecycle/stickiness/paths: the bodies they build (each valid for PostHog's OpenAPI component and
for the service's own schema), the persons behind a cell, and the argument errors raised before any request."""

from __future__ import annotations

from typing import Any

import pytest

import hoglab
from hoglab.schema import InsightActorsQuery, QueryRequest
from posthog_openapi import assert_valid


def _valid(query: Any, component: str) -> dict[str, Any]:
    body = query.to_json_dict()
    assert_valid(body, component, drop=())
    assert QueryRequest.model_validate({"query": body}).query == query  # the service reads back the same query
    return body


def test_retention_builds_the_documented_query() -> None:
    q = hoglab.retention("signup", returning="$pageview", period="week", intervals=6, date_from="-8w",
                         where={"$browser": "Chrome"})  # fmt: skip
    body = _valid(q, "RetentionQuery")
    assert body["retentionFilter"] == {
        "retentionType": "retention_first_time",
        "period": "Week",
        "totalIntervals": 6,
        "targetEntity": {"id": "signup", "type": "events", "kind": "EventsNode", "name": "signup"},
        "returningEntity": {"id": "$pageview", "type": "events", "kind": "EventsNode", "name": "$pageview"},
        "retentionReference": "total",
    }
    assert body["dateRange"] == {"date_from": "-8w"}
    assert body["properties"] == [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]


def test_retention_options_and_entities_with_filters() -> None:
    q = hoglab.retention(
        hoglab.series("purchase", where={"plan": "pro"}),
        period="Month",
        retention_type="recurring",
        reference="previous",
        cumulative=True,
        minimum_occurrences=2,
        breakdown="person.country",
        filter_test_accounts=True,
    )
    body = _valid(q, "RetentionQuery")
    settings = body["retentionFilter"]
    assert settings["retentionType"] == "retention_recurring" and settings["period"] == "Month"
    assert settings["cumulative"] is True and settings["minimumOccurrences"] == 2
    assert settings["returningEntity"] == settings["targetEntity"]  # returning defaults to the target
    assert settings["targetEntity"]["properties"][0]["key"] == "plan"
    assert body["breakdownFilter"] == {"breakdown": "country", "breakdown_type": "person"}
    assert hoglab.retention(None).retentionFilter.targetEntity.id is None  # any event


def test_lifecycle_builds_one_series_with_its_statuses() -> None:
    q = hoglab.lifecycle("$pageview", interval="week", statuses=["new", "resurrecting"], date_from="-90d",
                         person_where={"plan": "pro"})  # fmt: skip
    body = _valid(q, "LifecycleQuery")
    assert body["series"] == [{"kind": "EventsNode", "event": "$pageview", "name": "$pageview"}]
    assert body["interval"] == "week" and body["lifecycleFilter"]["toggledLifecycles"] == ["new", "resurrecting"]
    assert body["properties"][0]["type"] == "person"


def test_stickiness_series_criteria_compare() -> None:
    q = hoglab.stickiness(["$pageview", hoglab.series("signup", where={"source": "ads"})], interval="week",
                          interval_count=2, active_when=3, compare_to="-4w")  # fmt: skip
    body = _valid(q, "StickinessQuery")
    assert [s["event"] for s in body["series"]] == ["$pageview", "signup"]
    assert body["stickinessFilter"]["stickinessCriteria"] == {"operator": "gte", "value": 3}
    assert "computedAs" not in body["stickinessFilter"]
    assert body["compareFilter"] == {"compare": True, "compare_to": "-4w"} and body["intervalCount"] == 2
    cumulative = _valid(hoglab.stickiness(cumulative=True, active_when=("==", 1)), "StickinessQuery")
    assert cumulative["stickinessFilter"]["computedAs"] == "cumulative"
    assert cumulative["stickinessFilter"]["stickinessCriteria"] == {"operator": "exact", "value": 1}


def test_paths_settings() -> None:
    clean = {r"/user/\d+": "/user/:id", r"\?.*": ""}
    q = hoglab.paths(["$pageview", "$screen"], start="/home", steps=4, edge_limit=20, min_weight=2, max_weight=90,
                     exclude=["/logout"], clean=clean, groupings=["/blog/*"])  # fmt: skip
    body = _valid(q, "PathsQuery")
    settings = body["pathsFilter"]
    assert settings["includeEventTypes"] == ["$pageview", "$screen"] and settings["startPoint"] == "/home"
    assert (settings["stepLimit"], settings["edgeLimit"], settings["minEdgeWeight"], settings["maxEdgeWeight"]) == (
        4, 20, 2, 90)  # fmt: skip
    assert settings["localPathCleaningFilters"] == [
        {"regex": r"/user/\d+", "alias": "/user/:id", "order": 0},
        {"regex": r"\?.*", "alias": "", "order": 1},
    ]
    assert settings["excludeEvents"] == ["/logout"] and settings["pathGroupings"] == ["/blog/*"]
    every = _valid(hoglab.paths(None, end="purchase"), "PathsQuery")["pathsFilter"]
    assert "includeEventTypes" not in every and every["endPoint"] == "purchase"
    hogql = _valid(hoglab.paths(expression="properties.$screen_name"), "PathsQuery")["pathsFilter"]
    assert hogql["includeEventTypes"] == ["$pageview", "hogql"]


def test_persons_behind_a_cell_of_each_kind() -> None:
    cell = hoglab.actors(source=hoglab.retention("signup"), cohort=3, period=2)
    assert isinstance(cell.source, InsightActorsQuery) and (cell.source.interval, cell.source.day) == (3, 2)
    as_posthog = hoglab.actors(source=hoglab.retention("signup"), interval=3, day="Day 2").source
    assert (as_posthog.interval, as_posthog.day) == (3, "Day 2")  # type: ignore[union-attr]
    bar = hoglab.actors(source=hoglab.lifecycle(), status="resurrecting", day="2025-06-04")
    assert bar.source.status == "resurrecting"  # type: ignore[union-attr]
    bucket = hoglab.actors(source=hoglab.stickiness(), day=4)
    assert bucket.source.day == 4  # type: ignore[union-attr]
    source = hoglab.paths(start="/home")
    edge = hoglab.actors(source=source, edge=("1_/home", "2_/pricing"))
    keys = edge.source.source.pathsFilter  # type: ignore[union-attr]
    assert (keys.pathStartKey, keys.pathEndKey, keys.startPoint) == ("1_/home", "2_/pricing", "/home")
    assert source.pathsFilter.pathStartKey is None  # the builder's query is left as it was
    ended = hoglab.actors(source=source, dropoff="3_/pricing").source.source.pathsFilter  # type: ignore[union-attr]
    assert (ended.pathDropoffKey, ended.pathStartKey) == ("3_/pricing", None)
    for query in (cell, bar, bucket, edge):
        assert_valid(query.to_json_dict(), "ActorsQuery", drop=())


@pytest.mark.parametrize(
    ("build", "argument", "exc"),
    [
        (lambda: hoglab.retention(period="fortnight"), "period", ValueError),
        (lambda: hoglab.retention(intervals=0), "intervals", ValueError),
        (lambda: hoglab.retention(intervals=True), "intervals", ValueError),
        (lambda: hoglab.retention(retention_type="sometimes"), "retention_type", ValueError),
        (lambda: hoglab.retention(reference="first"), "reference", ValueError),
        (lambda: hoglab.retention(42), "target", TypeError),
        (lambda: hoglab.retention(returning=["a"]), "returning", TypeError),
        (lambda: hoglab.retention(minimum_occurrences=0), "minimum_occurrences", ValueError),
        (lambda: hoglab.retention(date_from="yesterday-ish"), "date_from", ValueError),
        (lambda: hoglab.lifecycle(["a", "b"]), "event", TypeError),
        (lambda: hoglab.lifecycle(interval="minute"), "interval", ValueError),
        (lambda: hoglab.lifecycle(statuses=["zombie"]), "statuses", ValueError),
        (lambda: hoglab.stickiness([]), "events", ValueError),
        (lambda: hoglab.stickiness(interval_count=0), "interval_count", ValueError),
        (lambda: hoglab.stickiness(active_when=("~", 3)), "active_when", ValueError),
        (lambda: hoglab.stickiness(active_when=(">=", -1)), "active_when", ValueError),
        (lambda: hoglab.stickiness(compare_to="later"), "compare_to", ValueError),
        (lambda: hoglab.paths("pageviews"), "include", ValueError),
        (lambda: hoglab.paths("hogql"), "expression", ValueError),
        (lambda: hoglab.paths(steps=1), "steps", ValueError),
        (lambda: hoglab.paths(edge_limit=0), "edge_limit", ValueError),
        (lambda: hoglab.paths(min_weight=5, max_weight=2), "min_weight", ValueError),
        (lambda: hoglab.paths(exclude="/logout"), "exclude", TypeError),
        (lambda: hoglab.paths(clean={"(": "x"}), "clean", ValueError),
        (lambda: hoglab.paths(clean=[("a",)]), "clean", TypeError),
        (lambda: hoglab.paths(steps=25), "paths", ValueError),
        (lambda: hoglab.actors(source=hoglab.trends("$pageview"), edge=("1_a", "2_b")), "edge", ValueError),
        (lambda: hoglab.actors(status="new"), "source", ValueError),
        (lambda: hoglab.actors(cohort=1), "source", ValueError),
        (lambda: hoglab.actors(source=hoglab.lifecycle(), cohort=1), "cohort", ValueError),
        (lambda: hoglab.actors(source=hoglab.stickiness(), period=1), "period", ValueError),
        (lambda: hoglab.actors(source=hoglab.retention(), dropoff="2_/"), "dropoff", ValueError),
        (lambda: hoglab.actors(source=hoglab.lifecycle(), status="gone"), "status", ValueError),
    ],
)
def test_wrong_arguments_name_the_argument(build: Any, argument: str, exc: type) -> None:
    with pytest.raises(hoglab.InvalidArgument) as info:
        build()
    assert isinstance(info.value, exc)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}:")
