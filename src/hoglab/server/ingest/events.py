"""One captured event as PostHog's SDKs send it → a validated :class:`CapturedEvent`, or the reason it is dropped.

What is accepted (PostHog's capture rules): ``event`` a non-empty string; ``distinct_id`` at the top level or in
``properties`` (``$distinct_id`` too), a string or a number, cut to 200 characters; ``properties`` an object;
top-level ``$set``/``$set_once`` objects moved into the properties; ``uuid`` a UUID (generated if missing);
``timestamp`` ISO 8601 (naive means UTC), corrected for the sender's clock with ``sent_at`` (or ``offset`` in
ms); ``elements_chain`` a string.

An event that breaks one of these rules raises :class:`EventDropped` naming the field and the ingestion warning
(``warnings.py``): :func:`triage_batch`, what capture uses, keeps the other events of the batch and records the
warning; :func:`normalize_batch` (all or nothing, for Python callers) raises it.

Times are repaired as PostHog's ingestion repairs them, each with an ingestion warning on the event
(``CapturedEvent.warnings``): with both ``timestamp`` and ``sent_at`` the event happened ``sent_at - timestamp``
before the server received it, so ``timestamp = now + (timestamp - sent_at)`` (unless ``$ignore_sent_at``); an
unparseable ``sent_at`` is ignored (``ignored_invalid_timestamp``); an unparseable ``timestamp``, or a time that
overflows or falls outside the table's range 1900..2299 (``offset: 1e15``; ``sent_at`` in year 1 with a
``timestamp`` in 9999) is stored at ``now`` (``ignored_invalid_timestamp``), and so is one more than 23 hours
ahead (``event_timestamp_in_future``).

>>> now = datetime(2026, 1, 1, 12, tzinfo=UTC)
>>> e = normalize_event({"event": "x", "distinct_id": 7, "timestamp": "2026-01-01T11:00:00Z"},
...                     sent_at="2026-01-01T11:00:05Z", now=now)
>>> e.distinct_id, e.timestamp.isoformat(), e.warnings
('7', '2026-01-01T11:59:55+00:00', ())
>>> late = normalize_event({"event": "x", "distinct_id": 7, "timestamp": "not a time"}, now=now)
>>> late.timestamp == now, [w.type for w in late.warnings]
(True, ['ignored_invalid_timestamp'])
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .errors import EventDropped
from .warnings import IngestionWarning, WarningTally, clip, dropped

__all__ = ["CapturedEvent", "Triage", "normalize_batch", "normalize_event", "parse_timestamp", "triage_batch",
           "writable_properties"]  # fmt: skip

MAX_ID_LENGTH = 200
MAX_EVENT_NAME_LENGTH = 200
MAX_LISTED = 20
_FUTURE_LIMIT = timedelta(hours=23)
# DateTime64's range (1900-01-01 .. 2299-12-31).
_MIN_TS = datetime(1900, 1, 1, tzinfo=UTC)
_MAX_TS = datetime(2299, 12, 31, tzinfo=UTC)
_NO_DISTINCT_ID = 'Invalid payload: All events must have the event field "distinct_id"!'


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
    # Warnings of what was repaired (a time stored as "now"): written only if the event is (writer.py).
    warnings: tuple[IngestionWarning, ...] = ()


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


def _drop(raw: Any, attr: str, name: str | None, warning: str, detail: str, index: int | None) -> EventDropped:
    where = f"{attr}{name}" if name else attr.rstrip("_") or None
    details = dropped(warning, raw, index=index, field=name, reason=detail).details
    return EventDropped(detail, attr=where, warning=warning, details=dict(details))


def normalize_event(
    raw: Any, *, sent_at: Any = None, now: datetime | None = None, attr: str = "", index: int | None = None
) -> CapturedEvent:
    """Validate and normalise one event; :class:`EventDropped` if it cannot be stored. ``attr`` prefixes the field
    names in errors (``batch__3__``), ``index`` is the event's place in its request (in the warning's details)."""
    now = now or datetime.now(UTC)
    if not isinstance(raw, dict):
        raise _drop(raw, attr, None, "invalid_event", "Invalid payload: every event must be a JSON object.", index)
    name = raw.get("event")
    if not isinstance(name, str) or not name.strip():
        detail = 'Invalid payload: All events must have the event name field "event"!'
        raise _drop(raw, attr, "event", "missing_event_name", detail, index)
    properties = raw.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        detail = 'Invalid payload: "properties" must be an object.'
        raise _drop(raw, attr, "properties", "malformed_event_properties", detail, index)
    properties = dict(properties)
    for key in ("$set", "$set_once"):
        top = raw.get(key)
        if top is None:
            continue
        if not isinstance(top, dict):
            detail = f'Invalid payload: "{key}" must be an object.'
            raise _drop(raw, attr, key, "malformed_event_properties", detail, index)
        inner = properties.get(key)
        properties[key] = {**(inner if isinstance(inner, dict) else {}), **top}

    distinct_id = _distinct_id(raw, properties)
    if isinstance(distinct_id, bool) or not isinstance(distinct_id, str | int | float):
        raise _drop(raw, attr, "distinct_id", "missing_distinct_id", _NO_DISTINCT_ID, index)
    distinct_id = str(distinct_id)[:MAX_ID_LENGTH]
    if not distinct_id.strip():
        raise _drop(raw, attr, "distinct_id", "missing_distinct_id", _NO_DISTINCT_ID, index)

    event_uuid = raw.get("uuid")
    if event_uuid is None or event_uuid == "":
        event_uuid = str(uuid.uuid4())
    else:
        try:
            event_uuid = str(uuid.UUID(str(event_uuid)))
        except ValueError:
            detail = 'Invalid payload: "uuid" is not a valid UUID.'
            raise _drop(raw, attr, "uuid", "invalid_event_uuid", detail, index) from None

    elements_chain = raw.get("elements_chain") or ""
    if not isinstance(elements_chain, str):
        detail = 'Invalid payload: "elements_chain" must be a string.'
        raise _drop(raw, attr, "elements_chain", "invalid_event", detail, index)

    written = writable_properties(properties)
    if written is None:
        detail = 'Invalid payload: "properties" are nested too deeply (over 255 levels).'
        raise _drop(raw, attr, "properties", "malformed_event_properties", detail, index)
    properties, properties_json = written

    timestamp, warnings = _event_time(raw, properties, sent_at=raw.get("sent_at") or sent_at, now=now,
                                      event_uuid=event_uuid, name=name)  # fmt: skip
    return CapturedEvent(
        uuid=event_uuid,
        event=name[:MAX_EVENT_NAME_LENGTH],
        distinct_id=distinct_id,
        properties=properties,
        properties_json=properties_json,
        timestamp=timestamp,
        elements_chain=elements_chain,
        personless=properties.get("$process_person_profile") is False,
        warnings=tuple(warnings),
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


def writable_properties(properties: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The properties and their JSON (every later writer, persons too, can serialise them again with orjson), or
    ``None`` if they cannot be written. Capture, the groups API and group files store a number beyond 64 bits
    alike, as a double.

    >>> writable_properties({"n": 2**64})
    ({'n': 1.8446744073709552e+19}, '{"n":1.8446744073709552e+19}')
    """
    try:
        return properties, orjson.dumps(properties).decode()
    except TypeError:  # an integer beyond 64 bits, or nesting deeper than orjson writes (255 levels)
        pass
    try:
        properties = _as_float_beyond_64_bits(properties)
        return properties, orjson.dumps(properties).decode()
    except (TypeError, RecursionError):
        return None


