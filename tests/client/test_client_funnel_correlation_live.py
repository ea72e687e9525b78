"""``hoglab.funnel_correlation`` through ``client.query`` against a real hoglab service: blocking, asynchronous
and submitted answers give the same frame, its numbers PostHog's (odds ratios 11 and 1/11 in PostHog's own
basic case), and a query the service cannot run is a 400 naming the field, never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from clienttesting import loaded_project

import hoglab
from hoglab.client import Client
from hoglab.frames.correlation import CORRELATION_COLUMNS
from hoglab.schema import FunnelCorrelationResponse
from posthog_openapi import CACHE_FIELDS, assert_valid


@pytest.fixture(scope="module")
def client(hoglab_service: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    lines = []
    for i in range(20):
        person = f"user_{i}"
        lines.append({"event": "user signed up", "distinct_id": person, "timestamp": "2020-01-02T14:00:00Z",
                      "properties": {"$set": {"plan": "pro" if i < 10 else "free"}}})  # fmt: skip
        if i % 2 == 0:
            name = "positively_related" if i < 10 else "negatively_related"
            lines.append({"event": name, "distinct_id": person, "timestamp": "2020-01-03T14:00:00Z",
                          "properties": {"tier": "gold"}})  # fmt: skip
        if i < 10:
            lines.append({"event": "paid", "distinct_id": person, "timestamp": "2020-01-04T14:00:00Z"})
    project, key = loaded_project(hoglab_service, "funnel correlation", lines, tmp_path_factory.mktemp("corr"))
    with Client(hoglab_service.url, key, project, progress=False) as c:
        c.test_key = key  # type: ignore[attr-defined]  # for the raw HTTP requests below
        yield c


QUERY = hoglab.funnel_correlation(["user signed up", "paid"], date_from="2020-01-01", date_to="2020-01-14")


def test_the_frame_is_posthogs_basic_case(client: Client) -> None:
    df = client.query(QUERY)
    assert list(df.columns) == CORRELATION_COLUMNS and df.attrs["skewed"] is False
    assert df["name"].tolist() == ["positively_related", "negatively_related"]
    assert df["odds_ratio"].tolist() == pytest.approx([11, 1 / 11])
    assert df[["success_count", "failure_count", "actors"]].values.tolist() == [[5, 0, 5], [0, 5, 5]]
    assert str(df["success_count"].dtype) == "Int64" and str(df["name"].dtype) == "string"
    ax = hoglab.plot_funnel_correlation(df)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["negatively_related", "positively_related"]


def test_the_query_and_its_answer_are_posthogs_shapes(client: Client) -> None:
    for kind in ("events", "properties", "event_with_properties"):
        query = hoglab.funnel_correlation(QUERY.source.source, kind=kind, names=["plan"] if kind == "properties"
                                          else None, events=["paid"] if kind == "event_with_properties" else None)
        assert_valid(query.to_json_dict(), "FunnelCorrelationQuery", drop=())
    answer = client.request("POST", client.path("query/"), json={"query": QUERY.to_json_dict()}).json()
    assert_valid(answer, "FunnelCorrelationResponse", drop=(*CACHE_FIELDS, "timings", "query_status"))


def test_blocking_async_and_submitted_answers_agree(client: Client) -> None:
    raw = client.query_raw(QUERY)
    assert isinstance(raw, FunnelCorrelationResponse) and len(raw.results.events) == 2
    forced = client.query_raw(QUERY, refresh="force_async")
    submitted = client.submit(QUERY).result(timeout=120)
    assert [e.odds_ratio for e in forced.results.events] == [e.odds_ratio for e in raw.results.events]
    assert submitted["name"].tolist() == ["positively_related", "negatively_related"]


def test_properties_and_event_properties(client: Client) -> None:
    by_plan = client.query(hoglab.funnel_correlation(QUERY.source.source, kind="properties", names=["plan"]))
    assert by_plan["name"].tolist() == ["plan::pro", "plan::free"]
    assert by_plan["odds_ratio"].tolist() == pytest.approx([121, 1 / 121])
    tiers = client.query(hoglab.funnel_correlation(QUERY.source.source, kind="event_with_properties",
                                                   events=["positively_related", "negatively_related"]))  # fmt: skip
    assert tiers["name"].tolist() == ["positively_related::tier::gold", "negatively_related::tier::gold"]


@pytest.mark.parametrize(("change", "attr"), [
    ({"funnelCorrelationType": "properties"}, "funnelCorrelationNames"),
    ({"funnelCorrelationType": "sideways"}, "funnelCorrelationType"),
    ({"source": {"kind": "FunnelsActorsQuery", "funnelStep": 5, "source": QUERY.source.source.to_json_dict()}},
     "source.funnelStep"),
])  # fmt: skip
def test_a_query_it_cannot_run_is_a_400_naming_the_field(client: Client, change: dict[str, Any], attr: str) -> None:
    body = {"query": {**QUERY.to_json_dict(), **change}}
    answer = httpx.post(f"{client.host}/api/projects/{client.project_id}/query/", json=body,
                        headers={"Authorization": f"Bearer {client.test_key}"})  # type: ignore[attr-defined]  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert {"type", "code", "detail", "attr"} <= set(answer.json()) and attr in str(answer.json()["attr"])
    with pytest.raises(hoglab.InvalidArgument, match="names"):
        hoglab.funnel_correlation(["a", "b"], kind="properties")
