"""Property-based fuzzing of every operation of the served OpenAPI document (schemathesis): no input, valid
or not, gets a 500. Bounded so it runs in about a minute on two busy cores."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

# Per operation (about 70): schemathesis' generation costs more than the requests. Bodies get their own, deeper
# fuzz in test_body_fuzz.py.
EXAMPLES = {GenerationMode.POSITIVE: 10, GenerationMode.NEGATIVE: 6}
# DELETE last, so the experiments it removes were there for every other operation first.
ORDER = {"get": 0, "post": 1, "patch": 2, "delete": 3}
# For this part's operations the answers must also match the document (status codes, bodies, content types).
CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]
CHECKED_TAGS = {"experiments", "projects"}


@pytest.fixture(scope="module")
def fuzz_target(hoglab_service):
    store = hoglab_service.state.store
    project = store.projects.create("fuzz")
    _, key = store.keys.create(store.users.default().id, ["*"], [project.id], label="fuzz")
    experiment_ids = []
    for i in range(3):
        with store.transaction():
            flag = store.flags.create(project.id, f"fuzz-{i}", filters={"multivariate": {"variants": []}})
            record = store.experiments.create(
                project.id,
                name=f"fuzz {i}",
                feature_flag_id=flag.id,
                secondary_metrics=[{"name": "m", "filters": {"insight": "TRENDS"}}],
                filters={"insight": "TRENDS"},
            )
        experiment_ids.append(record.id)
    schema = schemathesis.openapi.from_url(f"{hoglab_service.url}/api/schema/")
    return hoglab_service.url, project.id, key, experiment_ids, schema


def _fuzz(operation, mode: GenerationMode, *, base_url: str, key: str, fixed: dict, failures: list[str]) -> None:
    """Run ``EXAMPLES[mode]`` generated requests against one operation, noting every 5xx in ``failures``."""
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed or None)
    conformance = CONFORMANCE if CHECKED_TAGS & set(operation.definition.raw.get("tags", [])) else []

    @settings(
        max_examples=EXAMPLES[mode],
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case) -> None:
        response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path} -> {response.status_code} {response.text[:200]}")
            return
        if conformance:
            case.validate_response(response, checks=conformance)
        if response.status_code >= 400:
            body = response.json()
            assert set(body) >= {"type", "code", "detail", "attr"}, (case.method, case.path, body)

    check()


def test_no_generated_request_gets_a_500(fuzz_target):
    base_url, project_id, key, experiment_ids, schema = fuzz_target
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()), key=lambda op: (ORDER.get(op.method, 9), op.path)
    )
    assert len(operations) >= 11
    failures: list[str] = []
    for operation in operations:
        for mode in EXAMPLES:
            fixed = {"project_id": str(project_id)} if "{project_id}" in operation.path else {}
            if "{id}" in operation.path and mode is GenerationMode.POSITIVE:
                fixed["id"] = experiment_ids[len(operation.path) % len(experiment_ids)]
            _fuzz(operation, mode, base_url=base_url, key=key, fixed=fixed, failures=failures)
    assert failures == []
