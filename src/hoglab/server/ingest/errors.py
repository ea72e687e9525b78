"""Errors of ingestion that are the sender's mistake: each becomes a 400 and nothing is stored."""

from __future__ import annotations

from hoglab.errors import HoglabError

__all__ = ["MAX_LISTED_PROBLEMS", "IngestError", "LoadError"]

MAX_LISTED_PROBLEMS = 20


class IngestError(HoglabError, ValueError):
    """A capture payload that cannot be stored. ``attr`` points at the field (``batch__3__distinct_id``)."""

    def __init__(self, detail: str, *, attr: str | None = None, code: str = "invalid_payload") -> None:
        super().__init__(detail)
        self.detail = detail
        self.attr = attr
        self.code = code


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
