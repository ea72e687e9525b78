"""``hoglab.pull`` of an experiment with a holdout and a saved metric from a MOCKED PostHog Cloud.

The remote is an ``httpx.MockTransport`` answering as PostHog Cloud does (its ids, its answer shapes: the
holdout's groups carrying ``holdout-91``, the flag's ``filters.holdout``, the experiment's ``holdout``,
``holdout_id`` and ``saved_metrics`` links, events pages of the Query API); only the remote is mocked. The mirror is
the session's real service: the copies get local ids yet keep the remote's holdout value, and the pulled
experiment is analysed locally, over HTTP, with results (the holdout comparison included) equal to a pandas
restatement of the events the remote served.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from hoglab import Client, pull
from hoglab.local import LocalService
from posthog_openapi import assert_valid

pytestmark = pytest.mark.xdist_group("pull")

NOW = datetime.now(UTC).replace(microsecond=0)
START = NOW - timedelta(days=7)
REMOTE_PROJECT, HOLDOUT, SAVED, EXPERIMENT, FLAG = 2, 91, 55, 9, 109
KEY = "cloud-checkout"
USER = {"id": 1, "uuid": "0188a1b2-0000-0000-0000-000000000001", "distinct_id": "u1", "first_name": "Ada",
        "email": "ada@example.com", "hedgehog_config": None}  # fmt: skip
HOLDOUT_BODY = {"id": HOLDOUT, "name": "Quarter holdout", "description": None,
                "filters": [{"properties": [], "rollout_percentage": 20, "variant": f"holdout-{HOLDOUT}"}],
                "created_by": USER, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
REVENUE = {"kind": "ExperimentMetric", "metric_type": "mean", "uuid": "5d6f1c2e-cloud-revenue",
           "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}
SAVED_BODY = {"id": SAVED, "name": "Revenue", "description": None, "query": REVENUE, "tags": [], "created_by": USER,
              "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
VARIANTS = [{"key": "control", "name": "Control", "rollout_percentage": 50},
            {"key": "test", "name": "Test", "rollout_percentage": 50}]
FLAG_BODY = {"id": FLAG, "team_id": REMOTE_PROJECT, "name": "Feature Flag for Experiment Checkout", "key": KEY,
             "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
                         "multivariate": {"variants": VARIANTS}, "aggregation_group_type_index": None,
                         "holdout": {"id": HOLDOUT, "exclusion_percentage": 20}},
             "deleted": False, "active": True, "ensure_experience_continuity": False}
FUNNEL = {"kind": "ExperimentMetric", "metric_type": "funnel", "uuid": "cloud-funnel", "name": "checkout → purchase",
          "series": [{"kind": "EventsNode", "event": "checkout"}, {"kind": "EventsNode", "event": "purchase"}]}
EXPERIMENT_BODY = {
    "id": EXPERIMENT, "name": "Checkout", "description": "", "start_date": (START - timedelta(hours=1)).isoformat(),
    "end_date": None, "feature_flag_key": KEY, "feature_flag": FLAG_BODY, "holdout": HOLDOUT_BODY,
    "holdout_id": HOLDOUT, "exposure_cohort": None, "parameters": {"feature_flag_variants": VARIANTS},
    "secondary_metrics": [], "filters": {}, "archived": False, "deleted": False, "created_by": USER,
    "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", "type": "product",
    "metrics": [FUNNEL], "metrics_secondary": [], "stats_config": {"method": "frequentist"},
    "saved_metrics": [{"id": 301, "experiment": EXPERIMENT, "saved_metric": SAVED, "metadata": {"type": "primary"},
                       "created_at": "2026-01-01T00:00:00Z", "query": {**REVENUE, "fingerprint": "ab12"},
                       "name": "Revenue"}],
    "saved_metrics_ids": None, "primary_metrics_ordered_uuids": ["cloud-funnel", REVENUE["uuid"]],
    "secondary_metrics_ordered_uuids": [], "exposure_criteria": {"filterTestAccounts": True}, "conclusion": None,
    "conclusion_comment": None, "user_access_level": "editor",
}  # fmt: skip


def _share(text: str) -> float:
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF


def _arm(distinct_id: str) -> str:
    """What PostHog's flags service answers for the flag (its hashing restated with hashlib)."""
    if _share(f"holdout-{distinct_id}") <= 0.20:
        return f"holdout-{HOLDOUT}"
    return "control" if _share(f"{KEY}.{distinct_id}variant") < 0.5 else "test"


