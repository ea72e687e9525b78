"""The app as a whole: its OpenAPI document, and PostHog's error body for routing errors."""

from __future__ import annotations

import httpx

SEED_OPERATIONS = {
    ("get", "/api/projects/{project_id}/experiments/"),
    ("post", "/api/projects/{project_id}/experiments/"),
    ("get", "/api/projects/{project_id}/experiments/{id}/"),
    ("patch", "/api/projects/{project_id}/experiments/{id}/"),
    ("delete", "/api/projects/{project_id}/experiments/{id}/"),
    ("post", "/api/projects/{project_id}/experiments/{id}/create_exposure_cohort_for_experiment/"),
    ("get", "/api/projects/{project_id}/experiments/{id}/results/"),
    ("get", "/api/projects/{project_id}/experiments/{id}/secondary_results/"),
    ("get", "/api/projects/{project_id}/experiments/requires_flag_implementation/"),
    ("get", "/api/projects/"),
}


def test_openapi_document_is_served_and_lists_the_seed_operations(hoglab_service):
    document = httpx.get(f"{hoglab_service.url}/api/schema/", timeout=60).json()  # a loaded machine: not 5 s
    assert httpx.get(f"{hoglab_service.url}/api/schema", timeout=60).json() == document
    assert httpx.get(f"{hoglab_service.url}/openapi.json", timeout=60).json() == document
    assert document["openapi"].startswith("3.")
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    assert operations >= SEED_OPERATIONS
    create = document["paths"]["/api/projects/{project_id}/experiments/"]["post"]
    schema_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert schema_ref.endswith("/ExperimentCreate")
    schemas = document["components"]["schemas"]
    assert {"name", "feature_flag_key"} <= set(schemas["ExperimentCreate"]["properties"])
    assert set(schemas["ErrorBody"]["properties"]) == {"type", "code", "detail", "attr"}
    assert "422" not in create["responses"] and "400" in create["responses"]


def test_unknown_paths_and_methods_answer_with_the_error_body(make_project):
    project = make_project()
    missing = project.http.get("/api/nothing/here/")
    assert missing.status_code == 404
    assert missing.json() == {"type": "invalid_request", "code": "not_found", "detail": "Not found.", "attr": None}
    wrong_method = project.http.put(f"/api/projects/{project.id}/experiments/")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["code"] == "method_not_allowed"


def test_list_query_parameters_are_validated(make_project):
    project = make_project()
    base = f"/api/projects/{project.id}/experiments/"
    for params, attr in (
        ({"limit": "0"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"archived": "perhaps"}, "archived"),
    ):
        response = project.http.get(base, params=params)
        assert (response.status_code, response.json()["attr"]) == (400, attr)
    huge = project.http.get(base, params={"limit": str(10**30), "offset": str(10**30)})
    assert huge.status_code == 200 and huge.json()["results"] == []
