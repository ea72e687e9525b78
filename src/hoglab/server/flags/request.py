"""The body of a ``/flags`` or ``/decide`` request, checked: what the SDKs send, in PostHog's field names.

posthog-python sends ``{"api_key", "distinct_id", "groups", "person_properties", "group_properties",
"geoip_disable", "device_id", "flag_keys_to_evaluate"?, "sent_at"}``; posthog-js adds ``token``,
``$anon_distinct_id``, ``disable_flags``. Unknown fields are ignored, as PostHog ignores them.

>>> parse_flags_request({"distinct_id": 42, "person_properties": {"plan": "pro"}}).distinct_id
'42'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hoglab.errors import HoglabError

__all__ = ["MAX_DISTINCT_ID", "FlagsRequest", "FlagsRequestError", "parse_flags_request", "process_bool"]

# Capture keeps 200 characters of a distinct id; flags hash the same text so both agree on the person.
MAX_DISTINCT_ID = 200


class FlagsRequestError(HoglabError):
    """A body the flags endpoints refuse with a 400: ``detail``, ``code`` and the field in ``attr``."""

    def __init__(self, detail: str, *, code: str = "invalid_input", attr: str | None = None) -> None:
        super().__init__(detail)
        self.detail, self.code, self.attr = detail, code, attr


@dataclass(frozen=True)
class FlagsRequest:
    distinct_id: str
    person_properties: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, Any] = field(default_factory=dict)
    group_properties: dict[str, Any] = field(default_factory=dict)
    flag_keys: frozenset[str] | None = None
    anon_distinct_id: str | None = None
    disable_flags: bool = False


def _object(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FlagsRequestError(f"{name} must be an object.", attr=name)
    return value


def _identifier(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = str(value)
    return value[:MAX_DISTINCT_ID] if isinstance(value, str) else None


def process_bool(value: Any) -> bool:
    """PostHog's ``process_bool``: JSON ``true``, or one of the strings SDKs send in query strings and form-style
    bodies (``true``, ``1``, ``yes``, any case, spaces around); anything else (``None`` included) is false.

    >>> [process_bool(v) for v in (True, " Yes", "1", "false", 1, None)]
    [True, True, True, False, False, False]
    """
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def parse_flags_request(data: Mapping[str, Any]) -> FlagsRequest:
    """Check one decoded body; :class:`FlagsRequestError` names the first bad field."""
    disable = process_bool(data.get("disable_flags"))
    raw_id = data.get("distinct_id")
    if raw_id is None and not disable:
        raise FlagsRequestError(
            "The distinct_id field is missing from the request. Please include a valid identifier.",
            code="missing_distinct_id",
            attr="distinct_id",
        )
    distinct_id = _identifier(raw_id) if raw_id is not None else ""
    if distinct_id is None:
        raise FlagsRequestError("distinct_id must be a string or a number.", attr="distinct_id")
    if not distinct_id.strip() and not disable:
        raise FlagsRequestError(
            "The distinct_id field cannot be empty. Please provide a valid identifier.",
            code="empty_distinct_id",
            attr="distinct_id",
        )
    keys = data.get("flag_keys_to_evaluate")
    flag_keys: frozenset[str] | None = None
    if keys is not None:
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise FlagsRequestError("flag_keys_to_evaluate must be a list of flag keys.", attr="flag_keys_to_evaluate")
        # An empty list is what a client sends when it means "no filter"; PostHog's SDKs never send one.
        flag_keys = frozenset(keys) or None
    return FlagsRequest(
        distinct_id=distinct_id,
        person_properties=_object(data, "person_properties"),
        groups=_object(data, "groups"),
        group_properties=_object(data, "group_properties"),
        flag_keys=flag_keys,
        anon_distinct_id=_identifier(data.get("$anon_distinct_id")) or None,
        disable_flags=disable,
    )
