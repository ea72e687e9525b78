"""``EventsQuery``: raw events (or aggregates of them) as a table of HogQL expressions.

For example (a sketch of a call and its answer, not run)::

    {"kind": "EventsQuery", "select": ["*", "event", "person", "properties.$browser -- Browser"],
     "event": "$pageview", "after": "-24h", "limit": 100}
    -> {"columns": ["*", "event", "person", "properties.$browser -- Browser"], "results": [[{...}, ...]],
        "types": ["Tuple(...)", "String", ...], "hasMore": false, "limit": 100, "offset": 0, "hogql": "..."}

* ``*`` is the event as a dict: ``uuid, event, properties`` (parsed), ``timestamp, team_id`` (the project id),
  ``distinct_id, elements_chain, created_at, $session_id, $window_id``. ``person`` is
  ``{uuid, created_at, properties, distinct_id}``.
* ``-- Alias`` comments only label a column (PostHog's columns are the select strings as sent).
* With any aggregate in ``select``, the other columns are the GROUP BY; aggregate ``where`` clauses go to HAVING.
* ``after`` defaults to ``-24h`` (``"all"``: no lower bound), ``before`` to now + 5 s; ``orderBy`` defaults to
  ``timestamp DESC`` when ``*`` or ``timestamp`` is selected; ``limit`` 100 (at most 10,000) fetched as limit + 1.
* ``actionId`` keeps the events of one of the project's actions (PostHog's ``actionId``). An action the project
  does not have, or one without steps, is a 400 naming ``actionId`` (PostHog fails with a server error).
"""

from __future__ import annotations

import contextlib
import re
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import orjson
from sqlglot import exp

from hoglab.schema import MAX_SELECT_RETURNED_ROWS, EventsQuery
from hoglab.translate.actions import action_condition
from hoglab.translate.dates import parse_relative
from hoglab.translate.params import Params
from hoglab.translate.series import series_conditions

from ...errors import ValidationFailed
from ...hogql import HogQLError, parse_hogql_expr
from ...hogql.functions import is_aggregate
from .base import RunContext, register
from .person_tuples import EVENT_DISPLAY_NAME, EVENT_PERSON

__all__ = ["run_events", "strip_alias"]

_STAR = (
    "tuple(toString(uuid), event, properties, timestamp, distinct_id, elements_chain, created_at, "
    "`$session_id`, `$window_id`)"
)
_STAR_KEYS = ("uuid", "event", "properties", "timestamp", "distinct_id", "elements_chain", "created_at",
              "$session_id", "$window_id")  # fmt: skip


def strip_alias(expression: str) -> str:
    """The HogQL of a select entry without its ``-- label`` comment."""
    return re.sub(r"\s--[^\n]*$", "", expression).strip() if "--" in expression else expression.strip()


def _has_aggregate(text: str, attr: str) -> bool:
    try:
        tree = parse_hogql_expr(text)
    except HogQLError as e:
        raise ValidationFailed(f"Invalid expression {text!r}: {e.message}", attr=attr) from None
    for node in tree.find_all(exp.Func):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        aggregate = isinstance(node, exp.AggFunc) or is_aggregate(str(name))
        if aggregate and not isinstance(node.parent, exp.Window) and not isinstance(node, exp.Window):
            return True
    return False


def _bound(text: str | None, default: str, ctx: RunContext, attr: str) -> Any:
    tz = ZoneInfo(ctx.timezone)
    now = ctx.now.astimezone(tz)
    if text is None:
        text = default
    if text == "all":
        return None
    relative = parse_relative(text, now, attr=attr)
    if relative is not None:
        return relative
    from hoglab.translate.dates import _parse_absolute

    return _parse_absolute(text, tz, attr=attr)[0]


def _jsonable(value: Any, kind: str, team_id: int) -> Any:
    if kind == "*" and isinstance(value, list):
        event = dict(zip(_STAR_KEYS, value, strict=False))
        event["team_id"] = team_id
        with contextlib.suppress(orjson.JSONDecodeError):
            event["properties"] = orjson.loads(event["properties"] or "{}")
        return event
    if kind == "person":
        return EVENT_PERSON.decode(value)
    if kind == "person_display_name":
        return EVENT_DISPLAY_NAME.decode(value)
    return value


