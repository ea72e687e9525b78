"""Retries: 429 with Retry-After, 5xx and transport errors on idempotent requests only, bounded and jittered.

Every test here mocks a REMOTE PostHog through httpx.MockTransport and runs on a fake clock (no real sleep).
"""

from __future__ import annotations

import random

import httpx
import pytest
from clienttesting import FakeClock, Remote, hogql_answer

import hoglab
from hoglab.client import Client, RetryPolicy

EXPERIMENT = "/api/projects/2/experiments/1/"
EXPERIMENTS = "/api/projects/2/experiments/"
QUERY = "/api/projects/2/query/"
THROTTLED = {"type": "throttled_error", "code": "throttled", "detail": "Request was throttled.", "attr": None}


def _experiment() -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": 1,
            "name": "e",
            "feature_flag_key": "f",
            "created_at": "2025-06-01T00:00:00Z",
            "updated_at": "2025-06-01T00:00:00Z",
        },
    )


def test_429_waits_retry_after_then_succeeds(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("GET", EXPERIMENT, httpx.Response(429, json=THROTTLED, headers={"Retry-After": "7"}), _experiment())
    assert client.experiments.get(1).id == 1
    assert len(clock.sleeps) == 1
    assert 7.0 <= clock.sleeps[0] <= 7.0 * 1.1 + 0.05  # Retry-After plus a little jitter, never less


def test_429_is_retried_even_for_a_create(client: Client, remote: Remote, clock: FakeClock) -> None:
    """A throttled request was refused before it ran, so retrying a POST is safe."""
    remote.add("POST", EXPERIMENTS, httpx.Response(429, json=THROTTLED, headers={"Retry-After": "1"}), _experiment())
    assert client.experiments.create("e", "f").id == 1
    assert len(remote.requests) == 2


def test_retry_after_longer_than_the_limit_raises_at_once(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("GET", EXPERIMENT, httpx.Response(429, json=THROTTLED, headers={"Retry-After": "1800"}))
    with pytest.raises(hoglab.RateLimited) as info:
        client.experiments.get(1)
    assert info.value.retry_after == 1800.0
    assert clock.sleeps == [] and len(remote.requests) == 1


def test_retries_are_bounded(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("GET", EXPERIMENT, httpx.Response(503, json={"type": "server_error", "code": "x", "detail": "busy"}))
    with pytest.raises(hoglab.ServerError):
        client.experiments.get(1)
    assert len(remote.requests) == 1 + client.retry.max_retries
    assert len(clock.sleeps) == client.retry.max_retries


def test_backoff_grows_and_is_jittered(clock: FakeClock, remote: Remote) -> None:
    policy = RetryPolicy(max_retries=4, backoff=1.0, max_backoff=5.0)
    waits = [policy.delay(i, random.Random(i)) for i in range(5)]
    for i, wait in enumerate(waits):
        ceiling = min(5.0, 2.0**i)
        assert ceiling / 2 <= wait <= ceiling
    remote.add("GET", EXPERIMENT, httpx.Response(500), httpx.Response(500), _experiment())
    with Client("https://h", "phx_k", 2, transport=httpx.MockTransport(remote.handler), retry=policy) as c:
        c._clock = clock
        c.experiments.get(1)
    assert len(clock.sleeps) == 2 and 0.5 <= clock.sleeps[0] <= 1.0 <= clock.sleeps[1] <= 2.0


def test_5xx_on_a_create_is_not_retried(client: Client, remote: Remote, clock: FakeClock) -> None:
    remote.add("POST", EXPERIMENTS, httpx.Response(502), _experiment())
    with pytest.raises(hoglab.ServerError):
        client.experiments.create("e", "f")
    assert len(remote.requests) == 1 and clock.sleeps == []


def test_patch_is_not_retried_after_a_read_timeout(client: Client, remote: Remote) -> None:
    remote.add("PATCH", EXPERIMENT, httpx.ReadTimeout("slow"), _experiment())
    with pytest.raises(hoglab.TransportError):
        client.experiments.update(1, name="x")
    assert len(remote.requests) == 1


def test_connect_error_is_retried_for_any_method(client: Client, remote: Remote) -> None:
    remote.add("POST", EXPERIMENTS, httpx.ConnectError("refused"), _experiment())
    assert client.experiments.create("e", "f").id == 1
    assert len(remote.requests) == 2


def test_read_timeout_on_get_is_retried(client: Client, remote: Remote) -> None:
    remote.add("GET", EXPERIMENT, httpx.ReadTimeout("slow"), _experiment())
    assert client.experiments.get(1).id == 1


def test_transport_error_after_retries(client: Client, remote: Remote) -> None:
    remote.add("GET", EXPERIMENT, httpx.ConnectError("refused"))
    with pytest.raises(hoglab.TransportError) as info:
        client.experiments.get(1)
    assert isinstance(info.value, ConnectionError)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_query_is_retried_on_502_but_not_on_500(client: Client, remote: Remote) -> None:
    ok = httpx.Response(200, json=hogql_answer([[1]], [("x", "UInt8")]))
    remote.add("POST", QUERY, httpx.Response(502), ok)
    assert client.hogql("select 1").iloc[0, 0] == 1
    remote.routes.clear()
    remote.requests.clear()
    error = {"type": "server_error", "code": "error", "detail": "ClickHouse error while executing query."}
    remote.add("POST", QUERY, httpx.Response(500, json=error), ok)
    with pytest.raises(hoglab.ServerError):
        client.hogql("select 1")
    assert len(remote.requests) == 1


def test_max_retries_zero_disables_retries(remote: Remote) -> None:
    remote.add("GET", EXPERIMENT, httpx.Response(429, json=THROTTLED, headers={"Retry-After": "1"}), _experiment())
    c = Client("https://h", "phx_k", 2, transport=httpx.MockTransport(remote.handler), max_retries=0)
    with c, pytest.raises(hoglab.RateLimited):
        c.experiments.get(1)
    assert len(remote.requests) == 1
