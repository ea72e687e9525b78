"""The contract models: what they accept, what they refuse, and the error bodies they produce."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hoglab import schema
from hoglab.schema import (
    ExperimentCreate,
    ExperimentParameters,
    QueryRequest,
    TrendsQuery,
    parse_query,
    validation_error_body,
)


def _error(data: dict[str, object]) -> schema.ErrorBody:
    with pytest.raises(ValidationError) as info:
        QueryRequest.model_validate(data)
    return validation_error_body(info.value, data)


def test_exported_names_exist_once() -> None:
    assert len(set(schema.__all__)) == len(schema.__all__)
    for name in schema.__all__:
        assert hasattr(schema, name), name


def test_query_kinds_are_told_apart_by_kind() -> None:
    kinds = {
        "HogQLQuery": {"query": "select 1"},
        "TrendsQuery": {"series": [{"kind": "EventsNode", "event": "$pageview"}]},
        "FunnelsQuery": {"series": [{"event": "a"}, {"event": "b"}]},
        "EventsQuery": {"select": ["*"]},
        "ActorsQuery": {},
    }
    for kind, fields in kinds.items():
        assert type(parse_query({"kind": kind, **fields})).__name__ == kind


def test_async_alias_round_trips() -> None:
    request = QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}, "async": True})
    assert request.async_ is True
    assert request.to_json_dict()["async"] is True


@pytest.mark.parametrize(
    ("body", "attr", "fragment"),
    [
        ({"query": {"kind": "TrendsQuery", "series": [{"math": "p90"}]}}, "query__series__0", "math_property"),
        ({"query": {"kind": "FunnelsQuery", "series": []}}, "query__series", "at least 1"),
        ({"query": {"kind": "HogQLQuery", "query": "select 1", "nope": 1}}, "query__nope", "Unknown field"),
        ({"query": {"kind": "TrendsQuery", "series": [{}], "interval": "year"}}, "query__interval", "Input should"),
        (
            {"query": {"kind": "TrendsQuery", "series": [{}], "dateRange": {"date_from": 3}}},
            "query__dateRange__date_from",
            "string",
        ),
        (
            {"query": {"kind": "EventsQuery", "select": ["*"], "event": 5}},
            "query__event",
            "string",
        ),
        (
            {
                "query": {
                    "kind": "TrendsQuery",
                    "series": [{}],
                    "properties": [{"key": "x", "operator": "gt", "value": "a", "type": "event"}],
                }
            },
            "query__properties__0",
            "number",
        ),
    ],
)
def test_bad_queries_name_the_field(body: dict[str, object], attr: str, fragment: str) -> None:
    error = _error(body)
    assert error.type == "validation_error"
    assert error.attr == attr
    assert fragment in error.detail


def test_property_groups_nest() -> None:
    query = TrendsQuery.model_validate(
        {
            "series": [{"event": "$pageview"}],
            "properties": {
                "type": "AND",
                "values": [{"type": "OR", "values": [{"key": "$browser", "value": "Chrome", "type": "event"}]}],
            },
        }
    )
    assert isinstance(query.properties, schema.PropertyGroupFilter)


def test_experiment_variants_must_have_control_and_sum_to_100() -> None:
    with pytest.raises(ValidationError, match="control"):
        ExperimentParameters(feature_flag_variants=[{"key": "a", "rollout_percentage": 100}])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="sum to 100"):
        ExperimentParameters(
            feature_flag_variants=[{"key": "control", "rollout_percentage": 50}, {"key": "t", "rollout_percentage": 40}]  # type: ignore[list-item]
        )
    too_many = [{"key": f"v{i}", "rollout_percentage": 100 / 11} for i in range(10)] + [
        {"key": "control", "rollout_percentage": 100 / 11}
    ]
    with pytest.raises(ValidationError, match="less than 11"):
        ExperimentParameters.model_validate({"feature_flag_variants": too_many})


def test_experiment_dates_and_key() -> None:
    with pytest.raises(ValidationError, match="End date must be after start date"):
        ExperimentCreate(name="x", feature_flag_key="k", start_date="2025-01-02", end_date="2025-01-01")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="pattern"):
        ExperimentCreate(name="x", feature_flag_key="bad key")
    created = ExperimentCreate(name="x", feature_flag_key="ok-key_1", start_date="2025-01-01T00:00:00")  # type: ignore[arg-type]
    assert created.start_date is not None and created.start_date.tzinfo is not None


@pytest.mark.parametrize(
    ("interval", "unit", "days"),
    [(None, None, 14), (3, "week", 21), (2, "month", 62), (36, "hour", 1.5)],
)
def test_funnel_window_is_posthogs(interval: int | None, unit: str | None, days: float) -> None:
    """PostHog's units: a month is 31 days; the default window is 14 days. The runners use the same helper."""
    from hoglab.schema import funnel_window_seconds
    from hoglab.server.query.runners.funnels_sql import window_micros

    assert funnel_window_seconds(interval, unit) == days * 86_400
    assert window_micros({"funnelWindowInterval": interval, "funnelWindowIntervalUnit": unit}) == days * 86_400e6
    with pytest.raises(ValueError, match="unknown funnel window unit 'fortnight'"):
        funnel_window_seconds(1, "fortnight")
