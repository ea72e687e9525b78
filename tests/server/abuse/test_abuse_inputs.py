"""Abuse: inputs that used to be accepted and break later, or be read as something else: an experiment PATCHed
with filters its results cannot read, project and object ids written with non-ASCII digits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the session conftest's type; tests/ is not a package, so only for readers and checkers
    from conftest import TestProject


def _experiment(project: TestProject, key: str) -> int:
    body = {"name": key, "feature_flag_key": key, "filters": {"insight": "TRENDS", "events": [{"id": "buy"}]}}
    created = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


@pytest.mark.parametrize(
    ("filters", "attr"),
    [({"events": "x"}, "filters__events"), ({"insight": "RETENTION", "events": [{"id": "a"}]}, "filters__insight")],
)
def test_patch_validates_filters_like_create(live_project: TestProject, filters: dict[str, object], attr: str) -> None:
    base = f"/api/projects/{live_project.id}/experiments/"
    created = live_project.http.post(base, json={"name": "c", "feature_flag_key": "c-bad", "filters": filters})
    assert created.status_code == 400 and created.json()["attr"] == attr
    experiment = _experiment(live_project, "patched")
    patched = live_project.http.patch(f"{base}{experiment}/", json={"filters": filters})
    assert patched.status_code == 400, patched.text
    assert patched.json()["attr"] == attr and patched.json()["type"] == "validation_error"
    kept = live_project.http.get(f"{base}{experiment}/").json()
    assert kept["filters"] == {"insight": "TRENDS", "events": [{"id": "buy"}]}  # nothing written


@pytest.mark.parametrize("digit", ["\uff11", "\u0661", "\u0967", "1\u0660"])  # full-width 1, Arabic-Indic, ...
def test_ids_are_ascii_digits_only(make_project, digit: str) -> None:
    project: TestProject = make_project(projects="all")
    experiment = _experiment(project, "ascii")
    assert project.http.get(f"/api/projects/{project.id}/experiments/{experiment}/").status_code == 200
    as_project = project.http.get(f"/api/projects/{digit}/experiments/")
    assert as_project.status_code == 400 and as_project.json()["attr"] == "project_id"
    as_experiment = project.http.get(f"/api/projects/{project.id}/experiments/{digit}/")
    assert as_experiment.status_code in (400, 404) and as_experiment.json()["type"] in {
        "validation_error", "invalid_request"}
