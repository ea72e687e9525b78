"""``POST /query``: run a query, turn the answer into a frame, page past one answer's row cap."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import pydantic

from ..errors import HoglabError, InvalidArgument, InvalidArgumentType, QueryWarning
from ..frames import table_frame, to_arrow, to_frame, to_polars
from ..frames.columns import json_loads, parse_type
from ..frames.tables import STAR, answer_warnings
from ..schema import (
    MAX_SELECT_RETURNED_ROWS,
    ActorsQuery,
    ActorsQueryResponse,
    EventsQuery,
    EventsQueryResponse,
    ExperimentExposureQueryResponse,
    ExperimentQueryResponse,
    FunnelCorrelationResponse,
    FunnelsQueryResponse,
    GroupsQuery,
    GroupsQueryResponse,
    HogQLQuery,
    HogQLQueryResponse,
    LifecycleQueryResponse,
    PathsQueryResponse,
    QueryRequest,
    RetentionQueryResponse,
    StickinessQueryResponse,
    TrendsQueryResponse,
    parse_query,
)
from ..schema.queries import AnyQueryType
from ._actions import resolve_action_names
from ._values import encode_values

if TYPE_CHECKING:
    from ._client import Client

__all__ = [
    "all_hogql_rows",
    "as_query",
    "complete_answer",
    "execute",
    "hogql_pages",
    "query_raw",
    "run_hogql",
    "run_query",
    "warn_about",
]

AnyQueryModel = AnyQueryType
"""Every query model the client sends: the schema's own union of the kinds ``POST /query`` runs."""
RESPONSE_MODELS: dict[str, type[pydantic.BaseModel]] = {
    "HogQLQuery": HogQLQueryResponse,
    "TrendsQuery": TrendsQueryResponse,
    "FunnelsQuery": FunnelsQueryResponse,
    "EventsQuery": EventsQueryResponse,
    "ActorsQuery": ActorsQueryResponse,
    "ExperimentQuery": ExperimentQueryResponse,
    "ExperimentExposureQuery": ExperimentExposureQueryResponse,
    "RetentionQuery": RetentionQueryResponse,
    "LifecycleQuery": LifecycleQueryResponse,
    "StickinessQuery": StickinessQueryResponse,
    "PathsQuery": PathsQueryResponse,
    "GroupsQuery": GroupsQueryResponse,
    "FunnelCorrelationQuery": FunnelCorrelationResponse,
}
CURSOR = "_hoglab_cursor"
# Row caps servers are known to apply silently (the contract's 10,000, PostHog Cloud's 50,000): a page that
# comes back with exactly that many rows is not taken as the last one, even when more were asked for.
KNOWN_CAPS = frozenset({MAX_SELECT_RETURNED_ROWS, 50_000})
# A statement's own top-level LIMIT is its last clause; one inside a subquery is followed by ")".
_LIMIT = re.compile(r"\bLIMIT\s+\d+(\s*(,|\bOFFSET\b)\s*\d+)?\s*$", re.I)
_ORDER_BY_TIMESTAMP = re.compile(r"\bORDER\s+BY\s+(?:[\w.]+\.)?timestamp(?:\s+(ASC|DESC))?\s*$", re.I)


def as_query(query: Any) -> AnyQueryModel:
    """A query model from a model, its dict (validated here) or a HogQL string."""
    if isinstance(query, AnyQueryModel):
        return query
    if isinstance(query, str):
        return HogQLQuery(query=query)
    if isinstance(query, Mapping):
        try:
            parsed: AnyQueryModel = parse_query(dict(query))
            return parsed
        except pydantic.ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise InvalidArgument(f"query: {first.get('msg')} ({where})", argument="query") from None
    raise InvalidArgumentType(
        f"query: expected a query model (hoglab.trends(...)...), its dict or HogQL text, got {type(query).__name__}.",
        argument="query",
    )


