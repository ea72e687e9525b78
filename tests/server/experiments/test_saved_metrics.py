"""Saved (shared) metrics over HTTP: PostHog's ``/experiment_saved_metrics/`` CRUD and its errors, and
experiments' ``saved_metrics_ids`` links (validation, ordering, PATCH replacing them, deletion unlinking)."""

from __future__ import annotations

from typing import Any

import pytest

from posthog_openapi import assert_valid

REVENUE = {"kind": "ExperimentMetric", "metric_type": "mean",
           "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}}  # fmt: skip
CHECKOUT = {"kind": "ExperimentMetric", "metric_type": "funnel",
            "series": [{"kind": "EventsNode", "event": "checkout"}, {"kind": "EventsNode", "event": "purchase"}]}


def _saved(project) -> str:
    return f"/api/projects/{project.id}/experiment_saved_metrics/"


def _experiments(project) -> str:
    return f"/api/projects/{project.id}/experiments/"


def _make(project, name: str, query: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    response = project.http.post(_saved(project), json={"name": name, "query": query or REVENUE, **extra})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_crud_in_posthogs_shapes_and_the_query_gets_its_own_uuid(make_project) -> None:
    project = make_project()
    created = _make(project, "Revenue", {**REVENUE, "uuid": "sent-by-the-client"}, tags=["money"])
    assert_valid(created, "ExperimentSavedMetric", drop=())
    uuid = created["query"].pop("uuid")
    assert uuid != "sent-by-the-client" and len(uuid) == 36  # a fresh uuid4 replaces the one sent
    assert created["query"] == REVENUE and created["tags"] == ["money"] and created["description"] is None
    _make(project, "checkout funnel", CHECKOUT)
    listed = project.http.get(_saved(project)).json()
    assert_valid(listed, "PaginatedExperimentSavedMetricList", drop=())
    assert [m["name"] for m in listed["results"]] == ["checkout funnel", "Revenue"]  # by name, case ignored
    url = f"{_saved(project)}{created['id']}/"
    patched = project.http.patch(url, json={"description": "sum of prices", "query": {**REVENUE, "uuid": uuid,
                                                                                       "name": "rev"}})  # fmt: skip
    assert patched.status_code == 200, patched.text
    assert_valid(patched.json(), "PatchedExperimentSavedMetric", drop=())
    assert patched.json()["query"] == {**REVENUE, "uuid": uuid, "name": "rev"}  # the uuid is kept
    without_uuid = project.http.patch(url, json={"query": REVENUE}).json()
    assert without_uuid["query"]["uuid"] == uuid
    assert project.http.put(url, json={"name": "Revenue 2"}).json()["name"] == "Revenue 2"
    assert project.http.delete(url).status_code == 204
    assert project.http.get(url).status_code == 404


@pytest.mark.parametrize(
    ("body", "detail", "attr"),
    [
        ({"name": "M"}, "Query is required to create a saved metric", "query"),
        ({"name": "M", "query": {}}, "Query is required to create a saved metric", "query"),
        ({"name": "M", "query": "mean"}, "Invalid metric: must be a dict", "query"),
        ({"name": "M", "query": {"kind": "ExperimentTrendsQuery"}},
         "Invalid metric: legacy metric kind 'ExperimentTrendsQuery' is no longer supported. Use 'ExperimentMetric' "
         "instead.", "query"),
        ({"name": "M", "query": {"kind": "TrendsQuery"}}, "Invalid metric: metric kind must be 'ExperimentMetric'",
         "query__kind"),
        ({"name": "M", "query": {"kind": "ExperimentMetric"}}, "Invalid metric: ExperimentMetric requires a "
         "metric_type", "query__metric_type"),
        ({"name": "M", "query": {"kind": "ExperimentMetric", "metric_type": "median"}},
         "Invalid metric: ExperimentMetric metric_type must be 'mean', 'funnel', 'ratio', or 'retention'",
         "query__metric_type"),
        ({"name": "M", "query": {**CHECKOUT, "series": []}}, None, "query__series"),
        ({"name": None, "query": REVENUE}, "This field may not be null.", "name"),
        ({"name": "M", "query": REVENUE, "tags": "money"}, None, "tags"),
        ({"name": "M", "query": REVENUE, "colour": 1}, None, "colour"),
    ],
)  # fmt: skip
def test_bad_saved_metrics_are_posthogs_400s_and_write_nothing(make_project, body, detail, attr) -> None:
    project = make_project()
    response = project.http.post(_saved(project), json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "validation_error" and error["attr"] == attr
    if detail is not None:
        assert error["detail"] == detail
    else:
        assert error["detail"]
    assert project.http.get(_saved(project)).json()["count"] == 0


def test_names_are_unique_per_project_whatever_the_case(make_project) -> None:
    project, other = make_project(), make_project()
    first = _make(project, "Revenue")
    clash = project.http.post(_saved(project), json={"name": "REVENUE", "query": REVENUE})
    assert clash.status_code == 400 and clash.json()["detail"] == "A shared metric with this name already exists."
    assert clash.json()["attr"] == "name"
    _make(other, "revenue")  # another project may use it
    second = _make(project, "Conversion", CHECKOUT)
    renamed = project.http.patch(f"{_saved(project)}{second['id']}/", json={"name": "revenue"})
    assert renamed.status_code == 400 and renamed.json()["attr"] == "name"
    assert project.http.patch(f"{_saved(project)}{first['id']}/", json={"name": "revenue"}).status_code == 200


def test_updates_keep_the_uuid_and_refuse_unknown_keys(make_project) -> None:
    project = make_project()
    saved = _make(project, "Revenue")
    url = f"{_saved(project)}{saved['id']}/"
    changed = project.http.patch(url, json={"query": {**REVENUE, "uuid": "another"}})
    assert changed.status_code == 400 and changed.json()["detail"] == "Saved metric UUID cannot be changed"
    unknown = project.http.patch(url, json={"colour": "red"})
    assert unknown.status_code == 400
    assert unknown.json()["detail"] == "Can't update keys: colour on ExperimentSavedMetric"
    bad = project.http.patch(url, json={"query": {**REVENUE, "metric_type": "funnel"}})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("Invalid metric: ")
    assert project.http.get(url).json() == saved


def test_experiments_link_saved_metrics_in_posthogs_shape(make_project) -> None:
    project = make_project()
    revenue, checkout = _make(project, "Revenue"), _make(project, "Checkout", CHECKOUT)
    inline = {**REVENUE, "uuid": "inline-1", "name": "inline"}
    created = project.http.post(_experiments(project), json={
        "name": "Shared", "feature_flag_key": "shared", "metrics": [inline],
        "primary_metrics_ordered_uuids": ["inline-1"],
        "saved_metrics_ids": [{"id": revenue["id"], "metadata": {"type": "primary"}},
                              {"id": checkout["id"], "metadata": {"type": "secondary"}}],
    })  # fmt: skip
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["saved_metrics_ids"] is None  # PostHog's serializer answers null: it has nothing to read back
    links = body["saved_metrics"]
    for link in links:
        assert_valid(link, "ExperimentToSavedMetric", drop=())
    assert [(k["saved_metric"], k["metadata"], k["name"], k["experiment"]) for k in links] == [
        (revenue["id"], {"type": "primary"}, "Revenue", body["id"]),
        (checkout["id"], {"type": "secondary"}, "Checkout", body["id"]),
    ]  # fmt: skip
    assert links[0]["query"] == revenue["query"]
    # Each saved metric's uuid joins the order list of its role, after the inline metrics.
    assert body["primary_metrics_ordered_uuids"] == ["inline-1", revenue["query"]["uuid"]]
    assert body["secondary_metrics_ordered_uuids"] == [checkout["query"]["uuid"]]
    assert project.http.get(f"{_experiments(project)}{body['id']}/").json() == body


def test_patch_replaces_the_links_and_deleting_a_saved_metric_unlinks_it(make_project) -> None:
    project = make_project()
    a, b, c = _make(project, "A"), _make(project, "B", CHECKOUT), _make(project, "C")
    experiment = project.http.post(_experiments(project), json={
        "name": "E", "feature_flag_key": "e",
        "saved_metrics_ids": [{"id": a["id"]}, {"id": b["id"], "metadata": {"type": "primary"}}]}).json()  # fmt: skip
    url = f"{_experiments(project)}{experiment['id']}/"
    first_ids = {k["saved_metric"]: k["id"] for k in experiment["saved_metrics"]}
    patched = project.http.patch(url, json={"saved_metrics_ids": [
        {"id": b["id"], "metadata": {"type": "secondary"}}, {"id": c["id"]}]})  # fmt: skip
    assert patched.status_code == 200, patched.text
    links = {k["saved_metric"]: k for k in patched.json()["saved_metrics"]}
    assert set(links) == {b["id"], c["id"]}
    assert links[b["id"]]["id"] == first_ids[b["id"]]  # kept, with the new metadata
    assert links[b["id"]]["metadata"] == {"type": "secondary"} and links[c["id"]]["metadata"] is None
    # Another experiment uses c too; deleting c removes it from both.
    other = project.http.post(_experiments(project), json={
        "name": "F", "feature_flag_key": "f", "saved_metrics_ids": [{"id": c["id"]}]}).json()  # fmt: skip
    assert project.http.delete(f"{_saved(project)}{c['id']}/").status_code == 204
    assert [k["saved_metric"] for k in project.http.get(url).json()["saved_metrics"]] == [b["id"]]
    assert project.http.get(f"{_experiments(project)}{other['id']}/").json()["saved_metrics"] == []
    cleared = project.http.patch(url, json={"saved_metrics_ids": None}).json()
    assert cleared["saved_metrics"] == []


@pytest.mark.parametrize(
    ("links", "detail"),
    [
        ("5", "Saved metrics must be a list"),
        ([5], "Saved metric must be an object"),
        ([{"metadata": {"type": "primary"}}], "Saved metric must have an id"),
        ([{"id": "SAVED", "metadata": "primary"}], "Metadata must be an object"),
        ([{"id": "SAVED", "metadata": {}}], "Metadata must have a type key"),
        ([{"id": 987654}], "Saved metric does not exist or does not belong to this project"),
        ([{"id": "OTHER"}], "Saved metric does not exist or does not belong to this project"),
        ([{"id": "SAVED"}, {"id": "SAVED"}], "Saved metric does not exist or does not belong to this project"),
        ([{"id": "SAVED", "metadata": {"type": "primary", "breakdowns": [{"property": p} for p in "abcd"]}}], None),
        ([{"id": "SAVED", "metadata": {"type": "primary", "breakdownAttributionType": "first_touch"}}], None),
        ([{"id": "SAVED", "metadata": {"type": "primary", "breakdown_limit": "many"}}], None),
    ],
)  # fmt: skip
def test_bad_links_are_posthogs_400s_and_write_nothing(make_project, links, detail) -> None:
    project, other = make_project(), make_project()
    saved, theirs = _make(project, "Revenue"), _make(other, "Revenue")
    ids = {"SAVED": saved["id"], "OTHER": theirs["id"]}
    if isinstance(links, list):
        links = [{**k, "id": ids.get(k["id"], k["id"])} if isinstance(k, dict) and "id" in k else k for k in links]
    response = project.http.post(_experiments(project),
                                 json={"name": "E", "feature_flag_key": "e", "saved_metrics_ids": links})  # fmt: skip
    assert response.status_code == 400, response.text
    assert response.json()["attr"].startswith("saved_metrics_ids")
    assert response.json()["detail"] == detail if detail else response.json()["detail"].startswith("Invalid")
    assert project.http.get(_experiments(project)).json()["count"] == 0
    assert project.service.state.store.flags.get_by_key(project.id, "e") is None


def test_a_funnel_link_takes_breakdown_overrides(make_project) -> None:
    project = make_project()
    checkout = _make(project, "Checkout", CHECKOUT)
    metadata = {"type": "primary", "breakdowns": [{"property": "$browser", "type": "event"}], "breakdown_limit": 5,
                "breakdownAttributionType": "step", "breakdownAttributionValue": 1}  # fmt: skip
    body = project.http.post(_experiments(project), json={
        "name": "E", "feature_flag_key": "e", "saved_metrics_ids": [{"id": checkout["id"], "metadata": metadata}]})
    assert body.status_code == 201, body.text
    assert body.json()["saved_metrics"][0]["metadata"] == metadata