def _invalid(event_uuid: str, field_name: str, value: Any, reason: str, **extra: Any) -> IngestionWarning:
    # PostHog's details of ignored_invalid_timestamp: eventUuid, field, value, reason (offset, parsed_year if
    # out of bounds).
    details = {"eventUuid": event_uuid, "field": field_name, "value": clip("" if value is None else value),
               "reason": reason, **extra}  # fmt: skip
    return IngestionWarning("ignored_invalid_timestamp", details)


def _event_time(
    raw: dict[str, Any], properties: dict[str, Any], *, sent_at: Any, now: datetime, event_uuid: str, name: str
) -> tuple[datetime, list[IngestionWarning]]:
    warnings: list[IngestionWarning] = []
    value = raw.get("timestamp")
    timestamp = None
    if value is not None and value != "":
        timestamp = parse_timestamp(value)
        if timestamp is None:
            warnings.append(_invalid(event_uuid, "timestamp", value, "not an ISO 8601 date-time"))
            return now, warnings
    sent = None
    if sent_at and not properties.get("$ignore_sent_at"):
        sent = parse_timestamp(sent_at)
        if sent is None:
            warnings.append(_invalid(event_uuid, "sent_at", sent_at, "not an ISO 8601 date-time"))
    offset = raw.get("offset")
    field_name = "timestamp"
    try:
        if timestamp is not None and sent is not None:
            result = now + (timestamp - sent)
        elif isinstance(offset, int | float) and not isinstance(offset, bool):
            field_name = "offset"
            result = now - timedelta(milliseconds=offset)
        else:
            result = timestamp or now
    except (OverflowError, ValueError):
        # A hostile or broken clock (offset 1e15, sent_at in year 1 with a timestamp in 9999).
        warnings.append(_invalid(event_uuid, field_name, raw.get(field_name), "out of bounds", offset=clip(offset)))
        return now, warnings
    if result - now > _FUTURE_LIMIT:
        warnings.append(
            IngestionWarning(
                "event_timestamp_in_future",
                {"timestamp": clip(value or ""), "sentAt": clip(sent_at or ""), "offset": clip(offset or ""),
                 "now": now.isoformat(), "result": result.isoformat(), "eventUuid": event_uuid,
                 "eventName": clip(name)},
            )
        )  # fmt: skip
        return now, warnings
    if not _MIN_TS <= result <= _MAX_TS:
        warnings.append(
            _invalid(event_uuid, field_name, raw.get(field_name), "out of bounds", offset=clip(offset),
                     parsed_year=result.year)
        )  # fmt: skip
        return now, warnings
    return result, warnings


