"""client.hogql / read_hogql / paging, against a scripted REMOTE PostHog (httpx.MockTransport).

The remote here evaluates just enough of the paging statements the client sends (LIMIT/OFFSET, the keyset
cursor) over an in-memory table to answer like PostHog Cloud would, including its 50,000-row answers.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd
import pytest
from clienttesting import Remote, hogql_answer

import hoglab
from hoglab.client import Client

QUERY = "/api/projects/2/query/"
TYPES = [("timestamp", "DateTime64(6, 'UTC')"), ("event", "String"), ("n", "UInt64")]


def _table(rows: int, ties_every: int = 0) -> list[list[Any]]:
    start = datetime(2025, 6, 1, tzinfo=UTC)
    out = []
    for i in range(rows):
        step = i // ties_every if ties_every else i  # several rows per timestamp when ties_every > 1
        ts = start + timedelta(seconds=step)
        out.append([ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), f"e{i % 3}", i])
    return out


class PagingRemote:
    """Answers the client's paging statements over ``table`` (ordered by timestamp), with a row cap."""

    def __init__(self, table: list[list[Any]], cap: int = 50_000) -> None:
        self.table = table
        self.cap = cap
        self.statements: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sql, values = body["query"]["query"], body["query"].get("values") or {}
        self.statements.append((sql, values))
        limit = min(int(re.search(r"LIMIT (\d+)", sql).group(1)), self.cap)  # type: ignore[union-attr]
        offset_match = re.search(r"OFFSET (\d+)", sql)
        rows = self.table
        if "_hoglab_cursor" in values:
            cursor = values["_hoglab_cursor"]
            rows = [r for r in rows if r[0].replace("T", " ").rstrip("Z") >= cursor]
        if offset_match:
            rows = rows[int(offset_match.group(1)) :]
        return httpx.Response(200, json=hogql_answer(rows[:limit], TYPES))


def test_hogql_answer_becomes_a_typed_frame(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer(_table(3), TYPES, hasMore=True)))
    df = client.hogql("select timestamp, event, n from events where event = {e}", {"e": "e1"}, limit=3)
    assert df.dtypes.astype(str).tolist() == ["datetime64[us, UTC]", "string", "Int64"]
    assert df.attrs["hasMore"] is True and df.attrs["clickhouse"].endswith("readonly=2")
    assert "results" not in df.attrs
    sent = remote.json_bodies("POST")[0]
    assert sent["query"] == {
        "kind": "HogQLQuery",
        "query": "select timestamp, event, n from events where event = {e} LIMIT 3",
        "values": {"e": "e1"},
    }
    assert re.fullmatch(r"[0-9a-f]{32}", sent["client_query_id"])
    assert "async" not in sent and "refresh" not in sent


def test_limit_wraps_a_statement_that_has_its_own(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer([], TYPES)))
    df = client.hogql("select * from events limit 50;", limit=10)
    assert remote.json_bodies("POST")[0]["query"]["query"] == "SELECT * FROM (select * from events limit 50) LIMIT 10"
    assert len(df) == 0 and df.dtypes.astype(str).tolist() == ["datetime64[us, UTC]", "string", "Int64"]


def test_wrong_arguments_fail_before_any_request(client: Client, remote: Remote) -> None:
    with pytest.raises(hoglab.InvalidArgument, match="limit"):
        client.hogql("select 1", limit=0)
    with pytest.raises(hoglab.InvalidArgument, match="sql"):
        client.hogql("   ")
    with pytest.raises(TypeError, match="values"):
        client.hogql("select 1", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(hoglab.InvalidArgument, match="output"):
        remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer([], TYPES)))
        client.hogql("select 1", output="excel")  # type: ignore[call-overload]
    assert len(remote.requests) == 1  # only the last call reached the server; the output check runs on the answer


def test_50000_row_cloud_answer(client: Client, remote: Remote) -> None:
    """PostHog Cloud caps an answer at 50,000 rows (10,000 in the contract): one answer, one frame."""
    table = _table(50_000)
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer(table, TYPES, hasMore=True)))
    df = client.hogql("select timestamp, event, n from events")
    assert len(df) == 50_000 and df["n"].iloc[-1] == 49_999
    assert df["timestamp"].is_monotonic_increasing


