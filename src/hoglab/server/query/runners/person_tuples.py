"""The person columns of ``ActorsQuery`` and ``EventsQuery``: each is one HogQL tuple, decoded here, in one place.

A runner selects a person as a tuple (one engine column, so a row stays a flat array) and turns the tuple back
into PostHog's person object: its values named by the tuple's keys, ``properties`` (JSON text in the engine)
parsed, with text that is not JSON read as ``{}``, and ``is_identified`` a bool. The two kinds select different
persons (an actor row is the person itself; an event row is the event's person with the event's distinct id), so
each has its own :class:`PersonTuple`, and both decode with the same rule.

>>> EVENT_PERSON.decode(["0190-…", "2025-01-01T00:00:00Z", '{"plan": "pro"}', "user-1"])
{'uuid': '0190-…', 'created_at': '2025-01-01T00:00:00Z', 'properties': {'plan': 'pro'}, 'distinct_id': 'user-1'}
>>> ACTOR_PERSON.decode(["0190-…", ["user-1"], "not json", "2025-01-01T00:00:00Z", 0])["properties"]
{}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["ACTOR_DISPLAY_NAME", "ACTOR_PERSON", "EVENT_DISPLAY_NAME", "EVENT_PERSON", "PersonTuple"]


@dataclass(frozen=True, slots=True)
class PersonTuple:
    """A person selected as one tuple column: ``sql`` is its HogQL, ``keys`` name its values, in order."""

    sql: str
    keys: tuple[str, ...]

    def decode(self, value: Any) -> Any:
        """The person object of one engine value (a JSON array); anything else is returned as it came.

        >>> ACTOR_DISPLAY_NAME.decode(["Alice", "0190-…"])
        {'display_name': 'Alice', 'id': '0190-…'}
        >>> ACTOR_DISPLAY_NAME.decode(None) is None
        True
        """
        if not isinstance(value, list) or len(value) != len(self.keys):
            return value
        person = dict(zip(self.keys, value, strict=True))
        if "properties" in person:
            person["properties"] = _properties(person["properties"])
        if "is_identified" in person:
            person["is_identified"] = bool(person["is_identified"])
        return person


def _properties(text: str | None) -> Any:
    try:
        return orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return {}


# ActorsQuery's ``person`` (also ``actor``, the name PostHog's persons modal asks for), over the persons table
# with its first 101 distinct ids as ``pdi_ids``.
ACTOR_PERSON = PersonTuple(
    "tuple(toString(id), pdi_ids, properties, created_at, is_identified)",
    ("id", "distinct_ids", "properties", "created_at", "is_identified"),
)
# EventsQuery's ``person``: the event's person, and the distinct id the event was sent with.
EVENT_PERSON = PersonTuple(
    "tuple(toString(person_id), person.created_at, person.properties, distinct_id)",
    ("uuid", "created_at", "properties", "distinct_id"),
)
# ``person_display_name``: the tables' virtual field (hogql/tables.py) is already a tuple; only the keys differ.
ACTOR_DISPLAY_NAME = PersonTuple("person_display_name", ("display_name", "id"))
EVENT_DISPLAY_NAME = PersonTuple("person_display_name", ("display_name", "id", "distinct_id"))

