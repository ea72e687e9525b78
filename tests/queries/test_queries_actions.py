"""Builders take an action wherever they take an event: by id, or by name (the client fills the id in)."""

from __future__ import annotations

import pytest

import hoglab
from hoglab.errors import InvalidArgument, InvalidArgumentType
from posthog_openapi import assert_valid


def test_trends_lifecycle_stickiness_take_actions_by_id_or_name() -> None:
    q = hoglab.trends(["$pageview"], action=[7, "Signed up"], math="dau")
    assert [(s.kind, getattr(s, "event", None), getattr(s, "id", None), s.name, s.math) for s in q.series] == [
        ("EventsNode", "$pageview", None, "$pageview", "dau"), ("ActionsNode", None, 7, None, "dau"),
        ("ActionsNode", None, None, "Signed up", "dau")]  # fmt: skip
    only = hoglab.trends(action=7)
    assert [s.kind for s in only.series] == ["ActionsNode"]
    assert_valid(only.to_json_dict(), "TrendsQuery", drop=())
    life = hoglab.lifecycle(action="Paid")
    assert life.series[0].kind == "ActionsNode" and life.series[0].name == "Paid"
    sticky = hoglab.stickiness(action=3)
    assert [s.kind for s in sticky.series] == ["ActionsNode"]
    assert_valid(sticky.to_json_dict(), "StickinessQuery", drop=())


def test_a_series_of_an_action_keeps_its_label_apart_from_the_actions_name() -> None:
    s = hoglab.series(action="Signed up", name="Sign-ups", where={"plan": "pro"})
    assert (s.id, s.name, s.custom_name, s.properties[0].key) == (None, "Signed up", "Sign-ups", "plan")
    with pytest.raises(InvalidArgument, match="not both"):
        hoglab.series("$pageview", action=3)
    for bad in (0, -2):
        with pytest.raises(InvalidArgument, match="positive"):
            hoglab.series(action=bad)
    for bad in (True, 1.5, "", ["x"]):
        with pytest.raises(InvalidArgumentType):
            hoglab.series(action=bad)


def test_funnels_retention_events_and_metrics_take_actions() -> None:
    f = hoglab.funnel([hoglab.series(action=4), "purchase", hoglab.series(action="Paid")])
    assert [s.kind for s in f.series] == ["ActionsNode", "EventsNode", "ActionsNode"]
    r = hoglab.retention(action=4, returning=hoglab.series(action="Came back"))
    target, back = r.retentionFilter.targetEntity, r.retentionFilter.returningEntity
    assert (target.type, target.id, back.type, back.id, back.name) == ("actions", 4, "actions", None, "Came back")
    assert_valid(hoglab.retention(action=4).to_json_dict(), "RetentionQuery", drop=())
    e = hoglab.events(action=9)
    assert e.actionId == 9
    with pytest.raises(InvalidArgumentType, match="by id"):
        hoglab.events(action="Paid")
    m = hoglab.mean_metric(action="Paid", math="sum", math_property="price")
    assert (m.source.kind, m.source.name, m.source.math) == ("ActionsNode", "Paid", "sum")
    assert hoglab.mean_metric(action=3, math_hogql="toFloat(properties.price)").source.math == "hogql"
    with pytest.raises(InvalidArgument, match="math"):
        hoglab.mean_metric(action=3, math="p99")
    with pytest.raises(InvalidArgument, match="not both"):
        hoglab.mean_metric("purchase", action=3)
    fm = hoglab.funnel_metric([hoglab.series(action=3), "purchase"])
    ratio = hoglab.ratio_metric(hoglab.series(action=3, math="sum", math_property="price"), "$pageview")
    assert fm.series[0].id == 3 and ratio.numerator.kind == "ActionsNode"
    assert_valid(fm.to_json_dict(), "ExperimentFunnelMetric", drop=())
