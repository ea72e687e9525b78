"""The ``hoglab`` command line as a whole: one clear line and the right status for any mistake in the arguments, the
environment or the data dir, in process and from the console script."""

from __future__ import annotations

import subprocess

import pytest
from clitesting import (
    hoglab as _hoglab,
    one_clear_line as _one_clear_line,
    run as _run,
)

from hoglab.cli import main
from hoglab.server.store import Store


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


def test_console_script_reports_bad_scopes_without_a_traceback(tmp_path):
    result = subprocess.run(
        [*_hoglab(), "key", "create", "--project", "1", "--scopes", "admin", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "unknown scope 'admin'" in _one_clear_line(result.stderr)
    assert result.stdout == ""
