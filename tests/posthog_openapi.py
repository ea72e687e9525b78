"""PostHog's published OpenAPI document, as an oracle for request and answer shapes.

The document is ``arcade_posthog_api/moar/openapi.json`` of the PyPI package ``arcade-posthog-api`` 0.2.1, a dev
dependency the Makefile installs without its own dependencies (only this file is read; the package is never
imported). Components are OpenAPI 3.0 schemas (``nullable``); :func:`json_schema` turns one into a JSON Schema that
``jsonschema`` checks, ``$ref`` resolved against the whole document::

    from posthog_openapi import assert_valid
    assert_valid(answer, "RetentionQueryResponse")              # hoglab's cache fields are dropped first
    assert_valid(body["query"], "RetentionQuery", drop=())

PostHog's answer components forbid unknown fields and do not list the cache fields (``is_cached``,
``last_refresh``, ...) that PostHog's ``CachedQueryResponseMixin`` adds, so :func:`assert_valid` drops those first.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import json
from collections.abc import Iterable
from typing import Any

import jsonschema
import pytest

DOCUMENT = "arcade_posthog_api/moar/openapi.json"
CACHE_FIELDS = (
    "is_cached",
    "cache_key",
    "last_refresh",
    "next_allowed_client_refresh",
    "cache_target_age",
    "timezone",
    "calculation_trigger",
    "query_metadata",
)


@functools.cache
def document() -> dict[str, Any]:
    """The whole OpenAPI document; a test that needs it fails (not skips) when the dev dependency is missing."""
    try:
        dist = importlib.metadata.distribution("arcade-posthog-api")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("arcade-posthog-api is not installed: run `make test` (it installs the dev dependencies)")
    assert dist.version == "0.2.1", dist.version
    return json.loads(dist.locate_file(DOCUMENT).read_text())  # type: ignore[union-attr]


def _to_json_schema(node: Any) -> Any:
    # OpenAPI 3.0's `nullable: true` is JSON Schema's "or null"; everything else reads the same.
    if isinstance(node, list):
        return [_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
        if "default" in node:
            out["default"] = node["default"]
    return out


@functools.cache
def _converted() -> dict[str, Any]:
    doc = copy.deepcopy(document())
    return {"components": {"schemas": _to_json_schema(doc["components"]["schemas"])}}


def component(name: str) -> dict[str, Any]:
    """One component of ``components.schemas`` as PostHog wrote it."""
    schemas = document()["components"]["schemas"]
    assert name in schemas, f"PostHog's document has no component {name!r}"
    return dict(schemas[name])


def json_schema(name: str) -> dict[str, Any]:
    """A JSON Schema for one component; its ``$ref``s point into the converted document."""
    component(name)
    return {**_converted(), "$ref": f"#/components/schemas/{name}"}


def errors(instance: Any, name: str, *, drop: Iterable[str] = CACHE_FIELDS) -> list[str]:
    """Every way ``instance`` breaks component ``name`` (after dropping ``drop`` keys at the top), as text."""
    if isinstance(instance, dict):
        instance = {key: value for key, value in instance.items() if key not in set(drop)}
    validator = jsonschema.Draft202012Validator(json_schema(name))
    return [
        f"{'/'.join(map(str, err.absolute_path)) or '<root>'}: {err.message[:300]}"
        for err in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    ]


def assert_valid(instance: Any, name: str, *, drop: Iterable[str] = CACHE_FIELDS) -> None:
    """Fail with every violation listed when ``instance`` does not validate against PostHog's ``name``."""
    found = errors(instance, name, drop=drop)
    assert not found, f"not a valid PostHog {name}:\n" + "\n".join(found[:20])


def assert_valid_experiment(body: dict[str, Any], name: str = "PatchedExperiment", *,
                            drop: Iterable[str] = ("feature_flag",)) -> None:  # fmt: skip
    """An ``Experiment`` answer against PostHog's component ``name``, with the one place where PostHog's answers
    and its document disagree special-cased: ``holdout`` is declared non-nullable, yet PostHog answers ``null``
    for an experiment without one. A holdout that is there is checked against ``ExperimentHoldout``."""
    assert_valid(body, name, drop=(*drop, *(["holdout"] if body.get("holdout") is None else [])))
    if body.get("holdout") is not None:
        assert_valid(body["holdout"], "ExperimentHoldout", drop=())
