"""The retention, lifecycle, stickiness and paths models: PostHog's names and defaults, and clear refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hoglab.schema import (
    EventsNode,
    InsightActorsQuery,
    LifecycleQuery,
    PathsFilter,
    PathsQuery,
    QueryRequest,
    RetentionFilter,
    RetentionQuery,
    StickinessQuery,
    validation_error_body,
)
from posthog_openapi import assert_valid, component

FULL_BODIES = {
    "RetentionQuery": {
        "kind": "RetentionQuery",
        "dateRange": {"date_from": "-14d"},
        "retentionFilter": {
            "retentionType": "retention_recurring",
            "period": "Week",
            "totalIntervals": 5,
            "targetEntity": {"id": "signup", "type": "events", "name": "signup"},
            "returningEntity": {"id": None, "type": "events"},
            "retentionReference": "previous",
            "cumulative": True,
            "minimumOccurrences": 2,
        },
        "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"},
    },
    "LifecycleQuery": {
        "kind": "LifecycleQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "interval": "week",
        "lifecycleFilter": {"toggledLifecycles": ["new", "dormant"]},
    },
    "StickinessQuery": {
        "kind": "StickinessQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signup"}],
        "intervalCount": 2,
        "compareFilter": {"compare": True},
        "stickinessFilter": {"computedAs": "cumulative", "stickinessCriteria": {"operator": "gte", "value": 2}},
    },
    "PathsQuery": {
        "kind": "PathsQuery",
        "pathsFilter": {
            "includeEventTypes": ["$pageview", "custom_event"],
            "startPoint": "/home",
            "stepLimit": 4,
            "excludeEvents": ["/admin"],
            "localPathCleaningFilters": [{"regex": r"/user/\d+", "alias": "/user/:id"}],
            "pathGroupings": ["/blog/*"],
        },
    },
}


@pytest.mark.parametrize("kind", sorted(FULL_BODIES))
def test_a_full_body_parses_round_trips_and_is_valid_for_posthog(kind: str) -> None:
    request = QueryRequest.model_validate({"query": FULL_BODIES[kind]})
    assert request.query.kind == kind
    sent = request.query.to_json_dict()
    assert_valid(sent, kind, drop=())
    assert QueryRequest.model_validate({"query": sent}).query == request.query


def test_defaults_are_posthogs() -> None:
    spec = component("RetentionFilter")["properties"]
    assert RetentionFilter().totalIntervals == spec["totalIntervals"]["default"] == 8
    assert RetentionFilter().period == spec["period"]["default"] == "Day"
    paths = component("PathsFilter")["properties"]
    assert PathsFilter().stepLimit == paths["stepLimit"]["default"] == 5
    assert PathsFilter().edgeLimit == paths["edgeLimit"]["default"] == 50
    assert LifecycleQuery(series=[EventsNode(event="a")]).interval == "day"
    assert StickinessQuery(series=[EventsNode(event="a")]).interval == "day"


@pytest.mark.parametrize(
    ("query", "attr", "words"),
    [
        ({"kind": "LifecycleQuery", "series": [{"kind": "DataWarehouseNode"}]}, "series__0", "warehouse"),
        ({"kind": "StickinessQuery", "series": [{"kind": "Pageview"}]}, "series__0", "ActionsNode"),
        ({"kind": "StickinessQuery", "series": [{"kind": "ActionsNode", "id": "three"}]}, "series__0__id", "integer"),
        (
            {"kind": "RetentionQuery", "retentionFilter": {"targetEntity": {"id": "signup", "type": "actions"}}},
            "retentionFilter__targetEntity",
            "action's id",
        ),
        ({"kind": "RetentionQuery", "retentionFilter": {"period": "Fortnight"}}, "retentionFilter__period", "Hour"),
        ({"kind": "RetentionQuery", "retentionFilter": {"totalIntervals": -1}}, "retentionFilter__totalIntervals", ""),
        ({"kind": "PathsQuery", "pathsFilter": {"stepLimit": 10_000}}, "pathsFilter__stepLimit", ""),
        (
            {"kind": "PathsQuery", "pathsFilter": {"localPathCleaningFilters": [{"regex": "(", "alias": "x"}]}},
            "pathsFilter__localPathCleaningFilters__0__regex",
            "Invalid regular expression",
        ),
        (
            {"kind": "PathsQuery", "pathsFilter": {"localPathCleaningFilters": [{"regex": "a(?=b)"}]}},
            "pathsFilter__localPathCleaningFilters__0__regex",
            "lookaround",
        ),
        ({"kind": "PathsQuery", "pathsFilter": {}, "funnelPathsFilter": {}}, "funnelPathsFilter", "funnel"),
        ({"kind": "LifecycleQuery", "series": [{"kind": "EventsNode"}], "interval": "minute"}, "interval", ""),
    ],
)
def test_bad_bodies_name_the_field(query: dict, attr: str, words: str) -> None:
    data = {"query": query}
    with pytest.raises(ValidationError) as caught:
        QueryRequest.model_validate(data)
    body = validation_error_body(caught.value, data)
    assert body.attr == f"query__{attr}"
    assert words in body.detail


def test_insight_actors_query_takes_the_new_sources() -> None:
    for kind, query in FULL_BODIES.items():
        actors = InsightActorsQuery.model_validate({"source": query, "interval": 1, "status": "new"})
        assert actors.source.kind == kind
    assert isinstance(InsightActorsQuery(source=RetentionQuery(retentionFilter={})).source, RetentionQuery)
    assert isinstance(InsightActorsQuery(source=PathsQuery(pathsFilter={})).source, PathsQuery)
