"""Refuse what hoglab does not serve (issue 33 item 5): every field of PostHog's query schema, for every query kind
hoglab runs, is computed with, accepted as display only (listed in ``served.py``), or refused with a 400 naming
it. PostHog's published OpenAPI document (``tests/posthog_openapi.py``) is the list of fields; the requests go
through ``prepare`` (the endpoint's validation), and a few over HTTP to the running service."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from querytesting import new_project

from hoglab.local import LocalService
from hoglab.server.errors import ValidationFailed
from hoglab.server.query.request import prepare
from hoglab.server.query.served import DISPLAY, MODIFIERS, UNSERVED, Unserved
from posthog_openapi import component

SERIES = [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}]
METRIC = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode", "event": "a"}}

# PostHog's component -> (a valid query with it, the path to it in that query, hoglab's model of it)
PLACES: dict[str, tuple[dict[str, Any], tuple[str | int, ...], str]] = {
    "TrendsQuery": ({"kind": "TrendsQuery", "series": SERIES[:1]}, (), "TrendsQuery"),
    "FunnelsQuery": ({"kind": "FunnelsQuery", "series": SERIES}, (), "FunnelsQuery"),
    "RetentionQuery": ({"kind": "RetentionQuery", "retentionFilter": {}}, (), "RetentionQuery"),
    "PathsQuery": ({"kind": "PathsQuery", "pathsFilter": {}}, (), "PathsQuery"),
    "StickinessQuery": ({"kind": "StickinessQuery", "series": SERIES[:1]}, (), "StickinessQuery"),
    "LifecycleQuery": ({"kind": "LifecycleQuery", "series": SERIES[:1]}, (), "LifecycleQuery"),
    "EventsQuery": ({"kind": "EventsQuery", "select": ["event"]}, (), "EventsQuery"),
    "ActorsQuery": ({"kind": "ActorsQuery"}, (), "ActorsQuery"),
    "HogQLQuery": ({"kind": "HogQLQuery", "query": "select 1"}, (), "HogQLQuery"),
    "ExperimentQuery": ({"kind": "ExperimentQuery", "experiment_id": 1, "metric": METRIC}, (), "ExperimentQuery"),
    "ExperimentExposureQuery": (
        {"kind": "ExperimentExposureQuery", "experiment_id": 1, "experiment_name": "x", "feature_flag": {},
         "start_date": "2024-01-01"}, (), "ExperimentExposureQuery",
    ),
    "InsightActorsQuery": (
        {"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "source": {"kind": "TrendsQuery",
                                                                                   "series": SERIES[:1]}}},
        ("source",), "InsightActorsQuery",
    ),
    "FunnelsActorsQuery": (
        {"kind": "ActorsQuery", "source": {"kind": "FunnelsActorsQuery", "funnelStep": 1,
                                           "source": {"kind": "FunnelsQuery", "series": SERIES}}},
        ("source",), "FunnelsActorsQuery",
    ),
    "TrendsFilter": ({"kind": "TrendsQuery", "series": SERIES[:1], "trendsFilter": {}}, ("trendsFilter",),
                     "TrendsFilter"),
    "FunnelsFilter": ({"kind": "FunnelsQuery", "series": SERIES, "funnelsFilter": {}}, ("funnelsFilter",),
                      "FunnelsFilter"),
    "RetentionFilter": ({"kind": "RetentionQuery", "retentionFilter": {}}, ("retentionFilter",), "RetentionFilter"),
    "PathsFilter": ({"kind": "PathsQuery", "pathsFilter": {}}, ("pathsFilter",), "PathsFilter"),
    "StickinessFilter": ({"kind": "StickinessQuery", "series": SERIES[:1], "stickinessFilter": {}},
                         ("stickinessFilter",), "StickinessFilter"),
    "LifecycleFilter": ({"kind": "LifecycleQuery", "series": SERIES[:1], "lifecycleFilter": {}},
                        ("lifecycleFilter",), "LifecycleFilter"),
    "BreakdownFilter": ({"kind": "TrendsQuery", "series": SERIES[:1], "breakdownFilter": {}}, ("breakdownFilter",),
                        "BreakdownFilter"),
    "CompareFilter": ({"kind": "TrendsQuery", "series": SERIES[:1], "compareFilter": {}}, ("compareFilter",),
                      "CompareFilter"),
    "DateRange": ({"kind": "TrendsQuery", "series": SERIES[:1], "dateRange": {}}, ("dateRange",), "DateRange"),
    "EventsNode": ({"kind": "TrendsQuery", "series": SERIES[:1]}, ("series", 0), "EventsNode"),
    "ActionsNode": ({"kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": 1}]}, ("series", 0),
                    "ActionsNode"),
    "HogQLFilters": ({"kind": "HogQLQuery", "query": "select 1", "filters": {}}, ("filters",), "HogQLFilters"),
    "ExperimentMeanMetric": ({"kind": "ExperimentQuery", "experiment_id": 1, "metric": METRIC}, ("metric",),
                             "ExperimentMeanMetric"),
    "ExperimentFunnelMetric": (
        {"kind": "ExperimentQuery", "experiment_id": 1,
         "metric": {"kind": "ExperimentMetric", "metric_type": "funnel", "series": SERIES[:1]}},
        ("metric",), "ExperimentFunnelMetric",
    ),
    "ExperimentRatioMetric": (
        {"kind": "ExperimentQuery", "experiment_id": 1,
         "metric": {"kind": "ExperimentMetric", "metric_type": "ratio", "numerator": SERIES[0],
                    "denominator": SERIES[1]}},
        ("metric",), "ExperimentRatioMetric",
    ),
}

# Values of the refused fields that are not neutral (the neutral ones are accepted).
REFUSED_VALUES: dict[str, Any] = {
    "samplingFactor": 0.1, "conversionGoal": {"customEventName": "x"}, "math_multiplier": 100,
    "optionalInFunnel": True, "breakdown_normalize_url": True, "normalize_url": True, "histogram_bin_count": 5,
    "breakdown_histogram_bin_count": 5, "includeRecordings": True, "funnelTrendsDropOff": True,
    "funnelTrendsEntrancePeriodStart": "2024-01-01", "explain": True,
}  # fmt: skip


def _model(name: str) -> type:
    import hoglab.schema as schema

    model = getattr(schema, name, None)
    assert model is not None, f"hoglab.schema has no {name}"
    return model  # type: ignore[no-any-return]


def _rule(model: type, field: str, kind: str) -> Unserved | None:
    for cls in model.__mro__:
        rule = UNSERVED.get((cls.__name__, field))
        if rule is not None and (rule.kinds is None or kind in rule.kinds):
            return rule
    return None


def _with(query: dict[str, Any], path: tuple[str | int, ...], field: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(query)
    node: Any = out
    for part in path:
        node = node[part]
    node[field] = value
    return out


def _attr(path: tuple[str | int, ...], field: str) -> str:
    return "__".join(["query", *map(str, path), field])


def _sample(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    return {"boolean": True, "integer": 7, "number": 7, "array": [], "object": {}}.get(str(kind), "x")


def _fields() -> Iterator[tuple[str, str]]:
    for name in PLACES:
        for field in component(name).get("properties", {}):
            yield name, field


FIELDS = sorted(_fields())


@pytest.mark.parametrize(("component_name", "field"), FIELDS, ids=[f"{c}.{f}" for c, f in FIELDS])
def test_every_posthog_field_is_served_display_or_refused(component_name: str, field: str) -> None:
    query, path, model_name = PLACES[component_name]
    model = _model(model_name)
    kind = str(query["kind"]) if not path or path[0] != "source" else str(query["source"]["kind"])
    if field in ("kind", "modifiers", "response", "version", "tags"):
        return  # the kind itself; the modifiers (test below); metadata PostHog's answers do not depend on
    declared = field in model.model_fields
    if declared:
        rule = _rule(model, field, kind)
        if rule is None:
            return  # computed with (docs/insights.md, docs/hogql.md say how)
        value = REFUSED_VALUES[field]
        with pytest.raises(ValidationFailed) as refused:
            prepare({"query": _with(query, path, field, value)}, team_id=1, timezone="UTC")
        assert refused.value.attr == _attr(path, field) and "not supported by hoglab" in str(refused.value)
        return
    value = _sample(component(component_name)["properties"][field])
    if field in DISPLAY.get(model_name, frozenset()):
        prepare({"query": _with(query, path, field, value)}, team_id=1, timezone="UTC")  # accepted: display only
        return
    with pytest.raises(ValidationFailed) as refused:
        prepare({"query": _with(query, path, field, value)}, team_id=1, timezone="UTC")
    assert refused.value.attr == _attr(path, field), (refused.value.attr, str(refused.value))
    assert "Unknown field" in str(refused.value)


def test_every_posthog_modifier_is_classified() -> None:
    """Each of PostHog's modifiers is either an implementation choice (any value) or answered at hoglab's value only:
    another value is a 400 naming it."""
    names = set(component("HogQLQueryModifiers")["properties"])
    assert names <= set(MODIFIERS), f"modifiers not classified in served.py: {sorted(names - set(MODIFIERS))}"
    base = {"kind": "TrendsQuery", "series": SERIES[:1]}
    for name, answers in MODIFIERS.items():
        if answers is None:
            prepare({"query": {**base, "modifiers": {name: "anything"}}}, team_id=1, timezone="UTC")
            continue
        prepare({"query": {**base, "modifiers": {name: answers[0]}}}, team_id=1, timezone="UTC")
        other = "something else" if not isinstance(answers[0], bool) else not answers[0]
        with pytest.raises(ValidationFailed) as refused:
            prepare({"query": {**base, "modifiers": {name: other}}}, team_id=1, timezone="UTC")
        assert refused.value.attr == f"query__modifiers__{name}"
    with pytest.raises(ValidationFailed, match="Unknown modifier"):
        prepare({"query": {**base, "modifiers": {"notAModifier": 1}}}, team_id=1, timezone="UTC")


def test_refusals_reach_the_client(hoglab_service: LocalService) -> None:
    """Over HTTP: PostHog's ``{type, code, detail, attr}`` 400, the field named, nothing run."""
    project = new_project(hoglab_service, "served")

    def post(query: dict[str, Any]) -> Any:
        return project.http.post(project.path(), json={"query": query, "refresh": "force_blocking"})

    for query, attr in [
        ({"kind": "TrendsQuery", "series": SERIES[:1], "samplingFactor": 0.1}, "query__samplingFactor"),
        ({"kind": "TrendsQuery", "series": [{**SERIES[0], "math_multiplier": 2}]}, "query__series__0__math_multiplier"),
        ({"kind": "TrendsQuery", "series": SERIES[:1], "trendsFilter": {"display": "CalendarHeatmap"}},
         "query__trendsFilter__display"),
        ({"kind": "FunnelsQuery", "series": SERIES, "funnelsFilter": {"nope": 1}}, "query__funnelsFilter__nope"),
        ({"kind": "HogQLQuery", "query": "select 1", "modifiers": {"convertToProjectTimezone": False}},
         "query__modifiers__convertToProjectTimezone"),
    ]:  # fmt: skip
        answer = post(query)
        assert answer.status_code == 400, answer.text
        body = answer.json()
        assert body["type"] == "validation_error" and body["attr"] == attr, body
    # display options PostHog's app reads are accepted, and the answer is the one without them
    plain = post({"kind": "TrendsQuery", "series": SERIES[:1], "dateRange": {"date_from": "-7d"}})
    shown = post({"kind": "TrendsQuery", "series": SERIES[:1], "dateRange": {"date_from": "-7d"},
                  "trendsFilter": {"showLegend": True, "decimalPlaces": 2}})  # fmt: skip
    assert plain.status_code == shown.status_code == 200, shown.text
    assert [r["data"] for r in shown.json()["results"]] == [r["data"] for r in plain.json()["results"]]
    project.close()
