"""``hoglab pull`` against a misbehaving remote: every malformed answer is a clear error that names the endpoint,
the field and what was expected, and nothing partial is left behind.

The remote is a mock PostHog Cloud project served over real HTTP on 127.0.0.1 (``pull_cloud.py``): mocked because
it is remote; its good answers validate against PostHog's published OpenAPI document. The pull writes into the
session's real hoglab service, which is never mocked, and what it holds afterwards is read back over its HTTP API.

Each kind of malformed answer runs twice: against a first pull (afterwards no local project, no mirror record) and
against an incremental pull of a project copied before (afterwards the copy exactly as it was: events, watermark,
persons, flags, cohorts, experiments, time zone).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pull_cloud import KEY, CloudRemote

from hoglab import AnswerTimeout, Client, RedirectRefused, RemoteAnswerError, pull
from hoglab.errors import HoglabError
from hoglab.local import LocalService
from posthog_openapi import assert_valid

pytestmark = pytest.mark.xdist_group("pull")


@pytest.fixture
def cloud(hoglab_service: LocalService) -> Iterator[tuple[CloudRemote, str]]:
    remote = CloudRemote()
    serving = remote.serve()
    url = next(serving)
    yield remote, url
    serving.close()
    _forget(hoglab_service, url, remote)


def _forget(service: LocalService, url: str, remote: CloudRemote) -> None:
    """Forget the test's mirror record. A mirror is found by (URL, remote project): a later test's remote may get
    this port again, and must start afresh, not resume into this test's mirror (the local project it made stays,
    under this remote's own name)."""
    left = service.state.store.pulls.find(url, remote.project_id)
    if left is not None:
        service.state.store.pulls.discard(left.id, with_project=False)


def _pull(url: str, remote: CloudRemote, service: LocalService, **options: Any) -> Any:
    client = Client(url, KEY, remote.project_id, progress=False, max_retries=1)
    client.retry = type(client.retry)(max_retries=1, backoff=0.01, max_backoff=0.02)
    return pull(client=client, service=service, rate="1000/second", progress=False, **options)


def _mirrored(service: LocalService, url: str, remote: CloudRemote) -> dict[str, Any] | None:
    """What the local side holds of this remote, read over the service's HTTP API (``None``: no mirror at all)."""
    store = service.state.store
    source = store.pulls.find(url, remote.project_id)
    named = [p for p in store.projects.list() if p.name == remote.name]
    if source is None:
        assert named == [], "a local project was left without its mirror record"
        return None
    project = source.local_project_id
    http = httpx.Client(base_url=service.url, headers=service.headers, timeout=30)
    with http:
        def get(path: str) -> Any:
            answer = http.get(f"/api/projects/{project}/{path}")
            assert answer.status_code == 200, answer.text
            return answer.json()

        body = {"query": {"kind": "HogQLQuery", "query": "select count(), uniqExact(uuid), max(timestamp) from events"},
                "refresh": "force_blocking"}  # fmt: skip
        events = http.post(f"/api/projects/{project}/query/", json=body).json()["results"]
        persons = http.post(f"/api/projects/{project}/query/", json={
            "query": {"kind": "HogQLQuery", "query": "select count() from persons"}}).json()["results"]
        return {
            "project": {k: v for k, v in get("").items() if k in ("id", "name", "timezone")},
            "watermark": (source.events_after_timestamp, source.events_after_uuid, source.events_copied),
            "events": events,
            "persons": persons,
            "flags": [(f["key"], f["name"], f["filters"], f["active"]) for f in get("feature_flags/")["results"]],
            "cohorts": [(c["name"], c["filters"]) for c in get("cohorts/")["results"]],
            "experiments": [(e["name"], e["start_date"], e["end_date"], e["parameters"], e["filters"])
                            for e in get("experiments/")["results"]],
        }


# -- the good remote -------------------------------------------------------------------------------------------------