def test_all_rows_pages_with_offset(client: Client, remote: Remote) -> None:
    paging = PagingRemote(_table(12_345), cap=10_000)
    remote.add("POST", QUERY, paging)
    df = client.hogql("select timestamp, event, n from events", all_rows=True)
    assert df["n"].tolist() == list(range(12_345))
    assert [s for s, _ in paging.statements] == [
        f"select timestamp, event, n from events LIMIT 10000 OFFSET {o}" for o in (0, 10_000)
    ]
    assert df.attrs["pages"] == 2 and df.attrs["hasMore"] is False


def test_a_silent_server_cap_does_not_end_the_listing(client: Client, remote: Remote) -> None:
    """Asking 50,000 rows of a server capped at 10,000: a 10,000-row page is not taken as the last."""
    paging = PagingRemote(_table(12_000), cap=10_000)
    remote.add("POST", QUERY, paging)
    pages = list(client.hogql_pages("select timestamp, event, n from events", page_size=50_000))
    assert [len(p) for p in pages] == [10_000, 2_000]


def test_hogql_pages_offset_statements(client: Client, remote: Remote) -> None:
    paging = PagingRemote(_table(25))
    remote.add("POST", QUERY, paging)
    pages = list(client.hogql_pages("select timestamp, event, n from events", page_size=10))
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [s for s, _ in paging.statements] == [
        f"select timestamp, event, n from events LIMIT 10 OFFSET {o}" for o in (0, 10, 20)
    ]


def test_keyset_paging_on_timestamp_keeps_ties(client: Client, remote: Remote) -> None:
    """Rows sharing a timestamp across a page boundary are neither lost nor repeated (and no OFFSET is sent,
    which PostHog refuses for personal API keys)."""
    table = _table(23, ties_every=3)
    paging = PagingRemote(table)
    remote.add("POST", QUERY, paging)
    pages = list(client.hogql_pages("select timestamp, event, n from events order by timestamp", page_size=5))
    df = pd.concat(pages, ignore_index=True)
    assert sorted(df["n"].tolist()) == list(range(23))
    assert all("OFFSET" not in s for s, _ in paging.statements)
    first, second = paging.statements[0], paging.statements[1]
    assert first[0] == "SELECT * FROM (select timestamp, event, n from events) ORDER BY timestamp ASC LIMIT 5"
    assert "WHERE timestamp >= {_hoglab_cursor}" in second[0]
    assert second[1]["_hoglab_cursor"] == "2025-06-01 00:00:01.000000"  # basic format, the column's time zone


def test_keyset_gives_up_when_a_page_is_all_one_instant(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, PagingRemote(_table(12, ties_every=12)))
    with pytest.raises(hoglab.HoglabError, match="share the timestamp"):
        list(client.hogql_pages("select timestamp, event, n from events order by timestamp", page_size=5))


def test_all_rows_over_cloud_sized_pages(client: Client, remote: Remote) -> None:
    """70,000 rows from a REMOTE PostHog Cloud in two keyset pages of up to 50,000."""
    paging = PagingRemote(_table(70_000))
    remote.add("POST", QUERY, paging)
    pages = list(client.hogql_pages("select timestamp, event, n from events order by timestamp", page_size=50_000))
    assert [len(p) for p in pages] == [50_000, 20_000]
    assert pd.concat(pages)["n"].is_unique


def test_all_rows_waits_out_rate_limits(client: Client, remote: Remote, clock: Any) -> None:
    throttled = httpx.Response(
        429, json={"type": "throttled_error", "code": "throttled", "detail": "slow"}, headers={"Retry-After": "30"}
    )
    paging = PagingRemote(_table(15))
    remote.add("POST", QUERY, throttled, paging)
    df = client.hogql("select timestamp, event, n from events", all_rows=True)
    assert len(df) == 15 and clock.sleeps and clock.sleeps[0] >= 30


