"""``POST /flags/`` and ``/decide/`` over HTTP: versions and shapes, keys, bodies, persons, cohorts, continuity."""

from __future__ import annotations

import base64
import gzip
import json

import httpx
import pytest

from hoglab.server.flags.hashing import variant_for

from .helpers import TWO_WAY, ask, capture, make_flag, values

pytestmark = pytest.mark.xdist_group("flags_service")


def test_every_version_shape(make_project):
    project = make_project()
    make_flag(project, "exp", variants=TWO_WAY, payloads={"control": '{"c": 1}'})
    make_flag(project, "off", groups=[{"properties": [], "rollout_percentage": 0}])
    variant = variant_for("exp", "u1", TWO_WAY)

    legacy = ask(project, {"distinct_id": "u1"}, path="/flags/").json()
    assert legacy["featureFlags"] == {"exp": variant, "off": False}
    assert legacy["featureFlagPayloads"] == ({"exp": '{"c": 1}'} if variant == "control" else {})
    assert legacy["errorsWhileComputingFlags"] is False and len(legacy["requestId"]) == 36

    v2 = ask(project, {"distinct_id": "u1"}).json()
    assert v2["flags"]["exp"]["enabled"] is True and v2["flags"]["exp"]["variant"] == variant
    assert v2["flags"]["off"] == {
        "key": "off",
        "enabled": False,
        "variant": None,
        "reason": {"code": "out_of_rollout_bound", "condition_index": 0, "description": "Out of rollout bound"},
        "metadata": {"id": v2["flags"]["off"]["metadata"]["id"], "version": 1, "description": None, "payload": None,
                     "has_experiment": False},
    }  # fmt: skip
    assert isinstance(v2["evaluatedAt"], int) and "config" not in v2

    v4 = ask(project, {"distinct_id": "u1"}, path="/flags/?v=4&config=true").json()
    assert v4["flags"]["exp"]["value"] == variant and v4["flags"]["off"]["value"] is False
    assert v4["flags"]["exp"]["metadata"]["config_version"] == 1
    assert v4["flags"]["exp"]["metadata"]["variant_key"] == variant
    assert v4["config"] == {"enable_collect_everything": True} and v4["sessionRecording"] is False

    decide = {v: ask(project, {"distinct_id": "u1"}, path=f"/decide/?v={v}").json() for v in ("1", "2", "3", "4")}
    assert decide["1"]["featureFlags"] == ["exp"]
    assert decide["2"]["featureFlags"] == {"exp": variant}
    assert decide["3"]["featureFlags"] == {"exp": variant, "off": False}
    assert "featureFlagPayloads" in decide["3"] and decide["3"]["errorsWhileComputingFlags"] is False
    assert decide["4"]["flags"]["exp"]["variant"] == variant
    assert all(d["supportedCompression"] == ["gzip", "gzip-js"] and d["requestId"] for d in decide.values())
    # A junk version is read as the default, as PostHog does.
    assert ask(project, {"distinct_id": "u1"}, path="/decide/?v=x").json()["featureFlags"] == ["exp"]
    assert httpx.get(project.service.url + "/decide/").json()["featureFlags"] == {}


def test_inactive_and_deleted_flags_are_left_out(make_project):
    project = make_project()
    make_flag(project, "live")
    make_flag(project, "draft", active=False)
    gone = make_flag(project, "gone")
    project.service.state.store.flags.update(gone.id, deleted=True)
    assert values(ask(project, {"distinct_id": "u"})) == {"live": True}


def test_flag_keys_to_evaluate(make_project):
    project = make_project()
    for key in ("a", "b", "c"):
        make_flag(project, key)
    assert set(values(ask(project, {"distinct_id": "u", "flag_keys_to_evaluate": ["a", "c", "zz"]}))) == {"a", "c"}
    assert set(values(ask(project, {"distinct_id": "u", "flag_keys_to_evaluate": []}))) == {"a", "b", "c"}
    assert ask(project, {"distinct_id": "u", "disable_flags": True}).json()["flags"] == {}


