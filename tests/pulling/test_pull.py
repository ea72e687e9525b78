"""``hoglab.pull`` against a real hoglab service acting as the remote, with its caps and rate limits on.

The fast tests pull between two projects of one data dir (the remote is a second service of this process with a
tight query limit, so the pull meets 429s and ``Retry-After``); the slow one runs ``hoglab serve --demo`` and
``hoglab pull`` as separate processes, kills the pull with SIGKILL halfway and resumes it, then compares what the
mirror answers with what the remote answers.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from hoglab import Client, pull
from hoglab.local import LocalService, start_local_service
from hoglab.pulling.remote import PAGE_ROWS, Pacer as _Pacer
from hoglab.server.ingest import Ingestor

pytestmark = pytest.mark.xdist_group("pull")

NOW = datetime.now(UTC).replace(microsecond=0)


class CountingTransport(httpx.HTTPTransport):
    """The real transport, counting the answers by status (to see the remote's 429s; nothing is faked)."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.statuses.append(response.status_code)
        return response


def _events(n: int, *, start: datetime, prefix: str = "u") -> list[dict[str, Any]]:
    steps = ("$pageview", "signup", "purchase")
    return [
        {
            "event": steps[0] if i % 3 == 0 else steps[i % 3] if i % 5 else steps[0],
            "distinct_id": f"{prefix}{i % 997}",
            "properties": {"$browser": ("Chrome", "Safari")[i % 2], "n": i},
            "timestamp": (start + timedelta(seconds=37 * i)).isoformat(),
        }
        for i in range(n)
    ]


def _hogql(http: httpx.Client, project: int, sql: str) -> list[list[Any]]:
    answer = http.post(f"/api/projects/{project}/query/", json={"query": {"kind": "HogQLQuery", "query": sql}})
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]  # type: ignore[no-any-return]


def _answers(http: httpx.Client, project: int) -> dict[str, Any]:
    """What a notebook would compare: counts, a daily trend, a funnel, uniqueness of events."""
    trend = {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
             "dateRange": {"date_from": "-90d"}}  # fmt: skip
    funnel = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "$pageview"},
              {"kind": "EventsNode", "event": "signup"}, {"kind": "EventsNode", "event": "purchase"}],
              "dateRange": {"date_from": "-90d"}}  # fmt: skip
    results = {}
    for name, query in (("trend", trend), ("funnel", funnel)):
        answer = http.post(f"/api/projects/{project}/query/", json={"query": query})
        assert answer.status_code == 200, answer.text
        results[name] = [(r.get("data"), r.get("count")) for r in answer.json()["results"]]
    return {
        "by_event": _hogql(http, project, "select event, count() from events group by event order by event"),
        "unique": _hogql(http, project, "select count() = uniqExact(uuid), count(distinct person_id) from events"),
        **results,
    }


@pytest.fixture
def remote(hoglab_service: LocalService, make_project: Any) -> Iterator[tuple[LocalService, Any]]:
    """A second service on the session's data: query limit 2 per 4 s, so the pull meets 429s even on a busy machine."""
    project = make_project()
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(
        project.id, _events(int(PAGE_ROWS * 2.5), start=NOW - timedelta(days=20))
    )
    http = project.http
    steps = [{"id": "$pageview", "order": 0}, {"id": "purchase", "order": 1}]
    experiment = {
        "name": "Mirror me",
        "feature_flag_key": f"mirror-{project.id}",
        "start_date": (NOW - timedelta(days=10)).isoformat(),
        "filters": {"insight": "FUNNELS", "events": steps},
    }
    assert http.post(f"/api/projects/{project.id}/experiments/", json=experiment).status_code == 201
    overrides = {"query_rate_limit": "2/4s", "rate_limit_burst": "100000/minute"}
    overrides["rate_limit_sustained"] = "1000000/hour"
    with start_local_service(hoglab_service.data_dir, config_overrides=overrides) as tight:
        yield tight, project


