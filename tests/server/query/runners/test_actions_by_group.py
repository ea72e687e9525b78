"""Actions and groups together: an action's events counted by company (a trend's ``unique_group`` math over an
``ActionsNode``, and an action-based funnel with ``aggregation_group_type_index``), against pandas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.server.ingest import Ingestor

DAY0 = (datetime.now(UTC) - timedelta(days=5)).replace(hour=0, minute=0, second=0, microsecond=0)
COMPANIES = ["acme", "beta", "gamma", "delta", "eps"]
VIEWED = [{"event": "$pageview", "url": "/pricing", "url_matching": "contains"}]
BOUGHT = [{"event": "buy", "properties": [{"key": "plan", "value": "pro", "type": "event"}]}]


def _events() -> pd.DataFrame:
    rows = []
    for i in range(30):
        company = COMPANIES[i % 5] if i % 7 else None  # some users act outside any company
        t = DAY0 + timedelta(hours=3 * i)
        url = "https://x.example/pricing" if i % 2 else "https://x.example/home"
        rows.append({"event": "$pageview", "user": f"u{i}", "company": company, "t": t, "url": url, "plan": None})
        if i % 3 == 0:
            plan = "pro" if i % 4 else "free"
            rows.append({"event": "buy", "user": f"u{i}", "company": company, "t": t + timedelta(hours=1),
                         "url": None, "plan": plan})  # fmt: skip
    return pd.DataFrame(rows)


EVENTS = _events()


@pytest.fixture
def project(make_project) -> Any:
    project = make_project()
    batch = []
    for r in EVENTS.itertuples():
        props: dict[str, Any] = {}
        if r.url:
            props["$current_url"] = r.url
        if r.plan:
            props["plan"] = r.plan
        if r.company:
            props["$groups"] = {"company": r.company}
        batch.append({"event": r.event, "distinct_id": r.user, "timestamp": r.t.isoformat(), "properties": props})
    Ingestor.for_engine(project.service.state.engine).capture_batch(project.id, batch)
    return project


def test_actions_counted_by_company(project) -> None:
    base = f"/api/projects/{project.id}/actions/"
    viewed = project.http.post(base, json={"name": "Viewed pricing", "steps": VIEWED}).json()["id"]
    bought = project.http.post(base, json={"name": "Bought pro", "steps": BOUGHT}).json()["id"]
    date_range = {"date_from": DAY0.date().isoformat()}

    def ok(query: dict[str, Any]) -> dict[str, Any]:
        answer = project.http.post(f"/api/projects/{project.id}/query/", json={"query": query})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    in_view = EVENTS[(EVENTS.event == "$pageview") & EVENTS.url.fillna("").str.contains("/pricing", regex=False)]
    in_buy = EVENTS[(EVENTS.event == "buy") & (EVENTS.plan == "pro")]
    trend = ok({"kind": "TrendsQuery", "dateRange": date_range, "trendsFilter": {"display": "BoldNumber"},
                "series": [{"kind": "ActionsNode", "id": viewed, "math": "unique_group",
                            "math_group_type_index": 0}]})  # fmt: skip
    assert trend["results"][0]["aggregated_value"] == in_view.company.dropna().nunique()
    assert trend["results"][0]["label"] == "Viewed pricing"

    funnel = ok({"kind": "FunnelsQuery", "dateRange": date_range, "aggregation_group_type_index": 0,
                 "funnelsFilter": {"funnelWindowInterval": 14, "funnelWindowIntervalUnit": "day"},
                 "series": [{"kind": "ActionsNode", "id": viewed}, {"kind": "ActionsNode", "id": bought}]})
    # A company converts when its events (of any of its users) view pricing and then buy pro.
    first_view = in_view.dropna(subset=["company"]).groupby("company").t.min()
    buys = in_buy.dropna(subset=["company"])
    converted = {c for c, t in first_view.items() if ((buys.company == c) & (buys.t >= t)).any()}
    assert [s["count"] for s in funnel["results"]] == [len(first_view), len(converted)]
    assert [s["name"] for s in funnel["results"]] == ["Viewed pricing", "Bought pro"]
