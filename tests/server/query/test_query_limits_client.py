"""The Create-query rate limit (429 + Retry-After, per key, only POST /query charged) on the tight app, and the
notebook client end to end against the endpoint."""

from __future__ import annotations

import httpx
import pandas as pd
import pytest
from querytesting import SLOW_HOGQL, TIGHT, Seeded, new_project

import hoglab
from hoglab.client import Client


def test_create_query_is_rate_limited_per_key(tight) -> None:
    project = new_project(tight, "throttled queries")  # the tight app allows 5 queries per hour and key
    try:
        allowed = int(TIGHT["query_rate_limit"].split("/")[0])
        body = {"query": {"kind": "HogQLQuery", "query": "select 1"}, "refresh": "force_async"}
        answers = [project.http.post(project.path(), json=body) for _ in range(allowed)]
        assert [a.status_code for a in answers] == [202] * allowed
        throttled = project.http.post(project.path(), json=body)
        assert throttled.status_code == 429
        error = throttled.json()
        assert (error["type"], error["code"]) == ("throttled_error", "throttled")
        wait = int(throttled.headers["Retry-After"])
        assert 3600 / allowed - 5 <= wait <= 3600 / allowed + 1
        # Reading statuses is not charged to the query bucket.
        for answer in answers:
            assert project.wait(answer.json()["query_status"]["id"]).status_code == 200
        # Another key of the same project has its own bucket.
        other = project.client(project.new_key())
        assert other.post(project.path(), json=body).status_code == 202
    finally:
        project.close()


def test_client_hogql_against_the_endpoint(seeded: Seeded) -> None:
    with Client(seeded.a.service.url, seeded.a.key, seeded.a.id, progress=False) as client:
        df = client.hogql("select event, count() as c from events group by event order by event")
        expected = seeded.frame.groupby("event").size().sort_index()
        assert df["event"].tolist() == expected.index.tolist()
        assert df["c"].tolist() == expected.tolist() and str(df["c"].dtype) == "Int64"

        rows = client.hogql("select timestamp, properties.plan as plan from events order by timestamp", limit=5)
        assert str(rows["timestamp"].dtype) == "datetime64[us, UTC]"
        assert rows["timestamp"].tolist() == seeded.frame.sort_values("timestamp").timestamp.head(5).tolist()

        bound = client.hogql("select count() as n from events where event = {e}", {"e": "purchase"})
        assert bound["n"].tolist() == [int((seeded.frame.event == "purchase").sum())]

        everything = client.hogql("select timestamp, properties.n as n from events order by timestamp", all_rows=True)
        assert len(everything) == len(seeded.frame)

        with pytest.raises(hoglab.QueryError) as info:
            client.hogql("select nope from events")
        assert info.value.status == 400 and "nope" in info.value.detail


def test_client_submit_waits_and_cancels(seeded: Seeded) -> None:
    with Client(seeded.a.service.url, seeded.a.key, seeded.a.id, progress=False) as client:
        job = client.submit("select properties.$browser as browser, count() as c from events group by browser")
        df = job.result(timeout=30)
        expected = seeded.frame.groupby("browser").size()
        assert dict(zip(df["browser"], df["c"], strict=True)) == expected.to_dict()

        async_df = client.hogql("select count() as n from events", run_async=True).result(timeout=30)
        assert async_df["n"].tolist() == [len(seeded.frame)]

        slow = client.submit(SLOW_HOGQL)
        slow.cancel()
        with pytest.raises(hoglab.QueryError, match="cancelled"):
            slow.result(timeout=30)


def test_client_sees_the_same_answer_as_raw_http(seeded: Seeded) -> None:
    hogql = "select distinct_id, count() as c from events group by distinct_id order by c desc, distinct_id limit 5"
    raw = httpx.post(
        f"{seeded.a.service.url}{seeded.a.path()}",
        json={"query": {"kind": "HogQLQuery", "query": hogql}},
        headers={"Authorization": f"Bearer {seeded.a.key}"},
    ).json()
    with Client(seeded.a.service.url, seeded.a.key, seeded.a.id, progress=False) as client:
        df = client.hogql(hogql)
    assert df.values.tolist() == raw["results"]
    assert isinstance(df, pd.DataFrame) and df.attrs.get("hogql") in (None, raw["hogql"])
