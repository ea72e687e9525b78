"""Automatic materialization in a service many projects share (issue 23, item 2): per-project slot budgets dealt
fairly, one key's failure contained to that key, a round thread that survives every key and is restarted should
it stop, and all of it again after the service restarts on the same data dir. Answers are checked over HTTP
against pandas and against the same questions read from the JSON."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from hoglab.server.engine import materialized
from hoglab.server.engine.autoprops import AutoMaterializer
from hoglab.server.engine.settings import quote_identifier, quote_string

from .tenants import Tenant, events, wait_for

# --- the choice, on its own ---------------------------------------------------------------------------------------

projects = st.integers(1, 4)
keys = st.sampled_from([f"k{i}" for i in range(12)])
usage = st.dictionaries(projects, st.dictionaries(keys, st.integers(0, 60), max_size=8), max_size=4)


@settings(max_examples=300, deadline=None)
@given(usage, st.sets(keys, max_size=4), st.sets(keys, max_size=2), st.integers(0, 10), st.integers(0, 4))
def test_a_round_keeps_both_budgets_and_stops_only_when_it_must(
    uses: dict[int, dict[str, int]], made: set[str], failed: set[str], table_slots: int, project_columns: int
) -> None:
    job = AutoMaterializer(None, interval=1, min_uses=20, max_columns=len(made) + table_slots,
                           project_columns=project_columns)  # fmt: skip
    job.failed = {("events", k): "it failed" for k in failed}
    columns = {k: f"mat_{k}" for k in made}
    picked = job.pick(uses, materialized=columns)
    hot = {p: {k for k, n in ks.items() if n >= 20} for p, ks in uses.items()}
    readers = {k: {p for p in hot if k in hot[p]} for k in set().union(*hot.values())} if hot else {}
    assert len(picked) == len(set(picked)) <= table_slots
    assert all(k in readers and k not in made and k not in failed for k in picked)
    for project, wanted in hot.items():
        before = len(wanted & made)
        # a key only this project reads was made only while it had room
        assert len([k for k in picked if readers[k] == {project}]) <= max(project_columns - before, 0)
    # and the round stopped only when it had to: no table slot left, or no wanted key with a reader with room
    left = {k for ks in hot.values() for k in ks} - made - failed - set(picked)
    charged = {p: len(hot[p] & (made | set(picked))) for p in hot}
    if len(picked) < table_slots:
        assert all(charged[p] >= project_columns for k in left for p in readers[k])


def test_free_slots_are_dealt_in_turns() -> None:
    job = AutoMaterializer(None, interval=1, min_uses=20, max_columns=5, project_columns=10)
    greedy = {f"a{i}": 100 - i for i in range(10)}
    picked = job.pick({1: greedy, 2: {"b0": 21, "b1": 20}, 3: {"c0": 50}}, materialized={})
    assert picked == ["a0", "c0", "b0", "a1", "b1"]  # each turn, every project's next key, most used first


# --- over HTTP, with the job's own thread -------------------------------------------------------------------------


@pytest.fixture
def start_job(hoglab_service: Any) -> Iterator[Any]:
    """``start_job(**settings)``: the automatic job on the session's engine, in its own thread every 0.2 s."""
    jobs: list[AutoMaterializer] = []

    def start(**given: int) -> AutoMaterializer:
        job = AutoMaterializer(hoglab_service.state.engine, interval=0.2, **given)  # type: ignore[arg-type]
        job.start()
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.close()


def _made(keys: list[str]) -> set[str]:
    return set(keys) & set(materialized.materialized_columns())


