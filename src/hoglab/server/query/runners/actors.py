"""``ActorsQuery``: persons as a table, optionally the persons behind one trend point or one funnel step.

For example (a sketch of a call and its answer, not run)::

    {"kind": "ActorsQuery", "select": ["person", "id", "created_at"], "search": "alice",
     "source": {"kind": "FunnelsActorsQuery", "funnelStep": -2, "source": {...FunnelsQuery...}}}
    -> {"columns": [...], "results": [[{"id": ..., "distinct_ids": [...], "properties": {...}, ...}, "...", "..."]],
        "types": [...], "hasMore": false, "limit": 100, "offset": 0, "missing_actors_count": 0}

* Default ``select``: ``person, id, created_at`` (PostHog adds ``person.$delete``, a UI action column: left out).
* ``person`` (or ``actor``, PostHog's persons modal's name) is ``{id, distinct_ids (at most 101), properties,
  created_at, is_identified}``.
* ``person_display_name`` (PostHog's persons page asks for ``person_display_name -- Person``) is
  ``{display_name, id}``: the first set email/name property, else the id.
* ``search`` matches the id, any distinct id or the properties text (case-insensitive substring).
* ``source``: ``InsightActorsQuery`` (trends: ``series`` index, ``day`` as the answer's ``days`` entry, ``breakdown``,
  ``compare``; retention, lifecycle, stickiness and paths: see ``insight_actors.py``) or ``FunnelsActorsQuery``
  (``funnelStep`` n > 0: reached step n; -n: reached step n-1 but not n; ``funnelStepBreakdown``).
* Groups: when the source counts groups (a funnel, retention or lifecycle with ``aggregation_group_type_index``,
  a trend or stickiness series with ``math: unique_group``), the actors are those groups (PostHog's group
  strategy): default ``select`` ``group``, which is ``{id, type: "group", group_key, group_type_index,
  properties, group_properties, created_at}``; other columns are HogQL over the ``groups`` table (``key``,
  ``properties.plan``); ``search`` matches the name or the key; ``properties`` are group filters; ``orderBy``
  ``group`` sorts by name. Groups never identified (no ``$groupidentify``) have no row: ``missing_actors_count``.
"""

from __future__ import annotations

from typing import Any

import orjson

from hoglab.schema import MAX_SELECT_RETURNED_ROWS, ActorsQuery, FunnelsActorsQuery, InsightActorsQuery
from hoglab.translate.dates import resolve_date_range, shift
from hoglab.translate.params import Params
from hoglab.translate.properties import hogql_expression, property_filters_to_hogql

from ...errors import ValidationFailed
from .base import RunContext, register
from .breakdowns import BREAKDOWN_NULL, breakdown_value_sql, has_breakdown
from .common import first_event_time
from .events import strip_alias
from .funnels import funnel_person_rows
from .groups import GROUP_NAME, group_order, group_search
from .insight_actors import INSIGHT_ACTOR_KINDS, insight_actors_sql
from .person_tuples import ACTOR_DISPLAY_NAME, ACTOR_PERSON
from .trends import previous_range
from .trends_sql import effective_math, group_actor, group_condition

__all__ = ["run_actors"]

def _trend_actors(source: InsightActorsQuery, ctx: RunContext, p: Params) -> str:
    from hoglab.translate.series import series_conditions

    query = source.source
    if query.kind != "TrendsQuery":
        raise ValidationFailed(
            "InsightActorsQuery supports trends here; use FunnelsActorsQuery for funnels.", attr="source.source"
        )
    index = source.series or 0
    if index >= len(query.series):
        raise ValidationFailed("No such series.", attr="source.series")
    series = query.series[index]
    interval = query.interval or "day"
    rng = resolve_date_range(query.dateRange, interval, now=ctx.now, timezone=ctx.timezone,
                             first_event=lambda: first_event_time(ctx))  # fmt: skip
    if source.compare == "previous":
        rng = previous_range(rng, query.compareFilter.compare_to if query.compareFilter else None)
    start, end = rng.bounds_utc()
    if source.day is not None:
        wanted = str(source.day)[:19]
        matches = [b for b in rng.buckets() if rng.day_text(b) == wanted or rng.key(b) == wanted]
        if not matches:
            raise ValidationFailed(f"{source.day!r} is not a day of the trend.", attr="source.day")
        start, end = matches[0], shift(matches[0], interval, 1)
        math = effective_math(series, interval)
        if math == "weekly_active" or math == "monthly_active":
            start = shift(start, "day", -(7 if math == "weekly_active" else 30) + 1)
    conditions = series_conditions(query, series, p, project=ctx.project, attr=f"source.source.series.{index}",
                                   actions=ctx.actions)  # fmt: skip
    grouped = group_condition(series, f"source.source.series.{index}")
    if grouped:
        conditions.append(grouped)
    actor = group_actor(series, f"source.source.series.{index}") or "person_id"
    conditions += [f"timestamp >= {p.add(start)}", f"timestamp {'<' if source.day is not None else '<='} {p.add(end)}"]
    if has_breakdown(query.breakdownFilter) and source.breakdown is not None:
        value = source.breakdown
        value = value[0] if isinstance(value, list) and len(value) == 1 else value
        conditions.append(
            f"{breakdown_value_sql(query.breakdownFilter, p)} = {p.add(value if value is not None else BREAKDOWN_NULL)}"
        )
    return f"SELECT DISTINCT {actor} AS actor_id FROM events WHERE {' AND '.join(conditions)}"


