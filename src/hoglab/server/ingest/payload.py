"""HTTP capture bodies as PostHog's SDKs send them → the token, the raw events and ``sent_at``.

Accepted, as PostHog's capture endpoint accepts them:

* JSON: a ``/batch/`` object ``{"api_key", "batch": [...], "sent_at"}`` (posthog-python and the server SDKs),
  a single event object, or an array of events (posthog-js, each carrying ``properties.token``);
* ``Content-Encoding: gzip`` or ``?compression=gzip-js`` (posthog-js) gzip bodies, recognised by their magic
  bytes too;
* ``application/x-www-form-urlencoded`` bodies with ``data=<base64 JSON>`` (older JS and mobile SDKs), and
  base64 bodies in general.

The project token is the body's ``api_key`` or ``token``, else the query string's ``token``/``api_key``, else
the first event's ``properties.token`` (or its ``api_key``/``token``). LZ64 is not supported (a 400 says so).

>>> p = decode_payload(b'{"api_key": "phc_x", "batch": [{"event": "a", "distinct_id": "1"}]}')
>>> p.token, len(p.events), p.attr_prefix
('phc_x', 1, 'batch__')
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson

from .errors import IngestError

__all__ = ["MAX_BODY_BYTES", "Payload", "decode_payload"]

# PostHog caps a capture request at 20 MB; decompressed bodies get the same cap (no zip bombs).
MAX_BODY_BYTES = 20 * 1024 * 1024


@dataclass
class Payload:
    token: str | None
    events: list[Any]
    sent_at: Any
    attr_prefix: str | None


def _gunzip(data: bytes) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_BODY_BYTES + 1)
    except zlib.error as exc:
        raise IngestError(f"Malformed request data: invalid gzip body ({exc}).", code="invalid_payload") from None
    if len(out) > MAX_BODY_BYTES or inflater.unconsumed_tail:
        raise IngestError("Request body too large (over 20 MB once decompressed).", code="payload_too_large")
    return out


def _json(data: bytes, before_parse: Callable[[bytes], None] | None = None) -> Any:
    if before_parse is not None:
        before_parse(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    # Not JSON: other SDKs send base64 (PostHog also tolerates spaces for '+' and missing padding).
    text = data.strip().replace(b" ", b"+")
    not_json = IngestError("Malformed request data: the body is not JSON.", code="invalid_payload")
    try:
        decoded = base64.b64decode(text + b"=" * (-len(text) % 4), validate=False)
    except (binascii.Error, ValueError):
        raise not_json from None
    if decoded[:2] == b"\x1f\x8b":
        decoded = _gunzip(decoded)
    if before_parse is not None:
        before_parse(decoded)  # base64 text has no brackets to count: what is parsed is the decoded JSON
    try:
        return orjson.loads(decoded)
    except orjson.JSONDecodeError:
        raise not_json from None


def _first(values: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = values.get(key)
        if isinstance(value, list):
            value = value[0] if value else None
        if isinstance(value, str) and value:
            return value
    return None


def decode_payload(
    body: bytes,
    *,
    content_encoding: str | None = None,
    content_type: str | None = None,
    query: Mapping[str, Any] | None = None,
    before_parse: Callable[[bytes], None] | None = None,
) -> Payload:
    """Decode one capture request; raises :class:`IngestError` for a body that is not a capture payload.

    ``before_parse`` is handed the decoded bytes before they are parsed (capture reserves the memory parsing
    takes, ``budget.py``); it may raise to refuse them."""
    query = query or {}
    if len(body) > MAX_BODY_BYTES:
        raise IngestError("Request body too large (over 20 MB).", code="payload_too_large")
    form: dict[str, list[str]] = {}
    if content_type and content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        form = parse_qs(body.decode("utf-8", errors="replace"))
        body = (form.get("data") or [""])[0].encode()
    compression = (_first(query, "compression") or _first(form, "compression") or content_encoding or "").lower()
    if compression == "lz64":
        raise IngestError("Unsupported compression 'lz64': send gzip or plain JSON.", code="invalid_payload")
    if compression in ("gzip", "gzip-js") or body[:2] == b"\x1f\x8b":
        body = _gunzip(body)
    if not body.strip():
        raise IngestError("Malformed request data: empty body.", code="no_data")
    data = _json(body, before_parse)

    sent_at: Any = None
    prefix: str | None
    if isinstance(data, dict) and "batch" in data:
        events = data["batch"]
        if not isinstance(events, list):
            raise IngestError('Invalid payload: "batch" must be a list of events.', attr="batch")
        prefix = "batch__"
    elif isinstance(data, dict):
        events, prefix = [data], None
    elif isinstance(data, list):
        events, prefix = data, ""
    else:
        raise IngestError("Invalid payload: expected an event, a list of events or a batch.")
    if not events:
        raise IngestError("Invalid payload: no events.", code="no_data", attr="batch" if prefix else None)
    if isinstance(data, dict):
        sent_at = data.get("sent_at")

    token = (_first(data, "api_key", "token") if isinstance(data, dict) else None) or _first(
        query, "token", "api_key"
    )
    if token is None and isinstance(events[0], dict):
        props = events[0].get("properties")
        token = _first(props, "token", "api_key") if isinstance(props, dict) else None
        token = token or _first(events[0], "api_key", "token", "$token")
    return Payload(token=token, events=events, sent_at=sent_at, attr_prefix=prefix)
