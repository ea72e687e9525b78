"""The ``requires_flag_implementation`` sampler: recent property sets per metric event, and the endpoint's answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from hoglab.server.experiments.event_samples import SAMPLE_SIZE, sample_event_properties

from .helpers import capture, iso

pytestmark = pytest.mark.xdist_group("flags_service")


def _requires(project, events: list) -> bool:
    url = f"/api/projects/{project.id}/experiments/requires_flag_implementation/"
    response = project.http.get(url, params={"events": json.dumps(events)})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_samples_are_recent_and_capped_per_event(make_project):
    project = make_project()
    now = datetime.now(UTC)
    capture(project, [
        *({"event": "purchase", "distinct_id": f"u{i}", "timestamp": iso(now - timedelta(minutes=i)),
           "properties": {"n": i}} for i in range(30)),
        {"event": "purchase", "distinct_id": "old", "timestamp": iso(now - timedelta(days=8)), "properties": {"n": -1}},
        {"event": "signup", "distinct_id": "s", "timestamp": iso(now - timedelta(days=1)), "properties": {"n": 100}},
    ])  # fmt: skip
    state = project.service.state
    purchases = sample_event_properties(state, project.record, ["purchase"])
    assert len(purchases) == SAMPLE_SIZE == 20
    assert [p["n"] for p in purchases] == list(range(20))  # the most recent first; the 8-day-old one never
    both = sample_event_properties(state, project.record, ["purchase", "signup", "purchase"])
    assert len(both) == 21 and both[-1]["n"] == 100
    assert len(sample_event_properties(state, project.record, [])) == 20  # any event
    assert sample_event_properties(state, project.record, ["never-seen"]) == []


def test_requires_flag_implementation_flips_once_events_carry_the_flag(make_project):
    project = make_project()
    now = datetime.now(UTC)
    assert _requires(project, ["purchase"]) is True  # no events at all
    capture(project, [
        {"event": "purchase", "distinct_id": "a", "timestamp": iso(now - timedelta(hours=1))},
        # Flag info that is too old to count.
        {"event": "purchase", "distinct_id": "b", "timestamp": iso(now - timedelta(days=9)),
         "properties": {"$feature/checkout": "test"}},
    ])  # fmt: skip
    assert _requires(project, ["purchase"]) is True
    capture(project, [{"event": "purchase", "distinct_id": "c", "timestamp": iso(now),
                       "properties": {"$feature/checkout": "control"}}])  # fmt: skip
    assert _requires(project, ["purchase"]) is False
    assert _requires(project, [{"id": "purchase"}]) is False
    assert _requires(project, ["signup"]) is True
    assert _requires(project, []) is False  # any event: the purchase with flag info is among the samples