def test_one_project_cannot_take_every_slot(make_project: Any, hoglab_service: Any, start_job: Any) -> None:
    """A reads 12 keys hot, B 2, C one of its own and one A reads too; with 3 slots a project, A gets its two most
    used keys and the shared one (which counts against A as well: it serves A), B and C all theirs."""
    engine = hoglab_service.state.engine
    tag = uuid.uuid4().hex[:6]
    a_keys, b_keys = [f"a{i}_{tag}" for i in range(12)], [f"b{i}_{tag}" for i in range(2)]
    shared, c_own = f"shared_{tag}", f"c_{tag}"
    a = Tenant.of(make_project(scopes=["query:read"]), engine, [{k: f"v{i % 3}" for k in [*a_keys, shared]}
                                                                for i in range(9)])  # fmt: skip
    b = Tenant.of(make_project(scopes=["query:read"]), engine, [{k: f"v{i % 2}" for k in b_keys} for i in range(4)])
    c = Tenant.of(make_project(scopes=["query:read"]), engine, [{shared: "s", c_own: f"v{i}"} for i in range(3)])
    materialized.take_usage("events")  # what earlier tests counted is not this test's business
    for i, key in enumerate(a_keys):
        a.heat(key, 40 + i)  # a11 the most used
    a.heat(shared, 36)
    b.heat(b_keys[0], 45), b.heat(b_keys[1], 44)
    c.heat(c_own, 50), c.heat(shared, 36)
    job = start_job(min_uses=36, max_columns=len(materialized.materialized_columns()) + 100, project_columns=3)
    wait_for(lambda: _made([*b_keys, c_own, shared]) == {*b_keys, c_own, shared}, "B's and C's columns")
    time.sleep(1)  # five more rounds: nothing else is made
    assert _made(a_keys) == {a_keys[11], a_keys[10]}
    for reads in ([*a_keys, shared], b_keys, [c_own, shared]):
        assert len(_made(reads)) <= 3  # each project's hot keys held as columns: within its budget
    columns = materialized.materialized_columns()
    assert f"events.`{columns[a_keys[11]]}`" in a.check(a_keys[11], "v1")
    assert "events.`mat_" not in a.check(a_keys[9], "v2")  # over A's budget: read from the JSON, the same answer
    assert f"events.`{columns[shared]}`" in c.check(shared, "s")
    assert f"events.`{columns[b_keys[1]]}`" in b.check(b_keys[1], "v0")
    assert job.alive and job.restarts == 0


def test_the_table_slots_are_shared_fairly(make_project: Any, hoglab_service: Any, start_job: Any) -> None:
    """With 4 slots left in the table, a project reading 12 keys and one reading 2 get two each."""
    engine = hoglab_service.state.engine
    tag = uuid.uuid4().hex[:6]
    a_keys, b_keys = [f"ta{i}_{tag}" for i in range(12)], [f"tb{i}_{tag}" for i in range(2)]
    a = Tenant.of(make_project(scopes=["query:read"]), engine, [{k: "x" for k in a_keys}] * 2)
    b = Tenant.of(make_project(scopes=["query:read"]), engine, [{k: "y" for k in b_keys}] * 2)
    materialized.take_usage("events")
    for i, key in enumerate(a_keys):
        a.heat(key, 70 + i)
    b.heat(b_keys[0], 61), b.heat(b_keys[1], 60)
    job = start_job(min_uses=60, max_columns=len(materialized.materialized_columns()) + 4, project_columns=10)
    wait_for(lambda: len(_made([*a_keys, *b_keys])) == 4, "four columns")
    time.sleep(1)
    assert _made([*a_keys, *b_keys]) == {a_keys[11], a_keys[10], *b_keys}
    assert b.check(b_keys[1], "y") and job.alive


POISON = [
    "it's", 'say "hi"', "'", "''", "back`tick", "`; DROP TABLE hoglab.events; --", "a\x00b", "\x00", "a.b", "a.b.c",
    "$x", "$", "x" * 400, "ÃƒÂ©", "\u0080\u009f\u00ff", "\ufffd\ufeff", "é😀", "a\\b", "\\", "line\nbreak", "tab\t",
    " ", "{k}", "properties.$browser", "\u202eevil", "%s%n", "hoglab:properties:x", "Plan", "plan",
]  # fmt: skip
REFUSED = ["", "y" * 401]


