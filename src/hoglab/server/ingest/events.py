"""One captured event as PostHog's SDKs send it → a validated :class:`CapturedEvent`, or an :class:`IngestError`.

What is accepted (PostHog's capture rules): ``event`` a non-empty string; ``distinct_id`` at the top level or in
``properties`` (``$distinct_id`` too), a string or a number, cut to 200 characters; ``properties`` an object;
top-level ``$set``/``$set_once`` objects moved into the properties; ``uuid`` a UUID (generated if missing);
``timestamp`` ISO 8601 (naive means UTC), corrected for the sender's clock with ``sent_at`` (or ``offset`` in
ms); ``elements_chain`` a string. The whole batch is checked before anything is stored.

Clock skew, as PostHog: with both ``timestamp`` and ``sent_at`` the event happened ``sent_at - timestamp``
before the server received it, so ``timestamp = now + (timestamp - sent_at)`` (unless ``$ignore_sent_at``).
A result more than 23 hours in the future becomes ``now``. A time outside the table's range, given or computed
(``offset: 1e15``; ``sent_at`` in year 1 with a ``timestamp`` in 9999), fails the batch with a 400 naming the
field: PostHog would store the event at ``now`` with an ingestion warning, but hoglab has no warnings to show, and
a silent ``now`` would put the event in the wrong place of every insight.

>>> now = datetime(2026, 1, 1, 12, tzinfo=UTC)
>>> e = normalize_event({"event": "x", "distinct_id": 7, "timestamp": "2026-01-01T11:00:00Z"},
...                     sent_at="2026-01-01T11:00:05Z", now=now)
>>> e.distinct_id, e.timestamp.isoformat()
('7', '2026-01-01T11:59:55+00:00')
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .errors import IngestError

__all__ = ["CapturedEvent", "normalize_batch", "normalize_event", "parse_timestamp"]

MAX_ID_LENGTH = 200
MAX_EVENT_NAME_LENGTH = 200
_FUTURE_LIMIT = timedelta(hours=23)
# DateTime64's range (1900-01-01 .. 2299-12-31).
_MIN_TS = datetime(1900, 1, 1, tzinfo=UTC)
_MAX_TS = datetime(2299, 12, 31, tzinfo=UTC)


@dataclass(slots=True)
class CapturedEvent:
    uuid: str
    event: str
    distinct_id: str
    properties: dict[str, Any]
    properties_json: str
    timestamp: datetime
    elements_chain: str
    personless: bool


def parse_timestamp(value: Any) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string, or ``None`` if it is not one.

    >>> parse_timestamp("2026-03-01 10:00:00.5+01:00").isoformat()
    '2026-03-01T09:00:00.500000+00:00'
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and 8 <= len(value) <= 64:
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


def _distinct_id(raw: dict[str, Any], properties: dict[str, Any]) -> Any:
    for candidate in (raw.get("distinct_id"), properties.get("distinct_id"), properties.get("$distinct_id")):
        if candidate is not None and candidate != "":
            return candidate
    return None


def normalize_event(
    raw: Any, *, sent_at: Any = None, now: datetime | None = None, attr: str = ""
) -> CapturedEvent:
    """Validate and normalise one event. ``attr`` prefixes the field names in errors (``batch__3__``)."""
    now = now or datetime.now(UTC)
    if not isinstance(raw, dict):
        raise IngestError("Invalid payload: every event must be a JSON object.", attr=attr.rstrip("_") or None)
    name = raw.get("event")
    if not isinstance(name, str) or not name.strip():
        raise IngestError('Invalid payload: All events must have the event name field "event"!', attr=f"{attr}event")
    properties = raw.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise IngestError('Invalid payload: "properties" must be an object.', attr=f"{attr}properties")
    properties = dict(properties)
    for key in ("$set", "$set_once"):
        top = raw.get(key)
        if top is None:
            continue
        if not isinstance(top, dict):
            raise IngestError(f'Invalid payload: "{key}" must be an object.', attr=f"{attr}{key}")
        inner = properties.get(key)
        properties[key] = {**(inner if isinstance(inner, dict) else {}), **top}

    distinct_id = _distinct_id(raw, properties)
    if isinstance(distinct_id, bool) or not isinstance(distinct_id, str | int | float):
        raise IngestError(
            'Invalid payload: All events must have the event field "distinct_id"!', attr=f"{attr}distinct_id"
        )
    distinct_id = str(distinct_id)[:MAX_ID_LENGTH]
    if not distinct_id.strip():
        raise IngestError(
            'Invalid payload: All events must have the event field "distinct_id"!', attr=f"{attr}distinct_id"
        )

    event_uuid = raw.get("uuid")
    if event_uuid is None or event_uuid == "":
        event_uuid = str(uuid.uuid4())
    else:
        try:
            event_uuid = str(uuid.UUID(str(event_uuid)))
        except ValueError:
            raise IngestError('Invalid payload: "uuid" is not a valid UUID.', attr=f"{attr}uuid") from None

    timestamp = _event_time(raw, properties, sent_at=raw.get("sent_at") or sent_at, now=now, attr=attr)

    elements_chain = raw.get("elements_chain") or ""
    if not isinstance(elements_chain, str):
        raise IngestError('Invalid payload: "elements_chain" must be a string.', attr=f"{attr}elements_chain")

    properties, properties_json = _properties_json(properties, attr)
    return CapturedEvent(
        uuid=event_uuid,
        event=name[:MAX_EVENT_NAME_LENGTH],
        distinct_id=distinct_id,
        properties=properties,
        properties_json=properties_json,
        timestamp=timestamp,
        elements_chain=elements_chain,
        personless=properties.get("$process_person_profile") is False,
    )


def _as_float_beyond_64_bits(value: Any) -> Any:
    # What posthog-js and PostHog's JavaScript ingestion see: an integer too large for 64 bits is a double.
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return float(value)
    if isinstance(value, dict):
        return {k: _as_float_beyond_64_bits(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_float_beyond_64_bits(v) for v in value]
    return value


def _properties_json(properties: dict[str, Any], attr: str) -> tuple[dict[str, Any], str]:
    """The properties and their JSON; every later writer (persons too) can serialise them again with orjson."""
    try:
        return properties, orjson.dumps(properties).decode()
    except TypeError:  # an integer beyond 64 bits, or nesting deeper than orjson writes (255 levels)
        pass
    try:
        properties = _as_float_beyond_64_bits(properties)
        return properties, orjson.dumps(properties).decode()
    except (TypeError, RecursionError):
        raise IngestError(
            'Invalid payload: "properties" are nested too deeply (over 255 levels).', attr=f"{attr}properties"
        ) from None


def _event_time(raw: dict[str, Any], properties: dict[str, Any], *, sent_at: Any, now: datetime, attr: str) -> datetime:
    value = raw.get("timestamp")
    timestamp = None
    if value is not None and value != "":
        timestamp = parse_timestamp(value)
        if timestamp is None:
            raise IngestError(
                f'Invalid payload: "timestamp" is not an ISO 8601 date-time: {str(value)[:64]!r}.',
                attr=f"{attr}timestamp",
            )
    sent = parse_timestamp(sent_at) if sent_at else None
    offset = raw.get("offset")
    field = "timestamp"
    try:
        if timestamp is not None and sent is not None and not properties.get("$ignore_sent_at"):
            result = now + (timestamp - sent)
        elif isinstance(offset, int | float) and not isinstance(offset, bool):
            field = "offset"
            result = now - timedelta(milliseconds=offset)
        else:
            result = timestamp or now
    except (OverflowError, ValueError):
        # A hostile or broken clock (offset 1e15, sent_at in year 1 with a timestamp in 9999): refused per event,
        # naming the field, like any other time outside the table's range below.
        raise IngestError(f'Invalid payload: "{field}" puts the event out of range.', attr=f"{attr}{field}") from None
    if result - now > _FUTURE_LIMIT:
        result = now
    if not _MIN_TS <= result <= _MAX_TS:
        raise IngestError(f'Invalid payload: "{field}" is out of range.', attr=f"{attr}{field}")
    return result


def normalize_batch(
    raws: Sequence[Any], *, sent_at: Any = None, now: datetime | None = None, attr_prefix: str | None = "batch__"
) -> list[CapturedEvent]:
    """Every event of a batch, or the first problem: a batch is stored whole or not at all.

    ``attr_prefix`` is how errors name an event's place: ``batch__3__event`` for a ``/batch/`` body,
    ``3__event`` for a JSON array, ``event`` for a single event (``attr_prefix=None``).
    """
    now = now or datetime.now(UTC)
    if attr_prefix is None:
        return [normalize_event(raw, sent_at=sent_at, now=now) for raw in raws]
    return [
        normalize_event(raw, sent_at=sent_at, now=now, attr=f"{attr_prefix}{i}__") for i, raw in enumerate(raws)
    ]
