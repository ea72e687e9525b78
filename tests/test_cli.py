"""The ``hoglab`` command line: in-process ``main([...])`` for each command, and real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hoglab.cli import main
from hoglab.server.store import Store


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _one_clear_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "error:" in lines[0]
    return lines[0]


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


def test_data_dir_defaults_to_the_environment(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOGLAB_DATA_DIR", str(tmp_path / "from-env"))
    assert _run(capsys, "project", "create", "Env")[0] == 0
    assert (tmp_path / "from-env" / "hoglab.sqlite3").exists()


@pytest.mark.parametrize(
    ("argv", "status", "needle"),
    [
        (["key", "create", "--project", "1", "--scopes", "experiments:read"], 2, "unknown scope 'experiments:read'"),
        (["key", "create", "--project", "1", "--scopes", ","], 2, "at least one scope"),
        (["key", "create", "--project", "42", "--scopes", "query:read"], 2, "no project with id 42"),
        (["key", "create", "--project", "one", "--scopes", "query:read"], 2, "positive integer"),
        (["key", "create", "--scopes", "query:read"], 2, "--project"),
        (["key", "create", "--project", "1", "--scopes", "query:read", "--expires-in", "999999w"], 2, "1000 years"),
        (["project", "create", "X", "--timezone", "Mars/Olympus"], 2, "unknown time zone"),
        (["project", "create", "  "], 2, "1 to 200 characters"),
        (["project", "delete", "1"], 2, "invalid choice"),
        (["serve", "--port", "70000"], 2, "between 0 and 65535"),
        (["serve", "--max-execution-time", "0"], 2, "a time limit in seconds is a positive integer, got '0'"),
        (["serve", "--port", "0", "--clickhouse-url", "notaurl"], 1, "not a ClickHouse URL"),
        (["serve", "--port", "0", "--clickhouse-url", "http://127.0.0.1:1"], 1, "cannot reach ClickHouse"),
        (["load", "--project", "1", "/no/such/file.jsonl"], 2, "no such file"),
        (["load", "--project", "x", "f"], 2, "positive integer"),
        (["load", "--project", "1", "/"], 2, "cannot read /: a directory"),
        (["load", "--project", "1", __file__], 2, "cannot tell the format from the name"),
        (["load", "--project", "1", __file__, "--format", "xml"], 2, "invalid choice: 'xml'"),
        ([], 2, "COMMAND"),
    ],
)
def test_bad_arguments_get_one_clear_line(capsys, tmp_path, argv, status, needle):
    with Store.open_at(tmp_path) as store:
        store.projects.create("Only")
    try:
        code = main([*argv, "--data-dir", str(tmp_path)] if argv else [])
    except SystemExit as exit_:  # argparse's own errors exit
        code = exit_.code
    _, err = capsys.readouterr()
    assert code == status
    assert needle in _one_clear_line(err)


@pytest.mark.parametrize(
    ("variable", "value", "needle"),
    [
        ("HOGLAB_RATE_LIMIT_BURST", "lots", "rate looks like"),
        ("HOGLAB_MAX_EXECUTION_TIME", "soon", "integer"),
        ("HOGLAB_MAX_EXECUTION_TIME", "0", "positive integer"),
        ("HOGLAB_QUERY_WORKERS", "-2", "positive integer"),
        ("HOGLAB_MAX_MEMORY_USAGE", "lots", "number of bytes"),
    ],
)
def test_bad_environment_is_one_line_and_status_2(capsys, tmp_path, monkeypatch, variable, value, needle):
    monkeypatch.setenv(variable, value)
    status, _, err = _run(capsys, "project", "list", "--data-dir", str(tmp_path))
    assert status == 2
    assert needle in _one_clear_line(err)


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


def test_unusable_data_dir_is_one_line_and_status_1(capsys, tmp_path):
    afile = tmp_path / "file"
    afile.write_text("not a dir")
    status, _, err = _run(capsys, "project", "create", "Shop", "--data-dir", str(afile))
    assert status == 1
    assert "not a directory" in _one_clear_line(err)


@pytest.mark.parametrize(
    "argv",
    [["key", "create", "--project", "1", "--scopes", "query:read"], ["project", "list"]],
)
def test_commands_that_need_data_leave_no_empty_data_dir_behind(capsys, tmp_path, argv):
    missing = tmp_path / "not" / "there"
    status, out, err = _run(capsys, *argv, "--data-dir", str(missing))
    assert status == 2 and out == ""
    assert f"no hoglab data in {missing}" in _one_clear_line(err)
    assert not (tmp_path / "not").exists()


def _hoglab_cmd(*argv: str) -> subprocess.CompletedProcess[str]:
    # Loading opens chDB on the data dir; this test process already owns another chDB path, so run it apart.
    return subprocess.run([*_hoglab(), *argv], capture_output=True, text=True, timeout=120)


def test_load_stores_a_file_and_refuses_a_bad_one_whole(capsys, tmp_path):
    status, out, _ = _run(capsys, "project", "create", "Loads", "--data-dir", str(tmp_path))
    assert status == 0
    project = out.split("project id:")[1].split()[0]
    good = tmp_path / "good.txt"  # a name that says nothing: --format does
    good.write_text(
        "".join(
            json.dumps({"event": "signup", "distinct_id": f"u{i}", "timestamp": f"2025-01-0{i + 1}T10:00:00Z"}) + "\n"
            for i in range(3)
        )
    )
    loaded = _hoglab_cmd("load", "--project", project, str(good), "--format", "jsonl", "--data-dir", str(tmp_path))
    assert loaded.returncode == 0, loaded.stderr
    assert "loaded 3 events (3 new persons)" in loaded.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "x", "distinct_id": "a"}\n{"event": 5, "distinct_id": "b"}\nnot json\n')
    refused = _hoglab_cmd("load", "--project", project, str(bad), "--data-dir", str(tmp_path))
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "nothing was loaded" in refused.stderr
    assert "line 2" in refused.stderr and "line 3" in refused.stderr

    count = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from hoglab.server.engine.chdb import ChdbEngine; "
            "e = ChdbEngine(sys.argv[1]); "
            "print(e.execute('SELECT count() AS n FROM events WHERE team_id = ' + sys.argv[2]).column('n')[0])",
            str(tmp_path / "events"),
            project,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert count.stdout.strip() == "3", count.stderr


def test_load_of_an_unknown_project_is_one_line(capsys, tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text('{"event": "x", "distinct_id": "a"}\n')
    assert _run(capsys, "project", "create", "Shop", "--data-dir", str(tmp_path))[0] == 0
    status, _, err = _run(capsys, "load", "--project", "99", str(events), "--data-dir", str(tmp_path))
    assert status == 2
    assert "no project with id 99" in _one_clear_line(err)


def _hoglab() -> list[str]:
    script = Path(sys.executable).with_name("hoglab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hoglab.cli"]


def test_console_script_reports_bad_scopes_without_a_traceback(tmp_path):
    result = subprocess.run(
        [*_hoglab(), "key", "create", "--project", "1", "--scopes", "admin", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "unknown scope 'admin'" in _one_clear_line(result.stderr)
    assert result.stdout == ""


def _interrupt(process: subprocess.Popen[str]) -> None:
    """Ctrl-C, as a user stops the service, then wait for it to end."""
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


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


def test_demo_analyses_the_experiment_writes_the_report_then_keeps_serving(tmp_path):
    """The README's main job: the demo service, its experiment's verdict printed and the report written, then
    the service answers until Ctrl-C."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "report"
    process = subprocess.Popen(
        [*_hoglab(), "demo", "--port", "0", "--data-dir", str(tmp_path / "data"), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        while not (lines and lines[-1].startswith("serving until Ctrl-C")) and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
        text = "\n".join(lines)
        assert lines and lines[-1].startswith("serving until Ctrl-C"), text
        assert "Verdict: SIGNIFICANT" in text and "Traffic split: as planned" in text
        assert (out / "report.html").read_text().count("data:image/png;base64,") == 5
        assert sorted(p.name for p in (out / "figures").iterdir()) == [
            "effect.png", "metric.png", "over_time.png", "posteriors.png", "srm.png",
        ]  # fmt: skip
        url = next(line.split()[2] for line in lines if line.startswith("serving at "))
        key = next(line.split(":")[1].split()[0] for line in lines if line.startswith("personal API key:"))
        answer = httpx.get(f"{url}/api/projects/", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200 and answer.json()["count"] >= 1
    finally:
        _interrupt(process)
    assert process.returncode == 0


def test_report_of_a_draft_over_http_and_of_a_missing_experiment(capsys, tmp_path, monkeypatch, make_project):
    project = make_project()
    created = project.http.post(
        f"/api/projects/{project.id}/experiments/", json={"name": "Draft", "feature_flag_key": "cli-report-draft"}
    ).json()
    monkeypatch.setenv("HOGLAB_HOST", project.service.url)
    monkeypatch.setenv("HOGLAB_API_KEY", project.key)
    monkeypatch.delenv("HOGLAB_PROJECT_ID", raising=False)  # the key reaches one project: the client finds it
    status, out, _ = _run(capsys, "report", str(created["id"]), "--out", str(tmp_path / "r"))
    assert status == 0 and "Draft (#" in out and "is a draft" in out
    assert "is a draft" in (tmp_path / "r" / "report.html").read_text()
    status, _, err = _run(capsys, "report", "999999", "--out", str(tmp_path / "r"))
    assert status == 1 and "404" in _one_clear_line(err) and project.key not in err


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
    from hoglab.cli import _build_parser, _config

    monkeypatch.setenv("HOGLAB_MAX_MEMORY_USAGE", "6GiB")
    assert _config(None).max_memory_usage == 6 * 1024**3
    args = _build_parser().parse_args(["serve", "--max-memory-usage", "12G", "--max-execution-time", "300"])
    config = _config(None, None, max_memory_usage=args.max_memory_usage, max_execution_time=args.max_execution_time)
    assert (config.max_memory_usage, config.max_execution_time) == (12 * 1000**3, 300)
    monkeypatch.delenv("HOGLAB_MAX_MEMORY_USAGE")
    assert _config(None).max_memory_usage == 4 * 1024**3


@pytest.mark.parametrize("value", ["lots", "-1G", "8 parsecs"])
def test_bad_memory_limit_flag_is_one_line_and_status_2(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--max-memory-usage", value])
    assert exit_.value.code == 2
    assert "--max-memory-usage" in _one_clear_line(capsys.readouterr().err)


def test_serve_memory_budget_and_compile_time_from_flags(monkeypatch, capsys):
    from hoglab.cli import CommandError, _build_parser, _config

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


def test_materialize_adds_columns_reports_them_and_their_fill(capsys, tmp_path):
    _run(capsys, "project", "create", "Shop", "--data-dir", str(tmp_path))
    events = tmp_path / "events.jsonl"
    events.write_text("".join(
        json.dumps({"event": "e", "distinct_id": f"d{i}", "timestamp": f"2026-01-01T00:00:0{i}Z",
                    "properties": {"plan": "pro"} if i % 2 else {}}) + "\n" for i in range(6)
    ))  # fmt: skip
    common = ["--data-dir", str(tmp_path)]
    subprocess.run([*_hoglab(), "load", "--project", "1", str(events), *common], check=True, capture_output=True)
    made = subprocess.run([*_hoglab(), "materialize", "--project", "1", "plan", "$browser", *common],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "'plan' -> column `mat_plan` (3 of project 1's 6 events have it)" in made.stdout
    assert "'$browser' -> column `mat_$browser` (0 of project 1's 6 events have it)" in made.stdout
    status = subprocess.run([*_hoglab(), "materialize", "--project", "1", "--status", *common],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    listed = dict(line.split("\t")[:2] for line in status.stdout.splitlines())
    assert listed == {"'$browser'": "`mat_$browser`", "'plan'": "`mat_plan`"}
    nothing = subprocess.run([*_hoglab(), "materialize", "--project", "1", *common], capture_output=True, text=True)
    assert nothing.returncode == 1 and "name at least one property key" in nothing.stderr
    elsewhere = subprocess.run([*_hoglab(), "materialize", "--project", "99", "plan", *common],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
    assert elsewhere.returncode == 2 and "no project with id 99" in elsewhere.stderr


def test_materialize_person_properties_by_hand(capsys, tmp_path):
    """``--person KEY`` makes ``pmat_<key>`` on persons, reported on the project's persons, listed by --status
    next to the event keys; an event key of the same name is a different column."""
    _run(capsys, "project", "create", "People", "--data-dir", str(tmp_path))
    events = tmp_path / "events.jsonl"
    # three persons, two of whom $set an email
    events.write_text("".join(
        json.dumps({"event": "e", "distinct_id": f"d{i}", "timestamp": f"2026-01-01T00:00:0{i}Z",
                    "properties": {"$set": {"email": f"p{i}@x.io"}} if i < 2 else {"email": "event-side"}}) + "\n"
        for i in range(3)
    ))  # fmt: skip
    common = ["--data-dir", str(tmp_path)]
    subprocess.run([*_hoglab(), "load", "--project", "1", str(events), *common], check=True, capture_output=True)
    made = subprocess.run([*_hoglab(), "materialize", "--project", "1", "email", "--person", "email", *common],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "'email' -> column `mat_email` (1 of project 1's 3 events have it)" in made.stdout
    assert "person 'email' -> column `pmat_email` (2 of project 1's 3 persons have it)" in made.stdout
    status = subprocess.run([*_hoglab(), "materialize", "--project", "1", "--status", *common],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    listed = dict(line.split("\t")[:2] for line in status.stdout.splitlines())
    assert listed == {"'email'": "`mat_email`", "person 'email'": "`pmat_email`"}
    helped = subprocess.run([*_hoglab(), "materialize", "--help"], capture_output=True, text=True, timeout=60)
    assert "--person KEY" in helped.stdout and "person property" in helped.stdout
