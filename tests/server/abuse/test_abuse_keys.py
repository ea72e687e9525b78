"""Abuse: keys. A key never appears in the service's logs (``hoglab serve``'s own output, access log included),
a revoked key answers 401 at once, an expired key answers 401 saying so, and only an all-powerful key manages keys
(``/api/personal_api_keys/``); the CLI's ``key create --expires-in``, ``key list`` and ``key revoke``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from hoglab.cli import main
from hoglab.server.store.db import utcnow

if TYPE_CHECKING:  # the session conftest's type; tests/ is not a package, so only for readers and checkers
    from conftest import TestProject


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _serve(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "hoglab.cli", "serve", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if " at http://" in line:
            url = line.split(" at ")[1].split()[0]
            for _ in range(200):
                try:
                    httpx.get(url + "/api/projects/")
                    return process, url
                except httpx.ConnectError:
                    time.sleep(0.05)
        if not line:
            break
    process.kill()
    raise AssertionError("hoglab serve did not start")


def test_keys_never_reach_the_log_and_a_revoked_key_is_refused_at_once(capsys, tmp_path: Path) -> None:
    status, out, _ = _cli(capsys, "project", "create", "Logs", "--data-dir", str(tmp_path))
    assert status == 0
    project_id = out.split("project id:")[1].split()[0]
    token = out.split("project API key (for capture):")[1].split()[0]
    status, key, err = _cli(capsys, "key", "create", "--project", project_id, "--scopes", "*",
                            "--data-dir", str(tmp_path))  # fmt: skip
    key = key.strip()
    key_id = err.split("personal API key ")[1].split()[0]
    wrong = "phx_" + "W" * 43
    process, url = _serve(tmp_path)
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get(f"/api/projects/{project_id}/?personal_api_key={key}").status_code == 200
            assert http.get(f"/api/projects/?personal_api_key={wrong}").status_code == 401
            assert http.get("/api/projects/", headers={"Authorization": f"Bearer {key}"}).status_code == 200
            batch = {"batch": [{"event": "e", "distinct_id": "d"}]}
            assert http.post(f"/batch/?token={token}", json=batch).status_code == 200
            assert http.post(f"/batch/?api_key={token}&x=1", json={"batch": []}).status_code == 400

            status, _, _ = _cli(capsys, "key", "revoke", key_id, "--data-dir", str(tmp_path))
            assert status == 0
            refused = http.get(f"/api/projects/{project_id}/", headers={"Authorization": f"Bearer {key}"})
            assert refused.status_code == 401
            assert refused.json() == {"type": "authentication_error", "code": "authentication_failed",
                                      "detail": "Personal API key found in request Authorization header is invalid.",
                                      "attr": None}  # fmt: skip
    finally:
        process.send_signal(signal.SIGINT)
        logged, _ = process.communicate(timeout=30)
    assert "GET /api/projects/" in logged and "POST /batch/" in logged  # the access log was on
    for secret in (key, key[4:], wrong, token):
        assert secret not in logged
    assert "personal_api_key=[redacted]" in logged and "token=[redacted]" in logged
    status, listing, _ = _cli(capsys, "key", "list", "--data-dir", str(tmp_path))
    row = next(line for line in listing.splitlines() if line.startswith(f"{key_id}\t"))
    assert "\trevoked\t" in row and key not in listing


def test_an_expired_key_is_a_401_that_says_so(live_project: TestProject) -> None:
    store = live_project.service.state.store
    user = store.users.default()
    _, soon = store.keys.create(user.id, ["*"], [live_project.id], expires_at=utcnow() + timedelta(seconds=1))
    http = live_project.client(soon)
    assert http.get(f"/api/projects/{live_project.id}/").status_code == 200
    time.sleep(1.2)
    expired = http.get(f"/api/projects/{live_project.id}/")
    assert expired.status_code == 401 and expired.json()["code"] == "authentication_failed"
    assert expired.json()["detail"] == "Personal API key found in request Authorization header has expired."


def test_keys_over_http(make_project) -> None:
    project: TestProject = make_project(projects="all")
    http = project.http
    made = http.post("/api/personal_api_keys/", json={"label": "ci", "scopes": ["query:read"],
                                                      "scoped_teams": [project.id]})  # fmt: skip
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["value"].startswith("phx_") and body["status"] == "active" and body["scoped_teams"] == [project.id]
    narrow = project.client(body["value"])
    assert narrow.get(f"/api/projects/{project.id}/").status_code == 200
    # A narrower key can neither list nor mint keys.
    assert narrow.get("/api/personal_api_keys/").status_code == 403
    assert narrow.post("/api/personal_api_keys/", json={"scopes": ["*"]}).status_code == 403
    listed = http.get("/api/personal_api_keys/").json()
    mine = next(k for k in listed if k["id"] == body["id"])
    assert "value" not in mine and mine["mask_value"] == body["mask_value"]
    assert all(body["value"] not in str(k) for k in listed)
    assert http.delete(f"/api/personal_api_keys/{body['id']}/").status_code == 204
    assert narrow.get(f"/api/projects/{project.id}/").status_code == 401
    assert http.get(f"/api/personal_api_keys/{body['id']}/").json()["status"] == "revoked"
    assert http.delete("/api/personal_api_keys/999999999/").status_code == 404
    bad = http.post("/api/personal_api_keys/", json={"scopes": ["nope:read"]})
    assert bad.status_code == 400 and bad.json()["attr"] == "scopes"
    past = http.post("/api/personal_api_keys/", json={"scopes": ["*"], "expires_at": "2001-01-01T00:00:00Z"})
    assert past.status_code == 400 and past.json()["attr"] == "expires_at"
    for team in (2**70, 0, -1):  # beyond SQLite's 64-bit integers, or never a project id
        huge = http.post("/api/personal_api_keys/", json={"scopes": ["*"], "scoped_teams": [team]})
        assert huge.status_code == 400 and huge.json()["attr"].startswith("scoped_teams"), huge.text


def test_key_create_with_an_expiry_and_list(capsys, tmp_path: Path) -> None:
    status, out, _ = _cli(capsys, "project", "create", "Expiry", "--data-dir", str(tmp_path))
    project_id = out.split("project id:")[1].split()[0]
    status, key, err = _cli(capsys, "key", "create", "--project", project_id, "--scopes", "query:read",
                            "--expires-in", "90m", "--data-dir", str(tmp_path))  # fmt: skip
    assert status == 0 and ", until " in err
    key_id = err.split("personal API key ")[1].split()[0]
    status, listing, _ = _cli(capsys, "key", "list", "--data-dir", str(tmp_path))
    row = next(line for line in listing.splitlines() if line.startswith(f"{key_id}\t")).split("\t")
    assert row[1] == "active" and row[5] != "never" and key.strip() not in listing
    assert main(["key", "revoke", "999", "--data-dir", str(tmp_path)]) == 2
    assert "no key with id 999" in capsys.readouterr().err