def test_the_mock_answers_as_posthog_cloud_does(cloud: tuple[CloudRemote, str]) -> None:
    remote, url = cloud
    http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"})
    base = f"/api/projects/{remote.project_id}/"
    with http:
        assert_valid(http.get(base).json(), "ProjectBackwardCompat", drop=())
        assert_valid(http.get(base + "feature_flags/").json(), "PaginatedFeatureFlagList", drop=())
        assert_valid(http.get(base + "cohorts/").json(), "PaginatedCohortList", drop=())
        assert_valid(http.get(base + "experiments/").json(), "PaginatedExperimentList", drop=())
        for action in http.get(base + "actions/").json()["results"]:
            # PostHog answers creation_context null (always, read-only) where its document types a string.
            assert_valid({**action, "creation_context": ""}, "Action", drop=())
        query = {"kind": "HogQLQuery", "query": "SELECT count() AS n FROM events WHERE timestamp >= {since}",
                 "values": {"since": "1970-01-01 00:00:00.000000"}}  # fmt: skip
        assert_valid(http.post(base + "query/", json={"query": query}).json(), "HogQLQueryResponse", drop=())
        assert http.get(base, headers={"Authorization": "Bearer nope"}).status_code == 401


def test_a_good_remote_is_copied_whole(cloud: tuple[CloudRemote, str], hoglab_service: LocalService) -> None:
    remote, url = cloud
    report = _pull(url, remote, hoglab_service)
    held = _mirrored(hoglab_service, url, remote)
    assert held is not None and held["project"]["timezone"] == "Europe/Berlin"
    assert held["events"][0][:2] == [remote.events_count, remote.events_count]
    assert held["persons"] == [[len(remote.persons)]]
    assert [f[0] for f in held["flags"]] == ["checkout-exp", "beta"] and len(held["cohorts"]) == 1
    assert report.warnings == [] and report.experiments == 1 and report.actions == 1


# -- malformed answers -----------------------------------------------------------------------------------------------


def _row(index: int, column: str, value: Any) -> Callable[[Any], Any]:
    def change(answer: dict[str, Any]) -> dict[str, Any]:
        answer["results"][index][answer["columns"].index(column)] = value
        return answer

    return change


def _item(index: int, **changes: Any) -> Callable[[Any], Any]:
    def change(listing: dict[str, Any]) -> dict[str, Any]:
        if index >= len(listing["results"]):  # e.g. the listing of archived experiments: none
            return listing
        listing["results"][index].update(changes)
        for name, value in changes.items():
            if value is _DROP:
                del listing["results"][index][name]
        return listing

    return change


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"key": "purchase", "type": "behavioral", "value": "performed_event"}
    for _ in range(depth):
        node = {"type": "AND", "values": [node]}
    return node


_DROP = object()
HTML = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please log in</body></html>"


@dataclass(frozen=True)
class Kind:
    """One kind of malformed answer: which endpoint misbehaves, how, and what the error must say."""

    name: str
    label: str
    how: dict[str, Any]
    says: tuple[str, ...]
    error: type[HoglabError] = RemoteAnswerError
    crashed_before: bool = False  # one of the 7 that ended in a traceback before


