"""The server side of pull (``server/mirror``), driven directly as ``hoglab pull`` drives it: pages of a remote
project written into a local one on the session's real service, then read back over HTTP. Each event is held once
whatever pages repeat, the watermark survives a new ``Mirror.open``, and a second copy of a flag or an experiment
updates the first. (The toolkit side, reading a remote over its API, is tested with the pull command.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.server.mirror import Mirror, MirrorError

START = datetime(2025, 5, 1, tzinfo=UTC)
HOST = "https://remote.example"


def _event(n: int, person: str) -> dict[str, Any]:
    # the shape the Query API answers a page of events in (properties as JSON text)
    return {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"mirror-{n}")), "event": f"e{n % 3}", "distinct_id": f"d{n}",
            "person_id": person, "timestamp": (START + timedelta(minutes=n)).isoformat().replace("+00:00", "Z"),
            "properties": f'{{"n": {n}}}', "elements_chain": "", "created_at": None}  # fmt: skip


@pytest.fixture
def mirror(make_project: Callable[..., Any], hoglab_service: Any) -> tuple[Mirror, Any]:
    project = make_project(scopes=["query:read", "experiment:read", "feature_flag:read"])
    state = hoglab_service.state
    remote = int(uuid.uuid4().int % 10**9)
    opened = Mirror.open(state.store, state.engine, host=HOST, remote_project_id=remote, name="remote", into=project.id)
    return opened, project


def test_pages_that_repeat_events_hold_each_event_once(mirror: tuple[Mirror, Any]) -> None:
    writer, project = mirror
    person = str(uuid.uuid4())
    rows = [_event(n, person) for n in range(30)]
    assert writer.write_events(rows[:20]) == 20
    assert writer.write_events(rows[10:] + rows[25:]) == 10  # a page read again after a crash, and a repeat in it
    assert writer.write_events([]) == 0
    assert writer.event_count() == 30
    body = {"query": {"kind": "HogQLQuery", "query": "select toString(uuid), event, properties.n from events "
                      "order by timestamp"}, "refresh": "force_blocking"}  # fmt: skip
    answer = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()
    assert answer["results"] == [[r["uuid"], r["event"], str(n)] for n, r in enumerate(rows)]


def test_an_event_without_its_uuid_is_refused_and_its_page_not_written(mirror: tuple[Mirror, Any]) -> None:
    writer, _ = mirror
    rows = [_event(100, str(uuid.uuid4())), {**_event(101, str(uuid.uuid4())), "uuid": ""}]
    with pytest.raises(MirrorError, match="uuid"):
        writer.write_events(rows)
    assert writer.event_count() == 0


def test_the_watermark_is_found_again_by_the_next_open(mirror: tuple[Mirror, Any], hoglab_service: Any) -> None:
    writer, project = mirror
    last = START + timedelta(hours=1)
    writer.advance(last, "u-last", 42)
    again = Mirror.open(hoglab_service.state.store, hoglab_service.state.engine, host=HOST,
                        remote_project_id=writer.source.remote_project_id, name="ignored", into=project.id)  # fmt: skip
    assert again.project.id == project.id and again.source.id == writer.source.id
    assert (again.source.events_after_timestamp, again.source.events_after_uuid) == (last, "u-last")
    assert again.source.events_copied == 42


def test_a_second_copy_of_a_flag_or_an_experiment_updates_the_first(mirror: tuple[Mirror, Any]) -> None:
    writer, project = mirror
    flag = {"id": 7, "key": "remote-flag", "name": "v1", "active": True,
            "filters": {"groups": [{"properties": [], "rollout_percentage": 10}]}}  # fmt: skip
    first = writer.write_flag(flag)
    assert writer.write_flag({**flag, "name": "v2", "active": False}) == first
    flags = project.http.get(f"/api/projects/{project.id}/feature_flags/").json()["results"]
    assert [(f["key"], f["name"], f["active"]) for f in flags] == [("remote-flag", "v2", False)]

    experiment = {"id": 9, "name": "Checkout", "feature_flag_key": "remote-exp",
                  "start_date": "2025-05-01T00:00:00Z", "parameters": {}, "filters": {}}  # fmt: skip
    local = writer.write_experiment(experiment)
    assert writer.write_experiment({**experiment, "name": "Checkout v2", "end_date": "2025-05-08T00:00:00Z"}) == local
    got = project.http.get(f"/api/projects/{project.id}/experiments/{local}/").json()
    assert (got["name"], got["feature_flag_key"], got["end_date"][:10]) == ("Checkout v2", "remote-exp", "2025-05-08")
    with pytest.raises(MirrorError, match="already has a flag"):  # another remote experiment on a taken key
        writer.write_experiment({**experiment, "id": 10, "feature_flag_key": "remote-flag"})
