"""Configuration: arguments, environment fallbacks, project resolution, and the key kept out of sight."""

from __future__ import annotations

import logging

import httpx
import pytest
from clienttesting import HOST, KEY, Remote

import hoglab
from hoglab.client import Client

ENV_VARS = [
    "HOGLAB_HOST",
    "HOGLAB_API_KEY",
    "HOGLAB_PROJECT_ID",
    "POSTHOG_HOST",
    "POSTHOG_PERSONAL_API_KEY",
    "POSTHOG_PROJECT_ID",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def test_hoglab_variables_win_over_posthog_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOGLAB_HOST", "http://hoglab.local:8000/")
    monkeypatch.setenv("POSTHOG_HOST", "https://us.posthog.com")
    monkeypatch.setenv("POSTHOG_PERSONAL_API_KEY", KEY)
    monkeypatch.setenv("POSTHOG_PROJECT_ID", "17")
    with Client() as c:
        assert c.host == "http://hoglab.local:8000"
        assert c.project_id == 17


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOGLAB_HOST", "http://env:1")
    monkeypatch.setenv("HOGLAB_API_KEY", "phx_env")
    with Client("posthog.example", KEY, "5") as c:
        assert c.host == "https://posthog.example"
        assert c.project_id == 5
    with Client("localhost:8000", KEY, 1) as c:
        assert c.host == "http://localhost:8000"


def test_missing_key_is_a_configuration_error_naming_the_variables() -> None:
    with pytest.raises(hoglab.ConfigurationError, match="HOGLAB_API_KEY") as info:
        Client("http://x")
    assert isinstance(info.value, ValueError)


def test_bad_project_id_is_refused() -> None:
    with pytest.raises(hoglab.ConfigurationError, match="project_id"):
        Client("http://x", KEY, "abc")


def _projects(*ids: int) -> httpx.Response:
    results = [{"id": i, "name": f"p{i}"} for i in ids]
    return httpx.Response(200, json={"count": len(results), "next": None, "previous": None, "results": results})


def test_project_is_resolved_when_the_key_reaches_one(remote: Remote) -> None:
    """Mocks a REMOTE PostHog listing the key's projects."""
    remote.add("GET", "/api/projects/", _projects(42))
    with Client(HOST, KEY, transport=httpx.MockTransport(remote.handler)) as c:
        assert c.project_id == 42
        assert c.path("experiments/") == "/api/projects/42/experiments/"
        assert c.project_id == 42
    assert len(remote.requests) == 1  # resolved once


def test_several_projects_need_an_explicit_choice(remote: Remote) -> None:
    """Mocks a REMOTE PostHog whose key reaches two projects."""
    remote.add("GET", "/api/projects/", _projects(1, 2))
    c = Client(HOST, KEY, transport=httpx.MockTransport(remote.handler))
    with c, pytest.raises(hoglab.ConfigurationError, match=r"2 projects \(1 \(p1\), 2 \(p2\)\)"):
        _ = c.project_id


def test_key_is_sent_as_bearer_and_never_shown(remote: Remote, caplog: pytest.LogCaptureFixture) -> None:
    """Mocks a REMOTE PostHog refusing the key with 403 (as PostHog does on some routes)."""
    remote.add(
        "GET",
        "/api/projects/2/experiments/1/",
        httpx.Response(
            403,
            json={
                "type": "authentication_error",
                "code": "authentication_failed",
                "detail": "Personal API key found in request Authorization header is invalid.",
                "attr": None,
            },
        ),
    )
    caplog.set_level(logging.DEBUG)
    with Client(HOST, KEY, 2, transport=httpx.MockTransport(remote.handler)) as c:
        assert KEY not in repr(c)
        assert KEY not in str(vars(c).get("retry"))
        with pytest.raises(hoglab.AuthenticationError) as info:
            c.experiments.get(1)
    assert remote.requests[0].headers["authorization"] == f"Bearer {KEY}"
    err = info.value
    assert KEY not in str(err) and KEY not in repr(err) and KEY not in repr(err.__dict__)
    assert all(KEY not in record.getMessage() for record in caplog.records)


def test_context_manager_closes_the_connection(remote: Remote) -> None:
    c = Client(HOST, KEY, 2, transport=httpx.MockTransport(remote.handler))
    with c:
        pass
    assert c._http.is_closed


def test_default_client_comes_from_connect(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hoglab.client._default._default", None)
    c = hoglab.connect(HOST, KEY, 3, transport=httpx.MockTransport(remote.handler))
    assert hoglab.default_client() is c
    c.close()


def test_a_key_pasted_with_a_newline_is_stripped(remote: Remote) -> None:
    remote.add("GET", "/api/projects/2/experiments/1/", httpx.Response(200, json={"id": 1, "name": "x"}))
    with Client(HOST, f"  {KEY}\n", 2, transport=httpx.MockTransport(remote.handler)) as c:
        c.get_json("/api/projects/2/experiments/1/")
    assert remote.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("bad", [f"{KEY[:8]} {KEY[8:]}", f"{KEY}\nX-Evil: 1", f"{KEY}é", f"{KEY}\x00"])
def test_a_key_no_server_could_accept_is_refused_without_showing_it(bad: str) -> None:
    with pytest.raises(hoglab.ConfigurationError, match="copy it again") as info:
        Client(HOST, bad, 2)
    assert KEY[8:] not in str(info.value) and KEY[8:] not in repr(info.value)


def test_a_transport_error_quoting_the_header_does_not_show_the_key() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError(f"bad header {request.headers['authorization']!r}", request=request)

    with (
        Client(HOST, KEY, 2, transport=httpx.MockTransport(refuse), max_retries=0) as c,
        pytest.raises(hoglab.TransportError) as info,
    ):
        c.get_json("/api/projects/2/experiments/")
    assert KEY not in str(info.value) and "<api key>" in str(info.value)
