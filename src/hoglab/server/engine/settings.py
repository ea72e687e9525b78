"""Every ClickHouse setting the service sends, in one place, and how they are written into SQL.

User-facing reads (what the HogQL compiler and the query runners send) always run with PostHog's guard rails:
``readonly=2`` (no writes, but settings may still be changed per query, which ``readonly=1`` forbids),
a time limit, a memory limit, a result-row limit and ``join_use_nulls=1`` (a LEFT JOIN miss is NULL, not the
type's default; engine-notes §4/§6). ``log_comment`` carries the query's tag so ``cancel(tag)`` can find it.
Internal statements (DDL, inserts, person-state loads) use :func:`internal_settings` instead.

>>> s = user_query_settings(QueryLimits(max_execution_time=5), tag="q-1")
>>> s["readonly"], s["max_execution_time"], s["log_comment"]
(2, 5, 'q-1')
>>> settings_clause({"readonly": 2, "log_comment": "it's"})
"SETTINGS readonly=2, log_comment='it\\\\'s'"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JSON_OUTPUT_SETTINGS",
    "QueryLimits",
    "internal_settings",
    "quote_identifier",
    "quote_string",
    "settings_clause",
    "spill_settings",
    "user_query_settings",
]

# Results are handed to HTTP as ClickHouse wrote them (engine/jsonfmt.py), so the output format settings are
# what the Query API answers with: 64-bit integers as numbers (PostHog's JSON has them unquoted), datetimes in
# ISO 8601 with a Z, NaN/inf as null (JSON has no NaN), named tuples as arrays (JSONCompact's row shape).
JSON_OUTPUT_SETTINGS: dict[str, Any] = {
    "output_format_json_quote_64bit_integers": 0,
    "output_format_json_quote_64bit_floats": 0,
    "output_format_json_quote_denormals": 0,
    "output_format_json_quote_decimals": 0,
    "date_time_output_format": "iso",
    "output_format_json_named_tuples_as_objects": 0,
    "output_format_write_statistics": 1,
}

# Settings that a caller may not loosen for a user query.
_FORCED = {"readonly": 2}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class QueryLimits:
    """Guard rails for user queries; 0 means "no limit", as in ClickHouse.

    ``max_result_rows`` is a backstop: the runners put a LIMIT on every query (the Query API caps rows at
    10,000), so hitting this means a runner forgot, and ``throw`` makes that loud instead of truncating silently.
    """

    max_execution_time: int = 60
    max_memory_usage: int = 4 * 1024**3
    max_result_rows: int = 1_000_000
    result_overflow_mode: str = "throw"


def spill_settings(max_memory_usage: int) -> dict[str, int]:
    """GROUP BY and ORDER BY write to disk past half the memory limit, so a big aggregation (a funnel's
    per-person step arrays over tens of millions of events) slows down instead of failing. With no limit (0)
    they spill past 4 GiB.

    >>> spill_settings(4 * 1024**3)["max_bytes_before_external_group_by"] == 2 * 1024**3
    True
    """
    threshold = (max_memory_usage or 8 * 1024**3) // 2
    return {"max_bytes_before_external_group_by": threshold, "max_bytes_before_external_sort": threshold}


def user_query_settings(
    limits: QueryLimits, *, tag: str | None = None, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The settings of one user-facing read: limits, PostHog's semantics, the cancel tag, then ``overrides``.

    ``readonly`` stays 2 whatever ``overrides`` say: a read path must never write.
    """
    settings: dict[str, Any] = {
        "readonly": 2,
        "max_execution_time": limits.max_execution_time,
        "max_memory_usage": limits.max_memory_usage,
        "max_result_rows": limits.max_result_rows,
        "result_overflow_mode": limits.result_overflow_mode,
        "join_use_nulls": 1,
        **spill_settings(limits.max_memory_usage),
    }
    if tag:
        settings["log_comment"] = tag
    if overrides:
        settings.update(overrides)
    settings.update(_FORCED)
    return settings


def internal_settings(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Settings for the service's own statements (DDL, inserts, loads): no readonly, no result cap."""
    settings: dict[str, Any] = {"join_use_nulls": 1}
    if overrides:
        settings.update(overrides)
    return settings


def quote_string(value: str) -> str:
    """A ClickHouse string literal (backslash and quote escaped), safe for any text.

    >>> quote_string("a'b\\\\c")
    "'a\\\\'b\\\\\\\\c'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_identifier(name: str) -> str:
    """A ClickHouse name in backticks (backslash and backtick escaped), safe for any text.

    >>> quote_identifier("mat_$browser"), quote_identifier("a`b")
    ('`mat_$browser`', '`a\\\\`b`')
    """
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    return quote_string(str(value))


def settings_clause(settings: Mapping[str, Any]) -> str:
    """``SETTINGS a=1, b='x'`` for the end of a statement (empty string for no settings).

    Names are checked to be identifiers, so a setting name can never smuggle SQL in.
    """
    parts = []
    for name, value in settings.items():
        if not _NAME.match(name):
            raise ValueError(f"not a setting name: {name!r}")
        parts.append(f"{name}={_literal(value)}")
    return ("SETTINGS " + ", ".join(parts)) if parts else ""
