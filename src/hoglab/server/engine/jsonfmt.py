"""Split ClickHouse's ``JSONCompact`` output into a :class:`JsonResult` without parsing the rows.

ClickHouse writes ``{"meta": [...], "data": [[...], ...], "rows": N, ..., "statistics": {...}}`` with a fixed
layout: each key starts a line with one tab. A string value can never hold a raw newline (JSON escapes it),
so the first ``\\n\\t"data":`` and the last ``\\n\\t"rows":`` delimit the rows exactly; only the small head and
tail are parsed. The rows go to HTTP as they are, which is what keeps a 10,000-row answer cheap.

>>> head = b'{\\n\\t"meta":\\n\\t[{"name": "a", "type": "UInt8"}],\\n\\n'
>>> r = split_json_compact(head + b'\\t"data":\\n\\t[\\n\\t\\t[1]\\n\\t],\\n\\n\\t"rows": 1\\n}\\n')
>>> r.columns, r.types, r.data, r.rows
(['a'], ['UInt8'], b'[\\n\\t\\t[1]\\n\\t]', 1)

A streamed answer comes as several such documents, one per block the engine wrote; :class:`JsonCompactChunks`
joins their rows into the one array a single answer would have had.
"""

from __future__ import annotations

import orjson

from .base import EngineError, JsonResult

__all__ = ["JsonCompactChunks", "split_json_compact"]

_DATA = b'\n\t"data":'
_ROWS = b'\n\t"rows":'


def split_json_compact(raw: bytes) -> JsonResult:
    """Columns, ClickHouse types, the raw ``data`` array and statistics of one ``JSONCompact`` answer."""
    start = raw.find(_DATA)
    end = raw.rfind(_ROWS)
    if start < 0 or end < start:
        raise EngineError(f"unexpected JSONCompact output: {raw[:200]!r}")
    head = orjson.loads(raw[:start].rstrip().rstrip(b",") + b"}")
    tail = orjson.loads(b"{" + raw[end + 1 :])
    data = raw[start + len(_DATA) : end].strip().rstrip(b",")
    stats = tail.get("statistics") or {}
    meta = head.get("meta") or []
    return JsonResult(
        columns=[str(m["name"]) for m in meta],
        types=[str(m["type"]) for m in meta],
        data=data,
        rows=int(tail.get("rows", 0)),
        elapsed=float(stats.get("elapsed", 0.0)),
        rows_read=int(stats.get("rows_read", 0)),
        bytes_read=int(stats.get("bytes_read", 0)),
    )


class JsonCompactChunks:
    """The ``JSONCompact`` documents of one streamed answer, joined into one :class:`JsonResult` (the rows laid
    out exactly as in a single answer: ``[\\n\\t\\t[..],\\n\\t\\t[..]\\n\\t]``).

    >>> head = b'{\\n\\t"meta":\\n\\t[{"name": "a", "type": "UInt8"}],\\n\\n'
    >>> doc = head + b'\\t"data":\\n\\t[\\n\\t\\t[%d]\\n\\t],\\n\\n\\t"rows": 1\\n}\\n'
    >>> chunks = JsonCompactChunks()
    >>> for n in (1, 2):
    ...     chunks.add(doc % n)
    >>> chunks.result().data
    b'[\\n\\t\\t[1],\\n\\t\\t[2]\\n\\t]'
    """

    def __init__(self) -> None:
        self._first: JsonResult | None = None
        self._rows: list[bytes] = []
        self._count = 0

    def add(self, raw: bytes) -> None:
        """One document; only the first one's head is parsed (every document repeats it)."""
        if self._first is None:
            self._first = split_json_compact(raw)
            data, rows = self._first.data, self._first.rows
        else:
            start = raw.find(_DATA)
            end = raw.rfind(_ROWS)
            if start < 0 or end < start:
                raise EngineError(f"unexpected JSONCompact output: {raw[:200]!r}")
            data = raw[start + len(_DATA) : end].strip().rstrip(b",")
            rows = int(orjson.loads(b"{" + raw[end + 1 :]).get("rows", 0))
        inner = data[1:-3] if data.endswith(b"\n\t]") else data[1:-1]  # without "[" and "\n\t]"
        if inner.strip():
            self._rows.append(inner)
        self._count += rows

    def clear(self) -> None:
        """Drop the rows gathered so far (a refused answer's)."""
        self._rows = []

    def result(self) -> JsonResult:
        """The joined answer (a statement always writes at least one document, its head, even without rows)."""
        first = self._first
        if first is None:
            raise EngineError("the engine wrote no answer")
        # Everything in the first document (the usual case): its rows as they are.
        data = first.data if self._count == first.rows else b"[" + b",".join(self._rows) + b"\n\t]"
        self._rows = []
        return JsonResult(first.columns, first.types, data, self._count, first.elapsed, first.rows_read,
                          first.bytes_read)  # fmt: skip
