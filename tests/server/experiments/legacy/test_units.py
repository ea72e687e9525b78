"""Units of the results package that need no events: reading legacy filters, the queries built from them, the
mapping of PostHog's statistics refusals."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hoglab.server.errors import ValidationFailed
from hoglab.server.experiments.legacy import Arms, read_custom_exposure, read_metric
from hoglab.server.experiments.legacy.queries import count_query, exposure_query, funnel_query
from hoglab.server.experiments.legacy.runs import FunnelRun, TrendRun
from hoglab.server.experiments.legacy.verdicts import funnel_result, secondary_values, trend_result

ARMS = Arms("flag", ("control", "test"), datetime(2025, 1, 1, 12, tzinfo=UTC), None, "Asia/Kolkata")


def test_legacy_spellings_are_read_as_posthog_reads_them() -> None:
    metric = read_metric({
        "insight": "FUNNELS", "funnel_window_days": 3, "funnel_order_type": "strict", "layout": "horizontal",
        "events": [{"id": "b", "order": 1, "properties": [{"key": "$browser", "value": "Chrome", "operator": None}]},
                   {"id": "a", "order": 0, "math": None, "uuid": "ui-only"}],
        "exclusions": [{"id": "x", "funnel_from_step": 0, "funnel_to_step": 1}],
        "date_from": "-7d", "properties": [], "breakdown": "$os", "display": "FunnelViz",
    })  # fmt: skip
    assert [node.event for node in metric.series] == ["a", "b"]
    assert metric.series[1].properties[0].operator == "exact" and metric.series[1].properties[0].type == "event"
    ff = metric.funnels_filter
    assert ff is not None and (ff.funnelWindowInterval, ff.funnelWindowIntervalUnit) == (3, "day")
    assert ff.funnelOrderType == "strict" and ff.exclusions[0].event == "x"
    assert read_metric({"events": [{"id": "a"}]}).insight == "TRENDS"  # PostHog's Filter default
    assert metric.field_attr("series.1.properties.0") == "filters__events__0__properties__0"
    assert metric.field_attr("funnelsFilter.funnelWindowInterval") == "filters__funnel_window_interval"
    assert metric.field_attr("dateRange") == "filters"


def test_queries_cover_exactly_the_window_split_by_variant() -> None:
    trend = read_metric({"insight": "TRENDS", "events": [{"id": "buy", "math": "p90_count_per_actor"}]})
    count, filters = count_query(trend, ARMS)
    assert count.dateRange.explicitDate and count.dateRange.date_from == "2025-01-01T17:30:00+05:30"
    assert count.dateRange.date_to is None and count.trendsFilter.display == "ActionsLineGraph"
    assert count.properties[0].value == ["control", "test"] and filters["breakdown"] == "$feature/flag"
    exposure, exposure_filters = exposure_query(trend, ARMS, None)
    assert [(s.event, s.math) for s in exposure.series] == [("buy", None), ("buy", "dau")]
    assert [e["math"] for e in exposure_filters["events"]] == [None, "dau"]
    plain = read_metric({"insight": "TRENDS", "events": [{"id": "buy", "math": "sum", "math_property": "price"}]})
    exposure, _ = exposure_query(plain, ARMS, None)
    assert [(s.event, s.math) for s in exposure.series] == [("$feature_flag_called", "dau")]
    assert exposure.breakdownFilter.breakdown == "$feature_flag_response"
    custom = read_custom_exposure({"events": [{"id": "view", "math": "dau"}], "filter_test_accounts": True})
    exposure, _ = exposure_query(plain, ARMS, custom)
    assert exposure.series[0].event == "view" and exposure.filterTestAccounts is True
    funnel = read_metric({"insight": "FUNNELS", "events": [{"id": "a"}, {"id": "b"}]})
    query, funnel_filters = funnel_query(funnel, ARMS)
    assert query.breakdownFilter.breakdown_limit == 10_000 and funnel_filters["properties"] == []


def _line(key: str, count: float, order: int = 0) -> dict:
    return {"breakdown_value": key, "count": count, "data": [count], "action": {"order": order}}


def test_posthogs_statistics_refusals_keep_their_codes() -> None:
    keys = ["control", *[f"t{i}" for i in range(10)]]
    lines = [_line(k, 5.0) for k in keys]
    run = TrendRun(lines, lines, [_line(k, 150.0) for k in keys], {}, {})
    with pytest.raises(ValidationFailed) as info:
        trend_result(run, keys)
    assert (info.value.code, info.value.detail) == ("too_much_data",
                                                     "Can't calculate experiment results for more than 10 variants")
    assert set(trend_result(run, keys, validate=False)) == {"insight", "filters", "exposure_filters"}
    steps = [[{"breakdown_value": [k], "count": 10}, {"breakdown_value": [k], "count": 4}] for k in keys]
    with pytest.raises(ValidationFailed) as info:
        funnel_result(FunnelRun(steps, {}), keys)
    assert info.value.code == "too_much_data"


def test_exposures_default_to_one_and_are_relative_to_control() -> None:
    counts = [_line("control", 10.0), _line("test", 30.0), _line("test-2", 20.0)]
    run = TrendRun(counts, counts, [_line("control", 200.0), _line("test", 100.0)], {}, {})
    result = trend_result(run, ["control", "test", "test-2"])
    assert [(v["key"], v["count"], v["exposure"], v["absolute_exposure"]) for v in result["variants"]] == [
        ("control", 10, 1.0, 200), ("test", 30, 0.5, 100), ("test-2", 20, 1.0, 1)]  # fmt: skip
    assert result["significance_code"] == "not_enough_exposure" and result["p_value"] == 1.0
    assert json.loads(json.dumps(result))["credible_intervals"]["test"][0] > 0


def test_secondary_values() -> None:
    lines = [{"breakdown_value": "control", "count": 6.0, "data": [1.0, 2.0, 3.0]},
             {"breakdown_value": "stale", "count": 9.0, "data": [9.0]}]  # fmt: skip
    assert secondary_values(lines, ["control", "test"], funnel=False, per_user_math=False) == {"control": 6.0}
    assert secondary_values(lines, ["control", "test"], funnel=False, per_user_math=True) == {"control": 2.0}
    steps = [[{"breakdown_value": ["test"], "count": 3}, {"breakdown_value": ["test"], "count": 2}]]
    assert secondary_values(steps, ["control", "test"], funnel=True, per_user_math=False) == {"test": 0.667}