def complete_answer(status_code: int, data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The whole answer when a ``POST /query`` response holds it, else ``None`` (a job to wait for).

    Read from the status code and ``query_status``, never from the answer's members: an experiment answer has no
    ``results`` (``baseline``, ``variant_results``, ``timeseries`` instead), and a blocking answer carries
    ``query_status: null``.

    >>> complete_answer(200, {"baseline": {}, "query_status": None})
    {'baseline': {}, 'query_status': None}
    >>> complete_answer(202, {"query_status": {"id": "q", "complete": False}}) is None
    True
    >>> complete_answer(200, {"query_status": {"id": "q", "complete": True, "results": {"results": []}}})
    {'results': []}
    """
    status = data.get("query_status")
    if isinstance(status, Mapping):
        if status.get("complete") and isinstance(status.get("results"), Mapping):
            return dict(status["results"])
        if status.get("complete") is False or status_code == 202:
            return None
    if status_code == 202:
        return None
    return dict(data)


def execute(client: Client, query: AnyQueryModel | Mapping[str, Any], *,
            refresh: str | bool | None = None) -> dict[str, Any]:  # fmt: skip
    """POST the query and return the answer as parsed JSON, waiting for it when the server chose async (202).

    The query is a model, or a query dict sent exactly as given. Group types a builder named are looked up first
    (``_groups.resolve_group_types``, for a model). The answer's warnings (``metadata.warnings``) are issued as
    :class:`~hoglab.errors.QueryWarning`.
    """
    from ._groups import resolve_group_types
    from ._jobs import QueryJob, new_query_id

    if not isinstance(query, Mapping):
        query = resolve_group_types(client, query)
    query_id = new_query_id()
    if isinstance(query, Mapping):
        mode = "force_blocking" if refresh is True else (refresh or "blocking")
        body: dict[str, Any] = {"query": dict(query), "client_query_id": query_id, "refresh": mode}
    else:
        body = QueryRequest(query=query, refresh=refresh, client_query_id=query_id).to_json_dict()
    resolve_action_names(client, body["query"])  # actions the builders named by name get their ids
    response = client.request("POST", client.path("query/"), json=body, idempotent=True)
    data: dict[str, Any] = json_loads()(response.content)
    answer = complete_answer(response.status_code, data)
    if answer is not None:
        return warn_about(answer)
    status = data.get("query_status") if isinstance(data.get("query_status"), Mapping) else {}
    job = QueryJob(client, str((status or {}).get("id") or query_id), None if isinstance(query, Mapping) else query)
    return warn_about(job.wait())


def warn_about(answer: dict[str, Any]) -> dict[str, Any]:
    """Issue each of the answer's warnings as a :class:`~hoglab.errors.QueryWarning`; return the answer.

    Python's default filter shows each message once, so paging does not repeat them.
    """
    for message in answer_warnings(answer):
        warnings.warn(QueryWarning(message), stacklevel=3)
    return answer


def query_raw(client: Client, query: Any, *, refresh: str | bool | None = None) -> Any:
    q = as_query(query)
    return RESPONSE_MODELS[q.kind].model_validate(execute(client, q, refresh=refresh))


def convert_output(df: pd.DataFrame, output: str) -> Any:
    if output == "pandas":
        return df
    if output == "arrow":
        return to_arrow(df)
    if output == "polars":
        return to_polars(df)
    raise InvalidArgument(f"output: {output!r} is not one of 'pandas', 'arrow', 'polars'.", argument="output")


def _strip(sql: str) -> str:
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgument("sql: a HogQL statement is needed.", argument="sql")
    return sql.strip().rstrip(";").rstrip()


def _with_limit(sql: str, limit: int | None) -> str:
    if limit is None:
        return sql
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit: expected a positive integer, got {limit!r}.", argument="limit")
    return f"SELECT * FROM ({sql}) LIMIT {limit}" if _LIMIT.search(sql) else f"{sql} LIMIT {limit}"


def run_hogql(
    client: Client,
    sql: str,
    values: Mapping[str, Any] | None,
    *,
    limit: int | None,
    run_async: bool,
    all_rows: bool,
    parse_json: bool | Sequence[str],
    output: str,
) -> Any:
    text = _strip(sql)
    if all_rows and not run_async:  # hogql_pages encodes the values
        return convert_output(all_hogql_rows(client, text, values, parse_json=parse_json, max_rows=limit), output)
    query = HogQLQuery(query=_with_limit(text, limit), values=encode_values(client, values) or None)
    if run_async:
        from ._jobs import submit

        return submit(client, query, frame_options={"parse_json": parse_json, "output": output})
    return convert_output(table_frame(execute(client, query), parse_json=parse_json), output)


def all_hogql_rows(
    client: Client,
    sql: str,
    values: Mapping[str, Any] | None,
    *,
    parse_json: bool | Sequence[str] = False,
    max_rows: int | None = None,
) -> pd.DataFrame:
    """Every row of a statement: one Arrow answer from hoglab's bulk endpoint, else pages (PostHog)."""
    from ._bulk import bulk_frame

    bulk = bulk_frame(client, _with_limit(sql, max_rows), values, parse_json=parse_json)
    if bulk is not None:
        return bulk
    return _concat(list(hogql_pages(client, sql, values, parse_json=parse_json, max_rows=max_rows)))


def _concat(pages: list[pd.DataFrame]) -> pd.DataFrame:
    attrs = dict(pages[0].attrs) if pages else {}
    non_empty = [p for p in pages if len(p)] or pages[:1]
    df = pd.concat(non_empty, ignore_index=True) if len(non_empty) > 1 else non_empty[0]
    df.attrs = {**attrs, "hasMore": False, "pages": len(pages)}
    return df


def _cursor_text(raw: Any, type_text: str | None) -> Any:
    # Compare in ClickHouse's basic DateTime format, in the column's own time zone, which every ClickHouse
    # parses when it compares a string with a DateTime64 column ("2025-06-01T...Z" is not always accepted).
    if not isinstance(raw, str):
        return raw
    tz = parse_type(type_text).timezone if type_text else None
    stamp = pd.Timestamp(raw)
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert(tz or "UTC")
    return stamp.strftime("%Y-%m-%d %H:%M:%S.%f")


def _row_key(row: Sequence[Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def hogql_pages(
    client: Client,
    sql: str,
    values: Mapping[str, Any] | None,
    *,
    page_size: int = MAX_SELECT_RETURNED_ROWS,
    parse_json: bool | Sequence[str] = False,
    max_rows: int | None = None,
) -> Iterator[pd.DataFrame]:
    """Every row of a statement, a page at a time.

    Pages are keyset on ``timestamp`` when the statement ends with ``ORDER BY timestamp [ASC|DESC]`` (PostHog
    refuses OFFSET for personal API keys), else ``LIMIT/OFFSET``.

    Keyset pages ask for ``timestamp >= <last seen>`` and drop the rows at that instant already yielded, so rows
    that share a timestamp are neither lost nor repeated. A short page ends the listing, unless it holds exactly a
    known server cap (10,000 or 50,000 rows): then one more page is asked for.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise InvalidArgument(f"page_size: expected a positive integer, got {page_size!r}.", argument="page_size")
    base = _strip(sql)
    values = encode_values(client, values)
    order = None if _LIMIT.search(base) else _ORDER_BY_TIMESTAMP.search(base)
    direction = ((order.group(1) if order else None) or "ASC").upper()
    cursor: Any = None  # the last timestamp, as the SQL value
    last_raw: Any = None  # the same, as the answer wrote it (compared as is: one server writes one format)
    seen: Counter[str] = Counter()
    offset = yielded = 0
    bar = client.progress_bar("hoglab rows", "rows")
    try:
        while True:
            size = page_size
            if max_rows is not None:
                # A keyset page starts with the boundary rows already yielded (dropped below): ask for them too,
                # or a page of the last few rows wanted would be all repeats.
                size = min(page_size, max_rows - yielded + (sum(seen.values()) if cursor is not None else 0))
            page_values = dict(values or {})
            if order is not None:
                where = ""
                if cursor is not None:
                    where = f" WHERE timestamp {'>=' if direction == 'ASC' else '<='} {{{CURSOR}}}"
                    page_values[CURSOR] = cursor
                inner = base[: order.start()].rstrip()
                text = f"SELECT * FROM ({inner}){where} ORDER BY timestamp {direction} LIMIT {size}"
            elif _LIMIT.search(base):
                text = f"SELECT * FROM ({base}) LIMIT {size} OFFSET {offset}"
            else:
                text = f"{base} LIMIT {size} OFFSET {offset}"
            data = execute(client, HogQLQuery(query=text, values=page_values or None))
            rows: list[list[Any]] = data.get("results") or []
            fetched = len(rows)
            if order is not None:
                names = [str(c) for c in data.get("columns") or []]
                if "timestamp" not in names:
                    if cursor is None:  # no timestamp column to key on: start over with OFFSET paging
                        order, offset = None, 0
                        continue
                    raise HoglabError("Keyset paging lost its timestamp column between pages.")
                ts = names.index("timestamp")
                types = data.get("types") or []
                ts_type = types[ts][1] if ts < len(types) and isinstance(types[ts], list | tuple) else None
                if cursor is not None:
                    # Only rows at the boundary instant (the first ones of this page) can be repeats.
                    kept, skip = [], Counter(seen)
                    for row in rows:
                        key = _row_key(row) if row[ts] == last_raw else None
                        if key is not None and skip[key] > 0:
                            skip[key] -= 1
                            continue
                        kept.append(row)
                    rows = kept
                if max_rows is not None:
                    rows = rows[: max_rows - yielded]
                if fetched == size and not rows:
                    raise HoglabError(
                        f"More than {size} rows share the timestamp {cursor}: raise page_size to page past them."
                    )
                if rows:
                    if rows[-1][ts] != last_raw:
                        seen = Counter()
                    last_raw = rows[-1][ts]
                    cursor = _cursor_text(last_raw, ts_type)
                    for row in reversed(rows):  # the rows at the new boundary instant, from the end
                        if row[ts] != last_raw:
                            break
                        seen[_row_key(row)] += 1
            offset += fetched
            if rows or not yielded:
                yield table_frame({**data, "results": rows}, parse_json=parse_json)
            yielded += len(rows)
            bar.update(len(rows))
            if (fetched < size and fetched not in KNOWN_CAPS) or fetched == 0:
                return
            if max_rows is not None and yielded >= max_rows:
                return
    finally:
        bar.close()


def run_query(
    client: Client,
    query: Any,
    *,
    all_rows: bool,
    parse_json: bool | Sequence[str],
    flatten: bool | Sequence[str] | None,
    output: str,
) -> Any:
    from ._groups import label_units, resolve_group_types

    q = resolve_group_types(client, as_query(query))
    options: dict[str, Any] = {}
    if flatten is None:  # an EventsQuery's whole event ("*") as analysts read it: a column per property
        flatten = [STAR] if isinstance(q, EventsQuery) and STAR in q.select else False
    if isinstance(q, HogQLQuery | EventsQuery | ActorsQuery | GroupsQuery):
        options = {"parse_json": parse_json, "flatten": flatten}
    if all_rows and isinstance(q, EventsQuery | ActorsQuery | GroupsQuery):
        df = label_units(client, q, _concat(list(_offset_pages(client, q, options))))
    elif all_rows and isinstance(q, HogQLQuery):
        df = all_hogql_rows(client, _strip(q.query), q.values, parse_json=parse_json)
    else:
        df = label_units(client, q, to_frame(execute(client, q), q.kind, **options))
    return convert_output(df, output)


def _offset_pages(
    client: Client, q: EventsQuery | ActorsQuery | GroupsQuery, options: dict[str, Any]
) -> Iterator[pd.DataFrame]:
    # EventsQuery/ActorsQuery/GroupsQuery page with their own limit/offset fields and say hasMore (limit+1 on the
    # server).
    size = q.limit or MAX_SELECT_RETURNED_ROWS
    offset = q.offset or 0
    bar = client.progress_bar("hoglab rows", "rows")
    try:
        while True:
            page = q.model_copy(update={"limit": size, "offset": offset})
            data = execute(client, page)
            n = len(data.get("results") or [])
            yield to_frame(data, q.kind, **options)
            bar.update(n)
            offset += n
            if not data.get("hasMore") or n == 0:
                return
    finally:
        bar.close()