def normalize_batch(
    raws: Sequence[Any], *, sent_at: Any = None, now: datetime | None = None, attr_prefix: str | None = "batch__"
) -> list[CapturedEvent]:
    """Every event of a batch, or the first problem (:class:`EventDropped`): all or nothing, for Python callers.

    ``attr_prefix`` is how errors name an event's place: ``batch__3__event`` for a ``/batch/`` body,
    ``3__event`` for a JSON array, ``event`` for a single event (``attr_prefix=None``).
    """
    now = now or datetime.now(UTC)
    return [
        normalize_event(raw, sent_at=sent_at, now=now, attr=_prefix(attr_prefix, i), index=i)
        for i, raw in enumerate(raws)
    ]


def _prefix(attr_prefix: str | None, index: int) -> str:
    return "" if attr_prefix is None else f"{attr_prefix}{index}__"


@dataclass
class Triage:
    """A capture request's events sorted out: those to store, and the warnings of the dropped ones (one per cause,
    ``dropped.rows()``; ``len(dropped)`` events).

    ``problems`` lists the first :data:`MAX_LISTED` events dropped (``result: "drop"``) or stored with a warning
    (``result: "warning"``), for the capture answer.
    """

    events: list[CapturedEvent] = field(default_factory=list)
    dropped: WarningTally = field(default_factory=WarningTally)
    repaired: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)

    def note(self, index: int, result: str, warning: str, attr: str | None, detail: str) -> None:
        if len(self.problems) < MAX_LISTED:
            self.problems.append({"index": index, "result": result, "type": warning, "attr": attr, "detail": detail})


def _repair_detail(warning: IngestionWarning) -> tuple[str, str]:
    details = warning.details
    if warning.type == "event_timestamp_in_future":
        return "timestamp", "The event's time is more than 23 hours ahead: stored at the capture time."
    name = str(details.get("field", "timestamp"))
    if name == "sent_at":
        return name, f'"sent_at" is {details.get("reason")}: ignored (no clock-skew correction).'
    return name, f'"{name}" is {details.get("reason")}: stored at the capture time.'


def triage_batch(
    raws: Sequence[Any], *, sent_at: Any = None, now: datetime | None = None, attr_prefix: str | None = "batch__"
) -> Triage:
    """Every event of a batch that can be stored (times repaired as PostHog repairs them), and a warning for each
    one that cannot: one bad event never costs the others."""
    now = now or datetime.now(UTC)
    triage = Triage()
    for i, raw in enumerate(raws):
        attr = _prefix(attr_prefix, i)
        try:
            event = normalize_event(raw, sent_at=sent_at, now=now, attr=attr, index=i)
        except EventDropped as exc:
            triage.dropped.add(IngestionWarning(exc.warning, exc.details))
            triage.note(i, "drop", exc.warning, exc.attr, exc.detail)
            continue
        triage.events.append(event)
        if event.warnings:
            triage.repaired += 1
            for warning in event.warnings:
                name, detail = _repair_detail(warning)
                triage.note(i, "warning", warning.type, f"{attr}{name}", detail)
    return triage
