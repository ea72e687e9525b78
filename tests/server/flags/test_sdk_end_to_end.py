"""The official ``posthog`` package against the live service: an experiment assigned, exposed, counted.

The SDK talks to the service as to PostHog Cloud: ``/flags/?v=4`` for flags, ``/batch/`` for events. Its
background consumer is flushed explicitly before anything is checked, and it never retries a flags request, so
every run sends the same requests.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import posthog
import pytest

from hoglab.server.flags.hashing import variant_for
from hoglab.server.hogql import compile_hogql
from hoglab.stats.posthog import trend_verdict

from .helpers import iso

pytestmark = [
    pytest.mark.xdist_group("flags_service"),
    # get_feature_flag and send_feature_flags are deprecated in favour of evaluate_flags; both are what
    # applications in the wild call, so both are tested.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

VARIANTS = [
    {"key": "control", "name": "Control", "rollout_percentage": 40},
    {"key": "test", "name": "Test", "rollout_percentage": 60},
]
USERS = [f"sdk-user-{i}" for i in range(300)]


@pytest.fixture
def project(make_project):
    return make_project()


@pytest.fixture
def sdk(project) -> Iterator[posthog.Posthog]:
    client = posthog.Posthog(
        project.api_token,
        host=project.service.url,
        capture_mode="v0",
        max_retries=0,
        feature_flags_request_max_retries=0,
        feature_flags_request_timeout_seconds=30,
    )
    yield client
    client.shutdown()


def _experiment(project, key: str, **body) -> dict:
    body = {"name": key, "feature_flag_key": key, "parameters": {"feature_flag_variants": VARIANTS}, **body}
    response = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _rows(project, hogql: str, **values) -> list[dict]:
    compiled = compile_hogql(hogql, team_id=project.id, values=values, default_limit=None)
    return project.service.state.engine.execute(compiled.sql, settings=compiled.settings).to_pylist()


def _requires_flag_implementation(project, events: list[str]) -> bool:
    url = f"/api/projects/{project.id}/experiments/requires_flag_implementation/"
    return project.http.get(url, params={"events": json.dumps(events)}).json()["result"]


def test_an_experiment_run_by_the_official_sdk(project, sdk):
    start = datetime.now(UTC) - timedelta(days=1)
    metric = {"insight": "TRENDS", "events": [{"id": "purchase", "order": 0}]}
    experiment = _experiment(project, "new-checkout", start_date=iso(start), filters=metric)
    _experiment(project, "draft-idea")  # no start date: a draft, its flag inactive

    # Assignment: every user gets the variant PostHog's hashing gives, in the experiment's proportions.
    assigned = {user: sdk.get_feature_flag("new-checkout", user) for user in USERS}
    assert assigned == {user: variant_for("new-checkout", user, VARIANTS) for user in USERS}
    split = Counter(assigned.values())
    # 60% test within four binomial standard deviations (these 300 ids happen to land 3 SD high).
    assert abs(split["test"] / len(USERS) - 0.6) < 4 * (0.6 * 0.4 / len(USERS)) ** 0.5, split
    assert sdk.get_feature_flag("new-checkout", USERS[0]) == assigned[USERS[0]]  # the same answer again
    # The draft's flag is off: absent from the answer, so the SDK reads no value at all.
    assert sdk.get_feature_flag("draft-idea", USERS[0]) is None
    assert not sdk.feature_enabled("draft-idea", USERS[0])

    assert _requires_flag_implementation(project, ["purchase"]) is True
    buyers = USERS[:40]
    for user in buyers:
        sdk.capture("purchase", distinct_id=user, properties={"price": 10}, send_feature_flags=True)
    sdk.flush()

    # The exposures the SDK captured are events, one per user for this flag, with the variant it returned.
    exposures = _rows(
        project,
        "SELECT distinct_id, properties.$feature_flag_response AS response, count() AS n FROM events "
        "WHERE event = '$feature_flag_called' AND properties.$feature_flag = {key} GROUP BY 1, 2",
        key="new-checkout",
    )
    assert {r["distinct_id"]: r["response"] for r in exposures} == assigned
    assert all(r["n"] == 1 for r in exposures)  # the SDK reports each (user, flag, value) once
    # Events captured with send_feature_flags carry $feature/<key>; the draft's flag is not among them.
    purchases = _rows(project, "SELECT distinct_id, properties FROM events WHERE event = 'purchase'")
    assert len(purchases) == len(buyers)
    for row in purchases:
        properties = json.loads(row["properties"])
        assert properties["$feature/new-checkout"] == assigned[row["distinct_id"]]
        assert "$feature/draft-idea" not in properties
        assert properties["$active_feature_flags"] == ["new-checkout"]
    assert _requires_flag_implementation(project, ["purchase"]) is False

    # /results counts them: the SDK's $feature_flag_called events are the exposures (persons per variant), the
    # purchases it sent with send_feature_flags are the metric, split by the $feature/new-checkout they carry.
    answer = project.http.get(f"/api/projects/{project.id}/experiments/{experiment['id']}/results/")
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    exposed, bought = Counter(assigned.values()), Counter(assigned[user] for user in buyers)
    assert {v["key"]: (v["count"], v["absolute_exposure"]) for v in result["variants"]} == {
        variant: (bought[variant], exposed[variant]) for variant in ("control", "test")
    }
    assert result["variants"][1]["exposure"] == pytest.approx(exposed["test"] / exposed["control"])
    verdict = trend_verdict({variant: (bought[variant], exposed[variant]) for variant in ("control", "test")})
    assert (result["probability"], result["significance_code"]) == (
        verdict.probability, verdict.significance_code.value)  # fmt: skip
    assert exposed["control"] < 100 and result["significance_code"] == "not_enough_exposure"  # this split's control

    # The exposure cohort holds exactly the users who were exposed.
    url = f"/api/projects/{project.id}/experiments/{experiment['id']}/create_exposure_cohort_for_experiment/"
    cohort = project.http.post(url).json()["cohort"]
    assert cohort["count"] == len(USERS)


def test_evaluate_flags_snapshots(project, sdk):
    _experiment(project, "pricing-page", start_date=iso(datetime.now(UTC) - timedelta(hours=1)))
    user = "snapshot-user"
    flags = sdk.evaluate_flags(user, person_properties={"plan": "pro"})
    variant = flags.get_flag("pricing-page")
    assert variant == variant_for("pricing-page", user, VARIANTS)
    assert flags.is_enabled("pricing-page") is True and flags.get_flag("missing") is None
    sdk.capture("$pageview", distinct_id=user, flags=flags)
    sdk.flush()
    rows = _rows(project, "SELECT event, properties FROM events WHERE distinct_id = {d}", d=user)
    [pageview] = [json.loads(r["properties"]) for r in rows if r["event"] == "$pageview"]
    assert pageview["$feature/pricing-page"] == variant
    called = {p["$feature_flag"]: p for r in rows if r["event"] == "$feature_flag_called"
              for p in [json.loads(r["properties"])]}  # fmt: skip
    assert set(called) == {"pricing-page", "missing"}  # every flag read is reported, even an unknown one
    assert called["pricing-page"]["$feature_flag_response"] == variant
    assert called["pricing-page"]["$feature_flag_reason"] == "Matched condition set 1"


def test_local_evaluation_with_a_personal_key_agrees_with_the_server(project):
    _experiment(project, "local-exp", start_date=iso(datetime.now(UTC) - timedelta(hours=1)))
    store = project.service.state.store
    pro_or_team = {"key": "plan", "value": ["pro", "team"], "type": "person"}
    store.flags.create(
        project.id, "pros", filters={"groups": [{"properties": [pro_or_team], "rollout_percentage": 50}]}
    )
    _, reader = store.keys.create(store.users.default().id, ["feature_flag:read"], [project.id], label="sdk")
    client = posthog.Posthog(
        project.api_token, host=project.service.url, personal_api_key=reader, capture_mode="v0", send=False,
        poll_interval=3600,
    )  # fmt: skip
    try:
        client.load_feature_flags()
        assert {f["key"] for f in client.feature_flags} >= {"local-exp", "pros"}
        remote = posthog.Posthog(project.api_token, host=project.service.url, send=False)
        try:
            for i in range(60):
                user, props = f"local-{i}", {"plan": ["pro", "free", "team"][i % 3]}
                local = client.get_feature_flag("pros", user, person_properties=props, only_evaluate_locally=True)
                server = remote.get_feature_flag("pros", user, person_properties=props)
                assert local == server, (user, props)
                assert client.get_feature_flag("local-exp", user, only_evaluate_locally=True) == variant_for(
                    "local-exp", user, VARIANTS
                )
        finally:
            remote.shutdown()
    finally:
        client.shutdown()
    # Without the scope, or with a project key instead of a personal key, the definitions are refused.
    _, other = store.keys.create(store.users.default().id, ["experiment:read"], [project.id], label="x")
    denied = project.client(other).get("/flags/definitions", params={"token": project.api_token})
    assert denied.status_code == 403 and "feature_flag:read" in denied.json()["detail"]
    assert project.client(project.api_token).get(f"/flags/definitions?token={project.api_token}").status_code == 401
