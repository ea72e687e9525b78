"""``/api/projects/:id/actions/`` over HTTP: PostHog's shapes (validated against its OpenAPI document), its
semantics (soft delete, name uniqueness among live actions, step defaults) and clear 400s for bad steps."""

from __future__ import annotations

import pytest

from posthog_openapi import assert_valid

STEPS = [
    {"event": "$pageview", "url": "/signup/done", "url_matching": "contains"},
    {"event": "signed_up", "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]},
]


def _base(project) -> str:
    return f"/api/projects/{project.id}/actions/"


def test_create_list_retrieve_update_as_posthog_answers_them(make_project):
    project = make_project()
    created = project.http.post(_base(project), json={"name": "Signed up", "steps": STEPS, "description": "d",
                                                       "tags": ["growth"], "id": 999, "is_calculating": True})
    assert created.status_code == 201, created.text
    action = created.json()
    # The document types creation_context as a string; PostHog's server answers null: hoglab answers as the server.
    assert action["creation_context"] is None
    assert_valid({**action, "creation_context": ""}, "Action", drop=())
    assert action["id"] != 999 and action["is_calculating"] is False and action["is_action"] is True
    assert action["team_id"] == project.id and action["created_by"]["email"]
    assert action["bytecode_error"] is None and action["deleted"] is False and action["tags"] == ["growth"]
    # Every step answers PostHog's ten keys; url_matching defaults to contains, text/href matching stay null.
    assert [sorted(step) for step in action["steps"]] == [sorted(
        ["event", "properties", "selector", "tag_name", "text", "text_matching", "href", "href_matching", "url",
         "url_matching"])] * 2  # fmt: skip
    assert action["steps"][1]["url_matching"] == "contains" and action["steps"][1]["text_matching"] is None
    assert action["steps"][1]["properties"] == STEPS[1]["properties"]
    for step in action["steps"]:
        assert_valid(step, "ActionStepJSON", drop=())

    listed = project.http.get(_base(project)).json()
    assert listed["count"] == 1 and listed["next"] is None and listed["previous"] is None
    for item in listed["results"]:
        item["creation_context"] = ""  # null in the answer, as above
    assert_valid(listed, "PaginatedActionList", drop=())
    assert listed["results"][0]["id"] == action["id"]

    url = f"{_base(project)}{action['id']}/"
    assert project.http.get(url).json()["name"] == "Signed up"
    patched = project.http.patch(url, json={"name": "Signed up (all)", "steps": [{"event": "signed_up"}]})
    assert patched.status_code == 200, patched.text
    assert patched.json()["name"] == "Signed up (all)" and patched.json()["description"] == "d"
    assert [s["event"] for s in patched.json()["steps"]] == ["signed_up"]
    put = project.http.put(url, json={"description": "replaced"}).json()
    assert put["description"] == "replaced" and put["name"] == "Signed up (all)"


def test_an_explicit_null_url_matching_stays_null_and_unknown_step_keys_are_dropped(make_project):
    project = make_project()
    steps = [{"event": "a", "url": " /x ", "url_matching": None, "selector_regex": "read-only", "extra": 1}]
    action = project.http.post(_base(project), json={"steps": steps}).json()
    assert action["steps"] == [{"event": "a", "properties": None, "selector": None, "tag_name": None, "text": None,
                                "text_matching": None, "href": None, "href_matching": None, "url": "/x",
                                "url_matching": None}]  # fmt: skip
    assert action["name"] is None  # a name is not required


def test_delete_is_405_and_deleting_is_a_patch_that_hides_it_from_the_list_only(make_project):
    project = make_project()
    action = project.http.post(_base(project), json={"name": "Gone soon", "steps": STEPS}).json()
    url = f"{_base(project)}{action['id']}/"
    refused = project.http.delete(url)
    assert refused.status_code == 405 and "deleted" in refused.json()["detail"]
    assert project.http.delete(f"{_base(project)}123456789/").status_code == 405  # whatever the id
    assert project.http.get(url).status_code == 200
    deleted = project.http.patch(url, json={"deleted": True}).json()
    assert deleted["deleted"] is True
    assert project.http.get(_base(project)).json()["results"] == []
    assert project.http.get(url).json()["deleted"] is True  # retrieve still works
    # The name is free again for a live action; restoring the old one then clashes.
    again = project.http.post(_base(project), json={"name": "Gone soon"})
    assert again.status_code == 201
    clash = project.http.patch(url, json={"deleted": False})
    assert clash.status_code == 400 and clash.json()["attr"] == "name" and clash.json()["code"] == "unique"
    assert str(again.json()["id"]) in clash.json()["detail"]


def test_names_are_unique_among_live_actions_and_never_blank(make_project):
    project = make_project()
    first = project.http.post(_base(project), json={"name": "Paid"}).json()
    duplicate = project.http.post(_base(project), json={"name": "Paid"})
    assert duplicate.status_code == 400
    assert duplicate.json() == {"type": "validation_error", "code": "unique", "attr": "name",
                                "detail": f"An action named 'Paid' already exists in this project (ID {first['id']})."}
    other = project.http.post(_base(project), json={"name": "Other"}).json()
    renamed = project.http.patch(f"{_base(project)}{other['id']}/", json={"name": "Paid"})
    assert renamed.status_code == 400 and renamed.json()["attr"] == "name"
    same = project.http.patch(f"{_base(project)}{first['id']}/", json={"name": "Paid", "description": "x"})
    assert same.status_code == 200  # its own name is not a clash
    blank = project.http.post(_base(project), json={"name": "   "})
    assert (blank.status_code, blank.json()["attr"], blank.json()["code"]) == (400, "name", "blank")
    # Another project may use the name.
    assert make_project().http.post(_base(make_project()), json={"name": "Paid"}).status_code in (201, 403)


@pytest.mark.parametrize(("steps", "attr", "says"), [
    ([{"url": "(", "url_matching": "regex"}], "steps__0__url", "regular expression"),
    ([{"event": "a"}, {"url": "(a)\\1", "url_matching": "regex"}], "steps__1__url", "RE2"),
    ([{"event": "$autocapture", "text": "(?=x)", "text_matching": "regex"}], "steps__0__text", "RE2"),
    ([{"event": "$autocapture", "selector": "div > a.btn"}], "steps__0__selector", "selector"),
    ([{"url_matching": "startswith"}], "steps__0__url_matching", "contains"),
    ([{"properties": [{"key": "plan", "value": "x", "operator": "near"}]}], "steps__0__properties", "near"),
    ([{"properties": [{"key": "plan", "value": "(", "operator": "regex"}]}], "steps__0__properties__0__value",
     "RE2"),
    ([{"properties": [{"type": "hogql", "key": "1) OR (1"}]}], "steps__0__properties__0__key", "HogQL"),
    ([{"properties": [{"type": "hogql", "key": "matchesAction(1)"}]}], "steps__0__properties", "matchesAction"),
    ([{"properties": [{"type": "hogql", "key": "team_id = 2"}]}], "steps__0", "reserved"),
    ([{"properties": [{"type": "hogql", "key": "(SELECT count() FROM system.tables) > 0"}]}], "steps__0", "Database"),
    ([{"properties": [{"type": "hogql", "key": "hostName() = 'x'"}]}], "steps__0", "hostName"),
    ([{"event": "$autocapture", "href": "(", "href_matching": "regex"}], "steps__0__href", "RE2"),
    ([{"properties": [{"key": "price", "value": "cheap", "operator": "gt"}]}], "steps__0__properties", "number"),
    ("not a list", "steps", "list"),
])  # fmt: skip
def test_bad_steps_are_400s_naming_the_field_and_store_nothing(make_project, steps, attr, says):
    project = make_project()
    refused = project.http.post(_base(project), json={"name": "Bad", "steps": steps})
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["attr"] == attr and says in body["detail"] and body["type"] == "validation_error"
    assert project.http.get(_base(project)).json()["count"] == 0


def test_a_selector_on_another_event_is_kept_as_posthog_ignores_it_there(make_project):
    project = make_project()
    created = project.http.post(_base(project), json={"steps": [{"event": "$pageview", "selector": "a.btn"}]})
    assert created.status_code == 201 and created.json()["steps"][0]["selector"] == "a.btn"


def test_scopes_and_projects_guard_every_verb(make_project):
    owner = make_project()
    action = owner.http.post(_base(owner), json={"name": "Mine", "steps": STEPS}).json()
    url = f"{_base(owner)}{action['id']}/"
    reader = owner.client(owner.new_key(["action:read"]))
    assert reader.get(url).status_code == 200
    denied = reader.patch(url, json={"name": "x"})
    assert denied.status_code == 403 and "action:write" in denied.json()["detail"]
    assert owner.client(owner.new_key(["query:read"])).get(_base(owner)).status_code == 403
    # Another project's key, on its own project path: the action is not found there.
    stranger = make_project()
    assert stranger.http.get(f"{_base(stranger)}{action['id']}/").status_code == 404
    assert stranger.http.patch(f"{_base(stranger)}{action['id']}/", json={"deleted": True}).status_code == 404
    assert owner.http.get(url).json()["deleted"] is False


def test_pinning_uses_the_servers_time_and_keeps_an_earlier_pin(make_project):
    project = make_project()
    action = project.http.post(_base(project), json={"name": "Pin me"}).json()
    url = f"{_base(project)}{action['id']}/"
    pinned = project.http.patch(url, json={"pinned_at": "2001-01-01T00:00:00Z"}).json()["pinned_at"]
    assert pinned is not None and not pinned.startswith("2001")
    assert project.http.patch(url, json={"pinned_at": "2030-01-01T00:00:00Z"}).json()["pinned_at"] == pinned
    assert project.http.patch(url, json={"pinned_at": ""}).json()["pinned_at"] is None


def test_paging_when_asked(make_project):
    project = make_project()
    for i in range(5):
        project.http.post(_base(project), json={"name": f"a{i}"})
    page = project.http.get(_base(project), params={"limit": 2, "offset": 2}).json()
    assert page["count"] == 5 and len(page["results"]) == 2 and "offset=4" in page["next"]
    everything = project.http.get(_base(project)).json()
    assert len(everything["results"]) == 5 and everything["next"] is None
