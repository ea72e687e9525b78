"""The one place a pull reads the remote's answers, each checked before anything is stored.

Each answer is checked against the shape its API answers there, and each field against what it holds.

A remote may be PostHog, hoglab, or something else at that address (a proxy's HTML page, a captive portal, a
broken build). Whatever it answers, the pull either gets the rows and objects it asked for, typed as the mirror
stores them, or stops with a :class:`~hoglab.errors.RemoteAnswerError` that names the endpoint, the field, what
was expected and what came, before writing anything of that answer:

* :func:`decode` reads an answer as JSON (an empty body, an HTML page or JSON cut short are said as such);
* :class:`Shape` is what one kind of object holds: the check of each field (:func:`text`, :func:`moment`,
  :func:`uuid_text`, :func:`count`, :func:`json_object`...), which also gives the value as the mirror stores it;
* :func:`table` reads a HogQL answer (``results`` rows under ``columns``) as records of a shape;
  :func:`listing` reads a page of a REST listing (``{count, next, previous, results}``) for
  :meth:`hoglab.Client.paginate`; :func:`objects` reads its items as records of a shape.

A new kind of object the pull copies is a new :class:`Shape` here, read through :func:`objects` or :func:`table`.

>>> EVENT.read({"uuid": "0190b2a4-8c54-7f2e-9d0a-3c1e5b7a9f10", "event": "$pageview", "distinct_id": "u1",
...             "person_id": "0190b2a4-8c54-7f2e-9d0a-3c1e5b7a9f11", "timestamp": "2026-01-02T03:04:05Z",
...             "properties": '{"$browser": "Chrome"}', "elements_chain": "", "created_at": None})["timestamp"]
datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
>>> try:
...     COUNT.read({"n": "lots"}, "results[0]")
... except RemoteAnswerError as exc:
...     print(exc)
results[0].n: expected a count (a whole number from 0), got 'lots'
"""

from __future__ import annotations

import json
import re
import uuid as uuid_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from ..errors import Description, RemoteAnswerError, shown

__all__ = [
    "ACTION",
    "COHORT",
    "COUNT",
    "DISTINCT_ID",
    "EVENT",
    "EXPERIMENT",
    "FLAG",
    "GROUP",
    "GROUP_TYPE",
    "HOLDOUT",
    "PERSON",
    "PROJECT",
    "SAVED_METRIC",
    "Shape",
    "boolean",
    "count",
    "decode",
    "json_object",
    "listing",
    "moment",
    "nullable",
    "objects",
    "table",
    "text",
    "uuid_text",
    "whole_number",
]

Check = Callable[[Any], Any]
# ClickHouse's DateTime64 holds 1900-01-01 to 2299-12-31; a moment outside cannot be stored as the remote meant it.
_EARLIEST, _LATEST = datetime(1900, 1, 1, tzinfo=UTC), datetime(2300, 1, 1, tzinfo=UTC)
_ISO_EXAMPLE = "an ISO 8601 date-time text (such as '2026-01-02T03:04:05Z')"
# A UUID as ClickHouse's toString writes it: checked by one match, the common case of every row (two per event).
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


MISSING: Any = Description("nothing (the field is missing)")


def _refuse(expected: str, got: Any) -> RemoteAnswerError:
    return RemoteAnswerError(None, expected, got)


def _answer(expected: str, described: str) -> RemoteAnswerError:
    return RemoteAnswerError(None, expected, Description(described))