def _funnel_actors(source: FunnelsActorsQuery, ctx: RunContext, p: Params) -> str:
    step = source.funnelStep
    if step is None:
        raise ValidationFailed("FunnelsActorsQuery needs a funnelStep.", attr="source.funnelStep")
    n = len(source.source.series)
    if abs(step) > n or step == -1:
        raise ValidationFailed(
            "funnelStep is out of range (1..steps, or -2..-steps for drop-offs).", attr="source.funnelStep"
        )
    persons, _ = funnel_person_rows(source.source, ctx, p)
    condition = f"step_reached >= {step - 1}" if step > 0 else f"step_reached = {-step - 2}"
    if source.funnelStepBreakdown is not None:
        value = source.funnelStepBreakdown
        value = value[0] if isinstance(value, list) and len(value) == 1 else value
        condition += f" AND pv = {p.add(str(value))}"
    return f"SELECT DISTINCT actor_id FROM ({persons}) WHERE {condition}"


def _jsonable(value: Any, kind: str) -> Any:
    if kind == "person":
        return ACTOR_PERSON.decode(value)
    if kind == "person_display_name":
        return ACTOR_DISPLAY_NAME.decode(value)
    return value


def _group_index(source: Any) -> int | None:
    """The group type the source's cell counts (its actors are groups), or ``None`` for persons."""
    if isinstance(source, FunnelsActorsQuery):
        return source.source.aggregation_group_type_index
    if not isinstance(source, InsightActorsQuery):
        return None
    query = source.source
    if query.kind in ("TrendsQuery", "StickinessQuery"):
        index = source.series or 0
        series = query.series[index] if index < len(query.series) else None
        return series.math_group_type_index if series is not None and series.math == "unique_group" else None
    return getattr(query, "aggregation_group_type_index", None)


def _group_value(value: Any) -> Any:
    """The ``group`` column: ``[key, index, properties, created_at]`` as PostHog's group actor object."""
    if not isinstance(value, list) or len(value) != 4:
        return value
    key, index, properties, created_at = value
    try:
        props = orjson.loads(properties) if properties else {}
    except orjson.JSONDecodeError:
        props = {}
    return {"id": key, "type": "group", "group_key": key, "group_type_index": index, "properties": props,
            "group_properties": props, "created_at": created_at}  # fmt: skip


def _group_actors(query: ActorsQuery, ctx: RunContext, p: Params, index: int, source_sql: str) -> dict[str, Any]:
    select = list(query.select or ["group"])
    kinds, columns = [], []
    for i, column in enumerate(select):
        text = strip_alias(column)
        if text in ("group", "actor"):
            kinds.append("group")
            columns.append(f"tuple(key, index, properties, created_at) AS c{i}")
        else:
            kinds.append("")
            columns.append(f"{hogql_expression(text, f'select.{i}')} AS c{i}")
    where = [f"index = {p.add(index)}", f"key IN (SELECT actor_id FROM ({source_sql}))"]
    for key in ("properties", "fixedProperties"):
        condition = property_filters_to_hogql(getattr(query, key), p, attr=key, timezone=ctx.timezone,
                                              group_scope=True)  # fmt: skip
        if condition:
            where.append(condition)
    if query.search:
        where.append(group_search(p, query.search))
    order = []
    for i, entry in enumerate(query.orderBy or []):
        text = strip_alias(entry)
        if text.split()[0] in ("group", "actor"):
            order.append(f"{GROUP_NAME} {'DESC' if 'DESC' in text.upper() else 'ASC'}")
        else:
            order += group_order([entry], attr=f"orderBy.{i}")
    limit = min(query.limit or 100, MAX_SELECT_RETURNED_ROWS)
    offset = query.offset or 0
    hogql = (f"SELECT {', '.join(columns)} FROM groups WHERE {' AND '.join(where)} "
             f"ORDER BY {', '.join(order or group_order(None))} LIMIT {limit + 1} OFFSET {offset}")  # fmt: skip
    compiled = ctx.compile(hogql, values=p.values, max_limit=MAX_SELECT_RETURNED_ROWS + 1)
    result = ctx.execute_json(compiled)
    found = orjson.loads(result.data)
    counted = ctx.run(
        f"SELECT count() AS n FROM ({source_sql}) WHERE actor_id NOT IN "
        f"(SELECT key FROM groups WHERE index = {p.add(index)})",
        values=p.values,
    )
    rows = [[_group_value(v) if k == "group" else v for v, k in zip(row, kinds, strict=True)] for row in found[:limit]]
    return {
        "columns": select,
        "results": rows,
        "types": list(result.types),
        "hogql": compiled.hogql,
        "hasMore": len(found) > limit,
        "limit": limit,
        "offset": offset,
        "missing_actors_count": int(counted.column("n")[0].as_py()),
        "timings": ctx.timings.to_list(),
    }


