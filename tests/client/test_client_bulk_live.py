"""``all_rows`` against the real service: one Arrow answer from ``POST /query/arrow/`` gives the same DataFrame
(values and dtypes) as the keyset/OFFSET pages a PostHog server is read with; the endpoint keeps /query's key,
scope, team guard and errors. The events are captured through ``/batch/``, as an SDK sends them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd
import pyarrow as pa
import pytest

import hoglab
from hoglab.client import Client

pytestmark = pytest.mark.xdist_group("client_live")

N = 12_500  # past the 10,000-row cap of one JSON answer
START = datetime(2025, 3, 1, tzinfo=UTC)
WIDE = """
    select uuid, event, distinct_id, timestamp, properties.$browser as browser, properties.n as n_text,
           toInt64(properties.n) as n, toFloat64OrNull(properties.price) as price, toDate(timestamp) as day,
           properties.flag = 'yes' as flag, [toInt64(properties.n) % 3, 7] as pair, toDateTime(timestamp) as second,
           toUInt64(toInt64(properties.n) * 1000) as big, properties as props
    from events {where} order by timestamp
"""


def _batch() -> list[dict[str, Any]]:
    out = []
    for i in range(N):
        props: dict[str, Any] = {"$browser": ("Chrome", "Safari", None)[i % 3], "n": i}
        if i % 5:
            props["price"] = (i % 7) * 1.25
        if i % 4 == 0:
            props["flag"] = "yes"
        # 3 events per second: keyset pages meet ties at their boundaries
        stamp = START + timedelta(seconds=i // 3)
        out.append({"event": ("$pageview", "signup")[i % 2], "distinct_id": f"u{i % 97}", "properties": props,
                    "timestamp": stamp.isoformat()})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def bulk_project(hoglab_service: Any) -> Iterator[tuple[Any, str, int]]:
    store = hoglab_service.state.store
    project = store.projects.create("bulk rows")
    other = store.projects.create("bulk rows, someone else's")
    key = store.keys.create(store.users.default().id, ["query:read"], [project.id])[1]
    for target, batch in ((project, _batch()), (other, _batch()[:50])):
        answer = httpx.post(
            f"{hoglab_service.url}/batch/", json={"api_key": target.api_token, "batch": batch}, timeout=120
        )
        assert answer.status_code == 200, answer.text
    yield hoglab_service, key, project.id


def _client(bulk_project: tuple[Any, str, int]) -> Client:
    service, key, project_id = bulk_project
    return Client(service.url, key, project_id, progress=False)


def _paged(client: Client, sql: str, **kwargs: Any) -> pd.DataFrame:
    client._bulk_rows = False  # as against PostHog: keyset pages
    try:
        return client.hogql(sql, all_rows=True, **kwargs)
    finally:
        client._bulk_rows = None


def _by_n(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("n", kind="stable").reset_index(drop=True)


def test_bulk_frame_equals_the_paged_frame(bulk_project: tuple[Any, str, int]) -> None:
    with _client(bulk_project) as client:
        sql = WIDE.format(where="")
        bulk = client.hogql(sql, all_rows=True)
        assert client._bulk_rows is True
        paged = _paged(client, sql)
    assert paged.attrs["pages"] >= 2 and bulk.attrs["pages"] == 1
    bulk, paged = _by_n(bulk), _by_n(paged)  # rows that share a timestamp come in either order
    assert len(bulk) == N and bulk["n"].tolist() == list(range(N))
    pd.testing.assert_frame_equal(bulk, paged, check_exact=True)
    assert bulk.dtypes.astype(str).tolist() == paged.dtypes.astype(str).tolist()
    assert str(bulk["timestamp"].dtype) == "datetime64[us, UTC]" and str(bulk["price"].dtype) == "Float64"
    # an independent look at the values: what was captured
    expected_price = [(i % 7) * 1.25 if i % 5 else None for i in range(N)]
    assert [None if pd.isna(v) else v for v in bulk["price"]] == expected_price


def test_bulk_with_values_limit_and_parse_json(bulk_project: tuple[Any, str, int]) -> None:
    with _client(bulk_project) as client:
        sql = WIDE.format(where="where event = {e}")
        bulk = client.hogql(sql, {"e": "signup"}, all_rows=True, limit=10_001, parse_json=["props"])
        paged = _paged(client, sql, values={"e": "signup"}, limit=10_001, parse_json=["props"])
    assert len(bulk) == 6_250 and set(bulk["event"]) == {"signup"}
    pd.testing.assert_frame_equal(_by_n(bulk), _by_n(paged), check_exact=True)
    first = _by_n(bulk)["props"].iloc[0]
    assert isinstance(first, dict) and first["n"] == 1


def test_limit_past_the_cap_in_either_path(bulk_project: tuple[Any, str, int]) -> None:
    with _client(bulk_project) as client:
        sql = "select n from (select toInt64(properties.n) as n, timestamp from events) order by timestamp"
        # 10,002 rows end at a whole second (3 events a second), so which rows come first is not left to ties
        bulk = client.hogql(sql, all_rows=True, limit=10_002)
        paged = _paged(client, "select toInt64(properties.n) as n, timestamp from events order by timestamp",
                       limit=10_002)  # fmt: skip
    assert sorted(paged["n"].tolist()) == sorted(bulk["n"].tolist()) == list(range(10_002))


def test_bulk_endpoint_guards_the_team_and_answers_errors_as_query(bulk_project: tuple[Any, str, int]) -> None:
    service, key, project_id = bulk_project
    with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}) as http:
        path = f"/api/projects/{project_id}/query/arrow/"
        body = {"query": {"kind": "HogQLQuery", "query": "select count() as c, count(distinct team_id) from events"}}
        refused = http.post(path, json=body)
        assert refused.status_code == 400 and refused.json()["type"] == "validation_error"
        answer = http.post(path, json={"query": {"kind": "HogQLQuery", "query": "select count() as c from events"}})
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/vnd.apache.arrow.stream"
        assert pa.ipc.open_stream(answer.content).read_all().column("c").to_pylist() == [N]  # not the other's 50
        trends = http.post(path, json={"query": {"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}})
        assert trends.status_code == 400 and trends.json()["attr"] == "query__kind"
        assert http.post(f"/api/projects/{project_id + 1}/query/arrow/", json=body).status_code in (403, 404)
        assert httpx.post(f"{service.url}{path}", json=body).status_code == 401


def test_a_hogql_mistake_raises_not_falls_back(bulk_project: tuple[Any, str, int]) -> None:
    with _client(bulk_project) as client:
        with pytest.raises(hoglab.QueryError) as info:
            client.hogql("select nope from events", all_rows=True)
        assert info.value.status == 400 and "nope" in info.value.detail
        assert client._bulk_rows is not False