def test_poison_keys_are_contained_and_the_others_still_get_columns(
    make_project: Any, hoglab_service: Any, start_job: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Every key a tenant can send: those that can be columns become columns holding exactly their key; those that
    cannot (empty, too long) are not even counted; one whose every name is taken fails, alone, once; another
    project's key is made in the same rounds; the thread lives; every answer is the JSON's and pandas'."""
    caplog.set_level(logging.INFO, logger="hoglab.engine")
    engine = hoglab_service.state.engine
    tag = uuid.uuid4().hex[:6]
    blocked, good = f"blocked {tag}", f"good_{tag}"
    for name in materialized.candidate_names(blocked):  # the operator's columns hold every name it could take
        engine.command(f"ALTER TABLE hoglab.events ADD COLUMN {quote_identifier(name)} Nullable(String)")
    keys = [*POISON, *REFUSED, blocked]
    rows = [{k: f"v{(i + j) % 3}" for j, k in enumerate(keys) if (i + j) % 4} for i in range(12)]
    tenant = Tenant.of(make_project(scopes=["query:read"]), engine, rows)
    other = Tenant.of(make_project(scopes=["query:read"]), engine, [{good: "g"}] * 3)
    job = start_job(min_uses=35, max_columns=len(materialized.materialized_columns()) + 100, project_columns=100)
    for key in keys:
        tenant.heat(key, 40)
    other.heat(good, 40)
    wait_for(lambda: _made([*POISON, good]) == {*POISON, good}, "the columns", timeout=120)
    wait_for(lambda: ("events", blocked) in job.failed, "the blocked key's failure")
    time.sleep(1.5)  # more rounds: the failed key is not tried again
    assert "MaterializeError" in job.failed["events", blocked]
    tries = [r for r in caplog.records if "cannot materialize" in r.getMessage() and repr(blocked) in r.getMessage()]
    assert len(tries) == 1 and tries[0].levelno == logging.WARNING
    assert job.alive and job.restarts == 0
    assert not any("stopped; restarting" in r.getMessage() for r in caplog.records)

    columns = materialized.materialized_columns()
    assert not set(REFUSED) & set(columns) and not {("events", k) for k in REFUSED} & set(job.failed)
    counted = (
        engine.execute(
            f"SELECT key FROM hoglab.property_usage_by_project WHERE team_id = {tenant.project_id}",
            settings={"max_result_rows": 0},
        )
        .column("key")
        .to_pylist()
    )
    assert not set(REFUSED) & set(counted) and set(POISON) <= set(counted)  # refused keys are not even counted
    stored = {r["name"]: r["comment"] for r in engine.execute(
        "SELECT name, comment FROM system.columns WHERE database = 'hoglab' AND table = 'events'",
        settings={"max_result_rows": 0}).to_pylist()}  # fmt: skip
    assert len({columns[k] for k in POISON}) == len(POISON)
    for key in POISON:
        assert stored[columns[key]] == materialized.COMMENT_PREFIX + key  # the exact key, NUL and all
        assert f"events.`{columns[key]}`" in tenant.check(key, "v1")
    for key in [*REFUSED, blocked]:
        assert "events.`mat_" not in tenant.check(key, "v2")
    assert f"events.`{columns[good]}`" in other.check(good, "g")


def test_the_supervisor_restarts_a_round_thread_that_stopped(
    make_project: Any, hoglab_service: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Should the round thread ever end (here a round raises ``SystemExit``, which no ``except Exception``
    catches), the supervisor starts it again and the rounds go on: a key read afterwards becomes a column."""

    class Dies(AutoMaterializer):
        rounds = 0

        def run_once(self) -> dict[str, list[str]]:
            self.rounds += 1
            if self.rounds == 1:
                raise SystemExit("a round ended its thread")
            return super().run_once()

    caplog.set_level(logging.INFO, logger="hoglab.engine")
    engine = hoglab_service.state.engine
    key = f"after_restart_{uuid.uuid4().hex[:6]}"
    tenant = Tenant.of(make_project(scopes=["query:read"]), engine, [{key: "r"}, {}])
    job = Dies(engine, interval=0.2, min_uses=80, max_columns=10_000, project_columns=100)
    job.start()
    try:
        wait_for(lambda: job.restarts == 1 and job.alive, "the restart")
        assert any("stopped; restarting it (restart 1)" in r.getMessage() for r in caplog.records)
        tenant.heat(key, 80)
        wait_for(lambda: key in materialized.materialized_columns(), "a column after the restart")
        assert job.restarts == 1 and job.alive
        assert f"events.`{materialized.materialized_columns()[key]}`" in tenant.check(key, "r")
    finally:
        job.close()
    assert not job.alive


# --- a service that restarts --------------------------------------------------------------------------------------

SERVICE = Path(__file__).with_name("materialize_service.py")
OLD_A = "utm_source_29477461"  # project A's crafted key: the name the old version gave project B's `utm source`
BLOCKED = "blocked key"


class _Service:
    """``materialize_service.py`` on ``data_dir``: start, ask over HTTP, stop; its log is kept in ``log``."""

    def __init__(self, data_dir: Path, statements: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "src"), "HOGLAB_AUTO_MATERIALIZE": "1",
               "HOGLAB_MATERIALIZE_INTERVAL": "1", "HOGLAB_MATERIALIZE_MIN_USES": "20",
               "HOGLAB_MATERIALIZE_PROJECT_COLUMNS": "5"}  # fmt: skip
        self.log_path = data_dir.parent / f"service-{uuid.uuid4().hex[:6]}.log"
        self._log = self.log_path.open("w")
        command = [sys.executable, str(SERVICE), str(data_dir), *statements]
        pipe = subprocess.PIPE
        self.proc = subprocess.Popen(command, env=env, stdin=pipe, stdout=pipe, stderr=self._log, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        assert line, self.log_path.read_text()
        hello = json.loads(line)
        self.http = httpx.Client(base_url=hello["url"], headers={"Authorization": f"Bearer {hello['key']}"}, timeout=60)
        self.projects = {name: (int(pid), token) for name, (pid, token) in hello["projects"].items()}

    def tenant(self, name: str, rows: list[dict[str, str]]) -> Tenant:
        return Tenant(self.http, self.projects[name][0], rows)

    def capture(self, name: str, rows: list[dict[str, str]]) -> None:
        response = self.http.post("/batch/", json={"api_key": self.projects[name][1], "batch": events(rows)})
        assert response.status_code == 200, response.text

    def stop(self) -> str:
        """Stop it as an operator would (the service shuts down); its log."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=60) == 0
        self.close()
        return self.log_path.read_text()

    def close(self) -> None:
        """Release everything; a process still running (a failed test) is killed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)
        for stream in (self.proc.stdin, self.proc.stdout, self.http, self._log):
            if stream is not None:
                stream.close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Any]:
    """``service(statements=[])``: a service process on ``tmp_path / "data"``; any left running is killed."""
    started: list[_Service] = []

    def start(statements: list[str] | None = None) -> _Service:
        started.append(_Service(tmp_path / "data", statements or []))
        return started[-1]

    yield start
    for one in started:
        one.close()


def _reads_column(tenant: Tenant, key: str, value: str) -> bool:
    return "events.`mat_" in str(tenant.answers(key, value)[-1])


def test_after_every_restart_each_key_reads_its_own_column_and_the_thread_lives(service: Any) -> None:
    """A data dir as the old version left it: project A's crafted key made first (under the name the old version
    also gave ``utm source``), the old usage table with the empty key read 40 times, and columns of the
    operator's taking every name of one key. The new version, started twice on it: B's ``utm source`` gets a
    column of its own and answers B's events, the failing key fails once per start (not in a loop, not killing
    the thread), and after the restart another project's key still becomes a column."""
    comment = quote_string(materialized.COMMENT_PREFIX + OLD_A)
    old_a = (f"ALTER TABLE hoglab.events ADD COLUMN `mat_{OLD_A}` LowCardinality(Nullable(String)) MATERIALIZED "
             f"{materialized.extraction(OLD_A)} COMMENT {comment}")  # fmt: skip
    old_usage = ["CREATE TABLE hoglab.property_usage (key String, uses UInt64) ENGINE = SummingMergeTree ORDER BY key",
                 "INSERT INTO hoglab.property_usage VALUES ('', 40), ('utm source', 40), ('a\\0b', 40)"]  # fmt: skip
    operators = [f"ALTER TABLE hoglab.events ADD COLUMN {quote_identifier(n)} Nullable(String)"
                 for n in materialized.candidate_names(BLOCKED)]  # fmt: skip
    service([old_a, *old_usage, *operators]).stop()

    a_rows = [{OLD_A: f"a{i % 2}", "it's": f"q{i % 3}", "a\x00b": "n", "": "e", BLOCKED: "b"} for i in range(8)]
    b_rows = [{"utm source": ["google", "bing", "google"][i % 3]} for i in range(9)] + [{"utm_source": "other"}]
    c_rows = [{"c key": f"c{i % 2}"} for i in range(4)]
    asked_a = [(OLD_A, "a1"), ("it's", "q2"), ("a\x00b", "n"), ("", "e"), (BLOCKED, "b")]
    asked_b = [("utm source", "google"), ("utm source", "bing")]
    questions = [("A", a_rows, k, v) for k, v in asked_a] + [("B", b_rows, k, v) for k, v in asked_b]

    first = service()
    for name, rows in (("A", a_rows), ("B", b_rows), ("C", c_rows)):
        first.capture(name, rows)
    # from the JSON, before any of these keys has a column (A's crafted key has had one since the old version)
    from_json = {(key, value): first.tenant(name, rows).answers(key, value) for name, rows, key, value in questions}
    a, b = first.tenant("A", a_rows), first.tenant("B", b_rows)
    for key in (OLD_A, "it's", "a\x00b", BLOCKED):
        a.heat(key, 25)
    a.heat("", 40)
    b.heat("utm source", 25)
    new_b = materialized.column_name("utm source")
    wait_for(lambda: f"events.`{new_b}`" in str(b.answers("utm source", "google")[-1]), "B's own column")
    wait_for(lambda: _reads_column(a, "it's", "q0") and _reads_column(a, "a\x00b", "n"), "A's columns")
    for name, rows, key, value in questions:
        sql = first.tenant(name, rows).check(key, value, from_json=from_json[key, value])
        assert (f"events.`mat_{OLD_A}`" in sql) == (key == OLD_A)
        assert (f"events.`{new_b}`" in sql) == (key == "utm source")
    time.sleep(2.5)  # a few more rounds
    log = first.stop()
    assert log.count(f"cannot materialize the event property {BLOCKED!r}") == 1, log
    assert "restarting it" not in log and "Traceback" not in log, log

    again = service()  # the restart: everything is read again from the columns' own registrations
    for name, rows, key, value in questions:
        sql = again.tenant(name, rows).check(key, value, from_json=from_json[key, value])
        assert (f"events.`mat_{OLD_A}`" in sql) == (key == OLD_A)
        assert (f"events.`{new_b}`" in sql) == (key == "utm source")
    c = again.tenant("C", c_rows)
    c.heat("c key", 25)
    wait_for(lambda: _reads_column(c, "c key", "c1"), "C's column after the restart")
    c.check("c key", "c1", from_json=[[[2]], [["c0", 2], ["c1", 2]], [("c1", 2)]])
    log = again.stop()
    assert log.count(f"cannot materialize the event property {BLOCKED!r}") == 1, log  # once per start, no loop
    assert "restarting it" not in log and "Traceback" not in log, log


def test_a_stream_of_new_keys_cannot_crowd_out_another_projects_counts() -> None:
    """Uses are counted per project, each with its own bound on distinct keys between two rounds: a project that
    reads 10,000 new keys fills only its own."""
    materialized.take_usage("events")
    for i in range(10_000):
        materialized.lookup(f"flood {i}", team_id=-1)
    for _ in range(3):
        materialized.lookup("$browser", team_id=-2)
    counted = materialized.take_usage("events")
    flood = [key for team, key in counted if team == -1]
    assert counted[(-2, "$browser")] == 3 and 0 < len(flood) < 10_000
    assert counted[(-1, "flood 0")] == 1 and (-1, "flood 9999") not in counted
    assert materialized.take_usage("events") == {}
