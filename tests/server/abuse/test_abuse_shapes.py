"""Abuse: body shapes that are not PostHog's are a 400 with PostHog's error body, never a 500 (issue 35, F6), and a
number beyond 64 bits in a group's properties is stored as capture stores it, a double. Against the real service."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import TestProject

BIG = 18446744073709551616  # 2**64: no 64-bit integer holds it


@pytest.mark.parametrize("path", ["query/", "query/arrow/"])
@pytest.mark.parametrize(
    "body",
    [
        {"query": {"kind": []}},
        {"query": {"kind": {}}},
        {},
        {"query": {"kind": "DataTableNode", "source": {"kind": []}}},
        {"query": {"kind": "InsightVizNode", "source": {"kind": {"a": 1}}}},
        {"query": {"kind": 7}},
    ],
)
def test_a_kind_that_is_not_a_name_is_a_400(live_project: TestProject, path: str, body: dict[str, Any]) -> None:
    answer = live_project.http.post(f"/api/projects/{live_project.id}/{path}", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert set(error) == {"type", "code", "detail", "attr"} and error["type"] == "validation_error"
    assert error["attr"] is not None and error["attr"].startswith("query")


def _group(project: TestProject, key: str) -> dict[str, Any]:
    answer = project.http.get(
        f"/api/projects/{project.id}/groups/find/", params={"group_type_index": 0, "group_key": key}
    )
    assert answer.status_code == 200, answer.text
    properties: dict[str, Any] = answer.json()["group_properties"]
    return properties


def test_a_group_property_beyond_64_bits_is_stored_as_capture_stores_it(live_project: TestProject) -> None:
    http = live_project.http
    group = {"$group_type": "company", "$group_key": "captured", "$group_set": {"n": BIG}}
    identify = {"event": "$groupidentify", "distinct_id": "u", "properties": group}
    assert http.post("/batch/", json={"api_key": live_project.api_token, "batch": [identify]}).status_code == 200
    captured = _group(live_project, "captured")["n"]
    assert captured == float(BIG) and isinstance(captured, float)

    updated = http.post(
        f"/api/projects/{live_project.id}/groups/update_property/",
        params={"group_type_index": 0, "group_key": "captured"},
        json={"key": "m", "value": BIG},
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["group_properties"]["m"] == captured
    assert _group(live_project, "captured") == {"n": captured, "m": captured}

    created = http.post(
        f"/api/projects/{live_project.id}/groups/",
        json={"group_type_index": 0, "group_key": "made", "group_properties": {"n": BIG, "deep": [{"k": -BIG}]}},
    )
    assert created.status_code == 201, created.text
    assert _group(live_project, "made") == {"n": captured, "deep": [{"k": -captured}]}


def test_group_properties_too_deep_to_store_are_a_400(live_project: TestProject) -> None:
    http = live_project.http
    identify = {"event": "$groupidentify", "distinct_id": "u",
                "properties": {"$group_type": "company", "$group_key": "g"}}  # fmt: skip
    assert http.post("/batch/", json={"api_key": live_project.api_token, "batch": [identify]}).status_code == 200
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    answer = http.post(
        f"/api/projects/{live_project.id}/groups/update_property/",
        params={"group_type_index": 0, "group_key": "g"},
        json={"key": "deep", "value": deep},
    )
    assert answer.status_code == 400, answer.text  # the body reader refuses it (over 100 levels) before the store
    assert set(answer.json()) == {"type", "code", "detail", "attr"}
