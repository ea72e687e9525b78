"""The insight builders through the client against the real service: trends, funnels, events and actors frames
equal pandas over the events this test captured (through ``/batch/``, as an SDK sends them)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from clienttesting import batch_client

import hoglab
from hoglab.client import Client

pytestmark = pytest.mark.xdist_group("client_live")

BROWSERS = ("Chrome", "Safari", "Firefox")
START = datetime(2025, 3, 1, tzinfo=UTC)
RANGE = {"date_from": "2025-03-01", "date_to": "2025-03-07"}


def _events() -> pd.DataFrame:
    """12 persons over a week: page views most days, some sign up on day 2, a few of those buy on day 4."""
    rows: list[dict[str, Any]] = []
    for k in range(12):
        person, browser = f"person-{k}", BROWSERS[k % 3]
        for day in range(7):
            for view in range((k + day) % 3):
                rows.append({"event": "$pageview", "distinct_id": person, "browser": browser,
                             "timestamp": START + timedelta(days=day, hours=9 + k % 5, minutes=view)})  # fmt: skip
        if k % 2 == 0:  # every person views on day 2 or 4 at the latest, before the sign-up
            rows.append({"event": "signup", "distinct_id": person, "browser": browser,
                         "timestamp": START + timedelta(days=4, hours=20)})  # fmt: skip
        if k % 4 == 0:
            rows.append({"event": "purchase", "distinct_id": person, "browser": browser,
                         "timestamp": START + timedelta(days=5, hours=12, seconds=k)})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def captured(hoglab_service: Any) -> Iterator[tuple[Client, pd.DataFrame]]:
    events = _events()
    batch = [
        {"event": r.event, "distinct_id": r.distinct_id, "timestamp": r.timestamp.isoformat(),
         "properties": {"$browser": r.browser}}
        for r in events.itertuples()
    ]  # fmt: skip
    with batch_client(hoglab_service, "client insights", batch) as client:
        yield client, events


def test_trends_by_browser_in_long_form(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.trends("$pageview", interval="day", breakdown="$browser", **RANGE)
    views = events[events.event == "$pageview"]
    expected = views.groupby([views.browser, views.timestamp.dt.floor("D")]).size()
    days = pd.date_range(START, periods=7, freq="D")
    expected = expected.reindex(pd.MultiIndex.from_product([BROWSERS, days]), fill_value=0)
    got = df.set_index(["breakdown_value", "date"])["value"]
    assert list(df.columns) == ["series", "label", "breakdown_value", "date", "value"]
    assert str(df["date"].dtype) == "datetime64[us, UTC]"
    assert got.sort_index().to_dict() == expected.astype(float).sort_index().to_dict()


def test_daily_active_users(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.query(hoglab.trends("$pageview", math="dau", **RANGE))
    views = events[events.event == "$pageview"]
    expected = views.groupby(views.timestamp.dt.floor("D")).distinct_id.nunique()
    assert df.set_index("date")["value"].to_dict() == expected.astype(float).to_dict()


def test_funnel_steps(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    df = client.funnel(["$pageview", "signup", "purchase"], window="14d", **RANGE)
    persons = [set(events[events.event == e].distinct_id) for e in ("$pageview", "signup", "purchase")]
    counts = [len(persons[0]), len(persons[0] & persons[1]), len(persons[0] & persons[1] & persons[2])]
    assert df["count"].tolist() == counts
    assert df["conversion_rate"].tolist() == pytest.approx([c / counts[0] for c in counts])
    assert df["drop_off"].tolist() == [0, counts[0] - counts[1], counts[1] - counts[2]]  # lost on the way to a step


def test_events_and_actors_tables(captured: tuple[Client, pd.DataFrame]) -> None:
    client, events = captured
    buys = client.events(["event", "distinct_id", "timestamp"], event="purchase", after="2025-03-01",
                         before="2025-03-08", order_by="timestamp")  # fmt: skip
    expected = events[events.event == "purchase"].sort_values("timestamp")
    assert buys["distinct_id"].tolist() == expected["distinct_id"].tolist()
    assert buys["timestamp"].tolist() == expected["timestamp"].tolist()
    buyers = client.actors(source=hoglab.funnel(["signup", "purchase"], **RANGE), step=2)
    assert len(buyers) == len(expected)
