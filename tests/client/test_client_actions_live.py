"""``client.actions`` and actions named by name in the builders, against the real service (and a PostHog-shaped
remote for the listing PostHog answers without ``count``): frames and plots label series by the action's name,
and their numbers equal pandas over the events sent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import matplotlib
import pandas as pd
import pytest
from clienttesting import batch_client

import hoglab
from hoglab.client import Client
from hoglab.errors import InvalidArgument

matplotlib.use("Agg")

pytestmark = pytest.mark.xdist_group("client_live")

START = datetime(2025, 4, 1, tzinfo=UTC)
RANGE = {"date_from": "2025-04-01", "date_to": "2025-04-05"}


def _events() -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for k in range(10):
        for day in range(5):
            url = "https://x.example/pricing" if (k + day) % 2 else "https://x.example/home"
            rows.append({"event": "$pageview", "distinct_id": f"p{k}", "url": url, "plan": None,
                         "timestamp": START + timedelta(days=day, hours=k)})  # fmt: skip
        if k % 3 == 0:
            rows.append({"event": "signed_up", "distinct_id": f"p{k}", "url": None, "plan": "pro" if k % 2 else "free",
                         "timestamp": START + timedelta(days=3, hours=20)})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def captured(hoglab_service: Any) -> Iterator[tuple[Client, pd.DataFrame]]:
    events = _events()
    batch = [{"event": r.event, "distinct_id": r.distinct_id, "timestamp": r.timestamp.isoformat(),
              "properties": {k: v for k, v in (("$current_url", r.url), ("plan", r.plan)) if pd.notna(v)}}
             for r in events.itertuples()]  # fmt: skip
    with batch_client(hoglab_service, "client actions", batch, scopes=["*"]) as client:
        client.actions.create("Viewed pricing", event="$pageview", url="/pricing")
        client.actions.create("Signed up pro", event="signed_up", where={"plan": "pro"}, description="paid plan")
        yield client, events


def test_the_resource_lists_gets_updates_and_deletes(captured: tuple[Client, pd.DataFrame]) -> None:
    client, _ = captured
    listed = client.actions.list()
    assert set(listed["name"]) == {"Viewed pricing", "Signed up pro"} and str(listed["id"].dtype) == "Int64"
    paid = client.actions.get("Signed up pro")
    assert paid.description == "paid plan" and paid.steps[0]["properties"][0]["key"] == "plan"
    assert client.actions.get(paid.id).name == "Signed up pro"
    temp = client.actions.create("Temporary", steps=[{"event": "x"}, {"url": "^/a", "url_matching": "regex"}])
    assert [s["url_matching"] for s in temp.steps] == ["contains", "regex"]
    assert client.actions.update("Temporary", description="soon gone").description == "soon gone"
    assert client.actions.delete(temp.id).deleted is True
    assert "Temporary" not in set(client.actions.list()["name"])
    with pytest.raises(InvalidArgument, match="not a field"):
        client.actions.update(paid.id, colour="red")
    with pytest.raises(hoglab.errors.APIError, match="regular expression"):
        client.actions.create("Broken", url="(", url_matching="regex")


def test_a_trend_by_action_name_is_labelled_by_it_and_counts_its_events(captured) -> None:
    client, events = captured
    df = client.query(hoglab.trends(action=["Viewed pricing", "Signed up pro"], date_from=RANGE["date_from"],
                                    date_to=RANGE["date_to"]))  # fmt: skip
    pricing = events[(events["event"] == "$pageview") & events["url"].fillna("").str.contains("/pricing")]
    per_day = pricing.groupby(pricing["timestamp"].dt.strftime("%Y-%m-%d")).size()
    rows = df[df["label"] == "Viewed pricing"]
    assert rows["value"].tolist() == [float(per_day.get(d.strftime("%Y-%m-%d"), 0)) for d in rows["date"]]
    assert set(df["label"]) == {"Viewed pricing", "Signed up pro"}
    paid = df[df["label"] == "Signed up pro"]["value"].sum()
    assert paid == ((events["event"] == "signed_up") & (events["plan"] == "pro")).sum()
    ax = hoglab.plot_trends(df)
    assert {line.get_label() for line in ax.get_lines()} == {"Viewed pricing", "Signed up pro"}


def test_a_funnel_of_actions_named_by_name_and_id(captured) -> None:
    client, events = captured
    paid = client.actions.get("Signed up pro").id
    df = client.query(hoglab.funnel([hoglab.series(action="Viewed pricing"), hoglab.series(action=paid)],
                                    date_from=RANGE["date_from"], date_to=RANGE["date_to"]))  # fmt: skip
    assert df["name"].tolist() == ["Viewed pricing", "Signed up pro"]
    viewers = set(events[events["url"].fillna("").str.contains("/pricing")]["distinct_id"])
    converted = {r.distinct_id for r in events.itertuples() if r.event == "signed_up" and r.plan == "pro"
                 and any(t < r.timestamp for t in events[(events["distinct_id"] == r.distinct_id)
                                                         & events["url"].fillna("").str.contains("/pricing")]
                         ["timestamp"])}  # fmt: skip
    assert df["count"].tolist() == [len(viewers), len(converted)] and len(converted) > 0


def test_an_unknown_name_is_refused_before_any_query(captured) -> None:
    client, _ = captured
    with pytest.raises(InvalidArgument, match="no action named 'Nope'"):
        client.query(hoglab.trends(action="Nope"))


def test_experiment_metrics_name_actions_by_name(captured) -> None:
    client, _ = captured
    experiment = client.experiments.create(
        "Action metric", "action-metric", metrics=[hoglab.mean_metric(action="Signed up pro")],
        exposure_criteria={"exposure_config": {"kind": "ActionsNode", "name": "Viewed pricing"}},
    )  # fmt: skip
    ids = client.actions.ids_by_name()
    stored = client.get_json(client.path(f"experiments/{experiment.id}/"))
    assert stored["metrics"][0]["source"]["id"] == ids["Signed up pro"]
    assert stored["exposure_criteria"]["exposure_config"]["id"] == ids["Viewed pricing"]


def test_a_posthog_shaped_listing_without_count_resolves_names() -> None:
    # PostHog Cloud answers GET /actions/ with {"results": [...]} alone (remote mocked, as in the other tests).
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/actions/"):
            return httpx.Response(200, json={"results": [{"id": 41, "name": "Paid", "steps": [], "deleted": False}]})
        seen.append(__import__("json").loads(request.content))
        return httpx.Response(200, json={"results": [], "timezone": "UTC"})

    with Client("https://eu.posthog.example", "phx_x", 2, transport=httpx.MockTransport(handler),
                progress=False) as client:  # fmt: skip
        assert client.actions.list()["id"].tolist() == [41]
        client.query(hoglab.trends(action="Paid"))
    assert seen[0]["query"]["series"][0] == {"kind": "ActionsNode", "id": 41, "name": "Paid"}
