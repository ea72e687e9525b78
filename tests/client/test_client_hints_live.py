"""What the toolkit makes of the service's hints, against the real service: an answer's warning (a property the
project has never seen) is a Python warning and is kept in the frame, not a silent NULL; ``events(["*"])`` has a
column per event field and per property, equal to the events this test captured."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from clienttesting import batch_client

import hoglab
from hoglab.client import Client

pytestmark = pytest.mark.xdist_group("client_live")

START = datetime(2025, 3, 1, tzinfo=UTC)


def _batch() -> list[dict[str, Any]]:
    browsers = ("Chrome", "Safari", "Firefox")
    return [
        {"event": ("$pageview", "signup")[i % 2], "distinct_id": f"p{i % 4}",
         "timestamp": (START + timedelta(hours=i)).isoformat(),
         "properties": {"$browser": browsers[i % 3], "price": i * 1.5, **({"plan": "pro"} if i % 2 else {})}}
        for i in range(9)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def client(hoglab_service: Any) -> Iterator[Client]:
    with batch_client(hoglab_service, "client hints", _batch(), scopes=["query:read", "experiment:read"]) as opened:
        yield opened


def test_a_property_never_seen_warns_and_the_frame_keeps_it(client: Client) -> None:
    with pytest.warns(hoglab.QueryWarning, match=r"Property '\$browsr' has never been seen.*did you mean '\$browser'"):
        df = client.hogql("select properties.$browsr as b from events")
    assert df["b"].isna().all() and len(df) == 9
    assert df.attrs["warnings"] == [
        "Property '$browsr' has never been seen on this project's events: it reads as NULL; did you mean '$browser'?"
    ]
    assert df.attrs["metadata"]["warnings"][0]["fix"] == "$browser"
    # the same through client.query, and an async job's frame
    with pytest.warns(hoglab.QueryWarning, match="Event 'signupp' has never been seen"):
        assert client.query("select count() as n from events where event = 'signupp'")["n"].tolist() == [0]
    with pytest.warns(hoglab.QueryWarning, match=r"did you mean 'price'"):  # every row, one Arrow answer
        assert client.hogql("select properties.prise from events", all_rows=True).attrs["warnings"]
    job = client.hogql("select properties.plna from events", run_async=True)
    with pytest.warns(hoglab.QueryWarning, match="did you mean 'plan'"):
        assert job.result(timeout=30).attrs["warnings"]


def test_known_names_warn_nothing(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", hoglab.QueryWarning)
        df = client.hogql("select properties.$browser, properties.plan from events where event = 'signup'")
    assert "warnings" not in df.attrs and len(df) == 4


def test_events_star_has_a_column_per_property(client: Client) -> None:
    df = client.events(["*"], after="all", order_by="timestamp ASC")
    sent = pd.json_normalize(_batch())
    assert {"uuid", "event", "timestamp", "distinct_id", "properties.$browser", "properties.price",
            "properties.plan"} <= set(df.columns)  # fmt: skip
    assert "*" not in df.columns and str(df["timestamp"].dtype) == "datetime64[us, UTC]"
    assert df["timestamp"].tolist() == pd.to_datetime(sent["timestamp"], utc=True).tolist()
    assert df["event"].tolist() == sent["event"].tolist()
    assert df["properties.$browser"].tolist() == sent["properties.$browser"].tolist()
    assert df["properties.price"].tolist() == pytest.approx(sent["properties.price"].tolist())
    assert df["properties.plan"].isna().tolist() == sent["properties.plan"].isna().tolist()
    # a field also selected on its own is not repeated; flatten=False keeps the event as one dict column
    both = client.events(["*", "event"], after="all")
    assert both.columns.tolist().count("event") == 1
    kept = client.events(["*"], after="all", flatten=False)
    assert kept.columns.tolist() == ["*"] and set(kept["*"].iloc[0]["properties"]) <= {"$browser", "price", "plan"}


def test_results_of_an_unknown_experiment_say_which_exist(client: Client) -> None:
    with pytest.raises(hoglab.NotFound, match=r"Experiment 99 not found in project \d+ \(it has no experiments\)"):
        client.experiments.results(99)