def test_a_pull_copies_a_project_through_429s_and_tops_up_with_only_new_events(
    remote: tuple[LocalService, Any], hoglab_service: LocalService
) -> None:
    tight, project = remote
    transport = CountingTransport()
    client = Client(tight.url, project.key, project.id, transport=transport, progress=False)
    lines: list[str] = []
    report = pull(client=client, service=hoglab_service, rate="100/second", say=lines.append)
    assert 429 in transport.statuses  # the remote throttled; the pull waited (Retry-After) and went on
    assert report.local_project_id != project.id
    assert report.events_copied == report.events_fetched == int(PAGE_ROWS * 2.5)
    assert lines[0].startswith(f"{int(PAGE_ROWS * 2.5):,} events to read in 3 queries")
    mirror_http = httpx.Client(base_url=hoglab_service.url, headers=hoglab_service.headers, timeout=60)
    assert _answers(mirror_http, report.local_project_id) == _answers(project.http, project.id)
    experiments = mirror_http.get(f"/api/projects/{report.local_project_id}/experiments/").json()["results"]
    assert [e["feature_flag_key"] for e in experiments] == [f"mirror-{project.id}"]
    assert report.flags == 1 and report.experiments == 1

    new = _events(50, start=NOW - timedelta(minutes=30), prefix="late")
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(project.id, new)
    again = pull(client=Client(tight.url, project.key, project.id, progress=False), service=hoglab_service,
                 rate="100/second")  # fmt: skip
    assert again.local_project_id == report.local_project_id
    assert again.events_copied == 50
    assert _answers(mirror_http, report.local_project_id) == _answers(project.http, project.id)
    mirror_http.close()