def _remote_events(users: int = 400) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Events, persons and distinct ids of the remote project, as its Query API answers them."""
    rng = np.random.default_rng(7)
    rates = {f"holdout-{HOLDOUT}": 0.2, "control": 0.3, "test": 0.45}
    events, persons, ids = [], [], []
    for i in range(users):
        user = f"cloud-user-{i}"
        person = str(uuid.uuid5(uuid.NAMESPACE_URL, user))
        persons.append({"id": person, "created_at": START.isoformat(), "properties": "{}", "is_identified": 0})
        ids.append({"distinct_id": user, "person_id": person})
        arm, at = _arm(user), START + timedelta(seconds=int(rng.integers(0, 6 * 86400)))
        visit = [("$feature_flag_called", {"$feature_flag": KEY, "$feature_flag_response": arm})]
        if rng.random() < 0.6:
            visit.append(("checkout", {}))
            if rng.random() < rates[arm]:
                visit.append(("purchase", {"price": round(float(rng.lognormal(3.4, 0.5)), 2)}))
        for n, (event, properties) in enumerate(visit):
            events.append({"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{user}-{n}")), "event": event,
                           "distinct_id": user, "person_id": person,
                           "timestamp": (at + timedelta(minutes=n)).strftime("%Y-%m-%d %H:%M:%S.%f"),
                           "properties": json.dumps({**properties, f"$feature/{KEY}": arm}), "elements_chain": "",
                           "created_at": None})  # fmt: skip
    events.sort(key=lambda e: (e["timestamp"], e["uuid"]))
    return events, persons, ids


class Cloud:
    """PostHog Cloud's answers for the remote project (a mock of the remote only)."""

    def __init__(self) -> None:
        self.events, self.persons, self.ids = _remote_events()
        self.asked: list[str] = []

    def _page(self, items: list[dict[str, Any]], request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("offset", 0))
        return httpx.Response(200, json={"count": len(items), "next": None, "previous": None,
                                         "results": items[offset:] if offset == 0 else []})  # fmt: skip

    def _hogql(self, sql: str, values: dict[str, Any]) -> dict[str, Any]:
        def rows(columns: list[str], items: list[dict[str, Any]]) -> dict[str, Any]:
            return {"columns": columns, "results": [[item[c] for c in columns] for item in items], "types": []}

        if sql.startswith("SELECT count() AS n FROM events"):
            return {"columns": ["n"], "results": [[len(self.events)]]}
        if "FROM events" in sql:
            after = (values["after"], values["after_uuid"])
            page = [e for e in self.events if (e["timestamp"], e["uuid"]) > after][:10_000]
            return rows(["uuid", "event", "distinct_id", "person_id", "timestamp", "properties", "elements_chain",
                         "created_at"], page)  # fmt: skip
        if "FROM persons" in sql:
            return rows(["id", "created_at", "properties", "is_identified"],
                        sorted(self.persons, key=lambda p: p["id"]) if not values["after"] else [])
        if "FROM person_distinct_ids" in sql:
            return rows(["distinct_id", "person_id"],
                        sorted(self.ids, key=lambda i: i["distinct_id"]) if not values["after"] else [])  # fmt: skip
        raise AssertionError(f"unexpected query {sql[:80]}")

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        base = f"/api/projects/{REMOTE_PROJECT}/"
        self.asked.append(f"{request.method} {path.removeprefix(base)}")
        if request.method == "POST" and path == base + "query/":
            query = json.loads(request.content)["query"]
            return httpx.Response(200, json=self._hogql(query["query"], query.get("values") or {}))
        answers = {
            base: {"id": REMOTE_PROJECT, "name": "Cloud shop", "timezone": "UTC"},
            base + "experiment_holdouts/": [HOLDOUT_BODY],
            base + "experiment_saved_metrics/": [SAVED_BODY],
            base + "experiments/": [EXPERIMENT_BODY] if request.url.params.get("archived") != "true" else [],
            base + "feature_flags/": [FLAG_BODY],
            base + "cohorts/": [],
        }
        if request.method != "GET" or path not in answers:
            return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found.",
                                             "attr": None})  # fmt: skip
        answer = answers[path]
        return self._page(answer, request) if isinstance(answer, list) else httpx.Response(200, json=answer)


def test_the_clouds_answers_are_posthogs_shapes() -> None:
    # The mock's objects are PostHog's own: its document's components (holdout is non-nullable there).
    assert_valid(HOLDOUT_BODY, "ExperimentHoldout", drop=())
    assert_valid(SAVED_BODY, "ExperimentSavedMetric", drop=())
    assert_valid(EXPERIMENT_BODY["saved_metrics"][0], "ExperimentToSavedMetric", drop=())
    assert_valid(EXPERIMENT_BODY, "PatchedExperiment", drop=("feature_flag",))


@pytest.fixture(scope="module")
def pulled(hoglab_service: LocalService) -> Any:
    cloud = Cloud()
    remote = Client("https://us.posthog.example", "phx_cloud", REMOTE_PROJECT, progress=False,
                    transport=httpx.MockTransport(cloud))  # fmt: skip
    report = pull(client=remote, service=hoglab_service, rate="1000/second", progress=False)
    return cloud, report


