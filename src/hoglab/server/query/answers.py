"""Answers written as bytes: a runner's rows (JSON from the engine) spliced in unparsed, the rest orjson, and the
cache fields PostHog adds to every answer."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

from .cache import NEXT_CLIENT_REFRESH
from .jobs import iso
from .runners import RawAnswer

if TYPE_CHECKING:
    from .request import Prepared

__all__ = ["answer_members", "cache_members", "dumps", "join_members"]

# Fields the query service owns in every answer; a runner's own values for them are dropped.
_CACHE_FIELDS = frozenset(
    {"is_cached", "cache_key", "last_refresh", "next_allowed_client_refresh", "cache_target_age", "timezone",
     "query_status", "calculation_trigger"}
)  # fmt: skip
_DUMP_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _fallback(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    try:
        return _default(value)
    except TypeError:
        return str(value)


def dumps(value: Any) -> bytes:
    """JSON with orjson; integers beyond 64 bits (which orjson refuses) go through the standard encoder."""
    try:
        return orjson.dumps(value, default=_default, option=_DUMP_OPTIONS)
    except TypeError:
        return json.dumps(value, default=_fallback, separators=(",", ":"), ensure_ascii=False).encode()


def join_members(*members: bytes) -> bytes:
    """A JSON object from members written without braces (``b'"a":1'``); empty parts are skipped.

    >>> join_members(b'"results":[[1]]', b'', b'"is_cached":false')
    b'{"results":[[1]],"is_cached":false}'
    """
    return b"{" + b",".join(m for m in members if m) + b"}"


def answer_members(answer: Any, timings: list[dict[str, Any]]) -> bytes:
    """A runner's answer as JSON members (no braces, no cache fields); rows of a ``RawAnswer`` are not parsed."""
    if isinstance(answer, RawAnswer):
        fields = {k: v for k, v in answer.fields.items() if k not in _CACHE_FIELDS and k != "results"}
        fields.setdefault("timings", timings)
        return join_members(b'"results":' + answer.results, dumps(fields)[1:-1])[1:-1]
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(mode="json", by_alias=True)
    fields = {k: v for k, v in dict(answer).items() if k not in _CACHE_FIELDS}
    fields.setdefault("timings", timings)
    return dumps(fields)[1:-1]


def cache_members(
    prepared: Prepared, *, is_cached: bool, last_refresh: datetime, target_age: Any, timezone: str
) -> bytes:
    """The cache fields PostHog adds to every answer, as JSON members."""
    return dumps(
        {
            "is_cached": is_cached,
            "cache_key": prepared.cache_key,
            "last_refresh": iso(last_refresh),
            "next_allowed_client_refresh": iso(last_refresh + NEXT_CLIENT_REFRESH),
            "cache_target_age": iso(last_refresh + target_age),
            "timezone": timezone,
            "query_status": None,
            "calculation_trigger": None,
        }
    )[1:-1]
