"""``hoglab.pull`` copies actions, and a pulled experiment whose metrics name them analyses locally.

The remote is a scripted PostHog Cloud (an ``httpx.MockTransport``: only the remote is mocked, never hoglab), its
answers shaped as PostHog's: ``GET /actions/`` answers ``{"results": [...]}`` without ``count`` and lists live
actions only; the deleted action a metric names is fetched by id. The mirror's ExperimentQuery answers, over HTTP
on the real local service, equal a pandas restatement of the events and the actions' definitions.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd
import pytest

from hoglab import Client, pull
from hoglab.local import LocalService

pytestmark = pytest.mark.xdist_group("pull")

HOST = "https://eu.posthog.example"
REMOTE = 2
NOW = datetime.now(UTC).replace(microsecond=0)
START = NOW - timedelta(days=3)
FLAG = "cloud-pricing-test"
USER = {"id": 1, "uuid": "0190a8c0-0000-7000-8000-000000000001", "distinct_id": "d1", "first_name": "A",
        "email": "a@example.com", "hedgehog_config": None}  # fmt: skip
PRICING = {"id": 101, "name": "Viewed pricing", "deleted": False, "steps": [
    {"event": "$pageview", "properties": None, "selector": None, "tag_name": None, "text": None,
     "text_matching": None, "href": None, "href_matching": None, "url": "/pricing", "url_matching": "contains",
     "selector_regex": None}]}  # fmt: skip
BOUGHT = {"id": 102, "name": "Bought pro", "deleted": True, "steps": [
    {"event": "purchase", "url_matching": "contains",
     "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]}]}  # fmt: skip
CLICKED = {"id": 103, "name": "Clicked buy", "deleted": False, "steps": [
    {"event": "$autocapture", "selector": "div > button.buy", "url_matching": "contains"}]}  # fmt: skip
METRICS = [
    {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "views", "source": {"kind": "ActionsNode", "id": 101}},
    {"kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "buys",
     "series": [{"kind": "ActionsNode", "id": 101}, {"kind": "ActionsNode", "id": 102}]},
]  # fmt: skip


def _action_body(action: dict[str, Any]) -> dict[str, Any]:
    return {"description": "", "tags": [], "post_to_slack": False, "slack_message_format": "", "created_by": USER,
            "created_at": "2025-01-01T00:00:00Z", "is_calculating": False, "last_calculated_at": "2025-01-01T00:00:00Z",
            "team_id": REMOTE, "is_action": True, "bytecode_error": None, "pinned_at": None,
            "creation_context": None, "user_access_level": "editor", **action}  # fmt: skip


def _events() -> pd.DataFrame:
    rows = []
    for k in range(40):
        person = str(uuid.UUID(int=k + 1))
        variant = ("control", "test")[k % 2]
        t = START + timedelta(hours=k)
        rows.append({"event": "$feature_flag_called", "distinct_id": f"u{k}", "person_id": person, "timestamp": t,
                     "properties": {"$feature_flag": FLAG, "$feature_flag_response": variant}})  # fmt: skip
        for j in range(k % 4):
            url = ("https://shop.example/pricing", "https://shop.example/PRICING", "https://shop.example/")[j % 3]
            rows.append({"event": "$pageview", "distinct_id": f"u{k}", "person_id": person,
                         "timestamp": t + timedelta(minutes=10 * (j + 1)), "properties": {"$current_url": url}})
        if k % 3 == 0:
            rows.append({"event": "$pageview", "distinct_id": f"u{k}", "person_id": person,  # before exposure
                         "timestamp": t - timedelta(minutes=5), "properties": {"$current_url": "https://shop.example/pricing"}})
        if k % 4 in (1, 3) or k % 5 == 0:
            rows.append({"event": "purchase", "distinct_id": f"u{k}", "person_id": person,
                         "timestamp": t + timedelta(hours=2), "properties": {"plan": "pro" if k % 5 else "free"}})
    df = pd.DataFrame(rows)
    df["uuid"] = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"event-{i}")) for i in range(len(df))]
    return df


def _hogql_answer(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, Any]:
    return {"results": [[r[c] for c in columns] for r in rows], "columns": columns,
            "types": [[c, "String"] for c in columns], "hogql": "SELECT ...", "hasMore": False}  # fmt: skip


def _moment(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)


class Cloud:
    """PostHog Cloud's answers for project 2 (events, persons, actions, an experiment and its flag)."""

    def __init__(self, events: pd.DataFrame) -> None:
        self.events = events.sort_values(["timestamp", "uuid"])
        self.paths: list[str] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(f"/api/projects/{REMOTE}/")
        self.paths.append(f"{request.method} {path}")
        if path == "":
            return httpx.Response(200, json={"id": REMOTE, "name": "Cloud shop", "timezone": "UTC"})
        if path == "query/":
            return httpx.Response(200, json=self.query(json.loads(request.content)["query"]))
        if path == "actions/":
            return httpx.Response(200, json={"results": [_action_body(PRICING), _action_body(CLICKED)]})
        if path == "actions/102/":
            return httpx.Response(200, json=_action_body(BOUGHT))
        if path == "experiments/":
            live = request.url.params.get("archived") != "true"
            found = [self.experiment()] if live else []
            return httpx.Response(200, json={"count": len(found), "next": None, "previous": None, "results": found})
        if path in ("feature_flags/", "cohorts/"):
            return httpx.Response(200, json={"count": 0, "next": None, "previous": None, "results": []})
        return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found."})

    def experiment(self) -> dict[str, Any]:
        return {"id": 7, "name": "Pricing page test", "feature_flag_key": FLAG, "start_date": START.isoformat(),
                "end_date": None, "archived": False, "feature_flag": {"id": 70, "key": FLAG, "filters": {}},
                "parameters": {"feature_flag_variants": [{"key": "control", "rollout_percentage": 50},
                                                         {"key": "test", "rollout_percentage": 50}]},
                "metrics": METRICS, "metrics_secondary": [], "created_by": USER, "type": "product",
                "created_at": START.isoformat(), "updated_at": START.isoformat()}  # fmt: skip

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        sql, values = query["query"], query.get("values") or {}
        df = self.events
        if sql.startswith("SELECT count() AS n FROM events"):
            n = int((df["timestamp"] >= _moment(values["since"])).sum())
            return _hogql_answer([{"n": n}], ["n"])
        if "FROM events" in sql:
            after, after_uuid = _moment(values["after"]), values["after_uuid"]
            keep = (df["timestamp"] > after) | ((df["timestamp"] == after) & (df["uuid"] > after_uuid))
            page = df[keep & (df["timestamp"] >= _moment(values["since"]))].head(10_000)
            rows = [{"uuid": r.uuid, "event": r.event, "distinct_id": r.distinct_id, "person_id": r.person_id,
                     "timestamp": r.timestamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "properties": json.dumps(r.properties),
                     "elements_chain": "", "created_at": r.timestamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
                    for r in page.itertuples()]  # fmt: skip
            return _hogql_answer(rows, ["uuid", "event", "distinct_id", "person_id", "timestamp", "properties",
                                        "elements_chain", "created_at"])  # fmt: skip
        people = df.drop_duplicates("person_id").sort_values("person_id")
        if "FROM persons" in sql:
            rows = [{"id": p, "created_at": "2025-01-01T00:00:00Z", "properties": "{}", "is_identified": False}
                    for p in people["person_id"] if p > values["after"]]  # fmt: skip
            return _hogql_answer(rows, ["id", "created_at", "properties", "is_identified"])
        if "FROM person_distinct_ids" in sql:
            pairs = sorted(zip(people["distinct_id"], people["person_id"], strict=True))
            rows = [{"distinct_id": d, "person_id": p} for d, p in pairs if d > values["after"]]
            return _hogql_answer(rows, ["distinct_id", "person_id"])
        raise AssertionError(f"unexpected query {sql[:120]}")


def _matches(action: dict[str, Any], row: Any) -> bool:
    """The two actions' definitions restated: PostHog's steps, OR-ed, conditions AND-ed."""
    for step in action["steps"]:
        if row.event != step["event"]:
            continue
        url = row.properties.get("$current_url")
        if step.get("url") and (url is None or step["url"] not in url):
            continue
        if any(str(row.properties.get(f["key"])) != f["value"] for f in step.get("properties") or []):
            continue
        return True
    return False


def test_a_pulled_experiment_naming_actions_analyses_locally(hoglab_service: LocalService) -> None:
    df = _events()
    cloud = Cloud(df)
    lines: list[str] = []
    client = Client(HOST, "phx_cloud", REMOTE, transport=httpx.MockTransport(cloud.handler), progress=False)
    report = pull(client=client, service=hoglab_service, rate="1000/second", say=lines.append)
    assert report.actions == 3 and report.experiments == 1 and report.events_copied == len(df)
    assert "GET actions/102/" in cloud.paths  # named by a metric, missing from the listing (deleted)

    local = httpx.Client(base_url=hoglab_service.url, headers=hoglab_service.headers, timeout=60)
    project = report.local_project_id
    store = hoglab_service.state.store
    copies = {a.name: a for a in store.actions.list(project, include_deleted=True)}
    assert copies["Bought pro"].deleted and not copies["Viewed pricing"].deleted
    assert copies["Viewed pricing"].steps[0]["url"] == "/pricing" and "selector_regex" not in copies[
        "Viewed pricing"].steps[0]  # fmt: skip
    assert copies["Clicked buy"].bytecode_error and "selector" in copies["Clicked buy"].bytecode_error
    experiment = local.get(f"/api/projects/{project}/experiments/").json()["results"][0]
    assert [m["source"]["id"] for m in experiment["metrics"][:1]] == [copies["Viewed pricing"].id]
    assert [s["id"] for s in experiment["metrics"][1]["series"]] == [copies["Viewed pricing"].id,
                                                                      copies["Bought pro"].id]  # fmt: skip

    def ask(metric: dict[str, Any]) -> dict[str, Any]:
        body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
        answer = local.post(f"/api/projects/{project}/query/", json=body)
        assert answer.status_code == 200, answer.text
        data = answer.json()
        return {v["key"]: v for v in [data["baseline"], *data["variant_results"]]}

    mean, funnel = ask(experiment["metrics"][0]), ask(experiment["metrics"][1])
    exposures = df[df["event"] == "$feature_flag_called"]
    first = exposures.groupby("person_id")["timestamp"].min()
    variant = exposures.groupby("person_id")["properties"].first().map(lambda p: p["$feature_flag_response"])
    views = df[[_matches(PRICING, r) for r in df.itertuples()]]
    buys = df[[_matches(BOUGHT, r) for r in df.itertuples()]]
    for arm in ("control", "test"):
        people = variant[variant == arm].index
        after = views[views["person_id"].isin(people) & (views["timestamp"] >= views["person_id"].map(first))]
        per_person = after.groupby("person_id").size().reindex(people, fill_value=0)
        assert mean[arm]["number_of_samples"] == len(people)
        assert mean[arm]["sum"] == per_person.sum() and mean[arm]["sum_squares"] == (per_person**2).sum()
        reached = [0, 0]
        for person in people:
            seen = after[after["person_id"] == person]["timestamp"]
            if seen.empty:
                continue
            reached[0] += 1
            bought = buys[(buys["person_id"] == person) & (buys["timestamp"] >= seen.min())]
            reached[1] += int(not bought.empty)
        assert funnel[arm]["step_counts"] == reached
    assert sum(funnel[a]["step_counts"][1] for a in ("control", "test")) > 0
    # An action copied with a step hoglab refuses is kept, and a query naming it says why.
    refused = local.post(f"/api/projects/{project}/query/", json={"query": {
        "kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": copies["Clicked buy"].id}]}})  # fmt: skip
    assert refused.status_code == 400 and re.search("selector", refused.json()["detail"])
    again = pull(client=Client(HOST, "phx_cloud", REMOTE, transport=httpx.MockTransport(cloud.handler),
                               progress=False), service=hoglab_service, rate="1000/second")  # fmt: skip
    assert {a.id for a in store.actions.list(project, include_deleted=True)} == {a.id for a in copies.values()}
    assert again.events_copied == 0
    local.close()
