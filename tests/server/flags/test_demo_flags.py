"""The demo project seen through the flags endpoints: the service assigns every demo user the variant the demo
data recorded for them, counts the demo's exposed persons, and sees the flag on the metric events."""

from __future__ import annotations

import json

import pytest

from hoglab.server.demo import DEMO_EXPERIMENT, seed
from hoglab.server.hogql import compile_hogql

from .helpers import ask

pytestmark = pytest.mark.xdist_group("flags_service")


def test_the_demo_experiment_through_flags(make_project):
    project = make_project()
    seed(project.service.state, project.record, users=600)
    key = DEMO_EXPERIMENT.feature_flag_key
    compiled = compile_hogql(
        "SELECT distinct_id, any(properties.$feature_flag_response) AS variant "
        "FROM events WHERE event = '$feature_flag_called' AND properties.$feature_flag = {key} GROUP BY distinct_id",
        team_id=project.id, values={"key": key}, default_limit=None,
    )  # fmt: skip
    recorded = project.service.state.engine.execute(compiled.sql, settings=compiled.settings).to_pylist()
    assert len(recorded) > 50
    for row in recorded:
        answer = ask(project, {"distinct_id": row["distinct_id"], "flag_keys_to_evaluate": [key]}, path="/flags/?v=4")
        assert answer.json()["flags"][key]["value"] == row["variant"], row

    experiment = project.http.get(f"/api/projects/{project.id}/experiments/").json()["results"][0]
    url = f"/api/projects/{project.id}/experiments/{experiment['id']}/create_exposure_cohort_for_experiment/"
    cohort = project.http.post(url).json()["cohort"]
    persons = compile_hogql(
        "SELECT uniqExact(person_id) AS n FROM events WHERE event = '$feature_flag_called' "
        "AND properties.$feature_flag = {key} AND timestamp >= {start}",
        team_id=project.id, values={"key": key, "start": DEMO_EXPERIMENT.start_date}, default_limit=None,
        person_overrides=True,
    )  # fmt: skip
    expected = project.service.state.engine.execute(persons.sql, settings=persons.settings).column("n")[0].as_py()
    assert cohort["count"] == expected > 0

    requires = project.http.get(
        f"/api/projects/{project.id}/experiments/requires_flag_implementation/",
        params={"events": json.dumps(["purchase"])},
    )
    assert requires.json() == {"result": False}
