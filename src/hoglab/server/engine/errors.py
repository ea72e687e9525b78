"""ClickHouse error messages → the Engine's error classes, the same for chDB and a ClickHouse server.

Both engines report ``Code: 62. DB::Exception: <message> (SYNTAX_ERROR)`` (a server adds ``(version ...)``).
The code decides the class; the message is kept, minus the code prefix and the name suffix, so the user sees
what ClickHouse said (``Unknown identifier ...``) in a 400.

>>> e = error_from_message("Code: 159. DB::Exception: Timeout exceeded: elapsed 1000.0 ms. (TIMEOUT_EXCEEDED)")
>>> type(e).__name__, e.code, e.name, e.message
('StatementTimedOut', 159, 'TIMEOUT_EXCEEDED', 'Timeout exceeded: elapsed 1000.0 ms.')
"""

from __future__ import annotations

import re

from .base import EngineError, MemoryLimitExceeded, QueryCancelled, StatementFailed, StatementTimedOut, TooManyRows

__all__ = ["EngineInUse", "error_from_message"]


class EngineInUse(EngineError):
    """The data directory is owned by another process, or this process already owns a different one."""


_BY_CODE: dict[int, type[EngineError]] = {
    159: StatementTimedOut,  # TIMEOUT_EXCEEDED
    241: MemoryLimitExceeded,  # MEMORY_LIMIT_EXCEEDED
    776: MemoryLimitExceeded,  # RESOURCE_LIMIT_EXCEEDED (a workload's max_memory)
    777: MemoryLimitExceeded,  # MEMORY_RESERVATION_KILLED (evicted to keep its workload under max_memory)
    158: TooManyRows,  # TOO_MANY_ROWS (max_rows_to_read)
    307: TooManyRows,  # TOO_MANY_BYTES
    396: TooManyRows,  # TOO_MANY_ROWS_OR_BYTES (max_result_rows)
    394: QueryCancelled,  # QUERY_WAS_CANCELLED
}

# Failures of the engine itself, not of the statement: these stay plain EngineError (a 500 upstream).
_SERVER_SIDE = {
    3,  # UNEXPECTED_END_OF_FILE
    49,  # LOGICAL_ERROR
    74,  # CANNOT_READ_FROM_FILE_DESCRIPTOR
    75,  # CANNOT_WRITE_TO_FILE_DESCRIPTOR
    76,  # CANNOT_OPEN_FILE
    173,  # CANNOT_ALLOCATE_MEMORY
    202,  # TOO_MANY_SIMULTANEOUS_QUERIES
    209,  # SOCKET_TIMEOUT
    210,  # NETWORK_ERROR
    236,  # ABORTED
    243,  # NOT_ENOUGH_SPACE
    252,  # TOO_MANY_PARTS
    999,  # KEEPER_EXCEPTION
    1000,  # POCO_EXCEPTION
    1001,  # STD_EXCEPTION
}

_CODE = re.compile(r"Code:\s*(\d+)\.\s*(?:DB::Exception:\s*)?", re.S)
_NAME_SUFFIX = re.compile(r"\s*\(([A-Z][A-Z0-9_]+)\)\s*(?:\(version [^)]*\)\s*)?(?:\(for url [^)]*\)\s*)?\.?\s*$")


def error_from_message(text: str) -> EngineError:
    """Classify an engine error message (chDB's exception text or a server's error body)."""
    match = _CODE.search(text)
    if match is None:
        return EngineError(text.strip() or "engine error")
    code = int(match.group(1))
    message = text[match.end() :].strip()
    # A server's error body can carry a stack trace after the first lines; the statement's problem is above it.
    message = message.split("\nStack trace", 1)[0].strip()
    name = None
    suffix = _NAME_SUFFIX.search(message)
    if suffix:
        name = suffix.group(1)
        message = message[: suffix.start()].rstrip()
    cls = _BY_CODE.get(code) or (EngineError if code in _SERVER_SIDE else StatementFailed)
    return cls(message, code=code, name=name)
