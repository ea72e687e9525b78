"""``%hogql`` / ``%%hogql`` in a real IPython InteractiveShell, against the session's REAL hoglab service (no
mocks): the expected numbers come from pandas on the same events (``events_project`` in conftest.py)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from notebooktesting import EventsProject
from traitlets.config import Config

import hoglab
from hoglab.client import Client, QueryJob


class Shell:
    """An InteractiveShell that runs cells as a notebook does and reports what the user would see."""

    def __init__(self, ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
        self.ip = ip
        self.capsys = capsys

    def run(self, cell: str) -> Any:
        """Run a cell; its value (what ``_`` then holds). A failure raises, with what was printed."""
        self.capsys.readouterr()
        result = self.ip.run_cell(cell, store_history=True)
        if not result.success:
            printed = self.capsys.readouterr()
            raise AssertionError(f"cell failed: {result.error_in_exec!r}\n{printed.out}\n{printed.err}")
        return result.result

    def fail(self, cell: str) -> str:
        """Run a cell that must fail with a short UsageError; returns what was printed (stderr)."""
        self.capsys.readouterr()
        result = self.ip.run_cell(cell, store_history=True)
        printed = self.capsys.readouterr()
        assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
        assert "Traceback" not in printed.out + printed.err and "----" not in printed.out + printed.err
        assert printed.err.startswith("UsageError: ")
        return printed.err.removeprefix("UsageError: ").rstrip("\n")

    def __getitem__(self, name: str) -> Any:
        return self.ip.user_ns[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.ip.user_ns[name] = value


@pytest.fixture(scope="module")
def ipython() -> Iterator[InteractiveShell]:
    config = Config()
    config.HistoryManager.enabled = False  # no SQLite history file per test run
    ip = InteractiveShell.instance(config=config)
    ip.displayhook.flush = lambda: None  # flushing at exit can hang under pytest (JupySQL's finding)
    ip.run_line_magic("load_ext", "hoglab")
    yield ip
    ip.run_line_magic("unload_ext", "hoglab")


@pytest.fixture
def shell(
    ipython: InteractiveShell,
    events_project: EventsProject,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Shell]:
    # Python's own displayhook sets builtins._ (doctests run earlier in this process do), and IPython then leaves
    # the notebook's _ alone; a kernel has no builtins._.
    monkeypatch.delattr(builtins, "_", raising=False)
    client = events_project.client()
    ipython.user_ns["c"] = client
    yield Shell(ipython, capsys)
    client.close()


def test_cell_runs_hogql_and_its_value_is_the_frame(shell: Shell, events_project: EventsProject) -> None:
    df = shell.run("%%hogql --client c\nselect event, count() as n from events group by event order by event")
    expected = events_project.a_frame.groupby("event").size().sort_index()
    assert df["event"].tolist() == expected.index.tolist()
    assert df["n"].tolist() == expected.tolist()
    assert shell["_"] is df


def test_variables_are_bound_as_values_never_pasted(shell: Shell, events_project: EventsProject) -> None:
    frame = events_project.a_frame
    for name in ("x' OR 1=1 --", "it's {odd}"):
        shell["wanted"] = name
        df = shell.run(
            "%%hogql --client c\n"
            "select '{wanted}' as literal, count() as n, min(toInt(properties.n)) as first\n"
            "from events where event = {wanted} -- {undefined_but_commented}"
        )
        rows = frame[frame["event"] == name]
        assert 0 < len(rows) < len(frame)
        assert df.iloc[0].tolist() == ["{wanted}", len(rows), rows["n"].min()]


def test_list_and_numpy_values(shell: Shell, events_project: EventsProject) -> None:
    frame = events_project.a_frame
    shell["names"] = ["signup", "x' OR 1=1 --"]
    shell["cut"] = frame["n"].to_numpy()[10]  # a numpy integer
    df = shell.run(
        "%%hogql --client c\nselect count() as n from events where event in {names} and toInt(properties.n) >= {cut}"
    )
    expected = frame[frame["event"].isin(["signup", "x' OR 1=1 --"]) & (frame["n"] >= 10)]
    assert df["n"].tolist() == [len(expected)]


def test_output_variable_and_underscore(shell: Shell) -> None:
    df = shell.run("%%hogql --client c -o counts\nselect 1 as one, 'a' as letter")
    assert shell["counts"] is df and shell["_"] is df
    assert df.to_dict("records") == [{"one": 1, "letter": "a"}]


def test_limit(shell: Shell, events_project: EventsProject) -> None:
    cell = "select toInt(properties.n) as n from events order by timestamp limit 9"  # wrapped: its own LIMIT
    df = shell.run(f"%%hogql --client c --limit 4\n{cell}")
    assert df["n"].tolist() == events_project.a_frame.sort_values("timestamp")["n"].head(4).tolist()


def test_async_runs_a_query_job(shell: Shell, events_project: EventsProject, monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[str] = []
    original = QueryJob.result

    def spy(job: QueryJob, timeout: float | None = None) -> Any:
        waited.append(job.id)
        return original(job, timeout)

    monkeypatch.setattr(QueryJob, "result", spy)
    df = shell.run("%%hogql --client c --async\nselect count() as n from events")
    assert len(waited) == 1
    assert df["n"].tolist() == [len(events_project.a_frame)]


def test_project_option(shell: Shell, events_project: EventsProject) -> None:
    df = shell.run(f"%%hogql --client c --project {events_project.b}\nselect count() as n from events")
    assert df["n"].tolist() == [len(events_project.b_frame)]
    assert shell["c"].project_id == events_project.a  # the notebook's client is left as it was


def test_line_magic_and_assignment(shell: Shell, events_project: EventsProject) -> None:
    shell["plan"] = "pro"
    df = shell.run("%hogql --client c select count() as n from events where properties.plan = {plan}")
    assert df["n"].tolist() == [int((events_project.a_frame["plan"] == "pro").sum())]
    shell.run("x = %hogql --client c select {plan} as p")
    assert shell["x"]["p"].tolist() == ["pro"]


def test_line_magic_sees_function_locals(shell: Shell) -> None:
    shell.run(
        "def answer():\n"
        "    local_value = 41\n"
        "    df = %hogql --client c select {local_value} + 1 as a\n"
        "    return df"
    )
    assert shell.run("answer()")["a"].tolist() == [42]


def test_default_client_from_the_environment(
    shell: Shell, events_project: EventsProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hoglab.client._default as default

    monkeypatch.setattr(default, "_default", None)
    monkeypatch.setenv("HOGLAB_HOST", events_project.url)
    monkeypatch.setenv("HOGLAB_API_KEY", events_project.key)
    monkeypatch.setenv("HOGLAB_PROJECT_ID", str(events_project.b))
    try:
        assert shell.run("%hogql select count() as n from events")["n"].tolist() == [len(events_project.b_frame)]
    finally:
        if default._default is not None:
            default._default.close()


def test_missing_configuration_is_one_line(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    import hoglab.client._default as default

    monkeypatch.setattr(default, "_default", None)
    for name in ("HOGLAB_API_KEY", "POSTHOG_PERSONAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert shell.fail("%hogql select 1").startswith("No API key: pass api_key=, or set HOGLAB_API_KEY")


def test_undefined_name_is_one_line(shell: Shell) -> None:
    message = shell.fail("%%hogql --client c -o never\nselect event\nfrom events where event = {no_such_variable}")
    assert message == "{no_such_variable} (line 2, column 27) is not a defined variable"
    assert "never" not in shell.ip.user_ns


@pytest.mark.parametrize("mode", ["", "--async", "--limit 2"])
def test_sql_error_shows_the_server_message_at_its_place_in_the_cell(shell: Shell, mode: str) -> None:
    cell = "\n\n  select event,\n     nope\n  from events limit 5"
    message = shell.fail(f"%%hogql --client c {mode}\n{cell}")
    before = cell[: cell.index("nope")]
    line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
    first, text, carets = message.split("\n")
    assert first == f"HogQL error at line {line}, column {column}: Unknown field 'nope' (reading events)"
    assert text.strip() == "nope" and carets.strip() == "^^^^"
    assert text.index("nope") == carets.index("^")


def test_syntax_error_and_bad_options_are_usage_errors(shell: Shell) -> None:
    assert shell.fail("%%hogql --client c\nselect count( from events").startswith("HogQL error at line 1")
    assert "unrecognized arguments: --bogus" in shell.fail("%hogql --client c --bogus select 1")
    assert "expected a positive integer" in shell.fail("%hogql --client c --limit 0 select 1")
    assert "not a valid variable name" in shell.fail("%%hogql --client c -o 1x\nselect 1")
    assert "statement in the cell" in shell.fail("%%hogql --client c select 1\nselect 2")
    assert "needs a HogQL statement" in shell.fail("%hogql --client c")


def test_client_problems_are_short(shell: Shell, events_project: EventsProject) -> None:
    shell["not_a_client"] = 3
    assert "expected a hoglab.Client, but it is a int" in shell.fail("%hogql --client not_a_client select 1")
    shell["frame"] = pd.DataFrame({"a": [1]})
    assert "a DataFrame cannot be bound" in shell.fail("%hogql --client c select {frame}")
    shell["offline"] = Client("http://127.0.0.1:9", events_project.key, events_project.a, max_retries=0)
    unreachable = shell.fail("%hogql --client offline select 1")
    assert "failed: ConnectError" in unreachable and "\n" not in unreachable
    denied = shell.fail("%hogql --client c --project 987654321 select 1")
    assert "does not have access" in denied and "987654321" in denied and "\n" not in denied


def test_unload_removes_the_magics(ipython: InteractiveShell, shell: Shell) -> None:
    ipython.run_line_magic("unload_ext", "hoglab")
    try:
        result = ipython.run_cell("%%hogql --client c\nselect 1")
        assert isinstance(result.error_in_exec, UsageError) and "not found" in str(result.error_in_exec)
        assert "hogql" not in ipython.magics_manager.magics["line"]
    finally:
        ipython.run_line_magic("load_ext", "hoglab")
    assert shell.run("%hogql --client c select 2 as two")["two"].tolist() == [2]


def test_loading_the_extension_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hoglab\n"
        "class Shell:\n"
        "    def register_magics(self, magics): self.magics = magics\n"
        "hoglab.load_ipython_extension(Shell())\n"
        "heavy = [m for m in ('pandas', 'httpx', 'matplotlib', 'hoglab.server', 'hoglab.client') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert hoglab.load_ipython_extension.__module__ == "hoglab"
