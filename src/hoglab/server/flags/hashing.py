"""PostHog's deterministic feature-flag bucketing, shared by flag evaluation and the demo data.

A person keeps their variant because the bucket is a pure function of the flag key and the distinct id:
``sha1("<flag key>.<distinct id><salt>")``, its first 15 hex digits as an integer, divided by ``0xFFFFFFFFFFFFFFF``
to land in [0, 1). Rollout uses no salt; the variant uses the salt ``"variant"`` and walks the variants'
cumulative rollout percentages. (Same definition as PostHog's server and SDKs' local evaluation.)

Holdouts hash ``"holdout-<distinct id>"`` (a dash, no flag key, no salt: :func:`holdout_bucket`), so the same
persons are held out of every flag that uses the holdout, whatever its key (PostHog's flags service and the
``posthog`` SDK's ``_holdout_hash``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bucket", "holdout_bucket", "in_holdout", "in_rollout", "variant_for"]

_LONG_SCALE = float(0xFFFFFFFFFFFFFFF)


def bucket(flag_key: str, distinct_id: str, salt: str = "") -> float:
    """Where ``distinct_id`` falls for ``flag_key``, uniformly in [0, 1).

    >>> round(bucket("my-flag", "user-1"), 6) == round(bucket("my-flag", "user-1"), 6)
    True
    """
    digest = hashlib.sha1(f"{flag_key}.{distinct_id}{salt}".encode()).hexdigest()
    return int(digest[:15], 16) / _LONG_SCALE


def holdout_bucket(identifier: str) -> float:
    """Where ``identifier`` falls for every holdout, uniformly in [0, 1): SHA-1 of ``"holdout-<identifier>"``.

    PostHog's test vector (rules-v2 contract corpus, ``hash.holdout.literal_prefix``):

    >>> round(holdout_bucket("user-31"), 16)
    0.0194745413007599
    """
    digest = hashlib.sha1(f"holdout-{identifier}".encode()).hexdigest()
    return int(digest[:15], 16) / _LONG_SCALE


def in_holdout(identifier: str, exclusion_percentage: float) -> bool:
    """Whether ``identifier`` is held out by a holdout of ``exclusion_percentage`` % (clamped to [0, 100]; 100 holds
    out everyone without hashing, as PostHog's server and SDK).

    >>> in_holdout("user-31", 10), in_holdout("user-31", 1), in_holdout("user-31", 100)
    (True, False, True)
    """
    percentage = min(max(float(exclusion_percentage), 0.0), 100.0)
    return percentage == 100.0 or holdout_bucket(identifier) <= percentage / 100


def in_rollout(flag_key: str, distinct_id: str, rollout_percentage: float | None) -> bool:
    """Whether a condition group with this rollout includes the person (``None`` means everyone)."""
    if rollout_percentage is None:
        return True
    return bucket(flag_key, distinct_id) <= rollout_percentage / 100


def variant_for(flag_key: str, distinct_id: str, variants: Sequence[Mapping[str, Any]]) -> str | None:
    """The variant key a person gets, from ``[{"key": ..., "rollout_percentage": ...}, ...]``.

    >>> variants = [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]
    >>> variant_for("my-flag", "user-1", variants) in {"control", "test"}
    True
    """
    value = bucket(flag_key, distinct_id, salt="variant")
    low = 0.0
    for variant in variants:
        high = low + float(variant.get("rollout_percentage") or 0) / 100
        if low <= value < high:
            return str(variant["key"])
        low = high
    return None
