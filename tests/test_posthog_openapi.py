"""The OpenAPI oracle itself: it reads PostHog's document and tells valid from invalid shapes."""

from __future__ import annotations

from posthog_openapi import assert_valid, component, errors


def test_the_document_holds_the_components_the_issues_name() -> None:
    for name in (
        "Experiment",
        "ExperimentQuery",
        "ExperimentQueryResponse",
        "RetentionQueryResponse",
        "LifecycleQueryResponse",
        "StickinessQueryResponse",
        "PathsQueryResponse",
        "HogQLQuery",
    ):
        assert component(name)["type"] == "object"


def test_a_valid_hogql_query_passes_and_a_wrong_one_fails_naming_the_field() -> None:
    assert_valid({"kind": "HogQLQuery", "query": "select 1"}, "HogQLQuery", drop=())
    found = errors({"kind": "HogQLQuery", "query": 5}, "HogQLQuery", drop=())
    assert found and found[0].startswith("query:")
    assert errors({"kind": "HogQLQuery"}, "HogQLQuery", drop=())  # query is required


def test_nullable_fields_accept_null_and_cache_fields_are_dropped() -> None:
    answer = {"results": [], "hogql": None, "is_cached": True, "last_refresh": "2026-01-01T00:00:00Z"}
    assert_valid(answer, "RetentionQueryResponse")
    assert errors(answer, "RetentionQueryResponse", drop=())  # PostHog's component lists no cache fields