def test_keys_and_their_errors(make_project):
    project = make_project()
    url = project.service.url
    missing = httpx.post(f"{url}/flags/?v=2", json={"distinct_id": "u"})
    assert missing.status_code == 401
    assert missing.json() == {
        "type": "authentication_error", "code": "no_api_key", "attr": None,
        "detail": "No project API key provided. You can find your project API key in PostHog project settings.",
    }  # fmt: skip
    unknown = httpx.post(f"{url}/decide/", json={"token": "phc_unknown", "distinct_id": "u"})
    assert unknown.status_code == 401 and unknown.json()["code"] == "invalid_api_key"
    assert unknown.json()["detail"].startswith("Project API key invalid.")
    # The key can also come as "token", or in the query string (posthog-js); a personal key is not a project key.
    assert httpx.post(f"{url}/flags/", json={"token": project.api_token, "distinct_id": "u"}).status_code == 200
    assert httpx.post(f"{url}/flags/?token={project.api_token}", json={"distinct_id": "u"}).status_code == 200
    assert httpx.post(f"{url}/flags/", json={"api_key": project.key, "distinct_id": "u"}).status_code == 401


@pytest.mark.parametrize(
    ("body", "code", "attr"),
    [
        (b"", "malformed_data", None),
        (b"{not json", "malformed_data", None),
        (b"[1, 2]", "malformed_data", None),
        (b'"text"', "malformed_data", None),
        ({}, "missing_distinct_id", "distinct_id"),
        ({"distinct_id": " "}, "empty_distinct_id", "distinct_id"),
        ({"distinct_id": True}, "invalid_input", "distinct_id"),
        ({"distinct_id": {"a": 1}}, "invalid_input", "distinct_id"),
        ({"distinct_id": "u", "person_properties": [1]}, "invalid_input", "person_properties"),
        ({"distinct_id": "u", "groups": "acme"}, "invalid_input", "groups"),
        ({"distinct_id": "u", "flag_keys_to_evaluate": "a"}, "invalid_input", "flag_keys_to_evaluate"),
        ({"distinct_id": "u", "flag_keys_to_evaluate": [1]}, "invalid_input", "flag_keys_to_evaluate"),
    ],
)
def test_malformed_requests_are_400(make_project, body, code, attr):
    project = make_project()
    url = project.service.url + "/flags/?v=2"
    if isinstance(body, dict):
        response = httpx.post(url, json={"api_key": project.api_token, **body})
    else:
        response = httpx.post(f"{url}&token={project.api_token}", content=body)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert (answer["type"], answer["code"], answer["attr"]) == ("validation_error", code, attr)


def test_compressed_and_encoded_bodies(make_project):
    project = make_project()
    make_flag(project, "on")
    raw = json.dumps({"token": project.api_token, "distinct_id": "u"}).encode()
    url = project.service.url
    gz = httpx.post(f"{url}/flags/?v=2", content=gzip.compress(raw), headers={"Content-Encoding": "gzip"})
    js = httpx.post(f"{url}/flags/?v=2&compression=gzip-js", content=gzip.compress(raw))
    form = httpx.post(f"{url}/decide/?v=3", data={"data": base64.b64encode(raw).decode()})
    plain = httpx.post(f"{url}/flags/?v=2", content=raw, headers={"Content-Type": "text/plain"})
    assert [r.status_code for r in (gz, js, form, plain)] == [200] * 4
    assert gz.json()["flags"]["on"]["enabled"] and form.json()["featureFlags"] == {"on": True}
    broken = httpx.post(f"{url}/flags/", content=b"\x1f\x8b\x08broken", headers={"Content-Encoding": "gzip"})
    assert broken.status_code == 400 and broken.json()["code"] == "malformed_data"


def test_cors_for_browsers(make_project):
    project = make_project()
    origin = {"Origin": "https://shop.example"}
    ok = ask(project, {"distinct_id": "u"}, headers=origin)
    assert ok.headers["access-control-allow-origin"] == "https://shop.example"
    refused = httpx.post(project.service.url + "/flags/", json={"distinct_id": "u"}, headers=origin)
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://shop.example"
    asking = {**origin, "Access-Control-Request-Method": "POST"}
    preflight = httpx.options(project.service.url + "/decide/", headers=asking)
    assert preflight.status_code == 200 and "POST" in preflight.headers["access-control-allow-methods"]


