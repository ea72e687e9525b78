"""Exposure cohorts from events: who is counted, when it is computed, and what reads the membership."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hoglab.server.filters.hogql_filters import filters_expansion
from hoglab.server.flags.cohorts import CohortNotComputable, calculate, is_materialised
from hoglab.server.hogql import compile_hogql

from .helpers import ask, capture, iso, make_flag, values

pytestmark = pytest.mark.xdist_group("flags_service")

START = datetime(2026, 1, 10, tzinfo=UTC)


def _experiment(project, key: str, **body):
    body = {"name": f"Experiment {key}", "feature_flag_key": key, "start_date": iso(START), **body}
    response = project.http.post(f"/api/projects/{project.id}/experiments/", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _exposure(project, distinct_id: str, key: str, at: datetime, variant: str = "control") -> dict:
    return {"event": "$feature_flag_called", "distinct_id": distinct_id, "timestamp": iso(at),
            "properties": {"$feature_flag": key, "$feature_flag_response": variant}}  # fmt: skip


def _create_cohort(project, experiment) -> dict:
    url = f"/api/projects/{project.id}/experiments/{experiment['id']}/create_exposure_cohort_for_experiment/"
    response = project.http.post(url)
    assert response.status_code == 200, response.text
    return response.json()["cohort"]


def _members(project, cohort_id: int) -> set[str]:
    compiled = compile_hogql(
        "SELECT DISTINCT pdi.distinct_id FROM person_distinct_ids AS pdi WHERE pdi.person_id IN "
        "(SELECT person_id FROM cohort_people WHERE cohort_id = {c})",
        team_id=project.id, values={"c": cohort_id}, default_limit=None,
    )  # fmt: skip
    table = project.service.state.engine.execute(compiled.sql, settings=compiled.settings)
    return set(table.column("distinct_id").to_pylist())


def test_the_exposure_cohort_counts_exactly_the_exposed_persons(make_project):
    project = make_project()
    experiment = _experiment(project, "checkout", end_date=iso(START + timedelta(days=10)))
    day = START + timedelta(days=1)
    capture(project, [
        _exposure(project, "a", "checkout", day),
        _exposure(project, "a", "checkout", day + timedelta(hours=1)),     # twice: one person
        _exposure(project, "b", "checkout", day, "test"),
        _exposure(project, "early", "checkout", START - timedelta(days=1)),  # before the start
        _exposure(project, "late", "checkout", START + timedelta(days=11)),  # after the end
        _exposure(project, "other", "pricing", day),                        # another flag
        {"event": "$pageview", "distinct_id": "visitor", "timestamp": iso(day)},
        # Two distinct ids of one person (identify merges them): counted once.
        _exposure(project, "anon-c", "checkout", day),
        {"event": "$pageview", "distinct_id": "c@x.com", "timestamp": iso(day)},
        {"event": "$identify", "distinct_id": "c@x.com", "timestamp": iso(day),
         "properties": {"$anon_distinct_id": "anon-c"}},
        _exposure(project, "c@x.com", "checkout", day),
    ])  # fmt: skip
    cohort = _create_cohort(project, experiment)
    assert cohort["count"] == 3 and cohort["is_calculating"] is False and cohort["last_calculation"]
    assert _members(project, cohort["id"]) == {"a", "b", "anon-c", "c@x.com"}


def test_refresh_recomputes_and_replaces_the_membership(make_project):
    project = make_project()
    experiment = _experiment(project, "signup-flow")
    cohort = _create_cohort(project, experiment)
    assert cohort["count"] == 0
    url = f"/api/projects/{project.id}/cohorts/{cohort['id']}/"
    capture(project, [_exposure(project, f"u{i}", "signup-flow", START + timedelta(days=2)) for i in range(5)])
    assert project.http.get(url).json()["count"] == 0  # freshly calculated: not recomputed yet
    assert project.http.get(url, params={"refresh": "true"}).json()["count"] == 5
    assert _members(project, cohort["id"]) == {f"u{i}" for i in range(5)}
    listed = project.http.get(f"/api/projects/{project.id}/cohorts/").json()
    assert [c["count"] for c in listed["results"]] == [5] and listed["count"] == 1
    # The experiment now ends before those exposures: the next calculation is empty and replaces the old one.
    patched = project.http.patch(f"/api/projects/{project.id}/experiments/{experiment['id']}/",
                                 json={"end_date": iso(START + timedelta(days=1))})  # fmt: skip
    assert patched.status_code == 200, patched.text
    assert project.http.get(url, params={"refresh": "1"}).json()["count"] == 0
    assert _members(project, cohort["id"]) == set()


def test_flags_and_insight_filters_read_the_membership(make_project):
    project = make_project()
    experiment = _experiment(project, "banner")
    capture(project, [_exposure(project, "seen", "banner", START + timedelta(days=1))])
    cohort = _create_cohort(project, experiment)
    make_flag(project, "for-exposed", [{"properties": [{"key": "id", "type": "cohort", "value": cohort["id"]}],
                                        "rollout_percentage": 100}])  # fmt: skip
    assert values(ask(project, {"distinct_id": "seen"}))["for-exposed"] is True
    assert values(ask(project, {"distinct_id": "never"}))["for-exposed"] is False
    compiled = compile_hogql(
        "SELECT DISTINCT distinct_id FROM events WHERE {filters}", team_id=project.id, default_limit=None,
        filters=filters_expansion({"properties": [{"type": "cohort", "key": "id", "value": cohort["id"]}]},
                                  timezone="UTC"),
    )  # fmt: skip
    rows = project.service.state.engine.execute(compiled.sql, settings=compiled.settings)
    assert rows.column("distinct_id").to_pylist() == ["seen"]


def test_a_cohort_flags_use_before_any_calculation_is_computed_on_first_use(make_project):
    project = make_project()
    capture(project, [{"event": "signup", "distinct_id": "s1", "timestamp": iso(START)}])
    behavioral = {"type": "behavioral", "value": "performed_event", "key": "signup", "event_filters": [],
                  "explicit_datetime": "2026-01-01T00:00:00Z"}  # fmt: skip
    store = project.service.state.store
    cohort = store.cohorts.create(project.id, "Signed up", {"properties": {"type": "OR", "values": [behavioral]}})
    assert is_materialised(cohort) and cohort.last_calculation is None
    make_flag(project, "signed", [{"properties": [{"key": "id", "type": "cohort", "value": cohort.id}]}])
    assert values(ask(project, {"distinct_id": "s1"}))["signed"] is True
    assert store.cohorts.get(cohort.id).count == 1


def test_cohort_trees_and_negation(make_project):
    project = make_project()
    day = START + timedelta(days=1)
    capture(project, [
        {"event": "signup", "distinct_id": "both", "timestamp": iso(day)},
        {"event": "purchase", "distinct_id": "both", "timestamp": iso(day), "properties": {"price": 30}},
        {"event": "signup", "distinct_id": "signup-only", "timestamp": iso(day)},
        {"event": "purchase", "distinct_id": "cheap", "timestamp": iso(day), "properties": {"price": 5}},
    ])  # fmt: skip

    def leaf(event, negation=False, **extra):
        return {"type": "behavioral", "value": "performed_event", "key": event, "explicit_datetime": "-3650d",
                "negation": negation, **extra}  # fmt: skip

    big = [{"key": "price", "value": 10, "operator": "gt", "type": "event"}]
    cases = {
        "AND": ({"type": "AND", "values": [leaf("signup"), leaf("purchase")]}, {"both"}),
        "OR": ({"type": "OR", "values": [leaf("signup"), leaf("purchase")]}, {"both", "signup-only", "cheap"}),
        "NOT": ({"type": "AND", "values": [leaf("signup", negation=True)]}, {"cheap"}),
        "filtered": ({"type": "OR", "values": [leaf("purchase", event_filters=big)]}, {"both"}),
    }
    store = project.service.state.store
    for name, (tree, expected) in cases.items():
        cohort = store.cohorts.create(project.id, name, {"properties": tree})
        calculated = calculate(project.service.state, project.record, cohort)
        assert _members(project, cohort.id) == expected, name
        assert calculated.count == len(expected), name


def test_definitions_that_cannot_be_computed_are_refused(make_project):
    project = make_project()
    store = project.service.state.store
    person = store.cohorts.create(project.id, "Pros", {"properties": {"type": "AND", "values": [
        {"key": "plan", "value": "pro", "type": "person"}]}})  # fmt: skip
    assert not is_materialised(person)
    with pytest.raises(CohortNotComputable):
        calculate(project.service.state, project.record, person)
    stopped = store.cohorts.create(project.id, "x", {"properties": {"type": "OR", "values": [
        {"type": "behavioral", "value": "stopped_performing_event", "key": "a"}]}})  # fmt: skip
    with pytest.raises(CohortNotComputable):
        calculate(project.service.state, project.record, stopped)
    # Through the API the cohort is answered as it is, never a 500.
    answer = project.http.get(f"/api/projects/{project.id}/cohorts/{stopped.id}/?refresh=true")
    assert answer.status_code == 200 and answer.json()["count"] is None


def test_cohort_reads_need_the_scope(make_project):
    project = make_project(scopes=["experiment:read"])
    denied = project.http.get(f"/api/projects/{project.id}/cohorts/")
    assert denied.status_code == 403 and "cohort:read" in denied.json()["detail"]
    assert project.http.get(f"/api/projects/{project.id}/cohorts/999999/").status_code == 403
    allowed = make_project(scopes=["cohort:read"])
    assert allowed.http.get(f"/api/projects/{allowed.id}/cohorts/999999/").status_code == 404