def test_output_arrow_and_polars(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer(_table(2), TYPES)))
    table = client.hogql("select 1", output="arrow")
    assert str(table.schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    frame = client.hogql("select 1", output="polars")
    assert frame.shape == (2, 3) and str(frame.schema["n"]) == "Int64"


def test_read_hogql_uses_the_given_client(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json=hogql_answer(_table(1), TYPES)))
    df = hoglab.read_hogql("select 1", client, {"x": 1})
    assert len(df) == 1 and remote.json_bodies("POST")[0]["query"]["values"] == {"x": 1}


def test_query_error_from_the_query_endpoint(client: Client, remote: Remote) -> None:
    error = {"type": "validation_error", "code": "syntax_error", "detail": "Syntax error at 1:7", "attr": None}
    remote.add("POST", QUERY, httpx.Response(400, json=error))
    with pytest.raises(hoglab.QueryError, match="Syntax error at 1:7"):
        client.hogql("select from")


def test_keyset_never_repeats_rows_of_an_instant_spanning_pages(client: Client, remote: Remote) -> None:
    """Five rows share one instant across pages of five: every row once, then a clear error, never a repeat."""
    table = _table(3) + [[_table(4)[3][0], "e9", 100 + i] for i in range(5)]
    paging = PagingRemote(table)
    remote.add("POST", QUERY, paging)
    seen: list[int] = []
    with pytest.raises(hoglab.HoglabError, match="share the timestamp"):
        for page in client.hogql_pages("select timestamp, event, n from events order by timestamp", page_size=5):
            seen += page["n"].tolist()
    assert seen == [0, 1, 2, 100, 101, 102, 103, 104]


def test_paging_shows_a_progress_bar_of_rows_when_asked(
    client: Client, remote: Remote, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote.add("POST", QUERY, PagingRemote(_table(12_345), cap=10_000))
    client.progress = True
    # A bar appears only once a wait passes PROGRESS_DELAY: a wait shorter than the delay shows nothing (the delay
    # is raised here so a loaded machine's slow scripted pages cannot pass it).
    monkeypatch.setattr("hoglab.client._client.PROGRESS_DELAY", 3600.0)
    df = client.hogql("select timestamp, event, n from events", all_rows=True)
    assert len(df) == 12_345 and "hoglab rows" not in capsys.readouterr().err
    monkeypatch.setattr("hoglab.client._client.PROGRESS_DELAY", 0.0)  # as if every page were slow
    client.hogql("select timestamp, event, n from events", all_rows=True)
    assert "hoglab rows" in capsys.readouterr().err  # tqdm on stderr, cleared when done
    client.progress = False
    client.hogql("select timestamp, event, n from events", all_rows=True)
    assert "hoglab rows" not in capsys.readouterr().err


@pytest.mark.parametrize("limit", [10_001, 12_345, 20_000])
def test_all_rows_with_a_limit_past_one_page(client: Client, remote: Remote, limit: int) -> None:
    """``limit`` above the 10,000-row cap with keyset paging: the last page asks for the boundary rows it drops
    as repeats too, so it is never "all one instant" and exactly ``limit`` rows come back, in order."""
    paging = PagingRemote(_table(25_000, ties_every=3), cap=10_000)
    remote.add("POST", QUERY, paging)
    df = client.hogql("select timestamp, event, n from events order by timestamp", all_rows=True, limit=limit)
    assert df["n"].tolist() == list(range(limit))
    assert all("OFFSET" not in s for s, _ in paging.statements)


def test_all_rows_tries_the_bulk_endpoint_once_then_pages_against_posthog(client: Client, remote: Remote) -> None:
    """PostHog reads ``query/arrow/`` as a query kind and refuses it (400, nothing run): the client pages, and
    does not ask again on the same connection."""
    mismatch = {"type": "validation_error", "code": "invalid_input", "attr": None,
                "detail": 'Query kind mismatch: path kind "arrow" does not match body kind "HogQLQuery".'}  # fmt: skip
    remote.add("POST", "/api/projects/2/query/arrow/", httpx.Response(400, json=mismatch))
    paging = PagingRemote(_table(25))
    remote.add("POST", QUERY, paging)
    for _ in range(2):
        df = client.hogql("select timestamp, event, n from events", all_rows=True)
        assert df["n"].tolist() == list(range(25))
    paths = [r.url.path for r in remote.requests]
    assert paths == ["/api/projects/2/query/arrow/", QUERY, QUERY]
