"""hoglab.queries builders: the models they build, and the argument errors they raise before any request."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

import hoglab
from hoglab.schema import (
    CohortPropertyFilter,
    EventPropertyFilter,
    FeaturePropertyFilter,
    FunnelsActorsQuery,
    HogQLPropertyFilter,
    InsightActorsQuery,
    PersonPropertyFilter,
    QueryRequest,
)


def test_trends_builds_the_documented_query() -> None:
    q = hoglab.trends(
        "$pageview", math="dau", interval="week", date_from="-30d", breakdown="$browser", where={"$browser": "Chrome"}
    )
    assert q.to_json_dict() == {
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "dau"}],
        "interval": "week",
        "dateRange": {"date_from": "-30d"},
        "breakdownFilter": {"breakdown_type": "event", "breakdown": "$browser"},
        "properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}],
        "filterTestAccounts": False,
    }
    QueryRequest(query=q)  # what the service validates


def test_several_series_property_math_formula_compare_display() -> None:
    q = hoglab.trends(
        ["signup", hoglab.series("purchase", math="sum", math_property="price", where={"plan": "pro"})],
        formula="B/A",
        compare_to="-1w",
        display="ActionsBarValue",
        date_from=date(2025, 6, 1),
    )
    assert [(s.event, s.math, s.math_property) for s in q.series] == [
        ("signup", None, None),
        ("purchase", "sum", "price"),
    ]
    assert q.trendsFilter is not None and q.trendsFilter.display == "ActionsBarValue"
    assert q.trendsFilter.formulaNodes is not None and q.trendsFilter.formulaNodes[0].formula == "B/A"
    assert q.compareFilter is not None and (q.compareFilter.compare, q.compareFilter.compare_to) == (True, "-1w")
    assert q.dateRange is not None and q.dateRange.date_from == "2025-06-01"


def test_all_events_and_multiple_breakdowns() -> None:
    q = hoglab.trends(None, breakdown=["$browser", "person.plan"])
    assert q.series[0].event is None
    assert q.breakdownFilter is not None and q.breakdownFilter.breakdowns is not None
    assert [(b.property, b.type) for b in q.breakdownFilter.breakdowns] == [("$browser", "event"), ("plan", "person")]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"$browser": ["Chrome", "Safari"]}, EventPropertyFilter(key="$browser", value=["Chrome", "Safari"])),
        ({"price__gt": 10}, EventPropertyFilter(key="price", value=10, operator="gt")),
        ({"price__between": (1, 5)}, EventPropertyFilter(key="price", value=[1, 5], operator="between")),
        ({"email__contains": "@acme"}, EventPropertyFilter(key="email", value="@acme", operator="icontains")),
        ({"$browser__in": ["a"]}, EventPropertyFilter(key="$browser", value=["a"], operator="exact")),
        ({"$browser__not_in": ["a"]}, EventPropertyFilter(key="$browser", value=["a"], operator="is_not")),
        ({"$browser__is_set": True}, EventPropertyFilter(key="$browser", operator="is_set")),
        ({"$browser__is_set": False}, EventPropertyFilter(key="$browser", operator="is_not_set")),
        ({"person.plan": "pro"}, PersonPropertyFilter(key="plan", value="pro")),
        ({"$feature/new-checkout": "test"}, FeaturePropertyFilter(key="$feature/new-checkout", value="test")),
        ({"weird__key": 1}, EventPropertyFilter(key="weird__key", value=1)),
        ("toInt(properties.$screen_width) > 1000", HogQLPropertyFilter(key="toInt(properties.$screen_width) > 1000")),
        ({"key": "id", "value": 3, "type": "cohort"}, CohortPropertyFilter(value=3)),
    ],
)
def test_where_grammar(where: Any, expected: Any) -> None:
    q = hoglab.trends("$pageview", where=where)
    assert q.properties == [expected]


def test_person_where_is_person_scoped() -> None:
    q = hoglab.trends("$pageview", person_where={"email__icontains": "@acme.com"})
    assert q.properties == [PersonPropertyFilter(key="email", value="@acme.com", operator="icontains")]


def test_funnel_options() -> None:
    q = hoglab.funnel(
        ["$pageview", "signup", hoglab.series("purchase", where={"price__gte": 1})],
        window=timedelta(hours=6),
        order="unordered",
        breakdown="plan",
        breakdown_attribution="last_touch",
        exclude=[("logout", 0, 1)],
        step_reference="previous",
        viz="time_to_convert",
    )
    ff = q.funnelsFilter
    assert ff is not None
    assert (ff.funnelWindowInterval, ff.funnelWindowIntervalUnit, ff.funnelOrderType) == (6, "hour", "unordered")
    assert (ff.breakdownAttributionType, ff.funnelStepReference, ff.funnelVizType) == (
        "last_touch",
        "previous",
        "time_to_convert",
    )
    assert ff.exclusions is not None and (ff.exclusions[0].event, ff.exclusions[0].funnelToStep) == ("logout", 1)
    QueryRequest(query=q)


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        ("14d", (14, "day")),
        ("2 weeks", (2, "week")),
        ("30min", (30, "minute")),
        ("1 month", (1, "month")),
        (7, (7, "day")),
    ],
)
def test_funnel_windows(window: Any, expected: tuple[int, str]) -> None:
    ff = hoglab.funnel(["a", "b"], window=window).funnelsFilter
    assert ff is not None and (ff.funnelWindowInterval, ff.funnelWindowIntervalUnit) == expected


def test_events_and_actors() -> None:
    q = hoglab.events(event="$pageview", where="properties.$browser = 'Chrome'", after="-7d", limit=10)
    assert q.select == ["event", "timestamp", "distinct_id", "properties"] and q.where == [
        "properties.$browser = 'Chrome'"
    ]
    assert (q.after, q.limit) == ("-7d", 10)
    a = hoglab.actors(["person", "id"], search="alice", where={"plan": "pro"}, order_by="created_at DESC")
    assert a.properties == [PersonPropertyFilter(key="plan", value="pro")] and a.orderBy == ["created_at DESC"]
    trend = hoglab.trends("$pageview", breakdown="$browser")
    drill = hoglab.actors(source=trend, day=date(2025, 6, 1), series=0, breakdown="Chrome")
    assert isinstance(drill.source, InsightActorsQuery) and drill.source.day == "2025-06-01"
    dropped = hoglab.actors(source=hoglab.funnel(["a", "b"]), step=-2)
    assert isinstance(dropped.source, FunnelsActorsQuery) and dropped.source.funnelStep == -2


@pytest.mark.parametrize(
    ("build", "argument", "exc"),
    [
        (lambda: hoglab.trends("$pageview", math="daily"), "math", ValueError),
        (lambda: hoglab.trends("$pageview", math="sum"), "math_property", ValueError),
        (lambda: hoglab.trends("$pageview", interval="fortnight"), "interval", ValueError),
        (lambda: hoglab.trends("$pageview", display="Pie"), "display", ValueError),
        (lambda: hoglab.trends("$pageview", date_from="last tuesday"), "date_from", ValueError),
        (lambda: hoglab.trends("$pageview", date_from=30), "date_from", TypeError),
        (lambda: hoglab.trends("$pageview", breakdown_limit=5), "breakdown", ValueError),
        (lambda: hoglab.trends("$pageview", breakdown=["a", "b", "c", "d"]), "breakdown", ValueError),
        (lambda: hoglab.trends("$pageview", breakdown_type="weather", breakdown="x"), "breakdown_type", ValueError),
        (lambda: hoglab.trends(42), "events", TypeError),
        (lambda: hoglab.trends([]), "events", ValueError),
        (lambda: hoglab.trends("$pageview", where={"price__gt": "cheap"}), "where", ValueError),
        (lambda: hoglab.trends("$pageview", where=3.5), "where", TypeError),
        (lambda: hoglab.funnel([]), "steps", ValueError),
        (lambda: hoglab.funnel("a,b"), "steps", TypeError),
        (lambda: hoglab.funnel(["a"] * 21), "steps", ValueError),
        (lambda: hoglab.funnel(["a", "b"], window="14m"), "window", ValueError),
        (lambda: hoglab.funnel(["a", "b"], order="random"), "order", ValueError),
        (lambda: hoglab.funnel(["a", "b"], exclude=[("x", 0, 5)]), "exclude", ValueError),
        (lambda: hoglab.events(limit=0), "limit", ValueError),
        (lambda: hoglab.events(after="soon"), "after", ValueError),
        (lambda: hoglab.actors(step=2), "source", ValueError),
        (lambda: hoglab.actors(source="trends", step=1), "source", TypeError),
    ],
)
def test_wrong_arguments_name_the_argument(build: Any, argument: str, exc: type) -> None:
    with pytest.raises(hoglab.InvalidArgument) as info:
        build()
    assert isinstance(info.value, exc)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}:")
