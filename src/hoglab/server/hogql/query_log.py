"""HogQL's ``query_log`` table: the caller's own recent queries, given to the compiler as rows.

The rows never come from a shared table: the runner passes the records of the calling project only
(``query/query_log.py``), and the view is a literal array of them, so the team guard holds by construction and
``guard.py`` sees no table to check.

>>> [f for f in QUERY_LOG_FIELDS][:3]
['query_id', 'kind', 'query']
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from hoglab.translate.values import call, value_to_node

__all__ = ["QUERY_LOG_FIELDS", "QUERY_LOG_UNRECORDED", "query_log_view"]

# name -> ClickHouse type of the stored value (timestamps are converted to the project's zone in the view)
_STORED: dict[str, str] = {
    "query_id": "String",
    "kind": "String",
    "query": "String",
    "name": "String",
    "query_start_time": "DateTime64(6, 'UTC')",
    "query_duration_ms": "Int64",
    "status": "String",
    "exception_message": "String",
    "result_bytes": "Int64",
    "result_rows": "Int64",
}
QUERY_LOG_FIELDS: tuple[str, ...] = (
    *_STORED, "hogql_name", "RealTimeMicroseconds", "event_time", "event_date", "endpoint",
    "is_personal_api_key_request",
)  # fmt: skip
"""Fields of ``query_log`` (PostHog's names where it has them)."""

_ENGINE = "hoglab's engine (chDB) does not report it per query"
QUERY_LOG_UNRECORDED: dict[str, str] = {
    "created_by": "hoglab logs runs per project, not per user",
    "read_rows": _ENGINE,
    "read_bytes": _ENGINE,
    "memory_usage": _ENGINE,
    "cpu_microseconds": _ENGINE,
    **{f"S3{name}": "hoglab reads no S3" for name in ("ListObjects", "HeadObject", "GetObjectAttributes",
                                                      "GetObjectMetadata", "GetObject", "ReadMicroseconds",
                                                      "ReadRequestsCount", "ReadRequestsErrorsTotal",
                                                      "ReadRequestsErrors", "ReadRequestsThrottling",
                                                      "ReadRequestsRedirects")},
}  # fmt: skip
"""Fields of PostHog's ``query_log`` that hoglab does not record: a 400 saying why, not "unknown field"."""


def _value(name: str, value: Any) -> exp.Expr:
    if name == "query_start_time":
        moment = dt.datetime.fromtimestamp(float(value), tz=dt.UTC)
        return value_to_node(moment)
    return value_to_node(value)


def query_log_view(rows: Sequence[Mapping[str, Any]], timezone: str) -> exp.Select:
    """``SELECT <fields> FROM (SELECT arrayJoin(CAST([tuple(..), ..], 'Array(Tuple(..))')) AS r)``."""
    tuples = [exp.Tuple(expressions=[_value(k, row[k]) for k in _STORED]) for row in rows]
    array_type = f"Array(Tuple({', '.join(f'{k} {t}' for k, t in _STORED.items())}))"
    records = call("CAST", exp.Array(expressions=tuples), exp.Literal.string(array_type))
    inner = exp.Select(expressions=[exp.alias_(call("arrayJoin", records), "__hq_r")])

    def field(i: int) -> exp.Expr:
        return call("tupleElement", exp.column("__hq_r"), exp.Literal.number(i + 1))

    items: list[exp.Expr] = []
    for i, name in enumerate(_STORED):
        value = field(i)
        if name == "query_start_time":
            value = call("toTimeZone", value, exp.Literal.string(timezone))
        items.append(exp.alias_(value, name, quoted=True))
    start = field(list(_STORED).index("query_start_time"))
    finish = call("addMilliseconds", start, field(list(_STORED).index("query_duration_ms")))
    items += [
        exp.alias_(field(list(_STORED).index("name")), "hogql_name", quoted=True),
        exp.alias_(
            call("multiply", field(list(_STORED).index("query_duration_ms")), exp.Literal.number(1000)),
            "RealTimeMicroseconds",
            quoted=True,
        ),
        exp.alias_(call("toTimeZone", finish, exp.Literal.string(timezone)), "event_time", quoted=True),
        exp.alias_(call("toDate", call("toTimeZone", finish, exp.Literal.string(timezone))), "event_date", quoted=True),
        exp.alias_(exp.Literal.string("/api/projects/query"), "endpoint", quoted=True),
        exp.alias_(exp.Literal.number(1), "is_personal_api_key_request", quoted=True),
    ]
    return exp.Select(expressions=items).from_(exp.Subquery(this=inner), copy=False)
