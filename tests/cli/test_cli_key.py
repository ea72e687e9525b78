"""``hoglab key create``: a working key printed once, usable at once by a running service."""

from __future__ import annotations

import subprocess

import httpx
from clitesting import (
    hoglab as _hoglab,
    run as _run,
)

from hoglab.server.store import Store


def test_key_create_prints_a_working_key_once(capsys, tmp_path):
    _run(capsys, "project", "create", "Shop", "--data-dir", str(tmp_path))
    status, out, err = _run(
        capsys, "key", "create", "--project", "1", "--scopes", "experiment:read,query:read", "--label", "nb",
        "--data-dir", str(tmp_path),
    )  # fmt: skip
    assert status == 0
    key = out.strip()
    assert key.startswith("phx_") and len(key) == 47
    assert "shown only this once" in err
    with Store.open_at(tmp_path) as store:
        record = store.keys.authenticate(key)
        assert record is not None
        assert (record.scopes, record.project_ids, record.label) == (("experiment:read", "query:read"), (1,), "nb")
    status, out, _ = _run(capsys, "key", "create", "--project", "all", "--scopes", "*", "--data-dir", str(tmp_path))
    with Store.open_at(tmp_path) as store:
        assert store.keys.authenticate(out.strip()).project_ids is None


def test_key_made_by_the_cli_works_on_a_running_service(hoglab_service):
    # Another process writes the key into the running service's data dir; the service sees it at once (WAL).
    result = subprocess.run(
        [*_hoglab(), "key", "create", "--project", "all", "--scopes", "experiment:read",
         "--data-dir", str(hoglab_service.data_dir)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    key = result.stdout.strip()
    answer = httpx.get(f"{hoglab_service.url}/api/projects/", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200 and answer.json()["count"] >= 1
