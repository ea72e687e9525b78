"""Ingestion warnings: what capture records when it drops or repairs one event of a batch, as PostHog does.

Capture keeps the good events of a batch. An event it cannot store is dropped, and one whose time it cannot use is
stored at the capture time; either way a row goes to the ``ingestion_warnings`` table (PostHog's columns: team_id,
source, type, details as JSON text, timestamp), which the project reads through HogQL (``SELECT * FROM
ingestion_warnings``) and ``GET /api/projects/:id/ingestion_warnings/`` (``query/ingestion_warnings.py``).

:data:`WARNING_TYPES` is every type capture writes and what happened to the event; the names are PostHog's
(its Node.js ingestion's ``ignored_invalid_timestamp`` and ``event_timestamp_in_future``, its Rust capture's
per-event drops) except ``invalid_event``, for faults PostHog rejects whole requests for.

>>> w = dropped("missing_distinct_id", {"event": "signup"}, index=3, field="distinct_id", reason="no distinct_id")
>>> w.type, w.details["eventName"], w.details["index"]
('missing_distinct_id', 'signup', 3)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["SOURCE", "WARNING_TYPES", "IngestionWarning", "WarningTally", "clip", "dropped"]

SOURCE = "capture"
"""The ``source`` of every warning capture writes."""

WARNING_TYPES: dict[str, str] = {
    "missing_event_name": "dropped: `event` is missing, not a string, or blank",
    "missing_distinct_id": "dropped: no usable `distinct_id` (top level, `properties.distinct_id` or `$distinct_id`)",
    "invalid_event_uuid": "dropped: `uuid` is given but is not a UUID",
    "malformed_event_properties": "dropped: `properties`, `$set` or `$set_once` is not an object, or the properties"
    " are nested deeper than 255 levels",
    "invalid_event": "dropped: the event is not a JSON object, or its `elements_chain` is not a string",
    "ignored_invalid_timestamp": "repaired: `timestamp` is not a date-time, or the time computed from `timestamp`,"
    " `sent_at` and `offset` falls outside 1900..2299: stored at the capture time; an unparseable `sent_at` is"
    " ignored (no clock-skew correction)",
    "event_timestamp_in_future": "repaired: the computed time is more than 23 hours ahead: stored at the capture time",
}
"""Every warning type capture writes -> what happened to the event (docs/api.md lists the same)."""

_CLIP = 200


@dataclass(frozen=True, slots=True)
class IngestionWarning:
    """One warning: its ``type`` (a key of :data:`WARNING_TYPES`) and ``details`` (stored as JSON text)."""

    type: str
    details: Mapping[str, Any]

    def details_json(self) -> str:
        return orjson.dumps(self.details).decode()


def clip(value: Any) -> Any:
    """A sender's value as a warning may hold it: numbers, booleans and null as they are, anything else as text of
    at most 200 characters (a warning never carries a big or unwritable value).

    >>> clip("x" * 500) == "x" * 200, clip(1.5), clip({"a": [1]}), clip(2**70), clip(float("nan"))
    (True, 1.5, '{"a":[1]}', '1180591620717411303424', 'null')
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str):
        return value[:_CLIP]
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = str(value)
    return text[:_CLIP]


def dropped(warning: str, raw: Any, *, index: int | None, field: str | None, reason: str) -> IngestionWarning:
    """The warning of a dropped event: what identifies it (uuid, name, distinct id as sent), the field at fault,
    why, and its place in the request (``index``)."""
    event: dict[str, Any] = raw if isinstance(raw, dict) else {}
    properties: dict[str, Any] = event["properties"] if isinstance(event.get("properties"), dict) else {}
    distinct_id = event.get("distinct_id", properties.get("distinct_id", properties.get("$distinct_id")))
    details: dict[str, Any] = {
        "eventUuid": clip(event.get("uuid")) if isinstance(event.get("uuid"), str) else "",
        "eventName": clip(event.get("event")) if isinstance(event.get("event"), str) else "",
        "distinctId": clip(distinct_id) if isinstance(distinct_id, str | int | float) else "",
        "field": field or "",
        "reason": reason,
    }
    if index is not None:
        details["index"] = index
    return IngestionWarning(warning, details)


class WarningTally:
    """The warnings of one batch, one per cause (its type and the field at fault): the first one's details with
    ``count``, how many events of the batch it stands for. A batch of a million bad events writes a handful of
    rows, not a million.

    >>> tally = WarningTally()
    >>> for i in range(3):
    ...     tally.add(dropped("missing_distinct_id", {"event": "e"}, index=i, field="distinct_id", reason="none"))
    >>> len(tally), [(w.type, w.details["index"], w.details["count"]) for w in tally.rows()]
    (3, [('missing_distinct_id', 0, 3)])
    """

    def __init__(self, warnings: Iterable[IngestionWarning] = ()) -> None:
        self._first: dict[tuple[str, str], IngestionWarning] = {}
        self._counts: Counter[tuple[str, str]] = Counter()
        for warning in warnings:
            self.add(warning)

    def add(self, warning: IngestionWarning) -> None:
        cause = (warning.type, str(warning.details.get("field", "")))
        self._first.setdefault(cause, warning)
        self._counts[cause] += 1

    def __len__(self) -> int:
        return sum(self._counts.values())

    def rows(self) -> list[IngestionWarning]:
        """One warning per cause, in the order the causes were first met."""
        return [IngestionWarning(w.type, {**w.details, "count": self._counts[c]}) for c, w in self._first.items()]
