"""Errors of ingestion that are the sender's mistake.

A whole request or file that cannot be read is an :class:`IngestError` (a 400, nothing stored). One event of a
capture batch that cannot be stored is an :class:`EventDropped`: capture drops that event alone and records the
ingestion warning it names (``warnings.py``); a caller that wants all or nothing (``normalize_batch``) gets it as
an ``IngestError`` like any other.
"""

from __future__ import annotations

from typing import Any

from hoglab.errors import HoglabError

__all__ = ["MAX_LISTED_PROBLEMS", "EventDropped", "IngestError", "LoadError"]

MAX_LISTED_PROBLEMS = 20


class IngestError(HoglabError, ValueError):
    """A capture payload that cannot be stored. ``attr`` points at the field (``batch__3__distinct_id``)."""

    def __init__(self, detail: str, *, attr: str | None = None, code: str = "invalid_payload") -> None:
        super().__init__(detail)
        self.detail = detail
        self.attr = attr
        self.code = code


class EventDropped(IngestError):
    """One event capture cannot store: ``warning`` is the ingestion warning's type (PostHog's name where it has
    one), ``details`` its details.

    >>> e = EventDropped("Invalid payload: no name.", attr="event", warning="missing_event_name", details={})
    >>> (e.code, e.warning)
    ('invalid_payload', 'missing_event_name')
    """

    def __init__(self, detail: str, *, attr: str | None, warning: str, details: dict[str, Any]) -> None:
        super().__init__(detail, attr=attr)
        self.warning = warning
        self.details = details


class LoadError(IngestError):
    """A file with bad rows: ``problems`` are the first ``(line, message)`` pairs, ``count`` how many in all.

    >>> str(LoadError("events.jsonl", [(3, 'missing "event"')], 1))
    'events.jsonl: 1 bad row, nothing was loaded:\\n  line 3: missing "event"'
    """

    def __init__(self, source: str, problems: list[tuple[int, str]], count: int) -> None:
        self.source = source
        self.problems = problems
        self.count = count
        lines = [f"  line {line}: {message}" for line, message in problems]
        if count > len(problems):
            lines.append(f"  and {count - len(problems)} more")
        noun = "bad row" if count == 1 else "bad rows"
        super().__init__(f"{source}: {count} {noun}, nothing was loaded:\n" + "\n".join(lines), code="invalid_file")
