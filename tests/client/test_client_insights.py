"""client.query with the builders: the request PostHog receives and the tidy frame that comes back.

The answers are PostHog's shapes, served by a scripted REMOTE PostHog (httpx.MockTransport).
"""

from __future__ import annotations

import httpx
import pytest
from clienttesting import Remote

import hoglab
from hoglab.client import Client

QUERY = "/api/projects/2/query/"


def _trend_item(label: str, data: list[float], breakdown: object, order: int = 0) -> dict[str, object]:
    return {
        "data": data,
        "labels": ["1-Jun-2025", "2-Jun-2025"],
        "days": ["2025-06-01", "2025-06-02"],
        "count": sum(data),
        "label": label,
        "breakdown_value": breakdown,
        "action": {"order": order, "id": "$pageview", "math": "dau"},
    }


def test_trends_request_and_long_frame(client: Client, remote: Remote) -> None:
    answer = {
        "results": [_trend_item("Chrome", [3, 5], "Chrome"), _trend_item("Safari", [1, 0], "Safari")],
        "timezone": "Europe/Paris",
        "hasMore": False,
    }
    remote.add("POST", QUERY, httpx.Response(200, json=answer))
    df = client.trends("$pageview", math="dau", breakdown="$browser", where={"$browser__ne": "IE"})
    sent = remote.json_bodies("POST")[0]["query"]
    assert sent["kind"] == "TrendsQuery"
    assert sent["series"][0] == {"kind": "EventsNode", "event": "$pageview", "name": "$pageview", "math": "dau"}
    assert sent["breakdownFilter"] == {"breakdown_type": "event", "breakdown": "$browser"}
    assert sent["properties"] == [{"key": "$browser", "value": "IE", "operator": "is_not", "type": "event"}]
    assert df.columns.tolist() == ["series", "label", "breakdown_value", "date", "value"]
    assert df["value"].tolist() == [3.0, 5.0, 1.0, 0.0]
    assert str(df["date"].dtype) == "datetime64[us, Europe/Paris]"
    assert df.groupby("breakdown_value")["value"].sum().to_dict() == {"Chrome": 8.0, "Safari": 1.0}


def test_funnel_breakdown_frame(client: Client, remote: Remote) -> None:
    def steps(value: str, counts: list[int]) -> list[dict[str, object]]:
        return [
            {
                "action_id": e,
                "name": e,
                "order": i,
                "count": c,
                "type": "events",
                "breakdown_value": [value],
                "average_conversion_time": None if i == 0 else 60.0 * i,
                "median_conversion_time": None,
            }
            for i, (e, c) in enumerate(zip(["$pageview", "signup", "purchase"], counts, strict=True))
        ]

    answer = {"results": [steps("free", [100, 40, 10]), steps("pro", [50, 30, 20])], "isUdf": False}
    remote.add("POST", QUERY, httpx.Response(200, json=answer))
    df = client.funnel(["$pageview", "signup", "purchase"], window="14d", breakdown="plan")
    sent = remote.json_bodies("POST")[0]["query"]
    assert (
        sent["funnelsFilter"]["funnelWindowInterval"] == 14
        and sent["funnelsFilter"]["funnelWindowIntervalUnit"] == "day"
    )
    pro = df[df["breakdown_value"] == "pro"]
    assert pro["step"].tolist() == [1, 2, 3]
    assert pro["conversion_rate"].round(3).tolist() == [1.0, 0.6, 0.4]
    assert pro["step_conversion_rate"].round(3).tolist() == [1.0, 0.6, 0.667]
    assert pro["drop_off"].tolist() == [0, 20, 10]


def test_events_all_rows_pages_with_offset(client: Client, remote: Remote) -> None:
    def page(request: httpx.Request) -> httpx.Response:
        import json

        q = json.loads(request.content)["query"]
        start = q["offset"]
        rows = [
            [f"e{i}", {"uuid": f"u{i}", "properties": {"plan": "pro"}}]
            for i in range(start, min(start + q["limit"], 7))
        ]
        return httpx.Response(
            200,
            json={
                "results": rows,
                "columns": ["event", "person"],
                "types": ["String", "Tuple(String, String)"],
                "hasMore": start + q["limit"] < 7,
                "limit": q["limit"],
                "offset": start,
            },
        )

    remote.add("POST", QUERY, page)
    df = client.query(hoglab.events(["event", "person"], limit=3), all_rows=True, flatten=["person"])
    assert df["event"].tolist() == [f"e{i}" for i in range(7)]
    assert df.columns.tolist() == ["event", "person.uuid", "person.properties"]
    assert [b["query"]["offset"] for b in remote.json_bodies("POST")] == [0, 3, 6]


def test_query_accepts_a_dict_and_rejects_a_bad_one(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json={"results": [], "columns": [], "types": []}))
    assert client.query({"kind": "ActorsQuery"}).empty
    with pytest.raises(hoglab.InvalidArgument, match="query"):
        client.query({"kind": "TrendsQuery", "series": []})
    with pytest.raises(TypeError):
        client.query(42)
    assert len(remote.requests) == 1


def test_query_raw_returns_the_response_model(client: Client, remote: Remote) -> None:
    remote.add("POST", QUERY, httpx.Response(200, json={"results": [_trend_item("x", [1, 2], None)]}))
    response = client.query_raw(hoglab.trends("$pageview"))
    assert type(response).__name__ == "TrendsQueryResponse" and response.results[0].count == 3
