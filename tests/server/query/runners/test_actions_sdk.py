"""Actions end to end: events captured by the official ``posthog`` SDK, actions made over the API, and an
action-based trend and funnel asked over HTTP; every number equals a pandas restatement of the events sent and
of the actions' definitions (PostHog's semantics: URL ``contains`` is a case-sensitive substring, ``regex`` a
search, steps OR-ed, a step's conditions AND-ed)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import posthog
import pytest

from posthog_openapi import assert_valid

from .oracle import funnel_person

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

URLS = ["https://app.example/pricing", "https://app.example/PRICING", "https://app.example/pricing/teams",
        "https://app.example/checkout/done", "https://app.example/checkout/done?retry=1", "https://app.example/"]
VIEWED_PRICING = [{"event": "$pageview", "url": "/pricing", "url_matching": "contains"}]
CONVERTED = [
    {"event": "signed_up", "properties": [{"key": "plan", "value": ["pro", "team"], "operator": "exact",
                                           "type": "event"}]},
    {"event": "$pageview", "url": r"/checkout/done$", "url_matching": "regex"},
]  # fmt: skip


def _matches(steps: list[dict], event: str, props: dict) -> bool:
    """The actions above in pandas-side Python: exactly what their steps say, nothing taken from hoglab."""
    for step in steps:
        if step.get("event") and event != step["event"]:
            continue
        url = props.get("$current_url")
        if step.get("url"):
            if url is None:
                continue
            if step["url_matching"] == "contains" and step["url"] not in url:
                continue
            if step["url_matching"] == "regex" and re.search(step["url"], url) is None:
                continue
        if any(props.get(f["key"]) not in f["value"] for f in step.get("properties") or []):
            continue
        return True
    return False


@pytest.fixture
def sdk(make_project) -> Iterator[tuple[object, posthog.Posthog]]:
    project = make_project()
    client = posthog.Posthog(project.api_token, host=project.service.url, capture_mode="v0", max_retries=0)
    yield project, client
    client.shutdown()


def test_an_action_trend_and_funnel_fed_by_the_posthog_sdk(sdk):
    project, client = sdk
    rng = np.random.default_rng(25)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=5)
    sent = []
    for k in range(90):
        user = f"sdk-action-{k}"
        t = start + timedelta(seconds=float(rng.uniform(0, 4 * 86400)))
        for _ in range(int(rng.integers(1, 8))):
            t += timedelta(minutes=float(rng.exponential(300)))
            if rng.random() < 0.7:
                event, props = "$pageview", {"$current_url": URLS[int(rng.integers(len(URLS)))]}
            else:
                plan = ["free", "pro", "team", None][int(rng.integers(4))]
                event, props = "signed_up", ({"plan": plan} if plan else {})
            if t >= datetime.now(UTC) - timedelta(minutes=1):
                break
            client.capture(event, distinct_id=user, properties=props, timestamp=t)
            sent.append({"user": user, "event": event, "props": props, "timestamp": t})
    client.flush()
    df = pd.DataFrame(sent)
    df["pricing"] = [_matches(VIEWED_PRICING, r.event, r.props) for r in df.itertuples()]
    df["converted"] = [_matches(CONVERTED, r.event, r.props) for r in df.itertuples()]
    assert df["pricing"].sum() > 20 and df["converted"].sum() > 10

    base = f"/api/projects/{project.id}/actions/"
    pricing = project.http.post(base, json={"name": "Viewed pricing", "steps": VIEWED_PRICING}).json()["id"]
    converted = project.http.post(base, json={"name": "Converted", "steps": CONVERTED}).json()["id"]

    def query(body: dict) -> dict:
        response = project.http.post(f"/api/projects/{project.id}/query/", json={"query": body})
        assert response.status_code == 200, response.text
        return response.json()

    date_range = {"date_from": start.strftime("%Y-%m-%d"), "date_to": today.strftime("%Y-%m-%d")}
    trend = query({"kind": "TrendsQuery", "dateRange": date_range, "series": [
        {"kind": "ActionsNode", "id": converted}, {"kind": "ActionsNode", "id": pricing, "math": "dau"}]})
    assert_valid(trend, "TrendsQueryResponse")
    days = [d.strftime("%Y-%m-%d") for d in pd.date_range(start.date(), today.date())]
    df["day"] = df["timestamp"].map(lambda t: t.strftime("%Y-%m-%d"))
    conversions = df[df["converted"]].groupby("day").size()
    pricing_users = df[df["pricing"]].groupby("day")["user"].nunique()
    first, second = trend["results"]
    assert first["label"] == "Converted" and second["label"] == "Viewed pricing"
    assert first["days"] == days
    assert first["data"] == [float(conversions.get(d, 0)) for d in days]
    assert second["data"] == [float(pricing_users.get(d, 0)) for d in days]

    funnel = query({"kind": "FunnelsQuery", "dateRange": date_range, "funnelsFilter": {"funnelWindowInterval": 1},
                    "series": [{"kind": "ActionsNode", "id": pricing}, {"kind": "ActionsNode", "id": converted}]})
    assert_valid(funnel, "FunnelsQueryResponse")
    reached = [0, 0]
    for _, events in df.groupby("user"):
        seq = sorted([(r.timestamp.timestamp(), 0) for r in events.itertuples() if r.pricing]
                     + [(r.timestamp.timestamp(), 1) for r in events.itertuples() if r.converted])
        best, _ = funnel_person(seq, 2, 86400, "ordered")
        for j in range(best):
            reached[j] += 1
    assert [s["count"] for s in funnel["results"]] == reached and reached[1] > 0
    assert [s["name"] for s in funnel["results"]] == ["Viewed pricing", "Converted"]
