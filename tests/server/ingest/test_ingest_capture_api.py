"""The capture endpoints over HTTP: the router in a minimal app (in-process), then in real processes for what only
a process shows: no acknowledged event lost when ``hoglab serve`` itself is SIGKILLed, and the official posthog
SDK end to end (a minimal capture process; the SDK against the full service is in tests/server/flags/)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import posthog
import pytest
from capture_app import make_app
from fastapi import FastAPI

from hoglab.server.engine import chdb_path
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.store import Store
from served import ServedProcess

HERE = Path(__file__).parent
TOKEN = "phc_capture_test"


class _Client:
    """Requests to the app in this process over httpx's ASGI transport (starlette's TestClient needs httpx2)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://capture.test") as http:
            return await http.request(method, url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return asyncio.run(self._send("POST", url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return asyncio.run(self._send("GET", url, **kwargs))

    def options(self, url: str, **kwargs: Any) -> httpx.Response:
        return asyncio.run(self._send("OPTIONS", url, **kwargs))


@pytest.fixture
def client(engine: ChdbEngine, team: int) -> _Client:
    return _Client(make_app(engine, {TOKEN: team}))


def _count(engine: ChdbEngine, team: int) -> int:
    return int(engine.execute(f"SELECT count() AS n FROM events WHERE team_id = {team}").to_pylist()[0]["n"])


def _event(**extra: object) -> dict[str, object]:
    return {"event": "$pageview", "distinct_id": "u1", "properties": {"$current_url": "/"}, **extra}


@pytest.mark.parametrize("path", ["/batch/", "/batch", "/capture/", "/e/", "/e", "/i/v0/e/", "/i/v0/e"])
def test_every_capture_path_stores_and_answers_like_posthog(
    client: _Client, engine: ChdbEngine, team: int, path: str
) -> None:
    response = client.post(path, json={"api_key": TOKEN, "batch": [_event(), _event(event="signup")]})
    assert response.status_code == 200
    assert response.json() == {"status": 1, "kept": 2, "dropped": 0, "repaired": 0, "problems": []}
    assert _count(engine, team) == 2


def test_sdk_body_shapes(client: _Client, engine: ChdbEngine, team: int) -> None:
    js = [{"event": "$pageview", "properties": {"token": TOKEN, "distinct_id": "web-1"}}]
    assert client.post("/e/?compression=gzip-js", content=gzip.compress(json.dumps(js).encode())).status_code == 200
    gz = gzip.compress(json.dumps({"api_key": TOKEN, "batch": [_event()]}).encode())
    assert client.post("/batch/", content=gz, headers={"Content-Encoding": "gzip"}).status_code == 200
    assert client.post("/capture/", json={**_event(), "token": TOKEN}).status_code == 200
    assert client.post(f"/i/v0/e/?token={TOKEN}", json=_event()).status_code == 200
    assert _count(engine, team) == 4
    rows = engine.execute(f"SELECT distinct_id FROM events WHERE team_id = {team} ORDER BY distinct_id")
    assert rows.column("distinct_id").to_pylist() == ["u1", "u1", "u1", "web-1"]


def test_requests_that_cannot_be_read_store_nothing(client: _Client, engine: ChdbEngine, team: int) -> None:
    missing = client.post("/batch/", json={"batch": [_event()]})
    assert missing.status_code == 401
    assert missing.json() == {"type": "authentication_error", "code": "missing_api_key", "attr": None,
                              "detail": "API key not provided. You can find your project API key in PostHog "
                                        "project settings."}  # fmt: skip
    unknown = client.post("/batch/", json={"api_key": "phc_nope", "batch": [_event()]})
    assert unknown.status_code == 401 and unknown.json()["code"] == "invalid_api_key"
    not_a_list = client.post("/batch/", json={"api_key": TOKEN, "batch": {"event": "x"}})
    assert not_a_list.status_code == 400
    assert not_a_list.json() == {"type": "validation_error", "code": "invalid_payload", "attr": "batch",
                                 "detail": 'Invalid payload: "batch" must be a list of events.'}  # fmt: skip
    truncated = json.dumps({"api_key": TOKEN, "batch": [_event(), _event()]})[:-3].encode()
    assert client.post("/batch/", content=truncated).json()["code"] == "invalid_payload"
    assert client.post("/e/", content=b"{oops").json()["code"] == "invalid_payload"
    assert client.post("/e/", content=b"").status_code == 400
    assert client.get("/batch/").status_code == 405
    assert _count(engine, team) == 0


# (bad event, what capture does with it: "drop" or "warning", the warning type, the field named)
MIXED = [
    ({"event": "$pageview"}, "drop", "missing_distinct_id", "distinct_id"),
    ({"distinct_id": "u1"}, "drop", "missing_event_name", "event"),
    ({"event": "x", "distinct_id": "u1", "uuid": "not-a-uuid"}, "drop", "invalid_event_uuid", "uuid"),
    ({"event": "x", "distinct_id": "u1", "properties": "plan=pro"}, "drop", "malformed_event_properties",
     "properties"),
    ({"event": "x", "distinct_id": "u1", "timestamp": "not a time"}, "warning", "ignored_invalid_timestamp",
     "timestamp"),
    ({"event": "x", "distinct_id": "u1", "offset": 1e15}, "warning", "ignored_invalid_timestamp", "offset"),
    ({"event": "x", "distinct_id": "u1", "timestamp": "2999-01-01T00:00:00Z"}, "warning", "event_timestamp_in_future",
     "timestamp"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "result", "warning", "field"), MIXED)
@pytest.mark.parametrize("path", ["/batch/", "/e/"])
def test_a_mixed_batch_keeps_its_good_events(
    client: _Client, engine: ChdbEngine, team: int, path: str, bad: dict[str, object], result: str, warning: str,
    field: str
) -> None:  # fmt: skip
    """Nine good events and one bad: the nine are stored, the bad one dropped or stored at the capture time, and
    a warning of PostHog's type is written for it."""
    good = [_event(distinct_id=f"g{i}", uuid=str(uuid.uuid4())) for i in range(9)]
    batch = [*good[:4], dict(bad), *good[4:]]
    body: Any = {"api_key": TOKEN, "batch": batch}
    if path == "/e/":  # posthog-js: an array of events, each with the token
        body = [{**e, "properties": {**(e.get("properties") or {}), "token": TOKEN}} if isinstance(e.get(
            "properties", {}), dict) else e for e in batch]  # fmt: skip
    before = datetime.now(UTC)
    answer = client.post(path, json=body)
    assert answer.status_code == 200, answer.text
    prefix = "batch__4__" if path == "/batch/" else "4__"
    kept = 10 if result == "warning" else 9
    problem = answer.json()["problems"]
    assert answer.json() | {"problems": None} == {"status": 1, "kept": kept, "dropped": 10 - kept,
                                                   "repaired": kept - 9, "problems": None}  # fmt: skip
    assert [(p["index"], p["result"], p["type"], p["attr"]) for p in problem] == [(4, result, warning, prefix + field)]
    rows = engine.execute(f"SELECT toString(uuid) AS u, timestamp FROM events WHERE team_id = {team}").to_pylist()
    stored = {r["u"] for r in rows}
    assert {str(e["uuid"]) for e in good} <= stored and len(stored) == kept
    if result == "warning":  # the repaired event sits at the capture time
        (repaired,) = [r for r in rows if r["u"] not in {str(e["uuid"]) for e in good}]
        assert before <= repaired["timestamp"] <= datetime.now(UTC)
    warnings = engine.execute(f"SELECT type, details FROM ingestion_warnings WHERE team_id = {team}").to_pylist()
    assert [w["type"] for w in warnings] == [warning]
    details = json.loads(warnings[0]["details"])
    assert details["field"] == field if "field" in details else warning == "event_timestamp_in_future"


def test_a_batch_of_only_bad_events_is_answered_and_warned_about(
    client: _Client, engine: ChdbEngine, team: int
) -> None:
    answer = client.post("/batch/", json={"api_key": TOKEN, "batch": [{"event": "x"}, "junk"]})
    assert answer.status_code == 200 and answer.json()["kept"] == 0 and answer.json()["dropped"] == 2
    assert _count(engine, team) == 0
    warnings = engine.execute(f"SELECT type FROM ingestion_warnings WHERE team_id = {team} ORDER BY type")
    assert warnings.column("type").to_pylist() == ["invalid_event", "missing_distinct_id"]


def test_browsers_get_cors_headers(client: _Client) -> None:
    asking = {"Origin": "https://site.example", "Access-Control-Request-Method": "POST",
              "Access-Control-Request-Headers": "content-type"}  # fmt: skip
    preflight = client.options("/e/", headers=asking)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://site.example"
    posted = client.post("/e/", json=[{"event": "x", "properties": {"token": TOKEN, "distinct_id": "d"}}],
                         headers={"Origin": "https://site.example"})  # fmt: skip
    assert posted.headers["access-control-allow-origin"] == "https://site.example"


def test_concurrent_requests_share_inserts(client: _Client, engine: ChdbEngine, team: int) -> None:
    from hoglab.server.ingest import Ingestor

    ingestor = Ingestor.for_engine(engine)
    before = ingestor.commits
    statuses: list[int] = []

    def post(i: int) -> None:
        batch = [_event(distinct_id=f"c{i}-{j}") for j in range(5)]
        statuses.append(client.post("/batch/", json={"api_key": TOKEN, "batch": batch}).status_code)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 24 and _count(engine, team) == 120
    assert ingestor.commits - before < 24  # group commit: fewer INSERTs than requests


# -- a real service process ---------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Service:
    def __init__(self, data_dir: Path, tokens: dict[str, int]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, str(HERE / "capture_app.py"), str(data_dir), str(self.port)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[2] / "src"), str(HERE)])}
        self.process = subprocess.Popen(args + [f"{t}={p}" for t, p in tokens.items()], env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/_events?project=0", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.process.kill()
        raise RuntimeError("the capture service did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        self.process.send_signal(sig)
        self.process.wait(30)


def _stored_in(data_dir: Path, project: int) -> set[str]:
    """Open the data directory in a fresh process (this one owns another) and list the stored uuids."""
    code = (f"from hoglab.server.engine.chdb import ChdbEngine\ne = ChdbEngine({str(data_dir)!r})\n"
            f"print('\\n'.join(e.execute('SELECT toString(uuid) AS u FROM events WHERE team_id = {project}')"
            f".column('u').to_pylist()))\ne.close()")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_sigkill_loses_no_acknowledged_event(tmp_path: Path) -> None:
    service = ServedProcess(tmp_path)
    with Store.open_at(tmp_path) as store:
        project = store.projects.create("durability")
    token = project.api_token
    acknowledged: set[str] = set()
    rejected: set[str] = set()
    kept_counts: list[bool] = []
    stop = threading.Event()

    def sender(worker: int) -> None:
        with httpx.Client(timeout=10) as http:
            i = 0
            while not stop.is_set():
                batch = [_event(distinct_id=f"w{worker}-{i % 7}", uuid=str(uuid.uuid4())) for _ in range(20)]
                bad: set[str] = set()
                if i % 3 == 2:  # now and then an event without a distinct id: dropped, the others kept
                    batch[-1] = {"event": "no distinct id", "uuid": batch[-1]["uuid"]}
                    bad.add(str(batch[-1]["uuid"]))
                body = json.dumps({"api_key": token, "batch": batch})
                if i % 5 == 4:  # now and then a truncated body: a 400 that must store none of it
                    body = body[:-2]
                try:
                    response = http.post(f"{service.url}/batch/", content=body)
                except httpx.HTTPError:
                    return  # the service died mid-request: not acknowledged
                ids = {str(e["uuid"]) for e in batch}
                if response.status_code == 200:
                    kept_counts.append(response.json()["kept"] == len(ids - bad))
                    acknowledged.update(ids - bad)
                    rejected.update(bad)
                else:
                    rejected.update(ids)
                i += 1

    threads = [threading.Thread(target=sender, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    # Kill mid-stream once enough has been acknowledged (however loaded the machine), with writes still coming.
    deadline = time.monotonic() + 60
    while (len(acknowledged) <= 200 or not rejected) and time.monotonic() < deadline:
        time.sleep(0.05)
    service.kill()  # whatever was acknowledged must be on disk
    stop.set()
    for t in threads:
        t.join()
    stored = _stored_in(chdb_path(tmp_path), project.id)
    assert len(acknowledged) > 200 and rejected and all(kept_counts)
    assert acknowledged <= stored
    assert not rejected & stored


def test_the_official_posthog_sdk_captures_into_the_service(tmp_path: Path) -> None:
    service = _Service(tmp_path, {TOKEN: 9})
    try:
        sdk = posthog.Posthog(TOKEN, host=service.url, sync_mode=True, gzip=True)
        sdk.capture("signup", distinct_id="sdk-user", properties={"plan": "pro", "$feature/new-checkout": "test"})
        sdk.set(distinct_id="sdk-user", properties={"email": "u@example.com"})
        sdk.alias(previous_id="sdk-user", distinct_id="sdk-alias")
        sdk.capture("purchase", distinct_id="sdk-alias", properties={"price": 12.5})
        sdk.flush()
        stored = httpx.get(f"{service.url}/_events?project=9").json()
        assert len(stored) == 4
    finally:
        service.stop()
    code = (f"import json\nfrom hoglab.server.engine.chdb import ChdbEngine\ne = ChdbEngine({str(tmp_path)!r})\n"
            "print(json.dumps(e.execute(\"SELECT event, distinct_id, properties, toString(person_id) AS p FROM events"
            " WHERE team_id = 9 ORDER BY timestamp\").to_pylist()))\n"
            "print(json.dumps(e.execute('SELECT argMax(properties, version) AS p FROM persons WHERE team_id = 9 '"
            "'GROUP BY id HAVING argMax(is_deleted, version) = 0').to_pylist()))\ne.close()")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    events_line, persons_line = done.stdout.splitlines()
    events = json.loads(events_line)
    assert [e["event"] for e in events] == ["signup", "$set", "$create_alias", "purchase"]
    assert json.loads(events[0]["properties"])["$feature/new-checkout"] == "test"
    assert len({e["p"] for e in events}) == 1  # alias kept one person
    (person,) = json.loads(persons_line)
    assert json.loads(person["p"]) == {"email": "u@example.com"}


def test_capture_is_mounted_in_the_real_app(tmp_path: Path) -> None:
    from hoglab.server.app import create_app
    from hoglab.server.config import ServerConfig

    app = create_app(ServerConfig(data_dir=tmp_path))
    assert {"/batch/", "/capture/", "/e/", "/i/v0/e/"} <= set(app.openapi()["paths"])