KINDS = [
    # -- not JSON, or not the answer -------------------------------------------------------------------------------
    Kind("truncated JSON", "events", {"raw": b'{"columns": ["uuid"], "results": [["0190b2a4-8c54'},
         ("POST /api/projects/4242/query/ (events page 1)", "JSON cut short after"), crashed_before=True),
    Kind("HTML page", "project", {"raw": HTML, "content_type": "text/html"},
         ("GET /api/projects/4242/", "an HTML page (text/html)", "Sign in"), crashed_before=True),
    Kind("empty body", "count", {"raw": b""}, ("(events count)", "an empty body (HTTP 200)")),
    Kind("bytes that are not UTF-8", "feature_flags", {"raw": b"\xff\xfe\x00garbage"},
         ("GET /api/projects/4242/feature_flags/", "not UTF-8")),
    Kind("a JSON list for a query answer", "events", {"transform": lambda a: [1, 2, 3]},
         ("(events page 1)", "a query answer")),
    Kind("no results", "persons", {"transform": lambda a: {k: v for k, v in a.items() if k != "results"}},
         ("(persons page 1)", "results: expected the query's rows", "nothing")),
    Kind("results not a list", "distinct_ids", {"transform": lambda a: {**a, "results": "none"}},
         ("(distinct ids page 1)", "results: expected the query's rows (a list of lists), got 'none'")),
    Kind("a column missing", "events", {"transform": lambda a: {**a, "columns": [*a["columns"][:4], "ts",
                                                                             *a["columns"][5:]]}},
         ("columns: expected the columns uuid, event, distinct_id, person_id, timestamp",)),
    Kind("column/row mismatch", "events", {"transform": lambda a: {**a, "results": [a["results"][0][:-1]]}},
         ("(events page 1): results[0]: expected a row of 8 values, one per column",), crashed_before=True),
    # -- fields ---------------------------------------------------------------------------------------------------
    Kind("integer timestamp", "events", {"transform": _row(0, "timestamp", 1767225600)},
         ("results[0].timestamp: expected an ISO 8601 date-time text", "got 1767225600"), crashed_before=True),
    Kind("month 99", "events", {"transform": _row(2, "timestamp", "2026-99-01T00:00:00.000000Z")},
         ("results[2].timestamp", "month must be in 1..12", "'2026-99-01T00:00:00.000000Z'"), crashed_before=True),
    Kind("a year ClickHouse cannot hold", "events", {"transform": _row(0, "timestamp", "9999-01-01T00:00:00Z")},
         ("results[0].timestamp", "between the years 1900 and 2299",)),
    Kind("uuid not a UUID", "events", {"transform": _row(1, "uuid", "not-a-uuid")},
         ("results[1].uuid: expected a UUID, got 'not-a-uuid'",)),
    Kind("event name null", "events", {"transform": _row(0, "event", None)},
         ("results[0].event: expected non-empty text, got None",)),
    Kind("properties cut short", "events", {"transform": _row(0, "properties", '{"$browser": "Chr')},
         ("results[0].properties: expected a JSON object's text",)),
    Kind("properties not an object", "events", {"transform": _row(0, "properties", "[1, 2]")},
         ("results[0].properties: expected a JSON object",)),
    Kind("a count of 'lots'", "count", {"transform": _row(0, "n", "lots")},
         ("(events count): results[0].n: expected a count (a whole number from 0), got 'lots'",),
         crashed_before=True),
    Kind("a negative count", "count", {"transform": _row(0, "n", -5)}, ("results[0].n: expected a count",)),
    Kind("rows out of keyset order", "events", {"transform": lambda a: {**a, "results": a["results"][::-1]}},
         ("(events page 1): results[1]: expected rows after", "in the order (timestamp, uuid)")),
    Kind("person without id", "persons", {"transform": _row(0, "id", None)},
         ("(persons page 1): results[0].id: expected a UUID, got None",)),
    Kind("person created 'yesterday'", "persons", {"transform": _row(3, "created_at", "yesterday")},
         ("results[3].created_at: expected an ISO 8601", "'yesterday'")),
    Kind("distinct id without person", "distinct_ids", {"transform": _row(0, "person_id", None)},
         ("(distinct ids page 1): results[0].person_id: expected a UUID",)),
    Kind("cohort without id", "cohorts", {"transform": _item(0, id=_DROP)},
         ("GET /api/projects/4242/cohorts/: results[0].id: expected the cohort's 'id', got nothing",),
         crashed_before=True),
    Kind("a listing count of 'lots'", "feature_flags", {"transform": lambda a: {**a, "count": "lots"}},
         ("GET /api/projects/4242/feature_flags/: count: expected a count", "'lots'")),
    Kind("listing results not a list", "experiments", {"transform": lambda a: {**a, "results": {"a": 1}}},
         ("GET /api/projects/4242/experiments/: results: expected the listing's items (a list)",)),
    Kind("flag without key", "feature_flags", {"transform": _item(0, key=_DROP)},
         ("results[0].key: expected the feature flag's 'key'",)),
    Kind("flag filters not an object", "feature_flags", {"transform": _item(0, filters="everyone")},
         ("results[0].filters: expected a JSON object, got 'everyone'",)),
    Kind("action without id", "actions", {"transform": _item(0, id=_DROP)},
         ("GET /api/projects/4242/actions/: results[0].id: expected the action's 'id', got nothing",)),
    Kind("action steps not a list", "actions", {"transform": _item(0, steps={"event": "$pageview"})},
         ("GET /api/projects/4242/actions/: results[0].steps: expected a list",)),
    Kind("actions answered as HTML", "actions", {"raw": HTML, "content_type": "text/html"},
         ("GET /api/projects/4242/actions/", "an HTML page")),
    # -- settings the service checks --------------------------------------------------------------------------------
    Kind("flag rollout 250%", "feature_flags",
         {"transform": _item(0, filters={"groups": [{"properties": [], "rollout_percentage": 250}]})},
         ("flag 'beta' (remote id 11): filters.groups[0].rollout_percentage: expected a number from 0 to 100",)),
    Kind("flag variants summing to 150", "feature_flags", {"transform": _item(0, filters={
        "groups": [{"properties": [], "rollout_percentage": 100}], "multivariate": {"variants": [
            {"key": "a", "rollout_percentage": 100}, {"key": "b", "rollout_percentage": 50}]}})},
         ("filters.multivariate.variants: expected rollout percentages that sum to 100, got 150",)),
    Kind("cohort group of type XOR", "cohorts", {"transform": _item(0, filters={"properties": {
        "type": "XOR", "values": []}})},
         ("cohort 'Buyers' (remote id 21): filters.properties.type: expected 'AND' or 'OR'",)),
    Kind("cohort nested 40 deep", "cohorts", {"transform": _item(0, filters={"properties": _nested(40)})},
         ("cohort 'Buyers' (remote id 21)", "expected groups nested at most 16 deep",)),
    Kind("cohort in cohort 'all'", "cohorts", {"transform": _item(0, filters={"properties": {"type": "AND",
        "values": [{"key": "id", "type": "cohort", "value": "all"}]}})},
         ("filters.properties.values[0].value: expected a cohort id (a whole number), got 'all'",)),
    Kind("experiment ending before it starts", "experiments",
         {"transform": _item(0, end_date="2025-01-01T00:00:00Z")},
         ("experiment 'Checkout' (remote id 31)", "end_date", "End date must be after start date")),
    Kind("experiment variants without control", "experiments", {"transform": _item(0, parameters={
        "feature_flag_variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]})},
         ("experiment 'Checkout' (remote id 31)", "must contain a control variant")),
    Kind("experiment starting 'soon'", "experiments", {"transform": _item(0, start_date="soon")},
         ("GET /api/projects/4242/experiments/: results[0].start_date: expected an ISO 8601",)),
    Kind("hostile time zone", "project",
         {"transform": lambda a: {**a, "timezone": "Mars/Olympus'); DROP TABLE events; --"}},
         ("timezone: expected an IANA time zone ClickHouse knows", "Mars/Olympus')")),
    Kind("time zone a number", "project", {"transform": lambda a: {**a, "timezone": 3}},
         ("GET /api/projects/4242/: timezone: expected non-empty text, got 3",)),
    Kind("project without time zone", "project", {"transform": lambda a: {k: v for k, v in a.items()
                                                                             if k != "timezone"}},
         ("GET /api/projects/4242/: timezone: expected the project's 'timezone', got nothing",)),
    Kind("another project's answer", "project", {"transform": lambda a: {**a, "id": 1}},
         ("GET /api/projects/4242/: id: expected the project asked for, 4242, got 1",)),
    # -- answers that are errors or break off --------------------------------------------------------------------
    Kind("502 with an HTML page", "events", {"raw": b"<html><body>502 Bad Gateway</body></html>", "status": 502,
                                             "content_type": "text/html"},
         ("502 Bad Gateway", "/api/projects/4242/query/"), error=HoglabError),
    Kind("connection dropped mid-answer", "cohorts", {"drop_after": 20},
         ("GET /api/projects/4242/cohorts/ failed", "RemoteProtocolError"), error=HoglabError),
    Kind("gzip that is not", "distinct_ids", {"headers": {"Content-Encoding": "gzip"}},
         ("POST /api/projects/4242/query/ failed", "DecodingError"), error=HoglabError),
    Kind("a redirect to itself", "project", {"redirect": "/api/projects/4242/"},
         ("GET /api/projects/4242/ failed", "TooManyRedirects"), error=HoglabError),
]


def test_the_kinds_cover_what_crashed_before() -> None:
    assert len(KINDS) >= 27 and len({k.name for k in KINDS}) == len(KINDS)
    assert sum(k.crashed_before for k in KINDS) == 7


def _check_error(kind: Kind, error: BaseException) -> None:
    assert isinstance(error, kind.error), repr(error)
    for text in kind.says:
        assert text in str(error), f"{text!r} not in {str(error)!r}"
    assert "Traceback" not in str(error) and "\n" not in str(error)


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_malformed_answer_to_a_first_pull_is_a_clear_error_and_leaves_nothing(
    kind: Kind, cloud: tuple[CloudRemote, str], hoglab_service: LocalService
) -> None:
    remote, url = cloud
    fault = remote.fault(kind.label, **kind.how)
    lines: list[str] = []
    with pytest.raises(HoglabError) as caught:
        _pull(url, remote, hoglab_service, say=lines.append)
    _check_error(kind, caught.value)
    assert fault.hits >= 1
    assert _mirrored(hoglab_service, url, remote) is None


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_malformed_answer_to_an_incremental_pull_leaves_the_copy_as_it_was(
    kind: Kind, cloud: tuple[CloudRemote, str], hoglab_service: LocalService
) -> None:
    remote, url = cloud
    _pull(url, remote, hoglab_service)
    before = _mirrored(hoglab_service, url, remote)
    remote.fault(kind.label, **kind.how)
    with pytest.raises(HoglabError) as caught:
        _pull(url, remote, hoglab_service)
    _check_error(kind, caught.value)
    assert _mirrored(hoglab_service, url, remote) == before


# -- stalls, redirects, a page that breaks the keyset ---------------------------------------------------------------


def test_a_drip_answer_times_out_within_the_idle_timeout(
    cloud: tuple[CloudRemote, str], hoglab_service: LocalService
) -> None:
    remote, url = cloud
    fault = remote.fault("events", drip=2.0)  # headers at once, then one byte every 2 s: no read ever times out
    began = time.monotonic()
    with pytest.raises(AnswerTimeout, match=r"events page|query/.*within the answer timeout, 3 s"):
        _pull(url, remote, hoglab_service, idle_timeout=3)
    took = time.monotonic() - began
    # The reads before the events page are quick; the wait on the drip ends at 3 s, not at the next byte.
    assert fault.hits == 1 and took < 3 + 2.0, took
    assert _mirrored(hoglab_service, url, remote) is None


def test_the_overall_timeout_ends_a_pull_that_keeps_receiving(
    cloud: tuple[CloudRemote, str], hoglab_service: LocalService
) -> None:
    remote, url = cloud
    remote.fault("persons", drip=0.5)
    began = time.monotonic()
    with pytest.raises(AnswerTimeout, match="deadline"):
        _pull(url, remote, hoglab_service, idle_timeout=60, timeout=2.5)
    assert time.monotonic() - began < 2.5 + 1.5
    assert _mirrored(hoglab_service, url, remote) is None


def test_a_redirect_to_another_host_is_refused(cloud: tuple[CloudRemote, str], hoglab_service: LocalService) -> None:
    remote, url = cloud
    elsewhere = CloudRemote(project_id=remote.project_id)
    elsewhere.flags = elsewhere.cohorts = elsewhere.experiments = elsewhere.events = []  # its answers are empty
    serving = elsewhere.serve()
    other = next(serving)
    try:
        other_host = other.replace("127.0.0.1", "localhost")  # another host, as the client compares them
        remote.fault("feature_flags", redirect=f"{other_host}/api/projects/{remote.project_id}/feature_flags/")
        with pytest.raises(RedirectRefused, match="redirected to another host, http://localhost:") as caught:
            _pull(url, remote, hoglab_service)
        assert caught.value.location.startswith(other_host)
        assert elsewhere.requests == []  # not even asked
        assert _mirrored(hoglab_service, url, remote) is None
    finally:
        serving.close()


def test_a_redirect_within_the_host_is_followed(cloud: tuple[CloudRemote, str], hoglab_service: LocalService) -> None:
    remote, url = cloud
    # PostHog moves project endpoints under /api/environments/: the same host, followed.
    remote.fault("project", redirect=f"{url}/api/environments/{remote.project_id}/")
    report = _pull(url, remote, hoglab_service)
    assert f"GET /api/environments/{remote.project_id}/" in remote.requests
    assert report.events_copied == remote.events_count


def test_a_page_that_breaks_the_keyset_keeps_the_whole_pages_before_it_and_the_next_pull_resumes(
    hoglab_service: LocalService,
) -> None:
    from hoglab.pulling.remote import PAGE_ROWS

    remote = CloudRemote(events_count=PAGE_ROWS + 40)
    serving = remote.serve()
    url = next(serving)
    try:
        # Page 2 repeats page 1, as a remote that ignores the keyset would, forever.
        first_page = remote.query_answer
        repeated = remote.fault("events", page=2, transform=lambda answer: first_page(
            answer["query"], {"since": "1970-01-01 00:00:00", "after": "1970-01-01 00:00:00", "after_uuid": ""})[1])
        with pytest.raises(RemoteAnswerError, match=r"\(events page 2\): results\[0\]: expected rows after"):
            _pull(url, remote, hoglab_service)
        assert repeated.hits == 1
        held = _mirrored(hoglab_service, url, remote)
        assert held is not None
        last = max(remote.events[:PAGE_ROWS], key=lambda e: (e["timestamp"], e["uuid"]))
        assert held["events"][0][:2] == [PAGE_ROWS, PAGE_ROWS]  # page 1 whole, nothing of page 2
        assert held["watermark"] == (last["timestamp"], last["uuid"], PAGE_ROWS)
        assert held["flags"] == [] and held["persons"] == [[0]]  # stored only after the events

        remote.faults.clear()
        report = _pull(url, remote, hoglab_service)
        assert report.events_copied == 40
        again = _mirrored(hoglab_service, url, remote)
        assert again is not None and again["events"][0][:2] == [PAGE_ROWS + 40, PAGE_ROWS + 40]
        assert [f[0] for f in again["flags"]] == ["checkout-exp", "beta"]
    finally:
        serving.close()
        _forget(hoglab_service, url, remote)


# -- the command line ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in KINDS if k.name in ("truncated JSON", "hostile time zone",
                                                                 "a count of 'lots'")], ids=lambda k: k.name)
