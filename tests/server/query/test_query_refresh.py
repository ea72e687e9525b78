"""``refresh`` and the result cache: which requests are answered from cache, computed, or queued (202)."""

from __future__ import annotations

import uuid

import pytest
from querytesting import Seeded, capture, make_events


def _fresh_hogql(seeded: Seeded) -> str:
    # A statement no other test ran: nothing of it is in the cache yet.
    return f"select count() as c, '{uuid.uuid4().hex}' as nonce from events"


def test_blocking_is_served_from_cache_while_fresh(seeded: Seeded) -> None:
    hogql = _fresh_hogql(seeded)
    first = seeded.a.query(hogql).json()
    second = seeded.a.query(hogql, refresh="blocking").json()
    assert first["is_cached"] is False and second["is_cached"] is True
    assert second["results"] == first["results"] == [[len(seeded.frame), first["results"][0][1]]]
    assert second["cache_key"] == first["cache_key"]
    assert second["last_refresh"] == first["last_refresh"]
    assert second["timings"] == first["timings"]


@pytest.mark.parametrize("refresh", ["force_blocking", True])
def test_force_blocking_always_computes(seeded: Seeded, refresh: object) -> None:
    hogql = _fresh_hogql(seeded)
    seeded.a.query(hogql)
    again = seeded.a.query(hogql, refresh=refresh)
    assert again.status_code == 200 and again.json()["is_cached"] is False


@pytest.mark.parametrize("refresh", [None, False, "force_cache", "blocking"])
def test_omitted_false_and_force_cache_mean_blocking(seeded: Seeded, refresh: object) -> None:
    hogql = _fresh_hogql(seeded)
    extra = {} if refresh is None else {"refresh": refresh}
    first = seeded.a.query(hogql, **extra)
    assert first.status_code == 200 and first.json()["is_cached"] is False
    assert seeded.a.query(hogql, **extra).json()["is_cached"] is True


def test_the_cache_is_per_project(seeded: Seeded) -> None:
    hogql = _fresh_hogql(seeded)
    a = seeded.a.query(hogql).json()
    b = seeded.b.query(hogql).json()
    assert b["is_cached"] is False and b["cache_key"] != a["cache_key"]
    assert b["results"][0][0] == len(seeded.b_frame) != a["results"][0][0]


def test_new_events_invalidate_the_cache(hoglab_service, seeded: Seeded) -> None:
    from querytesting import new_project

    project = new_project(hoglab_service, "cache invalidation")
    try:
        capture(hoglab_service, project.id, make_events(5, prefix="c"))
        first = project.query("select count() from events").json()
        assert first["results"] == [[5]]
        capture(hoglab_service, project.id, make_events(2, prefix="d"))
        second = project.query("select count() from events").json()
        assert second["is_cached"] is False and second["results"] == [[7]]
    finally:
        project.close()


@pytest.mark.parametrize(
    ("body", "cached_status"),
    [
        ({"refresh": "async"}, 200),
        ({"refresh": "lazy_async"}, 200),
        ({"async": True}, 200),
        ({"refresh": "async_except_on_cache_miss"}, 200),
        ({"refresh": "force_async"}, 202),
    ],
)
def test_async_modes_answer_a_fresh_cache_at_once_except_force_async(
    seeded: Seeded, body: dict, cached_status: int
) -> None:
    hogql = _fresh_hogql(seeded)
    computed = seeded.a.query(hogql).json()
    response = seeded.a.query(hogql, **body)
    assert response.status_code == cached_status, response.text
    if cached_status == 200:
        assert response.json()["is_cached"] is True and response.json()["results"] == computed["results"]
    else:
        status = response.json()["query_status"]
        assert status["complete"] is False and "results" not in response.json()
        assert seeded.a.wait(status["id"]).json()["query_status"]["results"]["results"] == computed["results"]


@pytest.mark.parametrize("body", [{"refresh": "async"}, {"refresh": "lazy_async"}, {"async": True}])
def test_async_modes_queue_on_a_cache_miss(seeded: Seeded, body: dict) -> None:
    response = seeded.a.query(_fresh_hogql(seeded), **body)
    assert response.status_code == 202
    answer = response.json()
    assert answer["cache_key"].startswith(f"cache_{seeded.a.id}_")
    assert answer["query_status"]["query_async"] is True and answer["query_status"]["team_id"] == seeded.a.id
    done = seeded.a.wait(answer["query_status"]["id"])
    assert done.status_code == 200 and done.json()["query_status"]["results"]["results"][0][0] == len(seeded.frame)


def test_async_except_on_cache_miss_blocks_on_a_miss(seeded: Seeded) -> None:
    response = seeded.a.query(_fresh_hogql(seeded), refresh="async_except_on_cache_miss")
    assert response.status_code == 200 and response.json()["is_cached"] is False


def test_an_async_answer_fills_the_cache(seeded: Seeded) -> None:
    hogql = _fresh_hogql(seeded)
    status = seeded.a.query(hogql, refresh="force_async").json()["query_status"]
    seeded.a.wait(status["id"])
    assert seeded.a.query(hogql).json()["is_cached"] is True