def test_an_export_read_first_and_the_api_top_up_hold_each_event_once(
    hoglab_service: LocalService, make_project: Any, tmp_path: Path
) -> None:
    import gzip
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    source = make_project()
    ingestor = Ingestor.for_engine(hoglab_service.state.engine)
    ingestor.capture_batch(source.id, _events(3000, start=NOW - timedelta(days=9)))
    rows = _hogql(source.http, source.id, "select toString(uuid), event, distinct_id, toString(person_id), "
                  "toString(timestamp), properties from events order by timestamp limit 2000")  # fmt: skip
    names = ("uuid", "event", "distinct_id", "person_id", "timestamp", "properties")
    exported = [dict(zip(names, row, strict=True)) for row in rows]
    # PostHog's S3 layout: a prefix per day; one Parquet file and one gzipped JSON-lines file.
    (tmp_path / "2026" / "01").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(exported[:1200]), tmp_path / "2026" / "01" / "part-0.parquet")
    with gzip.open(tmp_path / "2026" / "01" / "part-1.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in exported[1000:])  # 200 rows are in both files
    client = Client(hoglab_service.url, source.key, source.id, progress=False)
    report = pull(client=client, service=hoglab_service, from_export=tmp_path, rate="100/second")
    assert report.files_read == 2
    mirror_http = httpx.Client(base_url=hoglab_service.url, headers=hoglab_service.headers, timeout=60)
    assert _answers(mirror_http, report.local_project_id) == _answers(source.http, source.id)
    again = pull(client=Client(hoglab_service.url, source.key, source.id, progress=False), service=hoglab_service,
                 from_export=tmp_path, rate="100/second")  # fmt: skip
    assert again.files_read == 0 and again.events_copied == 0
    mirror_http.close()


def test_the_pacer_spaces_queries_by_the_rate() -> None:
    clock = [0.0]
    pacer = _Pacer(0.5, clock=lambda: clock[0])
    waits = []
    for _ in range(3):
        before = time.monotonic()
        pacer.wait()
        waits.append(time.monotonic() - before)
        clock[0] += 0.5  # the query took exactly the spacing: no wait is needed
    assert max(waits) < 0.1 and pacer.count == 3


def test_mistakes_are_clear_before_anything_is_read(hoglab_service: LocalService) -> None:
    from hoglab.errors import ConfigurationError, InvalidArgument

    with pytest.raises(InvalidArgument, match="120/hour"):
        pull("http://127.0.0.1:1", 1, key="phx_x", rate="fast", service=hoglab_service)
    with pytest.raises(ConfigurationError, match="HOGLAB_TEST_NO_SUCH_VARIABLE"):
        pull("http://127.0.0.1:1", 1, service=hoglab_service, key_env="HOGLAB_TEST_NO_SUCH_VARIABLE")


# -- across processes: kill -9 halfway, resume, compare ------------------------------------------------------


def _rounded(value: Any) -> Any:
    """Floats to 12 significant digits, in any nesting (sums of floats differ in their last bits by order)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _hoglab(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hoglab.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _serve(data_dir: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str, str]:
    port = _free_port()
    process = _hoglab("serve", "--demo", "--data-dir", str(data_dir), "--port", str(port), env=env)
    key = ""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("personal API key:"):
            key = line.split()[3]
        if "Application startup complete" in line:
            break
    assert key, "the service did not start"
    # Keep reading its log, or a full pipe would stop the service mid-request.
    threading.Thread(target=lambda: [None for _ in process.stdout or ()], daemon=True).start()
    return process, f"http://127.0.0.1:{port}", key


def _copied(data_dir: Path) -> int:
    try:
        with sqlite3.connect(f"file:{data_dir / 'hoglab.sqlite3'}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute("SELECT coalesce(sum(events_copied), 0) FROM pull_sources").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


@pytest.mark.slow
def test_a_pull_killed_halfway_resumes_and_the_mirror_answers_as_the_remote(tmp_path: Path) -> None:
    limits = {"HOGLAB_QUERY_RATE_LIMIT": "20/second", "HOGLAB_RATE_LIMIT_BURST": "100000/minute"}
    remote, remote_url, key = _serve(tmp_path / "remote", limits)
    mirror_dir = tmp_path / "mirror"
    pull_env = {"POSTHOG_PERSONAL_API_KEY": key}
    try:
        first = _hoglab("pull", "--from", remote_url, "--project", "1", "--data-dir", str(mirror_dir), "--rate",
                        "4/second", env=pull_env)  # fmt: skip
        deadline = time.monotonic() + 120
        while _copied(mirror_dir) < 3 * PAGE_ROWS and time.monotonic() < deadline:
            time.sleep(0.2)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        halfway = _copied(mirror_dir)
        assert 0 < halfway < 200_000, halfway
        resumed = _hoglab("pull", "--from", remote_url, "--project", "1", "--data-dir", str(mirror_dir), "--rate",
                          "20/second", env=pull_env)  # fmt: skip
        output, _ = resumed.communicate(timeout=300)
        assert first.stdout is not None and "events to read in" in first.stdout.read()
        assert resumed.returncode == 0, output
        mirror, mirror_url, mirror_key = _serve(mirror_dir)
        try:
            local = int(next(line for line in output.splitlines() if line.startswith("local project id:")).split()[-1])
            r = httpx.Client(base_url=remote_url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
            m = httpx.Client(base_url=mirror_url, headers={"Authorization": f"Bearer {mirror_key}"}, timeout=120)
            with r, m:
                expected = _answers(r, 1)
                assert expected["unique"][0][0] == 1 and sum(n for _, n in expected["by_event"]) >= 200_000
                assert _answers(m, local) == expected
                results = [c.get(f"/api/projects/{p}/experiments/1/results/").json()["result"] for c, p in ((r, 1), (m, local))]  # noqa: E501
                assert results[0]["probability"] == results[1]["probability"]
                # Mean conversion times are sums of floats: equal to the last few bits, whatever order the engine adds.
                assert _rounded(results[1]["insight"]) == _rounded(results[0]["insight"])
        finally:
            mirror.send_signal(signal.SIGINT)
            mirror.wait(30)
            if mirror.stdout is not None:
                mirror.stdout.close()
    finally:
        remote.send_signal(signal.SIGINT)
        remote.wait(30)
        for process in (remote, first):
            if process.stdout is not None:
                process.stdout.close()


def test_a_pull_copies_group_types_and_groups(hoglab_service: LocalService, make_project: Any) -> None:
    project = make_project()
    start = NOW - timedelta(days=2)
    events: list[dict[str, Any]] = [
        {"event": "view", "distinct_id": "u0", "timestamp": start.isoformat(), "properties": {"$groups": {"team": "t"}}}
    ]
    for i in range(30):
        events.append({"event": "$groupidentify", "distinct_id": "admin", "timestamp": start.isoformat(),
                       "properties": {"$group_type": "company", "$group_key": f"c{i}",
                                      "$group_set": {"plan": "pro" if i % 2 else "free", "seats": i}}})
        events.append({"event": "view" if i % 3 else "buy", "distinct_id": f"u{i}",
                       "timestamp": (start + timedelta(minutes=i)).isoformat(),
                       "properties": {"$groups": {"company": f"c{i % 7}"}}})  # fmt: skip
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(project.id, events)
    project.http.patch(f"/api/projects/{project.id}/groups_types/update_metadata/",
                       json=[{"group_type_index": 1, "name_plural": "Companies"}])  # fmt: skip
    report = pull(client=Client(hoglab_service.url, project.key, project.id, progress=False), service=hoglab_service,
                  rate="100/second")  # fmt: skip
    assert (report.group_types, report.groups) == (2, 30) and not report.errors
    mirror = httpx.Client(base_url=hoglab_service.url, headers=hoglab_service.headers, timeout=60)
    for path in ("groups_types/", "groups/?group_type_index=1", "groups/?group_type_index=1&search=pro"):
        assert mirror.get(f"/api/projects/{report.local_project_id}/{path}").json() == project.http.get(
            f"/api/projects/{project.id}/{path}").json() or path == "groups_types/"
    # The indexes are the remote's (team first, company second), so queries by index answer alike.
    assert [(t["group_type"], t["group_type_index"], t["name_plural"]) for t in mirror.get(
        f"/api/projects/{report.local_project_id}/groups_types/").json()] == [
        ("team", 0, None), ("company", 1, "Companies")]  # fmt: skip
    funnel = {"kind": "FunnelsQuery", "aggregation_group_type_index": 1, "dateRange": {"date_from": "-7d"},
              "series": [{"kind": "EventsNode", "event": "buy"}, {"kind": "EventsNode", "event": "view"}],
              "breakdownFilter": {"breakdown": "plan", "breakdown_type": "group", "breakdown_group_type_index": 1}}
    answers = [h.post(f"/api/projects/{p}/query/", json={"query": funnel}).json()["results"]
               for h, p in ((mirror, report.local_project_id), (project.http, project.id))]  # fmt: skip
    assert answers[0] == answers[1] and answers[0]
    # A key without group:read copies the rest and says what it skipped.
    narrow = project.new_key(["query:read", "experiment:read", "feature_flag:read", "cohort:read"])
    skipped = pull(client=Client(hoglab_service.url, narrow, project.id, progress=False), service=hoglab_service,
                   rate="100/second")  # fmt: skip
    assert skipped.groups == 0 and "group:read" in skipped.errors[0]
    mirror.close()


def test_group_answers_are_checked_before_anything_is_stored() -> None:
    from hoglab.errors import RemoteAnswerError
    from hoglab.pulling import answers

    kind = answers.GROUP_TYPE.read({"group_type": "company", "group_type_index": 0, "name_plural": None})
    assert (kind["group_type_index"], kind["name_plural"]) == (0, None)
    row = answers.GROUP.read({"k": "0:acme", "index": 0, "key": "acme", "created_at": "2026-01-02T03:04:05Z",
                              "properties": '{"plan": "pro"}'})  # fmt: skip
    assert row["created_at"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC) and row["properties"] == '{"plan": "pro"}'
    for shape, item, field in (
        (answers.GROUP_TYPE, {"group_type": "company", "group_type_index": 5}, "group_type_index"),
        (answers.GROUP_TYPE, {"group_type": "", "group_type_index": 0}, "group_type"),
        (answers.GROUP, {"k": "0:a", "index": True, "key": "a", "properties": "{}"}, "index"),
        (answers.GROUP, {"k": "0:a", "index": 0, "key": "a", "properties": "[1]"}, "properties"),
    ):
        with pytest.raises(RemoteAnswerError) as caught:
            shape.read(item, "results[0]")
        assert caught.value.field == f"results[0].{field}"
