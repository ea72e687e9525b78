"""``aggregate_by=`` and group properties in the builders: PostHog's fields, a name kept for the client to resolve
(and refused if sent unresolved), mistakes named before any request."""

from __future__ import annotations

import pytest

import hoglab
from hoglab.errors import InvalidArgument
from posthog_openapi import assert_valid


def test_aggregate_by_an_index_is_posthogs_field_per_kind() -> None:
    funnel = hoglab.funnel(["signup", "buy"], aggregate_by=1)
    retention = hoglab.retention("signup", aggregate_by=2)
    lifecycle = hoglab.lifecycle("$pageview", aggregate_by=0)
    assert (funnel.aggregation_group_type_index, retention.aggregation_group_type_index,
            lifecycle.aggregation_group_type_index) == (1, 2, 0)  # fmt: skip
    for query, name in ((funnel, "FunnelsQuery"), (retention, "RetentionQuery"), (lifecycle, "LifecycleQuery")):
        assert_valid(query.to_json_dict(), name, drop=())
    trend = hoglab.trends(["$pageview", hoglab.series("buy", math="dau")], aggregate_by=3)
    # Trends and stickiness count groups per series (unique_group); a series given whole keeps its own math.
    assert [(s.math, s.math_group_type_index) for s in trend.series] == [("unique_group", 3), ("dau", None)]
    sticky = hoglab.stickiness("$pageview", aggregate_by="0")
    assert (sticky.series[0].math, sticky.series[0].math_group_type_index) == ("unique_group", 0)
    assert sticky.aggregation_group_type_index is None  # PostHog's StickinessQuery has no such field
    assert_valid(trend.to_json_dict(), "TrendsQuery", drop=())


def test_a_name_waits_for_the_client() -> None:
    query = hoglab.funnel(["signup", "buy"], aggregate_by="company", breakdown="group.company.plan",
                          where={"group.project.tier": "gold"})  # fmt: skip
    assert query.group_type_names == {"aggregation_group_type_index": "company"}
    assert query.breakdownFilter.group_type_names == {"breakdown_group_type_index": "company"}
    assert query.properties[0].group_type_names == {"group_type_index": "project"}
    with pytest.raises(ValueError, match="'company' is a name"):
        query.to_json_dict()
    with pytest.raises(InvalidArgument, match=r"type\.property"):
        hoglab.trends("buy", breakdown="plan", breakdown_type="group")
    query = hoglab.trends("buy", breakdown="0.plan", breakdown_type="group", where={"group.0.plan": "pro"})
    body = query.to_json_dict()
    assert body["breakdownFilter"] == {"breakdown": "plan", "breakdown_type": "group", "breakdown_group_type_index": 0}
    assert body["properties"] == [{"key": "plan", "value": "pro", "operator": "exact", "type": "group",
                                   "group_type_index": 0}]  # fmt: skip
    assert_valid(body, "TrendsQuery", drop=())


def test_groups_query_builder() -> None:
    query = hoglab.groups(1, select=["properties.plan"], where={"seats__gt": 10}, search="ac",
                          order_by=["group_name"], limit=5)  # fmt: skip
    body = query.to_json_dict()
    assert body["properties"] == [{"key": "seats", "value": 10, "operator": "gt", "type": "group",
                                   "group_type_index": 1}]  # fmt: skip
    assert_valid(body, "GroupsQuery", drop=())
    assert hoglab.groups("company").group_type_names == {"group_type_index": "company"}


@pytest.mark.parametrize(
    ("build", "argument"),
    [
        (lambda: hoglab.funnel(["a", "b"], aggregate_by=5), "aggregate_by"),
        (lambda: hoglab.funnel(["a", "b"], aggregate_by=True), "aggregate_by"),
        (lambda: hoglab.trends("a", math="sum", math_property="p", aggregate_by=0), "aggregate_by"),
        (lambda: hoglab.trends("a", breakdown="group.plan"), "breakdown"),
        (lambda: hoglab.trends("a", where={"group.company": 1}), "where"),
        (lambda: hoglab.groups("company", where={"person.plan": "pro"}), "where"),
        (lambda: hoglab.groups(9), "group_type"),
    ],
)
def test_mistakes_name_the_argument(build, argument) -> None:
    with pytest.raises(InvalidArgument) as caught:
        build()
    assert caught.value.argument == argument
