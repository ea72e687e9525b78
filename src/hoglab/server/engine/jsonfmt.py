"""Split ClickHouse's ``JSONCompact`` output into a :class:`JsonResult` without parsing the rows.

ClickHouse writes ``{"meta": [...], "data": [[...], ...], "rows": N, ..., "statistics": {...}}`` with a fixed
layout: each key starts a line with one tab. A string value can never hold a raw newline (JSON escapes it),
so the first ``\\n\\t"data":`` and the last ``\\n\\t"rows":`` delimit the rows exactly; only the small head and
tail are parsed. The rows go to HTTP as they are, which is what keeps a 10,000-row answer cheap.

>>> head = b'{\\n\\t"meta":\\n\\t[{"name": "a", "type": "UInt8"}],\\n\\n'
>>> r = split_json_compact(head + b'\\t"data":\\n\\t[\\n\\t\\t[1]\\n\\t],\\n\\n\\t"rows": 1\\n}\\n')
>>> r.columns, r.types, r.data, r.rows
(['a'], ['UInt8'], b'[\\n\\t\\t[1]\\n\\t]', 1)
"""

from __future__ import annotations

import orjson

from .base import EngineError, JsonResult

__all__ = ["split_json_compact"]

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
