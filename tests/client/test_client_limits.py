"""Bounds on what the client waits for and where it goes: ``answer_timeout`` and ``deadline`` end a wait however the
remote stalls, and redirects are followed within the client's own host only.

The remote is ``httpx.MockTransport`` standing in for a remote PostHog (it is remote); ``test_pull_faults.py`` does
the same over real HTTP (a drip a byte at a time, a redirect to another port) through ``hoglab pull``.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from hoglab import AnswerTimeout, Client, RedirectRefused, TransportError

KEY = "phx_limits"


def _client(handler: object, host: str = "https://eu.posthog.example", **options: object) -> Client:
    return Client(host, KEY, 2, transport=httpx.MockTransport(handler), progress=False, **options)  # type: ignore[arg-type]


def test_an_answer_that_takes_too_long_is_abandoned_on_time_and_not_retried() -> None:
    calls: list[float] = []
    release = threading.Event()

    def slow(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        release.wait(5)  # a remote that does not answer
        return httpx.Response(200, json={})

    client = _client(slow, answer_timeout=0.3)
    began = time.monotonic()
    with pytest.raises(AnswerTimeout, match=r"GET /api/projects/2/: no complete answer within the answer timeout"):
        client.get_json(client.path(""))
    assert 0.3 <= time.monotonic() - began < 1.5 and len(calls) == 1
    release.set()
    assert isinstance(AnswerTimeout("x"), TransportError | TimeoutError)


def test_a_quick_answer_passes_through_the_answer_timeout_unchanged() -> None:
    client = _client(lambda request: httpx.Response(200, json={"id": 2, "name": "Shop"}), answer_timeout=5)
    assert client.get_json(client.path("")) == {"id": 2, "name": "Shop"}


def test_the_deadline_stops_requests_and_retry_waits_that_would_pass_it() -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "30"}, json={"type": "throttled_error"})])
    client = _client(lambda request: next(answers))
    client.deadline = time.monotonic() + 5
    with pytest.raises(AnswerTimeout, match=r"a retry would wait 3\d s, past the deadline"):
        client.get_json(client.path(""))
    client.deadline = time.monotonic() - 1
    with pytest.raises(AnswerTimeout, match="the deadline passed"):
        client.get_json(client.path(""))


@pytest.mark.parametrize(
    ("host", "location", "followed"),
    [
        ("https://eu.posthog.example", "https://eu.posthog.example/api/environments/2/", True),
        ("https://eu.posthog.example", "/api/environments/2/", True),
        ("http://eu.posthog.example", "https://eu.posthog.example/api/projects/2/", True),  # an upgrade
        ("https://eu.posthog.example", "https://evil.example/api/projects/2/", False),
        ("https://eu.posthog.example", "http://eu.posthog.example/api/projects/2/", False),  # a downgrade
        ("https://eu.posthog.example", "https://eu.posthog.example:8443/api/projects/2/", False),
        ("http://127.0.0.1:8000", "http://localhost:8000/api/projects/2/", False),
    ],
)
def test_redirects_are_followed_within_the_host_only(host: str, location: str, followed: bool) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if len(seen) == 1:
            return httpx.Response(302, headers={"Location": location})
        return httpx.Response(200, json={"id": 2})

    client = _client(answer, host)
    if followed:
        assert client.get_json(client.path("")) == {"id": 2} and len(seen) == 2
    else:
        with pytest.raises(RedirectRefused, match="redirected to another host") as caught:
            client.get_json(client.path(""))
        assert len(seen) == 1 and caught.value.location.startswith(location.split("/api")[0])
        assert KEY not in str(caught.value)
