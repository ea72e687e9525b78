"""``hoglab project create`` and ``hoglab project list``."""

from __future__ import annotations

from clitesting import (
    run as _run,
)

from hoglab.server.store import Store


def test_project_create_prints_id_and_capture_key(capsys, tmp_path):
    status, out, _ = _run(
        capsys, "project", "create", "Shop", "--timezone", "Europe/Berlin", "--data-dir", str(tmp_path)
    )
    assert status == 0
    assert "project id: 1" in out
    token = out.split("project API key (for capture): ")[1].split()[0]
    with Store.open_at(tmp_path) as store:
        project = store.projects.get(1)
    assert project is not None and (project.name, project.timezone, project.api_token) == (
        "Shop",
        "Europe/Berlin",
        token,
    )
    status, out, _ = _run(capsys, "project", "list", "--data-dir", str(tmp_path))
    assert status == 0 and out.startswith("1\tShop\tEurope/Berlin\tphc_")
