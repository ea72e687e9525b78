"""``hoglab serve``: a real subprocess printing a working URL, project and key; a data dir another process owns;
the per-query limits from flags and the environment."""

from __future__ import annotations

import os
import subprocess
import time

import httpx
import pytest
from clitesting import (
    hoglab as _hoglab,
    interrupt as _interrupt,
    one_clear_line as _one_clear_line,
)

from hoglab.cli import main


def test_serve_demo_in_a_subprocess_prints_a_working_url_project_and_key(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [*_hoglab(), "serve", "--demo", "--port", "0", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        printed: dict[str, str] = {}
        deadline = time.monotonic() + 60
        while "key" not in printed and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            if " at http://" in line:
                printed["url"] = line.split(" at ")[1].split()[0]
            elif line.startswith("project id:"):
                printed["project"] = line.split(":")[1].split()[0]
            elif line.startswith("personal API key:"):
                printed["key"] = line.split(":")[1].split()[0]
        assert set(printed) == {"url", "project", "key"}, printed
        headers = {"Authorization": f"Bearer {printed['key']}"}
        for _ in range(200):  # the URL is printed just before uvicorn starts accepting
            try:
                answer = httpx.get(f"{printed['url']}/api/projects/{printed['project']}/", headers=headers)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert answer.status_code == 200
        assert answer.json()["name"] == "Demo project"
    finally:
        _interrupt(process)
    assert process.returncode == 0


def test_serving_a_data_dir_another_process_owns_is_one_line(hoglab_service):
    # This test process's service owns the session's data dir; a second `hoglab serve` on it must say so plainly.
    result = subprocess.run(
        [*_hoglab(), "serve", "--port", "0", "--data-dir", str(hoglab_service.data_dir)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"in use by process {os.getpid()}" in _one_clear_line(result.stderr)
    assert " at http://" not in result.stdout  # refused before it claimed to serve


def test_serve_memory_and_time_limits_from_flags_then_environment(monkeypatch):
    from hoglab.cli import build_parser as _build_parser
    from hoglab.cli.common import server_config as _config

    monkeypatch.setenv("HOGLAB_MAX_MEMORY_USAGE", "6GiB")
    assert _config(None).max_memory_usage == 6 * 1024**3
    args = _build_parser().parse_args(["serve", "--max-memory-usage", "12G", "--max-execution-time", "300"])
    config = _config(None, None, max_memory_usage=args.max_memory_usage, max_execution_time=args.max_execution_time)
    assert (config.max_memory_usage, config.max_execution_time) == (12 * 1000**3, 300)
    monkeypatch.delenv("HOGLAB_MAX_MEMORY_USAGE")
    assert _config(None).max_memory_usage == 4 * 1024**3


def test_serve_memory_budget_and_compile_time_from_flags(monkeypatch, capsys):
    from hoglab.cli import CommandError, build_parser as _build_parser
    from hoglab.cli.common import server_config as _config

    args = _build_parser().parse_args(["serve", "--memory-budget", "12GiB", "--max-compile-seconds", "1.5"])
    config = _config(None, None, memory_budget=args.memory_budget, max_compile_seconds=args.max_compile_seconds)
    assert (config.memory_budget, config.max_compile_seconds) == (12 * 1024**3, 1.5)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--max-compile-seconds", "forever"])
    assert exit_.value.code == 2 and "--max-compile-seconds" in _one_clear_line(capsys.readouterr().err)
    monkeypatch.setenv("HOGLAB_MEMORY_BUDGET", "1MiB")  # too small to serve anything: refused before it starts
    with pytest.raises(CommandError, match="at least 64 MiB") as refused:
        _config(None)
    assert refused.value.status == 2


@pytest.mark.parametrize("value", ["lots", "-1G", "8 parsecs"])
def test_bad_memory_limit_flag_is_one_line_and_status_2(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--max-memory-usage", value])
    assert exit_.value.code == 2
    assert "--max-memory-usage" in _one_clear_line(capsys.readouterr().err)
