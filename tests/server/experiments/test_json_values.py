"""Any JSON value in the free-form fields (filters, parameters extras, secondary metrics) is either stored and
answered back unchanged, or refused with a 400: never a 500, never stored and then unreadable."""

from __future__ import annotations

import json
import math
import re

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

# A number literal written as is into the body: 1e400 is valid JSON that Python reads as infinity.
RAW = "__raw_number__"
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats()  # NaN, infinities and huge values included: they must be refused, not stored
    | st.text(st.characters(codec=None, exclude_categories=()), max_size=8)  # lone surrogates included
    | st.sampled_from(["1e400", "-1e999", "1e-400", "-0.0", "1" + "0" * 40]).map(lambda literal: RAW + literal)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


@pytest.fixture(scope="module")
def make_json_project(hoglab_service):
    store = hoglab_service.state.store
    record = store.projects.create("json values")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id])
    client = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    class Project:
        id = record.id
        http = client

    yield Project, [0]
    client.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(value=json_values, deep=st.integers(min_value=0, max_value=3))
def test_free_form_json_round_trips_or_is_refused(make_json_project, value, deep):
    project, counter = make_json_project
    counter[0] += 1
    for _ in range(deep):
        value = {"nested": value}
    body = {
        "name": "json",
        "feature_flag_key": f"json-{counter[0]}",
        "filters": {"insight": "TRENDS", "events": [value]},
        "parameters": {"custom": value},
        "secondary_metrics": [{"name": "m", "filters": {"x": value}}],
    }
    text = json.dumps(body, allow_nan=True)  # NaN and Infinity as the tokens a careless client sends
    text = re.sub(f'"{RAW}([^"]*)"', r"\1", text)
    response = project.http.post(
        f"/api/projects/{project.id}/experiments/", content=text, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (201, 400), response.text
    if response.status_code == 400:
        assert response.json()["type"] in {"validation_error", "invalid_request"}
        return
    created = response.json()
    sent = json.loads(text)
    assert _finite(sent), "a value JSON can't carry back was stored"
    assert created["filters"] == sent["filters"]
    assert created["parameters"] == sent["parameters"]
    assert created["secondary_metrics"] == sent["secondary_metrics"]
    again = project.http.get(f"/api/projects/{project.id}/experiments/{created['id']}/")
    assert again.status_code == 200 and again.json() == created