def test_stored_person_properties_and_request_overrides(make_project):
    project = make_project()
    pro = [{"properties": [{"key": "plan", "value": "pro", "type": "person"}], "rollout_percentage": 100}]
    unset = [{"properties": [{"key": "plan", "operator": "is_not_set", "type": "person"}], "rollout_percentage": 100}]
    make_flag(project, "pro-only", pro)
    make_flag(project, "no-plan", unset)
    capture(project, [
        {"event": "$pageview", "distinct_id": "anon-1", "properties": {"$set": {"plan": "pro"}}},
        {"event": "$identify", "distinct_id": "user-1", "properties": {"$anon_distinct_id": "anon-1"}},
    ])  # fmt: skip
    # The person's stored properties count, through every distinct id of the person.
    assert values(ask(project, {"distinct_id": "user-1"})) == {"pro-only": True, "no-plan": False}
    assert values(ask(project, {"distinct_id": "anon-1"})) == {"pro-only": True, "no-plan": False}
    # The request's person_properties win over the stored ones, and stand in for persons not ingested yet.
    assert values(ask(project, {"distinct_id": "user-1", "person_properties": {"plan": "free"}}))["pro-only"] is False
    assert values(ask(project, {"distinct_id": "new", "person_properties": {"plan": "pro"}}))["pro-only"] is True
    assert values(ask(project, {"distinct_id": "new"})) == {"pro-only": False, "no-plan": True}
    # A later $set is seen at once: flags read the same person cache capture keeps current.
    capture(project, [{"event": "$set", "distinct_id": "user-1", "properties": {"$set": {"plan": "team"}}}])
    assert values(ask(project, {"distinct_id": "user-1"}))["pro-only"] is False


def test_experience_continuity_keeps_the_anonymous_variant(make_project):
    project = make_project()
    make_flag(project, "sticky", variants=TWO_WAY, continuity=True)
    make_flag(project, "plain", variants=TWO_WAY)
    # Ids whose own hashes give different variants, so keeping the anonymous one is visible.
    anon, user = next(
        (f"anon-{i}", f"user-{i}")
        for i in range(1000)
        if variant_for("sticky", f"anon-{i}", TWO_WAY) != variant_for("sticky", f"user-{i}", TWO_WAY)
    )
    before = values(ask(project, {"distinct_id": anon}))["sticky"]
    capture(project, [{"event": "$pageview", "distinct_id": anon}])
    # posthog-js sends $anon_distinct_id with the first flags call after identify, before $identify is ingested.
    first = values(ask(project, {"distinct_id": user, "$anon_distinct_id": anon}))
    assert first["sticky"] == before
    capture(project, [{"event": "$identify", "distinct_id": user, "properties": {"$anon_distinct_id": anon}}])
    later = values(ask(project, {"distinct_id": user}))
    assert later["sticky"] == before
    assert later["plain"] == variant_for("plain", user, TWO_WAY)  # flags without continuity hash the id given


def test_a_database_failure_fails_only_the_flags_that_need_it(make_project, monkeypatch):
    project = make_project()
    make_flag(project, "simple")
    make_flag(project, "needs-person", [{"properties": [{"key": "plan", "value": "pro"}], "rollout_percentage": 100}])
    from hoglab.server.flags import service

    def broken(*args, **kwargs):
        raise RuntimeError("engine down")

    monkeypatch.setattr(service, "_lookup_persons", broken)
    answer = ask(project, {"distinct_id": "u"}, path="/flags/?v=4").json()
    assert answer["errorsWhileComputingFlags"] is True
    assert answer["flags"]["simple"]["value"] is True
    assert answer["flags"]["needs-person"]["failed"] is True and answer["flags"]["needs-person"]["value"] is None
    legacy = ask(project, {"distinct_id": "u"}, path="/flags/").json()
    assert legacy["featureFlags"] == {"simple": True}  # a failed flag is left out rather than reported off


def test_feature_flag_reads(make_project):
    project = make_project()
    made = project.http.post(f"/api/projects/{project.id}/experiments/", json={"name": "E", "feature_flag_key": "e"})
    assert made.status_code == 201
    simple = make_flag(project, "simple", [{"properties": [], "rollout_percentage": 30}])
    listed = project.http.get(f"/api/projects/{project.id}/feature_flags/", params={"limit": 1})
    assert listed.status_code == 200
    page = listed.json()
    assert page["count"] == 2 and page["next"] and [f["key"] for f in page["results"]] == ["e"]
    assert page["results"][0]["experiment_set"] == [made.json()["id"]] and page["results"][0]["active"] is False
    one = project.http.get(f"/api/projects/{project.id}/feature_flags/{simple.id}/").json()
    assert (one["key"], one["is_simple_flag"], one["rollout_percentage"]) == ("simple", True, 30)
    other = make_project()
    assert other.http.get(f"/api/projects/{other.id}/feature_flags/{simple.id}/").status_code == 404
    reader = make_project(scopes=["experiment:read"])
    denied = reader.http.get(f"/api/projects/{reader.id}/feature_flags/")
    assert denied.status_code == 403 and denied.json()["detail"] == "API key missing required scope 'feature_flag:read'"
