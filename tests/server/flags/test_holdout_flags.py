"""Holdouts in flag evaluation: PostHog's hashing (SHA-1 of ``holdout-<id>``), its order (before the release
conditions), its answer (``holdout-<id>``, reason ``holdout_condition_value``) in every ``/flags`` version, and the
official ``posthog`` SDK's local evaluation agreeing with the service's remote answers."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import posthog
import pytest

from hoglab.server.flags import FlagSpec, Person, evaluate_flag
from hoglab.server.flags.hashing import bucket, holdout_bucket, in_holdout

from .helpers import ask, make_flag

pytestmark = [pytest.mark.xdist_group("flags_service"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

VARIANTS = [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]


def _sha1_share(text: str) -> float:
    """PostHog's hash restated: the first 15 hex digits of SHA-1 over 0xFFFFFFFFFFFFFFF."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF


def test_posthogs_test_vector_reproduces() -> None:
    # rules-v2 contract corpus, hash.holdout.literal_prefix: user-31 -> 0.0194745413007599, in at 10 %, out at 1 %.
    assert holdout_bucket("user-31") == pytest.approx(0.0194745413007599, abs=1e-16)
    assert holdout_bucket("user-31") == _sha1_share("holdout-user-31")
    assert (in_holdout("user-31", 10), in_holdout("user-31", 1), in_holdout("user-31", 100)) == (True, False, True)
    # Not the rollout hash: no flag key, a dash instead of a dot.
    assert holdout_bucket("user-31") != bucket("holdout", "user-31")
    # Out-of-range shares are clamped, as PostHog's server and SDK clamp them.
    assert in_holdout("user-31", 250) and not in_holdout("user-31", -5)


def test_the_holdout_comes_from_the_current_key_or_the_legacy_groups() -> None:
    current = FlagSpec(1, "f", {"holdout": {"id": 7, "exclusion_percentage": 10},
                                "holdout_groups": [{"properties": [], "rollout_percentage": 90, "variant": "x"}]})
    assert current.holdout == ("holdout-7", 10.0)  # the current key wins
    assert FlagSpec(1, "f", {"holdout": None, "holdout_groups": [{"rollout_percentage": 9}]}).holdout is None
    assert FlagSpec(1, "f", {"holdout": {"id": 7}}).holdout is None  # no exclusion_percentage: none (SDK too)
    legacy = FlagSpec(1, "f", {"holdout_groups": [{"properties": [], "rollout_percentage": 20,
                                                   "variant": "holdout-3"}]})  # fmt: skip
    assert legacy.holdout == ("holdout-3", 20.0)
    with_properties = {"holdout_groups": [{"properties": [{"key": "a", "value": "b"}], "rollout_percentage": 20,
                                           "variant": "holdout-3"}]}  # fmt: skip
    assert FlagSpec(1, "f", with_properties).holdout is None  # older flags services ignored such a group


def test_a_held_out_person_gets_the_holdout_before_any_condition() -> None:
    only_x = [{"properties": [{"key": "email", "value": "x@example.com", "type": "person"}],
               "rollout_percentage": 100}]  # fmt: skip
    flag = FlagSpec(1, "checkout", {"groups": only_x, "multivariate": {"variants": VARIANTS},
                                    "holdout": {"id": 7, "exclusion_percentage": 30},
                                    "payloads": {"holdout-7": {"copy": "old"}}})  # fmt: skip
    ids = [f"user-{i}" for i in range(400)]
    held = [i for i in ids if _sha1_share(f"holdout-{i}") <= 0.30]
    assert 0.22 < len(held) / len(ids) < 0.38
    for distinct_id in ids:
        match = evaluate_flag(flag, Person(distinct_id, {"email": "y@example.com"}))
        if distinct_id in held:
            # Held out although the only condition fails: the holdout is read first.
            assert (match.value, match.reason, match.condition_index) == ("holdout-7", "holdout_condition_value",
                                                                          None)  # fmt: skip
            assert match.payload == '{"copy":"old"}'
        else:
            assert match.value is False and match.reason == "no_condition_match"
    # The same persons are held out of every flag using a holdout, whatever the flag's key.
    other = FlagSpec(2, "another-key", {"groups": [{"properties": [], "rollout_percentage": 100}],
                                        "holdout": {"id": 9, "exclusion_percentage": 30}})  # fmt: skip
    assert [i for i in ids if evaluate_flag(other, Person(i)).value == "holdout-9"] == held
    everyone = FlagSpec(3, "all", {"groups": [], "holdout": {"id": 1, "exclusion_percentage": 100}})
    nobody = FlagSpec(4, "none", {"groups": [{"properties": [], "rollout_percentage": 100}],
                                  "holdout": {"id": 1, "exclusion_percentage": 0}})  # fmt: skip
    assert all(evaluate_flag(everyone, Person(i)).value == "holdout-1" for i in ids[:50])
    assert all(evaluate_flag(nobody, Person(i)).value is True for i in ids[:50])