def _local(hoglab_service: LocalService, project: int) -> Client:
    store = hoglab_service.state.store
    _, key = store.keys.create(store.users.default().id, ["*"], [project], label="pulled")
    return Client(hoglab_service.url, key, project, progress=False)


def test_the_pull_copies_holdouts_saved_metrics_and_the_links(pulled: Any, hoglab_service: LocalService) -> None:
    cloud, report = pulled
    assert (report.holdouts, report.saved_metrics, report.experiments, report.flags) == (1, 1, 1, 1)
    assert report.events_copied == len(cloud.events)
    assert "GET experiment_holdouts/" in cloud.asked and "GET experiment_saved_metrics/" in cloud.asked
    client = _local(hoglab_service, report.local_project_id)
    holdouts = client.experiments.holdouts.list()
    assert holdouts["variant_key"].tolist() == [f"holdout-{HOLDOUT}"]  # the remote's value, whatever the local id
    saved = client.experiments.saved_metrics.list()
    assert saved["name"].tolist() == ["Revenue"] and saved["uuid"].tolist() == [REVENUE["uuid"]]
    [experiment] = client.experiments.list().id.tolist()
    body = client.experiments.get(experiment)
    assert body.holdout is not None and body.holdout_id == int(holdouts["id"][0])
    assert body.feature_flag is not None
    assert body.feature_flag.filters["holdout"] == {"id": HOLDOUT, "exclusion_percentage": 20}
    assert [(link.saved_metric, link.metadata) for link in body.saved_metrics or []] == [
        (int(saved["id"][0]), {"type": "primary"})]
    assert body.primary_metrics_ordered_uuids == ["cloud-funnel", REVENUE["uuid"]]
    # A second pull updates the copies instead of adding more.
    again = pull(client=Client("https://us.posthog.example", "phx_cloud", REMOTE_PROJECT, progress=False,
                               transport=httpx.MockTransport(Cloud())),
                 service=hoglab_service, rate="1000/second", progress=False)  # fmt: skip
    assert again.local_project_id == report.local_project_id and again.events_copied == 0
    assert len(client.experiments.holdouts.list()) == 1 and len(client.experiments.saved_metrics.list()) == 1
    assert len(client.experiments.get(experiment).saved_metrics or []) == 1
    client.close()


def test_the_pulled_flag_answers_the_remotes_values(pulled: Any, hoglab_service: LocalService) -> None:
    _, report = pulled
    token = hoglab_service.state.store.projects.get(report.local_project_id).api_token
    for i in range(0, 400, 7):
        user = f"cloud-user-{i}"
        answer = httpx.post(f"{hoglab_service.url}/flags/?v=2", json={"api_key": token, "distinct_id": user})
        assert answer.json()["flags"][KEY]["variant"] == _arm(user), user


def test_the_pulled_experiment_analyses_locally_with_its_holdout(pulled: Any, hoglab_service: LocalService) -> None:
    cloud, report = pulled
    client = _local(hoglab_service, report.local_project_id)
    [experiment] = client.experiments.list().id.tolist()
    result = client.experiments.results(experiment)
    assert result.errors == {} and result.holdout_errors == {}  # type: ignore[union-attr]
    events = pd.DataFrame(cloud.events)
    events["price"] = events["properties"].map(lambda p: json.loads(p).get("price"))
    events["arm"] = events["properties"].map(lambda p: json.loads(p).get(f"$feature/{KEY}"))
    per_person = events.groupby("person_id").agg(arm=("arm", "first"))
    per_person["revenue"] = events[events["event"] == "purchase"].groupby("person_id")["price"].sum()
    per_person["converted"] = per_person.index.isin(set(events.loc[events["event"] == "purchase", "person_id"]))
    per_person = per_person.fillna({"revenue": 0.0})
    frame = result.to_frame().set_index(["metric", "variant"])  # type: ignore[union-attr]
    held = result.holdout_frame().set_index(["metric", "variant"])  # type: ignore[union-attr]
    assert set(frame.index.get_level_values("variant")) == {"control", "test"}  # PostHog's answer: no holdout
    for label, value in (("checkout → purchase", "converted"), ("Revenue", "revenue")):
        for arm, rows in per_person.groupby("arm"):
            tables = [held] if arm.startswith("holdout-") else [held, frame]  # variants: the same in both answers
            for table in tables:
                assert table.loc[(label, arm), "number_of_samples"] == len(rows)
                assert table.loc[(label, arm), "sum"] == pytest.approx(float(rows[value].sum()), rel=1e-9)
        means = per_person.groupby("arm")[value].mean()
        for arm in ("control", "test"):
            assert held.loc[(label, arm), "lift"] == pytest.approx(means[arm] / means[f"holdout-{HOLDOUT}"] - 1,
                                                                   rel=1e-9)  # fmt: skip
    client.close()
