"""The persons behind one cell of a retention, lifecycle, stickiness or paths answer (``InsightActorsQuery``).

``ActorsQuery`` (``actors.py``) pages, searches and shapes them; this module only says who they are, as HogQL
``SELECT DISTINCT actor_id ...`` over the same rows the insight counts, so a cell and its persons always agree.

* Retention: ``interval`` is the cohort (0 = the first, PostHog's meaning); ``day`` optionally the returning period
  (``3`` or its label ``"Day 3"``; by default 0, the whole cohort); ``breakdown`` the breakdown value.
* Lifecycle: ``status`` (``new``, ``returning``, ``resurrecting``, ``dormant``) and ``day`` (an entry of ``days``).
* Stickiness: ``day`` is the number of active intervals (with ``computedAs: cumulative``, that many or more),
  ``series`` the series index, ``compare: "previous"`` the previous period.
* Paths: the source's ``pathsFilter.pathStartKey``/``pathEndKey`` (an edge's ``source``/``target``) or
  ``pathDropoffKey`` (people whose path ended at that step).

>>> sorted(INSIGHT_ACTOR_KINDS)
['LifecycleQuery', 'PathsQuery', 'RetentionQuery', 'StickinessQuery']
"""

from __future__ import annotations

import re
from typing import Any

from hoglab.schema import InsightActorsQuery, LifecycleQuery, PathsQuery, RetentionQuery, StickinessQuery
from hoglab.translate.params import Params

from ...errors import ValidationFailed
from .base import RunContext
from .lifecycle import STATUSES, lifecycle_actor_rows_sql, lifecycle_range
from .paths import path_steps_sql, paths_range
from .retention import retention_actor_rows_sql, retention_range
from .stickiness import is_cumulative, stickiness_actor_rows_sql, stickiness_periods, stickiness_ranges

__all__ = ["INSIGHT_ACTOR_KINDS", "insight_actors_sql"]

INSIGHT_ACTOR_KINDS = frozenset({"RetentionQuery", "LifecycleQuery", "StickinessQuery", "PathsQuery"})
_PERIOD_LABEL = re.compile(r"(?:(?:Hour|Day|Week|Month)\s+)?(\d+)\Z")


def _one_breakdown(value: Any) -> Any:
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _retention(source: InsightActorsQuery, query: RetentionQuery, ctx: RunContext, p: Params) -> str:
    rr = retention_range(query, ctx)
    if source.interval is None or not 0 <= source.interval < len(rr.starts):
        raise ValidationFailed(
            f"interval must pick a cohort: 0 to {len(rr.starts) - 1}.", attr="source.interval"
        )
    period = 0
    if source.day is not None:
        found = _PERIOD_LABEL.match(str(source.day).strip())
        period = int(found.group(1)) if found else -1
        if not 0 <= period < rr.lookahead:
            raise ValidationFailed(
                f"day must be a returning period: 0 to {rr.lookahead - 1} (or its label).", attr="source.day"
            )
    rows = retention_actor_rows_sql(query, rr, p, project=ctx.project, actions=ctx.actions)
    where = [f"start_index = {p.add(source.interval)}", f"period = {p.add(period)}"]
    if source.breakdown is not None:
        where.append(f"bv = {p.add(str(_one_breakdown(source.breakdown)))}")
    return f"SELECT DISTINCT actor_id FROM ({rows}) WHERE {' AND '.join(where)}"


def _lifecycle(source: InsightActorsQuery, query: LifecycleQuery, ctx: RunContext, p: Params) -> str:
    rng = lifecycle_range(query, ctx)
    where = []
    if source.status is not None:
        if source.status not in STATUSES:
            raise ValidationFailed(f"status must be one of {', '.join(STATUSES)}.", attr="source.status")
        where.append(f"status = {p.add(source.status)}")
    if source.day is not None:
        wanted = str(source.day).replace("T", " ")[:19]
        matches = [i for i, b in enumerate(rng.buckets(), 1) if wanted in (rng.day_text(b), rng.key(b))]
        if not matches:
            raise ValidationFailed(f"{source.day!r} is not a day of the lifecycle.", attr="source.day")
        where.append(f"day = {p.add(matches[0])}")
    rows = lifecycle_actor_rows_sql(query, rng, p, project=ctx.project, actions=ctx.actions)
    return f"SELECT DISTINCT actor_id FROM ({rows}) WHERE {' AND '.join(where) or 'true'}"


def _stickiness(source: InsightActorsQuery, query: StickinessQuery, ctx: RunContext, p: Params) -> str:
    index = source.series or 0
    if index >= len(query.series):
        raise ValidationFailed("No such series.", attr="source.series")
    ranges = stickiness_ranges(query, ctx)
    if source.compare == "previous" and len(ranges) < 2:
        raise ValidationFailed("The source has no previous period (compareFilter).", attr="source.compare")
    rng = ranges[-1][0] if source.compare == "previous" else ranges[0][0]
    rows = stickiness_actor_rows_sql(query, query.series[index], index, rng, p, project=ctx.project,
                                     actions=ctx.actions)  # fmt: skip
    if source.day is None:
        return f"SELECT DISTINCT actor_id FROM ({rows})"
    try:
        active = int(source.day)
    except ValueError:
        raise ValidationFailed("day must be a number of active intervals.", attr="source.day") from None
    if not 1 <= active <= stickiness_periods(query, rng):
        raise ValidationFailed("day is outside the answer's days.", attr="source.day")
    compare = ">=" if is_cumulative(query) else "="
    return f"SELECT DISTINCT actor_id FROM ({rows}) WHERE active {compare} {p.add(active)}"


def _paths(query: PathsQuery, ctx: RunContext, p: Params) -> str:
    pf = query.pathsFilter
    where = []
    if pf.pathDropoffKey:
        key = p.add(pf.pathDropoffKey)
        where.append(f"dropoff_key = {key} AND path_key = {key}")
    else:
        if pf.pathStartKey:
            where.append(f"last_path_key = {p.add(pf.pathStartKey)}")
        if pf.pathEndKey:
            where.append(f"path_key = {p.add(pf.pathEndKey)}")
    rows = path_steps_sql(query, paths_range(query, ctx), p, project=ctx.project)
    return f"SELECT DISTINCT actor_id FROM ({rows}) WHERE {' AND '.join(where) or 'true'}"


def insight_actors_sql(source: InsightActorsQuery, ctx: RunContext, p: Params) -> str:
    """HogQL ``SELECT DISTINCT actor_id ...``: the persons behind the cell ``source`` points at."""
    query = source.source
    if isinstance(query, RetentionQuery):
        return _retention(source, query, ctx, p)
    if isinstance(query, LifecycleQuery):
        return _lifecycle(source, query, ctx, p)
    if isinstance(query, StickinessQuery):
        return _stickiness(source, query, ctx, p)
    if isinstance(query, PathsQuery):
        return _paths(query, ctx, p)
    raise ValidationFailed(f"Persons of a {query.kind} are not available here.", attr="source.source")
