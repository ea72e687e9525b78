"""HogQL's ``query_log``: the project's own recent queries (text, duration, status), never another project's."""

from __future__ import annotations

import pytest

from hoglab.local import LocalService

from .service import new_service_project

pytestmark = pytest.mark.xdist_group("hogql_service")


def test_query_log_shows_the_projects_own_queries(hoglab_service: LocalService) -> None:
    mine = new_service_project(hoglab_service, "query log A")
    other = new_service_project(hoglab_service, "query log B")
    mine.capture([{"event": "e", "distinct_id": "a", "timestamp": "2025-05-01T00:00:00Z"}])
    assert mine.rows("select 'mine-1', count() from events") == [["mine-1", 1]]
    refused_answer = mine.post({"kind": "HogQLQuery", "query": "select throwIf(1) from events"})
    assert refused_answer.status_code == 400, refused_answer.text  # refused by the compiler, never a 500
    engine_failure = mine.post({"kind": "HogQLQuery", "query": "select toInt64('mine-bad') from events"})
    assert engine_failure.status_code == 400, engine_failure.text  # the engine's refusal of the caller's text
    other.rows("select 'other-1'")

    rows = mine.rows(
        "select query, kind, status, query_duration_ms, exception_message, event_date, query_start_time <= event_time "
        "from query_log order by query_start_time"
    )
    texts = [r[0] for r in rows]
    assert texts == [
        "select 'mine-1', count() from events",
        "select throwIf(1) from events",
        "select toInt64('mine-bad') from events",
    ]
    ok, refused, failed = rows
    assert (ok[2], ok[4], ok[6]) == ("QueryFinish", "", True)
    assert isinstance(ok[3], int) and ok[3] >= 0 and len(ok[5]) == 10
    assert refused[2] == "ExceptionBeforeStart" and "throwIf" in refused[4]
    assert failed[2] == "ExceptionWhileProcessing" and failed[4]
    # the other project's log has only its own query, and the team guard holds in joins too
    assert [r[0] for r in other.rows("select query from query_log")] == ["select 'other-1'"]
    assert other.rows("select count() from query_log where query like '%mine%'") == [[0]]
    # every kind is logged, by its JSON
    mine.answer({"kind": "EventsQuery", "select": ["event"], "after": "all"})
    [[kind, text]] = mine.rows("select kind, query from query_log where kind = 'EventsQuery'")
    assert kind == "EventsQuery" and '"select":["event"]' in text
    mine.http.close()
    other.http.close()


def test_arrow_runs_are_logged_too(hoglab_service: LocalService) -> None:
    """``POST /query/arrow/`` runs go in the same log: a whole answer with its size, a refusal before anything ran."""
    mine = new_service_project(hoglab_service, "query log arrow")
    body = {"query": {"kind": "HogQLQuery", "query": "select number as n from numbers(5000)"}}
    answer = mine.http.post(f"/api/projects/{mine.id}/query/arrow/", json=body)
    assert answer.status_code == 200
    refused = {"query": {"kind": "HogQLQuery", "query": "select throwIf(1) from events"}}
    assert mine.http.post(f"/api/projects/{mine.id}/query/arrow/", json=refused).status_code == 400
    rows = mine.rows(
        "select query, kind, status, result_bytes, exception_message from query_log order by query_start_time"
    )
    ok, failed = rows
    assert ok[:3] == ["select number as n from numbers(5000)", "HogQLQuery", "QueryFinish"]
    assert ok[3] == len(answer.content) and ok[4] == ""
    assert (
        failed[:3] == ["select throwIf(1) from events", "HogQLQuery", "ExceptionBeforeStart"] and "throwIf" in failed[4]
    )
    mine.http.close()


def test_posthog_docs_fields(hoglab_service: LocalService) -> None:
    """The fields PostHog's query_log docs list: a run's name (``hogql_name``), rows answered and wall time; the
    ones hoglab does not record are a 400 saying why, never a made-up number."""
    mine = new_service_project(hoglab_service, "query log docs fields")
    mine.answer({"kind": "HogQLQuery", "query": "select number from numbers(7)", "name": "seven"})
    [[name, rows, micros, millis]] = mine.rows(
        "select hogql_name, result_rows, RealTimeMicroseconds, query_duration_ms from query_log "
        "where query like '%numbers(7)%'"
    )
    assert (name, rows, micros) == ("seven", 7, millis * 1000)
    for field in ("memory_usage", "read_rows", "read_bytes", "created_by", "cpu_microseconds"):
        detail = mine.error(f"select {field} from query_log")["detail"]
        assert f"Field '{field}' of PostHog's query_log is not recorded by hoglab" in detail
    mine.http.close()
