"""``hoglab.local``: the service in a thread of this process, as notebooks and tests start it."""

from __future__ import annotations

import stat
import subprocess
import sys

import httpx
import pytest

from hoglab.local import start_local_service
from hoglab.server.store import StoreError


def test_started_service_answers_with_its_project_and_star_key(hoglab_service):
    with start_local_service(hoglab_service.data_dir) as service:
        assert service.url.startswith("http://127.0.0.1:")
        assert service.api_key.startswith("phx_")
        assert service.data_dir == hoglab_service.data_dir
        answer = httpx.get(f"{service.url}/api/projects/{service.project_id}/", headers=service.headers)
        assert answer.status_code == 200
        key = service.state.store.keys.authenticate(service.api_key)
        assert key is not None and key.scopes == ("*",) and key.project_ids is None
        url = service.url
    assert not service.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/api/projects/", timeout=2)


def test_restarts_reuse_the_key_kept_in_a_private_file(hoglab_service):
    key_file = hoglab_service.data_dir / "local_api_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with start_local_service(hoglab_service.data_dir) as first:
        pass
    with start_local_service(hoglab_service.data_dir) as second:
        assert (second.api_key, second.project_id) == (first.api_key, first.project_id)
        assert second.api_key == hoglab_service.api_key


def test_demo_service_uses_the_demo_project(hoglab_service):
    with start_local_service(hoglab_service.data_dir, demo=True) as service:
        current = httpx.get(f"{service.url}/api/projects/@current/", headers=service.headers).json()
        named = httpx.get(f"{service.url}/api/projects/{service.project_id}/", headers=service.headers).json()
        listed = httpx.get(f"{service.url}/api/projects/", headers=service.headers).json()
    assert named["name"] == "Demo project"
    # The key reaches every project; for such a key @current is the first one.
    assert current["id"] == min(p["id"] for p in listed["results"])


def test_bad_data_dir_fails_before_starting(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        start_local_service(afile)


def test_busy_port_is_an_os_error(hoglab_service):
    port = int(hoglab_service.url.rsplit(":", 1)[1])
    with pytest.raises(OSError):
        start_local_service(hoglab_service.data_dir, port=port)


def test_importing_hoglab_local_does_not_import_the_server():
    code = "import sys, hoglab.local; print(any(m.startswith('hoglab.server') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "False"


def test_demo_start_calls_the_demo_seed_hook_with_state_and_project(hoglab_service, monkeypatch):
    calls = []

    def record(state, project, *, on_load, history):
        calls.append((state.store.data_dir, project.name, history))

    monkeypatch.setattr("hoglab.server.demo.seed", record)
    with start_local_service(hoglab_service.data_dir, demo=True):
        pass
    with start_local_service(hoglab_service.data_dir, demo=True, demo_history=True):  # the program tour's projects
        pass
    assert calls == [(hoglab_service.data_dir, "Demo project", False), (hoglab_service.data_dir, "Demo project", True)]


def test_a_failing_demo_seed_does_not_stop_the_service(hoglab_service, monkeypatch, caplog):
    def broken_seed(state, project, **options):
        raise RuntimeError("no demo today")

    monkeypatch.setattr("hoglab.server.demo.seed", broken_seed)
    with start_local_service(hoglab_service.data_dir, demo=True) as service:
        assert httpx.get(f"{service.url}/api/projects/", headers=service.headers).status_code == 200
    assert "no demo today" in caplog.text


def test_a_data_dir_the_engine_cannot_serve_is_refused_before_starting(hoglab_service, tmp_path, caplog):
    # chDB serves one data path per process, and this process serves the session's: the reason is the exception,
    # not a lifespan traceback in the log followed by "did not start".
    from hoglab.server.engine import EngineInUse

    with pytest.raises(EngineInUse, match="one data directory per process"):
        start_local_service(tmp_path / "another")
    assert "Traceback" not in caplog.text
    assert httpx.get(f"{hoglab_service.url}/api/projects/", headers=hoglab_service.headers).status_code == 200
