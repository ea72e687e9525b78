"""Per-key rate limits: the token buckets, and 429 + Retry-After from a running service with tiny limits."""

from __future__ import annotations

import threading
from typing import Annotated

import httpx
import pytest
from fastapi import Depends

from hoglab.local import start_local_service
from hoglab.server.config import ServerConfig
from hoglab.server.http.auth import AuthContext
from hoglab.server.http.ratelimit import Rate, RateLimiter, query_rate_limited


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "count", "seconds"),
    [
        ("480/minute", 480, 60),
        ("4800/hour", 4800, 3600),
        ("120/hour", 120, 3600),
        ("10/5s", 10, 5),
        ("1/day", 1, 86400),
    ],
)
def test_rates_parse(text, count, seconds):
    assert Rate.parse(text) == Rate(count, seconds)


@pytest.mark.parametrize("text", ["", "480", "480/fortnight", "0/minute", "-1/minute", "x/minute"])
def test_bad_rates_are_refused(text):
    with pytest.raises(ValueError, match="rate"):
        Rate.parse(text)


def test_bucket_refills_and_says_how_long_to_wait():
    clock = FakeClock()
    limiter = RateLimiter({"default": [Rate(3, 60)]}, clock=clock)
    assert [limiter.acquire("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire("k") == pytest.approx(20.0)  # one token comes back every 60/3 seconds
    assert limiter.acquire("other key") == 0.0
    clock.now += 20
    assert limiter.acquire("k") == 0.0
    assert limiter.acquire("k") > 0


def test_a_refused_request_takes_nothing_from_any_bucket():
    clock = FakeClock()
    limiter = RateLimiter({"default": [Rate(100, 60), Rate(2, 3600)]}, clock=clock)
    assert limiter.acquire("k") == limiter.acquire("k") == 0.0
    for _ in range(50):
        assert limiter.acquire("k") > 0  # the sustained bucket is empty; the burst one keeps its tokens
    clock.now += 1800
    assert limiter.acquire("k") == 0.0


def test_limits_can_be_switched_off_and_are_thread_safe():
    assert RateLimiter({"default": [Rate(1, 3600)]}, enabled=False).acquire("k") == 0.0
    limiter = RateLimiter({"default": [Rate(500, 3600)]})
    granted = []

    def hammer() -> None:
        granted.append(sum(limiter.acquire("k") == 0.0 for _ in range(200)))

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(granted) == 500


def test_defaults_are_posthogs():
    limiter = RateLimiter.from_config(ServerConfig())
    assert limiter.groups["default"] == (Rate(480, 60), Rate(4800, 3600))
    assert limiter.groups["query"] == (Rate(120, 3600),)


def test_service_answers_429_with_retry_after_per_key(hoglab_service):
    # A second app on the session's data dir (one data dir per process), with a tiny limit.
    with start_local_service(hoglab_service.data_dir, config_overrides={"rate_limit_burst": "3/minute"}) as tiny:
        store = tiny.state.store
        project = store.projects.create("throttled")
        keys = [store.keys.create(store.users.default().id, ["*"], [project.id])[1] for _ in range(2)]
        path = f"{tiny.url}/api/projects/{project.id}/experiments/"
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {keys[0]}"}) as client:
            assert [client.get(path).status_code for _ in range(3)] == [200, 200, 200]
            throttled = client.get(path)
            assert throttled.status_code == 429
            body = throttled.json()
            assert (body["type"], body["code"], body["attr"]) == ("throttled_error", "throttled", None)
            wait = int(throttled.headers["Retry-After"])
            assert 1 <= wait <= 20
            assert body["detail"] == f"Request was throttled. Expected available in {wait} seconds."
            assert client.get(f"{tiny.url}/api/projects/").status_code == 429  # every endpoint shares the budget
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {keys[1]}"}) as other:
            assert other.get(path).status_code == 200  # limits are per key


def test_rate_limits_can_be_disabled_in_the_config(hoglab_service):
    overrides = {"rate_limit_burst": "1/minute", "rate_limits_enabled": False}
    with (
        start_local_service(hoglab_service.data_dir, config_overrides=overrides) as service,
        httpx.Client(timeout=60, headers=service.headers) as client,
    ):
        assert {client.get(f"{service.url}/api/projects/").status_code for _ in range(5)} == {200}


def test_query_dependency_charges_only_the_query_bucket(hoglab_service):
    overrides = {"query_rate_limit": "2/hour", "rate_limit_burst": "100/minute"}
    with start_local_service(hoglab_service.data_dir, config_overrides=overrides) as service:
        # The query router is another part's; a route using the same dependency stands in for it.
        def query(auth: Annotated[AuthContext, Depends(query_rate_limited())]) -> dict[str, int]:
            return {"project": auth.project.id}

        service.app.add_api_route("/api/projects/{project_id}/test-query/", query, methods=["POST"])
        store = service.state.store
        project = store.projects.create("q")
        reader = store.keys.create(store.users.default().id, ["query:read"], [project.id])[1]
        url = f"{service.url}/api/projects/{project.id}/test-query/"
        # A generous timeout: a loaded machine (two suites on two cores) answers slowly, never wrongly.
        with httpx.Client(headers={"Authorization": f"Bearer {reader}"}, timeout=60) as client:
            assert [client.post(url).status_code for _ in range(3)] == [200, 200, 429]
            assert client.post(url).headers["Retry-After"].isdigit()
            # The default budget is untouched (the scope is what's missing here, not the budget).
            experiments = client.get(f"{service.url}/api/projects/{project.id}/experiments/")
            assert experiments.status_code == 403
        writer_only = store.keys.create(store.users.default().id, ["experiment:write"], [project.id])[1]
        denied = httpx.post(url, headers={"Authorization": f"Bearer {writer_only}"}, timeout=60)
        assert denied.json()["detail"] == "API key missing required scope 'query:read'"
