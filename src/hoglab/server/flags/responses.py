"""The answer bodies of ``/flags`` and ``/decide`` in each version SDKs ask for (``?v=``).

``/flags`` (PostHog's flags service):

* ``v`` absent or 1: ``{featureFlags: {key: value}, featureFlagPayloads, errorsWhileComputingFlags, requestId}``;
* ``v=2`` and ``v=3``: ``{flags: {key: {key, enabled, variant, reason, metadata}}, errorsWhileComputingFlags,
  requestId, evaluatedAt}`` (posthog-js, older posthog-python);
* ``v>=4``: the same with typed records ``{key, value, reason, metadata: {id, version, description, payload,
  config_version: 1, variant_key, has_experiment}}`` (posthog-python 7.9x calls ``/flags/?v=4``);
* ``&config=true`` adds the remote config fields of ``/decide`` (posthog-js asks for them).

``/decide`` (PostHog's legacy endpoint): the config fields plus, by version, ``featureFlags`` as a list of enabled
keys (no ``v``/1), a map of enabled flags (2), a map of all flags with ``featureFlagPayloads`` and
``errorsWhileComputingFlags`` (3), or the detailed ``flags`` map of ``/flags?v=2`` (4 and later).

>>> m = FlagMatch("beta", True, "test", "condition_match", 0)
>>> record_v2(m, FlagSpec(7, "beta", {}, version=1))["reason"]["description"]
'Matched condition set 1'
"""

from __future__ import annotations

import time
from typing import Any

from .evaluate import FlagMatch, FlagSpec, reason_description
from .service import Evaluation

__all__ = ["decide_body", "flags_body", "record_v2", "record_v4", "remote_config"]


def remote_config() -> dict[str, Any]:
    """The client configuration ``/decide`` always sends: everything off that hoglab doesn't serve."""
    return {
        "config": {"enable_collect_everything": True},
        "toolbarParams": {},
        "isAuthenticated": False,
        "supportedCompression": ["gzip", "gzip-js"],
        "sessionRecording": False,
        "capturePerformance": False,
        "autocapture_opt_out": False,
        "autocaptureExceptions": False,
        "surveys": False,
        "heatmaps": False,
        "siteApps": [],
        "defaultIdentifiedOnly": True,
    }


def _reason(match: FlagMatch) -> dict[str, Any]:
    return {"code": match.reason, "condition_index": match.condition_index, "description": reason_description(match)}


def _metadata(match: FlagMatch, spec: FlagSpec | None, with_experiment: frozenset[int]) -> dict[str, Any]:
    return {
        "id": spec.id if spec is not None else None,
        "version": spec.version if spec is not None else None,
        "description": None,
        "payload": match.payload,
        "has_experiment": spec is not None and spec.id in with_experiment,
    }


def record_v2(match: FlagMatch, spec: FlagSpec | None, with_experiment: frozenset[int] = frozenset()) -> dict[str, Any]:
    """One flag of ``/flags?v=2``: enabled/variant, PostHog's reason, and metadata with the payload."""
    record: dict[str, Any] = {
        "key": match.key,
        "enabled": match.enabled,
        "variant": match.variant,
        "reason": _reason(match),
        "metadata": _metadata(match, spec, with_experiment),
    }
    if match.failed:
        record["failed"] = True
    return record


def record_v4(match: FlagMatch, spec: FlagSpec | None, with_experiment: frozenset[int] = frozenset()) -> dict[str, Any]:
    """One flag of ``/flags?v=4``: the typed ``value`` (variant, ``True``/``False``; ``None`` when failed)."""
    metadata = _metadata(match, spec, with_experiment)
    # Config version 1: the flag's value is a boolean or a variant, and its payload is JSON text in metadata.
    metadata["config_version"] = 1
    if match.variant is not None:
        metadata["variant_key"] = match.variant
    record: dict[str, Any] = {
        "key": match.key,
        "value": None if match.failed else match.value,
        "reason": _reason(match),
        "metadata": metadata,
    }
    if match.failed:
        record["failed"] = True
    return record


def _legacy_maps(evaluation: Evaluation) -> tuple[dict[str, bool | str], dict[str, str]]:
    values = {m.key: m.value for m in evaluation.matches if not m.failed}
    payloads = {m.key: m.payload for m in evaluation.matches if m.enabled and m.payload is not None}
    return values, payloads


def flags_body(evaluation: Evaluation, version: int, request_id: str, *, config: bool = False) -> dict[str, Any]:
    """The ``/flags`` answer for API version ``version`` (see the module docstring)."""
    body: dict[str, Any] = remote_config() if config else {}
    if version <= 1:
        values, payloads = _legacy_maps(evaluation)
        body.update(featureFlags=values, featureFlagPayloads=payloads)
    else:
        record = record_v4 if version >= 4 else record_v2
        body["flags"] = {
            m.key: record(m, evaluation.specs.get(m.key), evaluation.with_experiment) for m in evaluation.matches
        }
        body["evaluatedAt"] = int(time.time() * 1000)
    body.update(errorsWhileComputingFlags=evaluation.errors, requestId=request_id)
    return body


def decide_body(evaluation: Evaluation, version: int, request_id: str) -> dict[str, Any]:
    """The ``/decide`` answer for API version ``version`` (see the module docstring)."""
    body = remote_config()
    values, payloads = _legacy_maps(evaluation)
    enabled = {key: value for key, value in values.items() if value}
    if version <= 1:
        body["featureFlags"] = list(enabled)
    elif version == 2:
        body["featureFlags"] = enabled
    elif version == 3:
        body.update(featureFlags=values, featureFlagPayloads=payloads, errorsWhileComputingFlags=evaluation.errors)
    else:
        body["flags"] = {
            m.key: record_v2(m, evaluation.specs.get(m.key), evaluation.with_experiment) for m in evaluation.matches
        }
        body["errorsWhileComputingFlags"] = evaluation.errors
    body["requestId"] = request_id
    return body