@register("ActorsQuery")
def run_actors(query: ActorsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer an ActorsQuery: ``columns, results, types, hasMore, limit, offset, missing_actors_count``."""
    p = Params()
    group_index = _group_index(query.source)
    if group_index is not None:
        if isinstance(query.source, FunnelsActorsQuery):
            return _group_actors(query, ctx, p, group_index, _funnel_actors(query.source, ctx, p))
        if isinstance(query.source, InsightActorsQuery) and query.source.source.kind in INSIGHT_ACTOR_KINDS:
            return _group_actors(query, ctx, p, group_index, insight_actors_sql(query.source, ctx, p))
        assert isinstance(query.source, InsightActorsQuery)
        return _group_actors(query, ctx, p, group_index, _trend_actors(query.source, ctx, p))
    select = list(query.select or ["person", "id", "created_at"])
    kinds, columns = [], []
    for i, column in enumerate(select):
        text = strip_alias(column)
        # "actor" is the person object under the name PostHog's persons modal asks for.
        kind = "person" if text == "actor" else text
        kinds.append(kind if kind in ("person", "person_display_name") else "")
        columns.append(f"{ACTOR_PERSON.sql if kind == 'person' else '(' + text + ')'} AS c{i}")
    where: list[str] = []
    source_sql = None
    if isinstance(query.source, InsightActorsQuery) and query.source.source.kind in INSIGHT_ACTOR_KINDS:
        source_sql = insight_actors_sql(query.source, ctx, p)
    elif isinstance(query.source, InsightActorsQuery):
        source_sql = _trend_actors(query.source, ctx, p)
    elif isinstance(query.source, FunnelsActorsQuery):
        source_sql = _funnel_actors(query.source, ctx, p)
    elif query.source is not None:
        source_sql = f"SELECT * FROM ({query.source.query})"
    if source_sql:
        where.append(
            f"id IN (SELECT actor_id FROM ({source_sql}))" if "actor_id" in source_sql else f"id IN ({source_sql})"
        )
    for key in ("properties", "fixedProperties"):
        condition = property_filters_to_hogql(
            getattr(query, key), p, attr=key, timezone=ctx.project.timezone or "UTC", person_id="id"
        )
        if condition:
            where.append(condition.replace("person.properties.", "properties."))
    if query.search:
        term = p.add(f"%{query.search}%")
        where.append(
            f"(toString(id) ILIKE {term} OR properties ILIKE {term} OR arrayExists(d -> d ILIKE {term}, pdi_ids))"
        )
    limit = min(query.limit or 100, MAX_SELECT_RETURNED_ROWS)
    offset = query.offset or 0
    order = [strip_alias(o) for o in (query.orderBy or ["created_at DESC", "id"])]
    hogql = f"""
        SELECT {", ".join(columns)} FROM (
            SELECT id, created_at, properties, is_identified, ids.pdi_ids AS pdi_ids,
                   persons.person_display_name AS person_display_name FROM persons
            LEFT JOIN (SELECT person_id, arraySlice(arraySort(groupArray(distinct_id)), 1, 101) AS pdi_ids
                       FROM person_distinct_ids GROUP BY person_id) AS ids ON ids.person_id = persons.id
        ) WHERE {" AND ".join(where) or "true"}
        ORDER BY {", ".join(order)} LIMIT {limit + 1} OFFSET {offset}"""
    compiled = ctx.compile(hogql, values=p.values, max_limit=MAX_SELECT_RETURNED_ROWS + 1)
    result = ctx.execute_json(compiled)
    found = orjson.loads(result.data)
    missing = 0
    if source_sql and "actor_id" in source_sql:
        counted = ctx.run(
            f"SELECT count() AS n FROM ({source_sql}) WHERE actor_id NOT IN (SELECT id FROM persons)", values=p.values
        )
        missing = int(counted.column("n")[0].as_py())
    return {
        "columns": select,
        "results": [[_jsonable(v, k) for v, k in zip(row, kinds, strict=True)] for row in found[:limit]],
        "types": list(result.types),
        "hogql": compiled.hogql,
        "hasMore": len(found) > limit,
        "limit": limit,
        "offset": offset,
        "missing_actors_count": missing,
        "timings": ctx.timings.to_list(),
    }
