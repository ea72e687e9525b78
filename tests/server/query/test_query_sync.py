"""POST /query with HogQL, synchronously: answers against pandas over the inserted events, PostHog's response
fields, the 100/101 default limit, explicit limits and the 10,000-row cap, values, filters, the kind route."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pytest
from querytesting import Seeded

HOGQL = {"kind": "HogQLQuery", "query": "select 1"}


def test_count_by_event_matches_pandas(seeded: Seeded) -> None:
    response = seeded.a.query("select event, count() as c from events group by event order by event")
    assert response.status_code == 200, response.text
    body = response.json()
    expected = seeded.frame.groupby("event").size().sort_index()
    assert body["results"] == [[event, int(count)] for event, count in expected.items()]
    assert body["columns"] == ["event", "c"]
    assert body["types"] == [["event", "LowCardinality(String)"], ["c", "UInt64"]]


def test_the_answer_has_posthogs_fields(seeded: Seeded) -> None:
    body = seeded.a.query("select count() from events", refresh="force_blocking").json()
    assert body["results"] == [[len(seeded.frame)]]
    assert body["hogql"] == "SELECT count() FROM events LIMIT 101"
    assert "equals(__hq_e.`team_id`, " + str(seeded.a.id) + ")" in body["clickhouse"]
    assert body["query"] == "select count() from events"
    assert (body["hasMore"], body["limit"], body["offset"]) == (False, 100, 0)
    assert body["error"] is None and body["query_status"] is None
    assert body["is_cached"] is False and body["cache_key"].startswith(f"cache_{seeded.a.id}_")
    assert body["timezone"] == "UTC" and body["modifiers"]["personsOnEventsMode"]
    steps = [t["k"] for t in body["timings"]]
    assert steps[0] == "./compile" and "./execute" in steps and steps[-1] == "."
    last = datetime.fromisoformat(body["last_refresh"])
    assert datetime.fromisoformat(body["next_allowed_client_refresh"]) - last == timedelta(minutes=1)
    assert datetime.fromisoformat(body["cache_target_age"]) - last == timedelta(minutes=15)


def test_types_are_clickhouse_name_type_pairs(seeded: Seeded) -> None:
    body = seeded.a.query(
        "select timestamp, distinct_id, properties.plan as plan, toFloat(properties.price) as price, "
        "uuid, [1, 2] as arr, person_id from events order by timestamp limit 3"
    ).json()
    assert body["types"] == [
        ["timestamp", "DateTime64(6, 'UTC')"],
        ["distinct_id", "String"],
        ["plan", "Nullable(String)"],
        ["price", "Nullable(Float64)"],
        ["uuid", "UUID"],
        ["arr", "Array(UInt8)"],
        ["person_id", "UUID"],
    ]
    first = seeded.frame.sort_values("timestamp").iloc[0]
    row = body["results"][0]
    assert pd.Timestamp(row[0]) == first["timestamp"]
    assert row[1:4] == [first["distinct_id"], first["plan"], first["price"]]
    assert row[5] == [1, 2] and row[6] == first["person_id"]


def test_properties_filter_and_group_by_match_pandas(seeded: Seeded) -> None:
    rows = seeded.a.rows(
        "select properties.$browser as browser, count() as c, sum(toFloat(properties.price)) as revenue "
        "from events where event = 'purchase' and properties.plan = 'pro' group by browser order by browser"
    )
    df = seeded.frame[(seeded.frame.event == "purchase") & (seeded.frame.plan == "pro")]
    expected = df.groupby("browser").agg(c=("event", "size"), revenue=("price", "sum")).sort_index()
    assert rows == [[b, int(r.c), pytest.approx(r.revenue)] for b, r in expected.iterrows()]


def test_daily_unique_users_match_pandas(seeded: Seeded) -> None:
    rows = seeded.a.rows(
        "select toDate(timestamp) as day, count(distinct person_id) as users from events group by day order by day"
    )
    df = seeded.frame.assign(day=seeded.frame.timestamp.dt.strftime("%Y-%m-%d"))
    expected = df.groupby("day").person_id.nunique().sort_index()
    assert rows == [[day, int(n)] for day, n in expected.items()]


def test_no_limit_gives_100_rows_and_has_more(seeded: Seeded) -> None:
    body = seeded.a.query("select properties.n as n from events order by timestamp").json()
    assert [r[0] for r in body["results"]] == [str(i) for i in range(100)]
    assert (body["hasMore"], body["limit"], body["offset"]) == (True, 100, 0)
    assert body["hogql"].endswith("LIMIT 101")

    exactly = seeded.a.query("select number from numbers(100)").json()
    assert len(exactly["results"]) == 100 and exactly["hasMore"] is False
    one_more = seeded.a.query("select number from numbers(101)").json()
    assert [r[0] for r in one_more["results"]] == list(range(100)) and one_more["hasMore"] is True
    single = seeded.a.query("select number from numbers(1)").json()
    assert single["results"] == [[0]] and single["hasMore"] is False


def test_offset_without_limit_pages_through(seeded: Seeded) -> None:
    body = seeded.a.query("select properties.n from events order by timestamp offset 350").json()
    assert [r[0] for r in body["results"]] == [str(i) for i in range(350, 400)]
    assert (body["hasMore"], body["limit"], body["offset"]) == (False, 100, 350)


def test_explicit_limit_leaves_has_more_limit_offset_null(seeded: Seeded) -> None:
    body = seeded.a.query("select number from numbers(500) limit 250").json()
    assert [r[0] for r in body["results"]] == list(range(250))
    assert (body["hasMore"], body["limit"], body["offset"]) == (None, None, None)
    assert body["hogql"].endswith("LIMIT 250")


@pytest.mark.parametrize(
    ("hogql", "first", "rows"),
    [
        ("select number from numbers(20000) limit 15000", 0, 10_000),
        ("select number from numbers(10001) limit 10001", 0, 10_000),
        ("select number from numbers(20000) order by number limit 100000 offset 15000", 15_000, 5_000),
        ("select * from (select number from numbers(30000)) limit 30000", 0, 10_000),
    ],
)
def test_any_limit_is_capped_at_10000_rows(seeded: Seeded, hogql: str, first: int, rows: int) -> None:
    body = seeded.a.query(hogql).json()
    assert len(body["results"]) == rows
    assert body["results"][0] == [first] and body["results"][-1] == [first + rows - 1]
    assert body["hasMore"] is None


def test_values_are_bound_as_literals(seeded: Seeded) -> None:
    rows = seeded.a.rows(
        "select count() from events where event = {e} and properties.plan = {p}", values={"e": "signup", "p": "free"}
    )
    df = seeded.frame
    assert rows == [[int(((df.event == "signup") & (df.plan == "free")).sum())]]
    hostile = seeded.a.rows("select count() from events where event = {e}", values={"e": "x' or 1=1 --"})
    assert hostile == [[0]]
    unknown = seeded.a.query("select {nope}", values={"e": 1})
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]


def test_filters_placeholder(seeded: Seeded) -> None:
    filters = {
        "properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}],
        "dateRange": {"date_from": "2025-03-05T00:00:00", "date_to": "2025-03-10T12:00:00"},
    }
    rows = seeded.a.rows("select count() from events where {filters}", filters=filters)
    df = seeded.frame
    chosen = (
        (df.browser == "Chrome")
        & (df.timestamp >= pd.Timestamp("2025-03-05T00:00:00Z"))
        & (df.timestamp <= pd.Timestamp("2025-03-10T12:00:00Z"))
    )
    assert rows == [[int(chosen.sum())]] and 0 < chosen.sum() < len(df)
    assert seeded.a.rows("select count() from events where {filters}") == [[len(df)]]


def test_filters_override_applies_to_hogql(seeded: Seeded) -> None:
    response = seeded.a.http.post(
        seeded.a.path(),
        json={
            "query": {"kind": "HogQLQuery", "query": "select count() from events where {filters}"},
            "filters_override": {"properties": [{"key": "plan", "value": "pro", "type": "event"}]},
            "refresh": "force_blocking",
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["results"] == [[int((seeded.frame.plan == "pro").sum())]]


def test_kind_in_the_path(seeded: Seeded) -> None:
    body = {"query": {"kind": "HogQLQuery", "query": "select 1 as one"}}
    assert seeded.a.http.post(seeded.a.path("HogQLQuery/"), json=body).json()["results"] == [[1]]
    mismatch = seeded.a.http.post(seeded.a.path("TrendsQuery/"), json=body)
    assert mismatch.status_code == 400
    assert mismatch.json()["detail"] == (
        'Query kind mismatch: path kind "TrendsQuery" does not match body kind "HogQLQuery".'
    )


@pytest.mark.parametrize(
    ("body", "attr", "detail"),
    [
        ({}, "query", "This field is required."),
        ({"query": {"kind": "FooQuery"}}, "query__kind", "Unsupported query kind: FooQuery"),
        ({"query": {"kind": "HogQLQuery", "query": ""}}, "query__query", None),
        ({"query": {"kind": "HogQLQuery", "query": "select 1", "bogus": 1}}, "query__bogus", None),
        ({"query": {"kind": "HogQLQuery", "query": "select 1"}, "refresh": "sometimes"}, "refresh", None),
        ({"query": {"kind": "HogQLQuery", "query": "select 1"}, "client_query_id": "a b"}, "client_query_id", None),
        ({"query": {"kind": "HogQLQuery", "query": "select 1", "variables": {"x": {}}}}, None, None),
        ({"query": HOGQL, "variables_override": {"v": 1}}, "variables_override", None),
    ],
)
def test_invalid_requests_are_400_naming_the_field(
    seeded: Seeded, body: dict, attr: str | None, detail: str | None
) -> None:
    response = seeded.a.http.post(seeded.a.path(), json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "validation_error" and error["attr"] == attr
    if detail is not None:
        assert error["detail"] == detail


def test_malformed_json_is_a_parse_error(seeded: Seeded) -> None:
    response = seeded.a.http.post(seeded.a.path(), content=b'{"query": ', headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["code"] == "parse_error"


def test_scope_query_read_is_required(seeded: Seeded) -> None:
    reader = seeded.a.client(seeded.a.new_key(["query:read"]))
    assert reader.post(seeded.a.path(), json={"query": {"kind": "HogQLQuery", "query": "select 1"}}).status_code == 200
    other = seeded.a.client(seeded.a.new_key(["experiment:write"]))
    denied = other.post(seeded.a.path(), json={"query": {"kind": "HogQLQuery", "query": "select 1"}})
    assert denied.status_code == 403
    assert denied.json()["detail"] == "API key missing required scope 'query:read'"


def test_openapi_lists_the_query_operations(seeded: Seeded) -> None:
    document = seeded.a.http.get("/api/schema/").json()
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    base = "/api/projects/{project_id}/query/"
    assert {
        ("post", base),
        ("post", base + "{kind}/"),
        ("get", base + "{query_id}/"),
        ("delete", base + "{query_id}/"),
        ("get", base + "draft_sql/"),
    } <= operations
    create = document["paths"][base]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/QueryRequest")
    assert {"200", "202", "400", "429"} <= set(create["responses"])
    assert "204" in document["paths"][base + "{query_id}/"]["delete"]["responses"]


def test_integers_beyond_64_bits_are_a_value_like_any_other(seeded: Seeded) -> None:
    response = seeded.a.query("select {n} > 1 as big", values={"n": 10**30})
    assert response.status_code == 200, response.text
    assert response.json()["results"] == [[1]]
