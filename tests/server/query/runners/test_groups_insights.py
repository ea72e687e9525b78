"""Insights by group over HTTP: group property filters and breakdowns through the one translator, the maths that
count groups, the actors of a group insight, and PostHog's refusals (paths, stickiness' aggregation field, a group
filter or breakdown without its type) as 400s naming the field. Numbers are checked against pandas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.server.ingest import Ingestor

DAY0 = (datetime.now(UTC) - timedelta(days=6)).replace(hour=0, minute=0, second=0, microsecond=0)
COMPANIES = {"acme": "pro", "beta": "free", "gamma": "pro", "delta": "free"}


def _events() -> pd.DataFrame:
    rows = []
    for i in range(40):
        company = list(COMPANIES)[i % 4]
        user = f"u{i}"
        for day in range(i % 5):
            rows.append({"event": "view", "distinct_id": user, "company": company,
                         "timestamp": DAY0 + timedelta(days=day, hours=i % 7)})  # fmt: skip
        if i % 3 == 0:
            rows.append({"event": "buy", "distinct_id": user, "company": company,
                         "timestamp": DAY0 + timedelta(days=2, hours=i % 7), "price": i})  # fmt: skip
    rows.append({"event": "view", "distinct_id": "loner", "company": None, "timestamp": DAY0 + timedelta(days=1)})
    return pd.DataFrame(rows)


EVENTS = _events()


@pytest.fixture(scope="module")
def project(hoglab_service):
    import httpx

    store = hoglab_service.state.store
    record = store.projects.create("group insights")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="t")
    batch = [{"event": "$groupidentify", "distinct_id": "admin", "timestamp": DAY0.isoformat(),
              "properties": {"$group_type": "company", "$group_key": c, "$group_set": {"plan": p, "name": c.title()}}}
             for c, p in COMPANIES.items()]  # fmt: skip
    for row in EVENTS.itertuples():
        props: dict[str, Any] = {"price": None if pd.isna(getattr(row, "price", None)) else row.price}
        if isinstance(row.company, str):
            props["$groups"] = {"company": row.company}
        batch.append({"event": row.event, "distinct_id": row.distinct_id, "timestamp": row.timestamp.isoformat(),
                      "properties": props})  # fmt: skip
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(record.id, batch)
    http = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    yield record.id, http
    http.close()


def _post(project, query: dict[str, Any]) -> Any:
    pid, http = project
    return http.post(f"/api/projects/{pid}/query/", json={"query": query})


def _ok(project, query: dict[str, Any]) -> dict[str, Any]:
    answer = _post(project, query)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


RANGE = {"date_from": DAY0.date().isoformat(), "date_to": (DAY0 + timedelta(days=6)).date().isoformat()}
PRO = [{"type": "group", "key": "plan", "value": "pro", "operator": "exact", "group_type_index": 0}]


def test_a_group_filter_selects_the_events_of_those_groups(project) -> None:
    total = {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "view"}], "dateRange": RANGE,
             "properties": PRO, "trendsFilter": {"display": "BoldNumber"}}  # fmt: skip
    pro_views = EVENTS[(EVENTS.event == "view") & EVENTS.company.map(COMPANIES).eq("pro")]
    assert _ok(project, total)["results"][0]["aggregated_value"] == len(pro_views)
    # The same filter as an AND/OR group, and on a series: the one translator, the same events.
    grouped = {**total, "properties": {"type": "AND", "values": [{"type": "OR", "values": PRO}]}}
    assert _ok(project, grouped)["results"][0]["aggregated_value"] == len(pro_views)
    on_series = {**total, "properties": None, "series": [{"kind": "EventsNode", "event": "view", "properties": PRO}]}
    assert _ok(project, on_series)["results"][0]["aggregated_value"] == len(pro_views)


def test_unique_groups_and_breakdowns(project) -> None:
    series = {"kind": "EventsNode", "event": "view", "math": "unique_group", "math_group_type_index": 0}
    query = {"kind": "TrendsQuery", "series": [series], "dateRange": RANGE, "trendsFilter": {"display": "ActionsTable"},
             "breakdownFilter": {"breakdowns": [{"property": "plan", "type": "group", "group_type_index": 0},
                                                {"property": "$browser", "type": "event"}]}}  # fmt: skip
    answer = _ok(project, query)
    views = EVENTS[(EVENTS.event == "view") & EVENTS.company.notna()]
    expected = views.assign(plan=views.company.map(COMPANIES)).groupby("plan").company.nunique()
    got = {tuple(r["breakdown_value"]): r["aggregated_value"] for r in answer["results"]}
    assert got == {(plan, "$$_posthog_breakdown_null_$$"): float(n) for plan, n in expected.items()}
    # dau with a group type counts persons, of the events that have a company (the loner's view is left out).
    dau = {**query, "breakdownFilter": None, "series": [{**series, "math": "dau"}]}
    assert _ok(project, dau)["results"][0]["aggregated_value"] == views.distinct_id.nunique()


def test_funnel_and_retention_break_down_by_a_group_property(project) -> None:
    funnel = {"kind": "FunnelsQuery", "dateRange": RANGE, "aggregation_group_type_index": 0,
              "series": [{"kind": "EventsNode", "event": "view"}, {"kind": "EventsNode", "event": "buy"}],
              "breakdownFilter": {"breakdown": "plan", "breakdown_type": "group", "breakdown_group_type_index": 0}}
    steps = {s[0]["breakdown_value"][0]: [x["count"] for x in s] for s in _ok(project, funnel)["results"]}
    assert steps == {"pro": [2, 2], "free": [2, 2]}
    retention = {"kind": "RetentionQuery", "dateRange": RANGE, "aggregation_group_type_index": 0,
                 "retentionFilter": {"period": "Day", "totalIntervals": 3,
                                     "targetEntity": {"id": "view", "type": "events"},
                                     "returningEntity": {"id": "view", "type": "events"}},
                 "breakdownFilter": {"breakdown": "plan", "breakdown_type": "group", "breakdown_group_type_index": 0}}
    cohorts = [c for c in _ok(project, retention)["results"] if c["label"] == "Day 0"]
    assert {c["breakdown_value"]: [v["count"] for v in c["values"]] for c in cohorts} == {
        "pro": [2, 2, 2], "free": [2, 2, 2]}


def test_the_actors_of_a_group_insight_are_groups(project) -> None:
    funnel = {"kind": "FunnelsQuery", "dateRange": RANGE, "aggregation_group_type_index": 0,
              "series": [{"kind": "EventsNode", "event": "view"}, {"kind": "EventsNode", "event": "buy"}]}
    actors = _ok(project, {"kind": "ActorsQuery", "source": {"kind": "FunnelsActorsQuery", "funnelStep": 2,
                                                              "source": funnel}, "orderBy": ["group"]})  # fmt: skip
    assert actors["columns"] == ["group"]
    groups = [row[0] for row in actors["results"]]
    assert [g["group_key"] for g in groups] == ["acme", "beta", "delta", "gamma"]  # by name
    assert groups[0] == {"id": "acme", "type": "group", "group_key": "acme", "group_type_index": 0,
                         "properties": {"plan": "pro", "name": "Acme"},
                         "group_properties": {"plan": "pro", "name": "Acme"}, "created_at": groups[0]["created_at"]}
    trend = {"kind": "TrendsQuery", "dateRange": RANGE, "series": [
        {"kind": "EventsNode", "event": "buy", "math": "unique_group", "math_group_type_index": 0}]}
    source = {"kind": "InsightActorsQuery", "source": trend, "day": (DAY0 + timedelta(days=2)).date().isoformat()}
    found = _ok(project, {"kind": "ActorsQuery", "source": source, "select": ["key", "properties.plan"],
                          "properties": PRO})  # fmt: skip
    assert sorted(found["results"]) == [["acme", "pro"], ["gamma", "pro"]]
    assert found["missing_actors_count"] == 0


BAD = [
    ({"kind": "PathsQuery", "pathsFilter": {}, "aggregation_group_type_index": 0}, "aggregation_group_type_index"),
    ({"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "view"}],
      "aggregation_group_type_index": 0}, None),
    ({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "view"}, {"kind": "EventsNode"}],
      "aggregation_group_type_index": 5}, "aggregation_group_type_index"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "view", "math": "unique_group"}]},
     "series.0"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "view"}],
      "properties": [{"type": "group", "key": "plan", "value": "x"}]}, "properties.0"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "view"}],
      "breakdownFilter": {"breakdown": "plan", "breakdown_type": "group"}},
     "breakdownFilter.breakdown_group_type_index"),
    ({"kind": "RetentionQuery", "retentionFilter": {}, "aggregation_group_type_index": -1},
     "aggregation_group_type_index"),
]  # fmt: skip


@pytest.mark.parametrize(("query", "attr"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_what_posthog_does_not_do_is_a_400(project, query, attr) -> None:
    answer = _post(project, query)
    assert answer.status_code == 400, answer.text
    if attr is not None:  # the schema's checks name fields as query__a__0, the runners' as a.0
        named = (answer.json()["attr"] or "").removeprefix("query__").replace("__", ".")
        assert named.startswith(attr), answer.json()

