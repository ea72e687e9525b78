"""The two errors of writing HogQL: :class:`HogQLError`, a HogQL text refused (with its position), and
:class:`TranslationFailed`, a field of a PostHog object that can't be written as HogQL (with its ``attr``).

The service answers both as 400s: ``query/failures.py`` says a ``HogQLError`` with its line and column, and
``server/errors.py`` ``ValidationFailed.from_translation`` gives a ``TranslationFailed`` the body the service gives
its own refusals (``{type: validation_error, code, detail, attr}``).

>>> err = HogQLError("Function 'file' is not allowed", start=14, end=18, query="SELECT * FROM file('x')")
>>> str(err)
"Function 'file' is not allowed (line 1, column 15)"
>>> (err.line, err.column)
(1, 15)
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from hoglab.errors import HoglabError

__all__ = ["HogQLError", "TranslationFailed", "hint_quoted_string", "node_span"]


class HogQLError(HoglabError, ValueError):
    """A query hoglab refuses or cannot compile: the Query endpoint answers it with a 400.

    ``start``/``end`` are character offsets into the HogQL text (``end`` exclusive) or ``None`` when the
    problem has no single place (an empty query, a limit on the whole statement). ``line``/``column`` are
    1-based and derived from ``start``. ``internal`` marks a failure of the compiler itself (a bug) that was
    turned into a HogQLError so no other exception type reaches the endpoint; tests assert it never happens.
    ``quoted_name`` is an unknown name that was written quoted: the compiler, which has the text, says that
    strings take single quotes when the quotes were double (:func:`hint_quoted_string`).
    """

    def __init__(
        self,
        message: str,
        *,
        start: int | None = None,
        end: int | None = None,
        query: str | None = None,
        internal: bool = False,
    ) -> None:
        self.message = message
        self.start = start
        self.end = end if end is not None or start is None else start + 1
        self.internal = internal
        self.quoted_name: str | None = None
        self.line: int | None = None
        self.column: int | None = None
        if start is not None and query is not None:
            self.locate(query)
        super().__init__(str(self))

    def locate(self, query: str) -> HogQLError:
        """Fill ``line``/``column`` from ``start`` (clamped into the text)."""
        if self.start is None:
            return self
        start = max(0, min(self.start, len(query)))
        self.line = query.count("\n", 0, start) + 1
        self.column = start - (query.rfind("\n", 0, start) + 1) + 1
        self.args = (str(self),)
        return self

    def __str__(self) -> str:
        if self.line is not None and self.column is not None:
            return f"{self.message} (line {self.line}, column {self.column})"
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-friendly data, e.g. for an API error body."""
        return {
            "message": self.message,
            "start": self.start,
            "end": self.end,
            "line": self.line,
            "column": self.column,
        }


class TranslationFailed(HoglabError):
    """A field of a PostHog object (a property filter, a date, a metric, an action's step) that can't be written as
    HogQL: ``detail`` says why, ``attr`` names the field (``series.0.properties.1``), ``code`` is the error code
    when it is not the default ``invalid_input``.

    >>> str(TranslationFailed("Unsupported property operator 'x'.", attr="properties.0"))
    "Unsupported property operator 'x'."
    """

    def __init__(self, detail: str, *, attr: str | None = None, code: str | None = None) -> None:
        self.detail = detail
        self.attr = attr
        self.code = code
        super().__init__(detail)


def node_span(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """Character span of a parsed node: its own position, else the widest span of its positioned parts.

    sqlglot records positions on identifiers, function names and some literals only, so a node without one
    borrows them from its descendants.
    """
    if node is None:
        return None, None
    meta = node._meta or {}
    if meta.get("start") is not None and meta.get("end") is not None:
        return int(meta["start"]), int(meta["end"]) + 1
    starts: list[int] = []
    ends: list[int] = []
    for child in node.walk():
        cmeta = child._meta
        if cmeta and cmeta.get("start") is not None and cmeta.get("end") is not None:
            starts.append(int(cmeta["start"]))
            ends.append(int(cmeta["end"]) + 1)
    if not starts:
        return None, None
    return min(starts), max(ends)


def hint_quoted_string(error: HogQLError, query: str) -> HogQLError:
    """Add "strings take single quotes" to an unknown name written in double quotes (``"signup"``), which HogQL,
    as ClickHouse, reads as a name; the error itself when it is not one.

    >>> e = HogQLError("Unknown field 'signup' (reading events)", start=41, end=49)
    >>> e.quoted_name = "signup"
    >>> hint_quoted_string(e, 'select count() from events where event = "signup"').message
    "Unknown field 'signup' (reading events); strings take single quotes: 'signup'"
    """
    name = error.quoted_name
    if name is None or error.start is None or query[error.start : error.start + 1] != '"':
        return error
    literal = "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
    error.message += f"; strings take single quotes: {literal}"
    error.quoted_name = None  # said once, even if the error is located again
    return error
