"""The tours never write into a project they did not make: ``feed_metric_experiment`` refuses a PostHog host and
a local project holding events (nothing written), and writes only into the demo project or an empty local one,
unless told explicitly (``allow_foreign=True`` or ``HOGLAB_TOURS_WRITE_ANYWHERE=1``). Run twice against the demo (as
under ``make lab``), the metric tour leaves the project as one run does."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from notebooktesting import Demo

from hoglab.client import Client
from hoglab.errors import ConfigurationError
from hoglab.local import LocalService
from hoglab.notebook import tours
from hoglab.notebook.tours import WRITE_ANYWHERE_ENV, check_tour_target, feed_metric_experiment

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WRITE_ANYWHERE_ENV, raising=False)


def _counts(client: Client) -> tuple[int, int]:
    events = int(client.hogql("select count() as n from events")["n"].iloc[0])
    return len(client.experiments.list(archived=None)), events


def test_a_posthog_host_is_refused_before_any_request() -> None:
    # PostHog Cloud is remote, so it is the one thing mocked here: a transport that records every request.
    sent: list[httpx.Request] = []

    def remote(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    client = Client("https://eu.posthog.com", "phx_remote", 12345, transport=httpx.MockTransport(remote))
    with client, pytest.raises(ConfigurationError) as refused:
        feed_metric_experiment(client, users=10)
    message = str(refused.value)
    assert "https://eu.posthog.com is not this machine" in message
    assert "allow_foreign=True" in message and WRITE_ANYWHERE_ENV in message and "make lab" in message
    assert sent == []  # refused before a single request, so nothing can have been written


def test_a_local_project_holding_events_is_refused_and_left_untouched(demo: Demo) -> None:
    before = _counts(demo.client)
    assert before[1] > 0
    with pytest.raises(ConfigurationError) as refused:
        feed_metric_experiment(demo.client, users=10)
    message = str(refused.value)
    assert f"project {demo.client.project_id} ('notebook demo')" in message
    assert f"holds {before[1]:,} events" in message and "is not the demo" in message
    assert _counts(demo.client) == before


def test_told_explicitly_a_tour_may_write_anywhere(demo: Demo, monkeypatch: pytest.MonkeyPatch) -> None:
    check_tour_target(demo.client, allow_foreign=True)
    monkeypatch.setenv(WRITE_ANYWHERE_ENV, "1")
    check_tour_target(demo.client)
    monkeypatch.setenv(WRITE_ANYWHERE_ENV, "yes")  # only "1" counts: a stray value is not an explicit yes
    with pytest.raises(ConfigurationError):
        check_tour_target(demo.client)


def test_the_demo_project_and_an_empty_local_project_are_allowed(
    demo: Demo, hoglab_service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo's name is read when checking: naming the seeded project so makes it "the demo" without adding a
    # second "Demo project" to the session's store (services started with demo=True there would pick it).
    monkeypatch.setattr(tours, "DEMO_PROJECT_NAME", "notebook demo")
    check_tour_target(demo.client)
    store = hoglab_service.state.store
    record = store.projects.create("a fresh project")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="tours test")
    for host in (hoglab_service.url, hoglab_service.url.replace("127.0.0.1", "localhost")):
        with Client(host, key, record.id, progress=False) as client:
            check_tour_target(client)


def test_the_tours_know_the_demo_projects_name() -> None:
    from hoglab.server.store.bootstrap import DEMO_PROJECT_NAME

    assert tours.DEMO_PROJECT_NAME == DEMO_PROJECT_NAME


def test_a_remote_host_is_not_mistaken_for_this_machine() -> None:
    is_local: Any = tours._is_loopback
    assert is_local("http://127.0.0.1:8000") and is_local("http://[::1]:8000") and is_local("http://localhost")
    assert not is_local("https://us.posthog.com") and not is_local("http://10.0.0.5:8000")
    assert not is_local("http://localhost.example.com")


def _serve_demo(data_dir: Path) -> tuple[subprocess.Popen[bytes], str, str, int]:
    """``hoglab serve --demo`` in its own process (chDB belongs to one process, and this one holds the suite's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOGLAB_", "POSTHOG_"))}
    log = data_dir.parent / "serve.log"  # a file, not a pipe: uvicorn's access log must never fill a pipe and stall
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "hoglab.cli", "serve", "--demo", "--port", str(port), "--data-dir", str(data_dir)],
            env={**env, "PYTHONUNBUFFERED": "1"}, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the key is printed first; the demo is seeded before the service answers
        printed = log.read_text(errors="replace").splitlines()
        keys = [line.split()[3] for line in printed if line.startswith("personal API key:")]
        with contextlib.suppress(httpx.HTTPError):
            if keys and httpx.get(f"{url}/api/projects/", headers={"Authorization": f"Bearer {keys[0]}"},
                                  timeout=5).is_success:  # fmt: skip
                project = int(next(line.split()[2] for line in printed if line.startswith("project id:")))
                return server, url, keys[0], project
        assert server.poll() is None, "\n".join(printed)
        time.sleep(0.5)
    server.kill()
    raise AssertionError(log.read_text(errors="replace"))


def _project_state(client: Client, key: str) -> dict[str, Any]:
    """What a tour writes: experiments, flags, holdouts, saved metrics, events (names and counts)."""
    flags = httpx.get(f"{client.host}/api/projects/{client.project_id}/feature_flags/", params={"limit": 1000},
                      headers={"Authorization": f"Bearer {key}"}, timeout=60).json()["results"]  # fmt: skip
    return {
        "experiments": sorted(client.experiments.list(archived=None)["feature_flag_key"]),
        "flags": sorted(flag["key"] for flag in flags),
        "holdouts": sorted(client.experiments.holdouts.list()["name"]),
        "saved metrics": sorted(client.experiments.saved_metrics.list()["name"]),
        "events": int(client.hogql("select count() as n from events")["n"].iloc[0]),
    }


@pytest.mark.slow
def test_running_the_metric_tour_twice_leaves_the_demo_as_one_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from nbclient import NotebookClient

    server, url, key, project = _serve_demo(tmp_path / "demo")
    try:
        for name, value in {"HOGLAB_HOST": url, "HOGLAB_API_KEY": key, "HOGLAB_PROJECT_ID": str(project)}.items():
            monkeypatch.setenv(name, value)  # as `make lab` gives every kernel
        monkeypatch.delenv("POSTHOG_HOST", raising=False)
        with Client(url, key, project, progress=False) as client:
            before = _project_state(client, key)
            states = []
            for _ in range(2):
                notebook = nbformat.read(NOTEBOOKS / "04-metric-experiments.ipynb", as_version=4)
                NotebookClient(notebook, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()  # fmt: skip
                states.append(_project_state(client, key))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    once, twice = states
    assert len(once["experiments"]) == len(before["experiments"]) + 3 and once["events"] > before["events"]
    assert twice == once  # the second run reused what the first made: nothing added, nothing doubled