@pytest.fixture
def project(make_project):
    return make_project()


def _held_and_not(share: float) -> tuple[str, str]:
    ids = (f"person-{i}" for i in range(10_000))
    held = next(i for i in ids if _sha1_share(f"holdout-{i}") <= share / 100)
    free = next(i for i in (f"person-{i}" for i in range(10_000)) if _sha1_share(f"holdout-{i}") > share / 100)
    return held, free


def test_flags_answers_in_every_version(project) -> None:
    make_flag(project, "held", variants=VARIANTS, payloads={"holdout-7": "{\"copy\": \"old\"}"})
    store = project.service.state.store
    flag = store.flags.get_by_key(project.id, "held")
    store.flags.update(flag.id, filters={**flag.filters, "holdout": {"id": 7, "exclusion_percentage": 20}})
    held, free = _held_and_not(20)
    v2 = ask(project, {"distinct_id": held}).json()["flags"]["held"]
    assert v2["enabled"] is True and v2["variant"] == "holdout-7"
    assert v2["reason"] == {"code": "holdout_condition_value", "condition_index": None,
                            "description": "Holdout condition value"}  # fmt: skip
    assert v2["metadata"]["payload"] == '{"copy": "old"}'
    v4 = ask(project, {"distinct_id": held}, path="/flags/?v=4").json()["flags"]["held"]
    assert v4["value"] == "holdout-7" and v4["metadata"]["variant_key"] == "holdout-7"
    v1 = ask(project, {"distinct_id": held}, path="/flags/").json()
    assert v1["featureFlags"]["held"] == "holdout-7" and v1["featureFlagPayloads"]["held"] == '{"copy": "old"}'
    decide = ask(project, {"distinct_id": held}, path="/decide/?v=3").json()
    assert decide["featureFlags"]["held"] == "holdout-7"
    normal = ask(project, {"distinct_id": free}).json()["flags"]["held"]
    assert normal["variant"] in ("control", "test") and normal["reason"]["code"] == "condition_match"


@pytest.fixture
def sdks(project) -> Iterator[tuple[posthog.Posthog, posthog.Posthog]]:
    store = project.service.state.store
    _, reader = store.keys.create(store.users.default().id, ["feature_flag:read"], [project.id], label="sdk")
    local = posthog.Posthog(project.api_token, host=project.service.url, personal_api_key=reader,
                            capture_mode="v0", send=False, poll_interval=3600)  # fmt: skip
    remote = posthog.Posthog(project.api_token, host=project.service.url, send=False,
                             feature_flags_request_max_retries=0)  # fmt: skip
    yield local, remote
    local.shutdown()
    remote.shutdown()


def _experiment(project, key: str, holdout_id: int, **body: Any) -> dict[str, Any]:
    response = project.http.post(f"/api/projects/{project.id}/experiments/", json={
        "name": key, "feature_flag_key": key, "holdout_id": holdout_id, "start_date": "2026-01-01T00:00:00Z",
        **body})  # fmt: skip
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_the_sdks_local_evaluation_agrees_with_the_service(project, sdks) -> None:
    local, remote = sdks
    holdout = project.http.post(f"/api/projects/{project.id}/experiment_holdouts/", json={
        "name": "H", "filters": [{"properties": [], "rollout_percentage": 25}]}).json()  # fmt: skip
    _experiment(project, "exp-a", holdout["id"])
    _experiment(project, "exp-b", holdout["id"])
    # A release condition that fails for half the persons: held-out ones still get the holdout, from both.
    pros = {"key": "plan", "value": ["pro"], "type": "person", "operator": "exact"}
    make_flag(project, "pros-only", groups=[{"properties": [pros], "rollout_percentage": 100}], variants=VARIANTS)
    store = project.service.state.store
    flag = store.flags.get_by_key(project.id, "pros-only")
    store.flags.update(flag.id, filters={**flag.filters, "holdout": {"id": holdout["id"], "exclusion_percentage": 25}})
    local.load_feature_flags()
    definitions = {f["key"]: f for f in local.feature_flags}
    assert definitions["exp-a"]["filters"]["holdout"] == {"id": holdout["id"], "exclusion_percentage": 25}
    value = f"holdout-{holdout['id']}"
    held = 0
    for i in range(200):
        user, props = f"sdk-holdout-{i}", {"plan": ["pro", "free"][i % 2]}
        expected_held = _sha1_share(f"holdout-{user}") <= 0.25
        for key in ("exp-a", "exp-b", "pros-only"):
            mine = local.get_feature_flag(key, user, person_properties=props, only_evaluate_locally=True)
            theirs = remote.get_feature_flag(key, user, person_properties=props)
            assert mine == theirs, (key, user, props)
            assert (mine == value) == expected_held, (key, user)
            if not expected_held and key == "pros-only" and props["plan"] == "free":
                assert mine is False
        held += expected_held
    assert 30 < held < 70  # about a quarter of 200
