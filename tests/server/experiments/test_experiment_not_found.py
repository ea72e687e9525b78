"""An experiment id the project does not have is a 404 that lists the ids it does have (its own only, capped)."""

from __future__ import annotations

from hoglab.server.experiments.rules import NOT_FOUND_IDS


def _create(project, key: str) -> int:
    body = {"name": key, "feature_flag_key": key}
    response = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _refused(response) -> str:
    assert response.status_code == 404, response.text
    body = response.json()
    assert (body["type"], body["code"], body["attr"]) == ("invalid_request", "not_found", None)
    return str(body["detail"])


def test_not_found_lists_the_projects_own_ids(make_project) -> None:
    project, other = make_project(), make_project()
    ids = [_create(project, f"checkout-{i}") for i in range(2)]
    theirs = _create(other, "theirs")
    base = f"/api/projects/{project.id}/experiments"
    expected = f"Experiment 999999 not found in project {project.id} (ids: {ids[0]}, {ids[1]})."
    assert _refused(project.http.get(f"{base}/999999/")) == expected
    assert _refused(project.http.patch(f"{base}/999999/", json={"name": "x"})) == expected
    assert _refused(project.http.delete(f"{base}/999999/")) == expected
    assert _refused(project.http.get(f"{base}/999999/results/")) == expected
    # another project's experiment is not found here, and its id is never listed
    detail = _refused(project.http.get(f"{base}/{theirs}/"))
    assert detail == f"Experiment {theirs} not found in project {project.id} (ids: {ids[0]}, {ids[1]})."


def test_not_found_in_an_empty_project_and_past_the_cap(make_project) -> None:
    empty = make_project()
    assert _refused(empty.http.get(f"/api/projects/{empty.id}/experiments/7/")) == (
        f"Experiment 7 not found in project {empty.id} (it has no experiments)."
    )
    many = make_project()
    ids = [_create(many, f"flag-{i}") for i in range(NOT_FOUND_IDS + 3)]
    detail = _refused(many.http.get(f"/api/projects/{many.id}/experiments/999999/"))
    listed = ", ".join(map(str, ids[:NOT_FOUND_IDS]))
    assert detail == f"Experiment 999999 not found in project {many.id} (ids: {listed}, … 3 more)."