def _where(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# -- answers --------------------------------------------------------------------------------------------------------


def decode(response: httpx.Response) -> Any:
    """The answer's JSON; what came instead (nothing, an HTML page, JSON cut short) said as a
    :class:`~hoglab.errors.RemoteAnswerError` (without its endpoint: the caller knows it).

    >>> decode(httpx.Response(200, text='{"results": [1, 2'))
    Traceback (most recent call last):
    ...
    hoglab.errors.RemoteAnswerError: expected a JSON answer, got JSON cut short after 17 bytes: '{"results": [1, 2'
    """
    from ..frames.columns import json_loads

    content = response.content
    if not content.strip():
        raise _answer("a JSON answer", f"an empty body (HTTP {response.status_code})")
    try:
        return json_loads()(content)
    except (ValueError, TypeError, RecursionError):
        pass
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    head = content[:300].decode("utf-8", "replace")
    if kind == "text/html" or head.lstrip().startswith("<"):
        raise _answer("a JSON answer", f"an HTML page ({kind or 'no content type'}): {shown(head.strip())}") from None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise _answer("a JSON answer", f"{len(content):,} bytes that are not UTF-8 text") from None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise _answer("a JSON answer", f"JSON cut short after {len(content):,} bytes: {shown(head)}") from None
        raise _answer("a JSON answer", f"invalid JSON ({exc.msg} at byte {exc.pos:,}): {shown(head)}") from None
    except RecursionError:
        raise _answer("a JSON answer", "JSON nested too deeply to read") from None
    raise _answer("a JSON answer", shown(head))  # orjson refused what json reads (e.g. NaN): not PostHog's JSON


# -- fields ----------------------------------------------------------------------------------------------------------


def text(value: Any) -> str:
    """Text, as it is."""
    if not isinstance(value, str):
        raise _refuse("text", value)
    return value


def name_text(value: Any) -> str:
    """Text that is not empty (a key, an event name)."""
    if not isinstance(value, str) or not value:
        raise _refuse("non-empty text", value)
    return value


def nullable(check: Check, default: Any = None) -> Check:
    """``check``, or ``default`` for ``null``."""

    def read(value: Any) -> Any:
        return default if value is None else check(value)

    return read


def whole_number(value: Any) -> int:
    """A whole number (an id): an integer, not a boolean nor a fraction."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse("a whole number", value)
    return value


def count(value: Any) -> int:
    """A count: a whole number from 0, or its decimal text (ClickHouse quotes 64-bit integers in JSON)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refuse("a count (a whole number from 0)", value)
    return value


def boolean(value: Any) -> bool:
    """``true``/``false``, or ClickHouse's ``1``/``0``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _refuse("true or false", value)


def uuid_text(value: Any) -> str:
    """A UUID's text, in its canonical form."""
    if isinstance(value, str):
        if _CANONICAL_UUID.fullmatch(value):
            return value
        try:
            return str(uuid_module.UUID(value))
        except ValueError:
            pass
    raise _refuse("a UUID", value)


def moment(value: Any) -> datetime:
    """An ISO 8601 date-time text (PostHog's JSON), as an aware UTC datetime.

    Text without an offset is UTC. A datetime passes too: Parquet export files hold them; JSON never does.
    """
    if isinstance(value, datetime):
        parsed = value
    elif not isinstance(value, str):
        raise _refuse(_ISO_EXAMPLE, value)
    else:
        try:
            parsed = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
        except ValueError as exc:
            reason = str(exc) if "must be in" in str(exc) else "not a date-time"
            raise _refuse(f"{_ISO_EXAMPLE}; {reason}", value) from None
    parsed = parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if not _EARLIEST <= parsed < _LATEST:
        raise _refuse(f"{_ISO_EXAMPLE} between the years 1900 and 2299", value)
    return parsed


def json_object(value: Any) -> Any:
    """A JSON object, or its JSON text (as ClickHouse holds properties); kept as given, ``null`` as ``{}``."""
    if value is None or isinstance(value, dict):
        return value or {}
    if isinstance(value, str):
        from ..frames.columns import json_loads

        try:
            decoded = json_loads()(value)
        except (ValueError, RecursionError):
            raise _refuse("a JSON object's text", value) from None
        if isinstance(decoded, dict):
            return value
    raise _refuse("a JSON object or its text", value)


def group_index(value: Any) -> int:
    """A group type index: a whole number from 0 to 4 (a project has at most five group types)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4:
        raise _refuse("a group type index (a whole number from 0 to 4)", value)
    return value


def object_of(value: Any) -> dict[str, Any]:
    """A JSON object (``null`` as ``{}``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _refuse("a JSON object", value)
    return value


def list_of(value: Any) -> list[Any]:
    """A JSON list (``null`` as ``[]``)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _refuse("a list", value)
    return value


# -- objects ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What one kind of object holds: each field the mirror reads, and its check.

    ``fields`` maps each field to its check (which also gives the value as stored); those in ``optional`` may be
    absent. Fields not listed are kept as they are.
    """

    kind: str
    fields: Mapping[str, Check]
    optional: frozenset[str] = field(default_factory=frozenset)

    def read(self, item: Any, where: str = "", *, own: bool = False) -> dict[str, Any]:
        """``item`` checked field by field; a :class:`~hoglab.errors.RemoteAnswerError` at ``where`` otherwise.

        ``own``: the item is the caller's to change (a row just made), so it is not copied.
        """
        if not isinstance(item, dict):
            raise RemoteAnswerError(where or None, f"{self.kind} as a JSON object", item)
        record = item if own else item.copy()
        for name, check in self.fields.items():
            if name not in item:
                if name in self.optional:
                    continue
                raise RemoteAnswerError(_where(where, name), f"the {self.kind}'s {name!r}", MISSING)
            try:
                record[name] = check(item[name])
            except RemoteAnswerError as exc:
                raise RemoteAnswerError(_where(where, name), exc.expected, exc.got) from None
        return record


def table(answer: Any, shape: Shape, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of a HogQL answer (``{"results": [[...]], "columns": [...]}``) as records of ``shape``.

    The answer must have at least ``columns``; each row has one value per column.
    """
    if not isinstance(answer, dict):
        raise _refuse("a query answer (a JSON object with 'results' and 'columns')", answer)
    results, names = answer.get("results", MISSING), answer.get("columns", MISSING)
    if not isinstance(results, list):
        raise RemoteAnswerError("results", "the query's rows (a list of lists)", results)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RemoteAnswerError("columns", "the query's column names (a list of text)", names)
    absent = [c for c in columns if c not in names]
    if absent:
        raise RemoteAnswerError("columns", f"the columns {', '.join(columns)}", names)
    rows = []
    for i, row in enumerate(results):
        if not isinstance(row, list) or len(row) != len(names):
            raise RemoteAnswerError(f"results[{i}]", f"a row of {len(names)} values, one per column", row)
        rows.append(shape.read(dict(zip(names, row, strict=True)), f"results[{i}]", own=True))
    return rows


def listing(response: httpx.Response) -> dict[str, Any]:
    """A page of a REST listing (``{count, next, previous, results}``, or a bare list), checked, for
    :meth:`hoglab.Client.paginate`."""
    body = decode(response)
    if isinstance(body, list):
        return {"count": len(body), "next": None, "results": body}
    if not isinstance(body, dict):
        raise _refuse("a listing (a JSON object with 'results')", body)
    page = dict(body)
    if not isinstance(body.get("results", MISSING), list):
        raise RemoteAnswerError("results", "the listing's items (a list)", body.get("results", MISSING))
    for name, check in (("count", count), ("next", text), ("previous", text)):
        if body.get(name) is not None:
            try:
                check(body[name])
            except RemoteAnswerError as exc:
                raise RemoteAnswerError(name, exc.expected, exc.got) from None
    page.setdefault("count", len(body["results"]))
    return page


def objects(items: Sequence[Any], shape: Shape) -> list[dict[str, Any]]:
    """The items of a listing as records of ``shape``; each remote id once."""
    records = [shape.read(item, f"results[{i}]") for i, item in enumerate(items)]
    seen: set[Any] = set()
    for i, record in enumerate(records):
        if "id" in shape.fields:
            if record["id"] in seen:
                raise RemoteAnswerError(f"results[{i}].id", f"each {shape.kind} once", record["id"])
            seen.add(record["id"])
    return records


# -- what a pull reads -----------------------------------------------------------------------------------------------

PROJECT = Shape("project", {"id": whole_number, "name": nullable(text, ""), "timezone": name_text},
                optional=frozenset({"name"}))  # fmt: skip
COUNT = Shape("count", {"n": count})
EVENT = Shape(
    "event",
    {
        "uuid": uuid_text,
        "event": name_text,
        "distinct_id": text,
        "person_id": uuid_text,
        "timestamp": moment,
        "properties": json_object,
        "elements_chain": nullable(text, ""),
        "created_at": nullable(moment),
    },
    optional=frozenset({"elements_chain", "created_at"}),
)
PERSON = Shape("person", {"id": uuid_text, "created_at": moment, "properties": json_object,
                          "is_identified": nullable(boolean, False)})  # fmt: skip
DISTINCT_ID = Shape("distinct id", {"distinct_id": name_text, "person_id": uuid_text})
FLAG = Shape(
    "feature flag",
    {"id": whole_number, "key": name_text, "name": nullable(text, ""), "filters": object_of,
     "active": nullable(boolean, True), "deleted": nullable(boolean, False),
     "ensure_experience_continuity": nullable(boolean, False)},
    optional=frozenset({"name", "active", "deleted", "ensure_experience_continuity"}),
)  # fmt: skip
COHORT = Shape(
    "cohort",
    {"id": whole_number, "name": nullable(text, ""), "description": nullable(text, ""), "filters": object_of,
     "is_static": nullable(boolean, False), "deleted": nullable(boolean, False)},
    optional=frozenset({"name", "description", "filters", "is_static", "deleted"}),
)  # fmt: skip
ACTION = Shape(
    "action",
    {"id": whole_number, "name": nullable(text), "description": nullable(text, ""), "tags": list_of,
     "steps": list_of, "deleted": nullable(boolean, False)},
    optional=frozenset({"name", "description", "tags", "steps", "deleted"}),
)  # fmt: skip
EXPERIMENT = Shape(
    "experiment",
    {"id": whole_number, "name": name_text, "feature_flag_key": name_text, "start_date": nullable(moment),
     "end_date": nullable(moment), "archived": nullable(boolean, False), "parameters": nullable(object_of),
     "filters": nullable(object_of), "metrics": nullable(list_of), "metrics_secondary": nullable(list_of),
     "secondary_metrics": nullable(list_of), "holdout_id": nullable(whole_number),
     "saved_metrics": nullable(list_of)},
    optional=frozenset({"start_date", "end_date", "archived", "parameters", "filters", "metrics",
                        "metrics_secondary", "secondary_metrics", "holdout_id", "saved_metrics"}),
)  # fmt: skip
HOLDOUT = Shape(
    "experiment holdout",
    {"id": whole_number, "name": nullable(text, ""), "description": nullable(text), "filters": nullable(list_of)},
    optional=frozenset({"name", "description", "filters"}),
)  # fmt: skip
SAVED_METRIC = Shape(
    "saved metric",
    {"id": whole_number, "name": nullable(text, ""), "description": nullable(text), "query": object_of,
     "tags": nullable(list_of)},
    optional=frozenset({"name", "description", "tags"}),
)  # fmt: skip
GROUP_TYPE = Shape(
    "group type",
    {"group_type_index": group_index, "group_type": name_text, "name_singular": nullable(text),
     "name_plural": nullable(text), "created_at": nullable(moment), "default_columns": nullable(list_of)},
    optional=frozenset({"name_singular", "name_plural", "created_at", "default_columns"}),
)  # fmt: skip
GROUP = Shape("group", {"k": name_text, "index": group_index, "key": name_text, "created_at": nullable(moment),
                        "properties": json_object}, optional=frozenset({"created_at"}))  # fmt: skip
