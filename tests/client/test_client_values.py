"""HogQL ``values`` of every common Python, numpy and pandas type reach a REAL hoglab service as the literals
meant: datetimes as wall-clock times of the project's zone (expected counts from pandas on the same events)."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

import hoglab
from hoglab.client import Client
from hoglab.client._values import encode_value

ZONE = "America/Los_Angeles"
START = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


@pytest.fixture
def zoned(request: pytest.FixtureRequest) -> Any:
    """A project in Los Angeles time with 48 hourly events, its client, and the events' UTC timestamps."""
    from hoglab.server.ingest import Ingestor

    project = request.getfixturevalue("make_project")(timezone=ZONE)
    stamps = [START + dt.timedelta(hours=i) for i in range(48)]
    events = [
        {"event": "tick", "distinct_id": f"u{i % 5}", "properties": {"i": i}, "timestamp": s.isoformat()}
        for i, s in enumerate(stamps)
    ]
    engine = project.service.state.engine
    Ingestor.for_engine(engine).capture_batch(project.id, events)
    client = Client(str(project.http.base_url).rstrip("/"), project.key, project.id, progress=False)
    yield client, pd.Series(pd.to_datetime(stamps, utc=True))
    client.close()


def _count(client: Client, where: str, values: dict[str, Any]) -> int:
    return int(client.hogql(f"select count() as n from events where {where}", values)["n"].iloc[0])


def test_aware_datetimes_are_instants(zoned: Any) -> None:
    client, stamps = zoned
    cut = dt.datetime(2025, 3, 1, 20, 30, tzinfo=dt.UTC)
    expected = int((stamps >= cut).sum())
    assert 0 < expected < len(stamps)
    assert _count(client, "timestamp >= {cut}", {"cut": cut}) == expected
    assert _count(client, "timestamp >= {cut}", {"cut": pd.Timestamp(cut).tz_convert("Asia/Tokyo")}) == expected


def test_values_bind_on_every_page(zoned: Any) -> None:
    client, stamps = zoned
    cut = pd.Timestamp("2025-03-02 09:30", tz="Asia/Tokyo")
    wanted = np.array([1, 2, 30, 31, 40, 47])
    expected = [int(i) for i in wanted if stamps[i] >= cut]
    assert 0 < len(expected) < len(wanted)
    sql = "select toInt(properties.i) as i, timestamp from events where timestamp >= {cut} and i in {wanted}"
    values = {"cut": cut, "wanted": wanted}
    assert client.hogql(sql, values, all_rows=True).sort_values("i")["i"].tolist() == expected
    pages = list(client.hogql_pages(f"{sql} order by timestamp", values, page_size=2))  # keyset pages
    assert [i for page in pages for i in page["i"].tolist()] == expected and len(pages) >= 2


def test_naive_datetimes_and_dates_are_project_wall_clock(zoned: Any) -> None:
    client, stamps = zoned
    local = stamps.dt.tz_convert(ZONE).dt.tz_localize(None)
    naive = dt.datetime(2025, 3, 1, 6, 0)
    assert _count(client, "timestamp >= {t}", {"t": naive}) == int((local >= naive).sum())
    numpy_naive = np.datetime64("2025-03-01T20:30")
    assert _count(client, "timestamp >= {t}", {"t": numpy_naive}) == int((local >= pd.Timestamp(numpy_naive)).sum())
    day = dt.date(2025, 3, 1)
    assert _count(client, "toDate(timestamp) = {d}", {"d": day}) == int((local.dt.date == day).sum())


def test_numbers_lists_and_sets(zoned: Any) -> None:
    client, _ = zoned
    wanted = {3, 5, 40}
    for values in ({"s": wanted}, {"s": np.array(sorted(wanted))}, {"s": pd.Series(sorted(wanted))}):
        assert _count(client, "toInt(properties.i) in {s}", values) == 3
    assert _count(client, "toInt(properties.i) < {n}", {"n": np.int64(10)}) == 10
    assert _count(client, "toInt(properties.i) < {n}", {"n": Decimal("10")}) == 10
    assert _count(client, "toFloat(properties.i) < {n}", {"n": np.float32(2.5)}) == 3


def test_the_project_zone_is_asked_once_and_only_for_aware_datetimes(make_project: Any) -> None:
    project = make_project(timezone=ZONE)
    paths: list[str] = []

    class Recording(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            paths.append(request.url.path)
            return super().handle_request(request)

    url = str(project.http.base_url).rstrip("/")
    with Client(url, project.key, project.id, transport=Recording(), progress=False) as client:
        naive = dt.datetime(2025, 3, 1, 12, 0)
        assert client.hogql("select {t} as t", {"t": naive})["t"].tolist() == ["2025-03-01 12:00:00.000000"]
        assert f"/api/projects/{project.id}/" not in paths  # no aware datetime: nothing to ask
        aware = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
        wall = pd.Timestamp(aware).tz_convert(ZONE).strftime("%Y-%m-%d %H:%M:%S.%f")
        for c in (client, client, client.for_project(project.id)):  # %%hogql --project makes such a copy per cell
            assert c.hogql("select {t} as t", {"t": [aware]})["t"].tolist() == [[wall]]
        assert paths.count(f"/api/projects/{project.id}/") == 1


def test_unsupported_values_are_refused_before_sending() -> None:
    with pytest.raises(hoglab.InvalidArgumentType, match=r"values\['x'\]: a dict cannot be bound"):
        encode_value("x", {"a": 1})
    for infinite in (float("inf"), -np.inf, Decimal("Infinity")):  # JSON would carry them as null
        with pytest.raises(hoglab.InvalidArgument, match=r"values\['x'\]: -?inf cannot be bound"):
            encode_value("x", infinite)
    assert [encode_value("x", v) for v in (float("nan"), np.float32("nan"), pd.NA)] == [None, None, None]
    assert encode_value("u", uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    assert encode_value("t", pd.NaT) is None and encode_value("t", np.datetime64("NaT")) is None