@register("EventsQuery")
def run_events(query: EventsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer an EventsQuery with PostHog's ``columns, results, types, hasMore, limit, offset, hogql``."""
    p = Params()
    select_sql: list[str] = []
    kinds: list[str] = []
    aggregates: list[bool] = []
    for i, column in enumerate(query.select):
        text = strip_alias(column)
        if text == "*":
            select_sql.append(_STAR)
            kinds.append("*")
            aggregates.append(False)
        elif text == "person":
            select_sql.append(EVENT_PERSON.sql)
            kinds.append("person")
            aggregates.append(False)
        elif text == "person_display_name":
            select_sql.append(text)  # the events table's virtual field (hogql/tables.py)
            kinds.append("person_display_name")
            aggregates.append(False)
        else:
            select_sql.append(f"({text})")
            kinds.append("")
            aggregates.append(_has_aggregate(text, f"select.{i}"))
    grouped = any(aggregates)
    where = series_conditions(query, {"event": query.event, "fixedProperties": query.fixedProperties}, p,
                              project=ctx.project, attr="")  # fmt: skip
    if query.actionId is not None:
        action = ctx.actions.get(query.actionId)
        if action is None:
            raise ValidationFailed(f"Action {query.actionId} does not exist in this project.", attr="actionId")
        if not action.steps:
            raise ValidationFailed(f"Action {query.actionId} has no steps, so it names no events.", attr="actionId")
        where.append(action_condition(action, p, timezone=ctx.timezone, attr="actionId"))
    having: list[str] = []
    for i, clause in enumerate(query.where or []):
        text = strip_alias(clause)
        (having if _has_aggregate(text, f"where.{i}") else where).append(f"({text})")
    after = _bound(query.after, "-24h", ctx, "after")
    before = _bound(query.before, "", ctx, "before") if query.before else ctx.now + timedelta(seconds=5)
    if after is not None:
        where.append(f"timestamp > {p.add(after)}")
    if before is not None:
        where.append(f"timestamp < {p.add(before)}")
    if query.personId:
        where.append(f"person_id = toUUIDOrNull({p.add(str(query.personId))})")
    limit = min(query.limit or 100, MAX_SELECT_RETURNED_ROWS)
    offset = query.offset or 0
    order = list(query.orderBy or [])
    if (
        not order
        and not grouped
        and any(k == "*" or strip_alias(c) == "timestamp" for k, c in zip(kinds, query.select, strict=True))
    ):
        order = ["timestamp DESC"]
    columns = [f"{sql} AS c{i}" for i, sql in enumerate(select_sql)]
    hogql = f"SELECT {', '.join(columns)} FROM events WHERE {' AND '.join(where) or 'true'}"
    if grouped:
        keys = [f"c{i}" for i, agg in enumerate(aggregates) if not agg]
        if keys:
            hogql += f" GROUP BY {', '.join(keys)}"
        if having:
            hogql += f" HAVING {' AND '.join(having)}"
    elif having:
        raise ValidationFailed("Aggregate conditions in 'where' need an aggregate in 'select'.", attr="where")
    if order:
        hogql += f" ORDER BY {', '.join(strip_alias(o) for o in order)}"
    hogql += f" LIMIT {limit + 1} OFFSET {offset}"
    compiled = ctx.compile(hogql, values=p.values, max_limit=MAX_SELECT_RETURNED_ROWS + 1)
    result = ctx.execute_json(compiled)
    found = orjson.loads(result.data)
    has_more = len(found) > limit
    rows = [[_jsonable(v, k, ctx.team_id) for v, k in zip(row, kinds, strict=True)] for row in found[:limit]]
    return {
        "columns": list(query.select),
        "results": rows,
        "types": list(result.types),
        "hogql": compiled.hogql,
        "hasMore": has_more,
        "limit": limit,
        "offset": offset,
        "timings": ctx.timings.to_list(),
    }
