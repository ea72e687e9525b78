"""``LifecycleQuery``: the people active in each interval by status, and those who stopped (dormant, negative).

For example (a sketch of a call and its answer, not run)::

    {"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}], "interval": "week"}
    -> {"results": [{"status": "new", "label": "$pageview - new", "data": [3.0, ...], "days": ["2025-05-18", ...],
                     "labels": [...], "count": 11.0, "action": {...}}, ...returning, resurrecting, dormant]}

PostHog's semantics (``LifecycleQueryRunner``), restated for a person and the intervals they did the event in
(looking one interval before the range too):

* ``new``: the person's first active interval is the one they were created in. A hoglab person is created at
  their first event of any kind (``persons.created_at``), so "new" is the interval of the first event ever, as long as
  that event is the series' event; PostHog reads the same column.
* ``returning``: active in this interval and in the one before.
* ``resurrecting``: active in this interval, not in the one before, and not new.
* ``dormant``: active in the interval before, not in this one; counted negative.
* Events of ``$process_person_profile: false`` (personless) are left out, as in PostHog.
* ``aggregation_group_type_index`` ``N``: groups instead of persons (the events' ``$group_N``; events without one
  are left out), and "new" is the interval of the group's ``created_at`` (its first ``$groupidentify``), as PostHog's
  lifecycle by group; a group never identified is never new.
* ``lifecycleFilter.toggledLifecycles`` keeps only the listed statuses (PostHog's UI hides the others; hoglab
  leaves them out of the answer).
* A series naming an action counts the action's events, labelled ``"<action name> - <status>"``; an action the
  project does not have is a 400, as in PostHog.
"""

from __future__ import annotations

from typing import Any

from hoglab.schema import LifecycleQuery
from hoglab.translate.actions import Actions
from hoglab.translate.dates import QueryDateRange, resolve_date_range, shift
from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index
from hoglab.translate.series import require_action, series_conditions, series_label

from .base import RunContext, register
from .common import first_event_time
from .intervals import interval_number_sql

__all__ = ["STATUSES", "lifecycle_actor_rows_sql", "lifecycle_range", "run_lifecycle"]

STATUSES = ("new", "returning", "resurrecting", "dormant")


def lifecycle_range(query: LifecycleQuery, ctx: RunContext) -> QueryDateRange:
    return resolve_date_range(
        query.dateRange,
        query.interval or "day",
        now=ctx.now,
        timezone=ctx.timezone,
        first_event=lambda: first_event_time(ctx),
    )


def lifecycle_actor_rows_sql(
    query: LifecycleQuery, rng: QueryDateRange, p: Params, *, project: Any, actions: Actions | None = None
) -> str:
    """HogQL with one row per (person, interval, status) within the range: ``actor_id, day, status``, ``day`` the
    interval's number (1 for the first of the range). A person has at most one status per interval."""
    buckets = rng.buckets()
    before = shift(buckets[0], rng.interval, -1)
    window = [rng.key(before), *(rng.key(b) for b in buckets)]
    series = query.series[0]
    require_action(series, actions, "series.0")
    where = series_conditions(query, series, p, project=project, attr="series.0", actions=actions)
    where += [
        "ifNull(toString(properties.`$process_person_profile`) != 'false', 1)",
        f"timestamp >= {p.add(before)}",
        f"timestamp < {p.add(shift(buckets[-1], rng.interval, 1))}",
    ]
    index = interval_number_sql(rng.interval, before, "timestamp", p, keys=window)
    actor, created_at = "person_id", "persons.created_at"
    # Persons are joined once per active person, after the events are grouped (not once per event).
    joined = "LEFT JOIN persons ON persons.id = activity.actor_id"
    if query.aggregation_group_type_index is not None:
        group = group_type_index(query.aggregation_group_type_index, "aggregation_group_type_index")
        actor, created_at = f"`$group_{group}`", "group_created.created_at"
        where.append(f"{actor} != ''")
        joined = (f"LEFT JOIN (SELECT key, created_at FROM groups WHERE index = {p.add(group)}) AS group_created "
                  "ON group_created.key = activity.actor_id")  # fmt: skip
    created = interval_number_sql(rng.interval, before, created_at, p, keys=window)
    # Interval numbers count from the one before the range (0); the range is 1..n. A person created before the
    # window has a negative number (-1 for hours), which no active interval has; one without a row, NULL.
    statuses = (
        "arrayMap((a, i) -> if(i = 1, if(a = created, 'new', 'resurrecting'), "
        "if(active[i - 1] = a - 1, 'returning', 'resurrecting')), active, arrayEnumerate(active))"
    )
    dormant = "arrayMap(a -> (a + 1, 'dormant'), arrayFilter(a -> NOT has(active, a + 1), active))"
    return f"""
        SELECT actor_id, tupleElement(pair, 1) AS day, tupleElement(pair, 2) AS status
        FROM (
            SELECT actor_id, arrayConcat(arrayZip(active, {statuses}), {dormant}) AS pairs FROM (
                SELECT activity.actor_id AS actor_id, activity.active AS active, {created} AS created
                FROM (
                    SELECT {actor} AS actor_id, arraySort(groupUniqArray({index})) AS active
                    FROM events WHERE {" AND ".join(where)}
                    GROUP BY actor_id
                ) AS activity
                {joined}
            )
        ) ARRAY JOIN pairs AS pair
        WHERE tupleElement(pair, 1) BETWEEN 1 AND {len(buckets)}"""


@register("LifecycleQuery")
def run_lifecycle(query: LifecycleQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a LifecycleQuery as PostHog does: four series (new, returning, resurrecting, dormant)."""
    rng = lifecycle_range(query, ctx)
    p = Params()
    rows = lifecycle_actor_rows_sql(query, rng, p, project=ctx.project, actions=ctx.actions)
    hogql = f"SELECT day, status, count() AS n FROM ({rows}) GROUP BY day, status"
    buckets = rng.buckets()
    compiled = ctx.compile(hogql, values=p.values, max_limit=4 * len(buckets) + 1)
    counts = {(int(r["day"]), r["status"]): int(r["n"]) for r in ctx.execute(compiled).to_pylist()}
    series = query.series[0]
    name = series_label(series, ctx.actions)
    found = require_action(series, ctx.actions, "series.0")
    action: dict[str, Any] = (
        {"id": str(found.id), "name": name, "type": "actions", "order": 0, "math": "total"}
        if found is not None
        else {"id": getattr(series, "event", None), "name": name, "type": "events", "order": 0, "math": "total"}
    )
    if series.custom_name is not None:
        action["custom_name"] = series.custom_name
    toggled = query.lifecycleFilter.toggledLifecycles if query.lifecycleFilter else None
    results = []
    for status in STATUSES:
        if toggled is not None and status not in toggled:
            continue
        sign = -1.0 if status == "dormant" else 1.0
        data = [sign * counts.get((i, status), 0) for i in range(1, len(buckets) + 1)]
        results.append({
            "action": action,
            "data": data,
            "count": float(sum(data)),
            "labels": [rng.label(b) for b in buckets],
            "days": [rng.day_text(b) for b in buckets],
            "label": f"{name} - {status}",
            "status": status,
        })  # fmt: skip
    return {
        "results": results,
        "timezone": ctx.timezone,
        "resolved_date_range": rng.to_json(),
        "hogql": compiled.hogql,
        "timings": ctx.timings.to_list(),
    }