def test_the_command_says_one_line_and_exits_2(kind: Kind, cloud: tuple[CloudRemote, str], tmp_path: Path) -> None:
    remote, url = cloud
    remote.fault(kind.label, **kind.how)
    run = subprocess.run(
        [sys.executable, "-m", "hoglab.cli", "pull", "--from", url, "--project", str(remote.project_id),
         "--data-dir", str(tmp_path), "--rate", "1000/second", "--idle-timeout", "30"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "POSTHOG_PERSONAL_API_KEY": KEY},
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    errors = run.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("hoglab pull: error: "), run.stderr
    assert all(text in errors[0] for text in kind.says) and "Traceback" not in run.stdout + run.stderr
    listed = subprocess.run([sys.executable, "-m", "hoglab.cli", "project", "list", "--data-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert remote.name not in listed.stdout


def test_what_hoglab_cannot_use_is_left_out_with_a_warning_not_refused(
    cloud: tuple[CloudRemote, str], hoglab_service: LocalService
) -> None:
    remote, url = cloud
    lookahead = {"key": "email", "type": "person", "operator": "regex", "value": "^(?!.*@spam\\.com$)"}
    remote.flags[0]["filters"]["groups"][0]["properties"] = [lookahead]  # PostHog's newer flags service takes it
    retention = {"kind": "ExperimentMetric", "metric_type": "retention", "uuid": "m-ret",
                 "start_event": {"kind": "EventsNode", "event": "signup"}}  # fmt: skip
    remote.experiments[0]["metrics"] = [retention]
    lines: list[str] = []
    report = _pull(url, remote, hoglab_service, say=lines.append)
    assert len(report.warnings) == 2
    assert "flag 'beta' (remote id 11): the condition filters__groups__0__properties__0__value" in report.warnings[0]
    assert "is disabled (never matches)" in report.warnings[0]
    assert report.warnings[1] == ("experiment 'Checkout' (remote id 31): 1 of its metrics cannot run here and were"
                                  " left out")  # fmt: skip
    assert [line for line in lines if line.startswith("warning: ")] == [f"warning: {w}" for w in report.warnings]
    held = _mirrored(hoglab_service, url, remote)
    assert held is not None and held["flags"][1][2]["groups"][0]["properties"] == [lookahead]  # kept as it is
