"""``RetentionQuery``: of the people who did the target event in a period, how many came back in each later one.

For example (a sketch of a call and its answer, not run)::

    {"kind": "RetentionQuery", "retentionFilter": {"period": "Week", "totalIntervals": 4,
      "targetEntity": {"id": "signup", "type": "events"}, "returningEntity": {"id": "$pageview", "type": "events"}}}
    -> {"results": [{"date": "2025-05-18T00:00:00+00:00", "label": "Week 0",
                     "values": [{"count": 12, "label": "Week 0"}, {"count": 7, "label": "Week 1"}, ...]}, ...]}

PostHog's semantics (``RetentionQueryRunner``), restated:

* Cohorts are the periods from ``date_from`` (at the start of its period) up to the one holding ``date_to``; without a
  ``date_from`` there are ``totalIntervals`` of them, ending with the period of ``date_to`` (today by default).
  Each cohort has ``totalIntervals`` values: value 0 is the cohort's size, value ``k`` the people of the cohort who
  did the returning event ``k`` periods later (periods after ``date_to`` count nobody).
* ``retention_recurring``: a person belongs to the cohort of every period in which they did the target event.
  ``retention_first_time``: only to the period of their first target event ever (if it falls in the range).
  ``retention_first_ever_occurrence`` is read as ``retention_first_time`` (hoglab's choice).
* ``minimumOccurrences`` ``m``: a period counts as a return only with at least ``m`` returning events in it.
* ``cumulative``: a person who came back in period ``k`` counts in every period up to ``k``.
* ``aggregation_group_type_index`` ``N``: groups instead of persons, a group being the events' ``$group_N``
  (events without a group of that type are left out), as PostHog's retention by group.
* ``retentionReference`` (total or previous) only changes how PostHog's UI shows percentages: the counts are the same.
* A breakdown groups people by the value of the property on their events (``''`` when missing), each value with
  its own cohorts; the top ``breakdown_limit`` (25) values by cohort sizes are kept, the rest summed into
  ``$$_posthog_breakdown_other_$$``.
* An entity may name an action (``{"id": 7, "type": "actions"}``): its events are the action's. An action the
  project does not have is a 400 naming the entity (PostHog fails with a server error).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hoglab.schema import RetentionEntity, RetentionQuery
from hoglab.translate.actions import Actions, action_condition
from hoglab.translate.dates import bucket_key, resolve_date_range, shift, start_of_interval
from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index, property_filters_to_hogql
from hoglab.translate.series import series_conditions

from ...errors import ValidationFailed
from .base import RunContext, register
from .breakdowns import BREAKDOWN_OTHER, breakdown_items, breakdown_limit
from .common import first_event_time
from .intervals import interval_number_sql

__all__ = ["RetentionRange", "retention_actor_rows_sql", "retention_range", "run_retention"]

PERIODS = {"Hour": "hour", "Day": "day", "Week": "week", "Month": "month"}
MAX_CELLS = 100_000
DEFAULT_ENTITY = RetentionEntity(id="$pageview", type="events")


@dataclass(frozen=True)
class RetentionRange:
    """The cohorts' periods: ``starts`` (aware, project zone) up to ``end`` (exclusive), ``lookahead`` values each."""

    interval: str
    starts: list[datetime]
    end: datetime
    lookahead: int

    @property
    def keys(self) -> list[str]:
        return [bucket_key(self.interval, s) for s in self.starts]

    def label(self, index: int) -> str:
        return f"{self.interval.title()} {index}"


def retention_range(query: RetentionQuery, ctx: RunContext) -> RetentionRange:
    """The cohorts of a retention query (PostHog's ``QueryDateRangeWithIntervals``)."""
    rf = query.retentionFilter
    interval = PERIODS[rf.period or "Day"]
    lookahead = rf.totalIntervals or 8
    date_range = query.dateRange
    given_from = date_range is not None and date_range.date_from is not None
    if given_from:
        rng = resolve_date_range(
            date_range, interval, now=ctx.now, timezone=ctx.timezone, first_event=lambda: first_event_time(ctx)
        )
        date_to = rng.date_to
    else:
        # Only date_to matters here: resolve it as a range that starts where it ends (or today).
        to_text = date_range.date_to if date_range is not None else None
        explicit = bool(date_range and date_range.explicitDate)
        only_to = {"date_from": to_text or "dStart", "date_to": to_text, "explicitDate": explicit}
        date_to = resolve_date_range(only_to, interval, now=ctx.now, timezone=ctx.timezone).date_to
    try:
        end = shift(start_of_interval(date_to, interval), interval, 1)
        first = start_of_interval(rng.date_from, interval) if given_from else shift(end, interval, -lookahead)
    except OverflowError:
        raise ValidationFailed("The cohorts would fall outside the calendar.", attr="dateRange") from None
    starts: list[datetime] = []
    while shift(first, interval, len(starts)) < end:
        starts.append(shift(first, interval, len(starts)))
        if len(starts) * lookahead > MAX_CELLS:
            raise ValidationFailed(
                f"Too many cohorts: {len(starts)}+ {interval}s with {lookahead} intervals each is over {MAX_CELLS:,} "
                "cells; shorten the date range or use a longer period.",
                attr="dateRange",
            )
    return RetentionRange(interval, starts, end, lookahead)


def _entity_condition(entity: RetentionEntity, p: Params, attr: str, timezone: str, actions: Actions | None) -> str:
    parts = [] if entity.event is None else [f"event = {p.add(entity.event)}"]
    if entity.is_action:
        if entity.action_id is None:
            raise ValidationFailed("An action entity needs the id of the action.", attr=f"{attr}.id")
        action = (actions or {}).get(entity.action_id)
        if action is None:
            raise ValidationFailed(f"Action {entity.id} does not exist in this project.", attr=f"{attr}.id")
        parts.append(action_condition(action, p, timezone=timezone, attr=f"{attr}.action"))
    own = property_filters_to_hogql(entity.properties, p, attr=f"{attr}.properties", timezone=timezone)
    if own:
        parts.append(own)
    return "(" + " AND ".join(parts) + ")" if parts else "true"


def _breakdown_sql(query: RetentionQuery) -> str | None:
    # PostHog's retention breakdown: the value as text, '' when missing (not trends' null marker); one property.
    items = breakdown_items(query.breakdownFilter)
    if not items:
        return None
    if len(items) > 1:
        raise ValidationFailed("Retention breaks down by one property.", attr="breakdownFilter.breakdowns")
    return f"ifNull(toString({items[0].expr()}), '')"


def retention_actor_rows_sql(
    query: RetentionQuery, rr: RetentionRange, p: Params, *, project: Any, actions: Actions | None = None,
    split_people: bool = False,
) -> str:
    """HogQL with one row per (person, breakdown value, cohort index, period offset) the person counts in.

    ``split_people``: instead, ``people`` (in the query's events) and ``split`` (those whose events have more than
    one breakdown value, a missing one counting as one): what :func:`breakdown_warning` reads.
    """
    rf = query.retentionFilter
    if rf.timeWindowMode == "24_hour_windows":
        raise ValidationFailed(
            "Rolling 24-hour retention windows are not supported by hoglab.", attr="retentionFilter.timeWindowMode"
        )
    timezone = getattr(project, "timezone", None) or "UTC"
    target_entity, returning_entity = rf.targetEntity or DEFAULT_ENTITY, rf.returningEntity or DEFAULT_ENTITY
    target = _entity_condition(target_entity, p, "retentionFilter.targetEntity", timezone, actions)
    keys = [(e.event, e.action_id, e.properties) for e in (target_entity, returning_entity)]
    same = keys[0] == keys[1]
    returning = target if same else _entity_condition(
        returning_entity, p, "retentionFilter.returningEntity", timezone, actions
    )
    where = series_conditions(query, None, p, project=project, attr="properties", event=False)
    actor = "person_id"
    if query.aggregation_group_type_index is not None:
        actor = f"`$group_{group_type_index(query.aggregation_group_type_index, 'aggregation_group_type_index')}`"
        where.append(f"{actor} != ''")
    first_time = rf.retentionType in ("retention_first_time", "retention_first_ever_occurrence")
    n = len(rr.starts)
    index = interval_number_sql(rr.interval, rr.starts[0], "timestamp", p, keys=rr.keys, attr="retentionFilter.period")
    in_range = f"i BETWEEN 0 AND {n - 1}"
    where += [target if same else f"({target} OR {returning})", f"timestamp < {p.add(rr.end)}"]
    if first_time:
        first = interval_number_sql(rr.interval, rr.starts[0], "minIf(timestamp, is_target)", p, keys=rr.keys)
        starts = f"if({first} BETWEEN 0 AND {n - 1}, [{first}], [])"
    else:
        where.append(f"timestamp >= {p.add(rr.starts[0])}")
        # The WHERE keeps the range's events, and only target events when both entities are the same events.
        starts = "groupUniqArray(i)" if same else f"groupUniqArrayIf(i, is_target AND {in_range})"
    bv = _breakdown_sql(query) or "''"
    minimum = rf.minimumOccurrences or 1
    # The periods a person came back in: with a minimum of events per period, every event's period is kept and
    # counted; otherwise each period once, and when the entities are the same events, the cohorts' own periods.
    if minimum > 1:
        returns = f"groupArrayIf(i, is_return AND {in_range})"
        qualified = f"arrayFilter(i -> countEqual(all_returns, i) >= {int(minimum)}, arrayDistinct(all_returns))"
    elif same and not first_time:
        returns, qualified = "[]", "starts"
    else:
        returns, qualified = f"groupUniqArrayIf(i, is_return AND {in_range})", "all_returns"
    # Each event's interval number and entity tests are computed once, below the aggregation.
    events = f"""
        SELECT {actor} AS actor_id, {bv} AS bv, timestamp, {index} AS i, {target} AS is_target,
               {"is_target" if same else returning} AS is_return
        FROM events WHERE {" AND ".join(where)}"""
    if split_people:
        return f"""
            SELECT count() AS people, countIf(n > 1) AS split
            FROM (SELECT actor_id, uniqExact(bv) AS n FROM ({events}) GROUP BY actor_id)"""
    offsets = (
        f"arrayConcat([0], arrayFilter(d -> d > 0 AND d < {int(rr.lookahead)}, "
        f"arrayMap(r -> r - start_index, returned)))"
    )
    if rf.cumulative:
        offsets = f"range(0, arrayMax({offsets}) + 1)"
    return f"""
        SELECT actor_id, bv, start_index, period FROM (
            SELECT actor_id, bv, start_index, {offsets} AS periods FROM (
                SELECT actor_id, bv, starts, {qualified} AS returned FROM (
                    SELECT actor_id, bv, {starts} AS starts, {returns} AS all_returns
                    FROM ({events})
                    GROUP BY actor_id, bv
                )
            ) ARRAY JOIN starts AS start_index
        ) ARRAY JOIN periods AS period"""


def _ranked_values(counts: dict[tuple[str, int, int], int], limit: int) -> tuple[list[str], set[str]]:
    totals: dict[str, int] = {}
    for (bv, _, period), n in counts.items():
        if period == 0:
            totals[bv] = totals.get(bv, 0) + n
    ranked = sorted(totals, key=lambda v: (-totals[v], v))
    return ranked[:limit], set(ranked[limit:])


SPLIT_WARNING_SHARE = 0.01
"""The share of people split between breakdown values above which a retention by an event property is warned."""


def breakdown_warning(query: RetentionQuery, rr: RetentionRange, ctx: RunContext) -> str | None:
    """A warning when a retention breaks down by an *event* property that a person's events do not all carry
    alike: each event counts under its own value, so a return on an event without the cohort's value is not a
    return (a breakdown by ``$feature/<flag>``, which events before the exposure lack, halves the retention).
    ``None`` for person or HogQL breakdowns and when fewer than :data:`SPLIT_WARNING_SHARE` of people are split."""
    items = breakdown_items(query.breakdownFilter)
    if not items or items[0].kind != "event":
        return None
    p = Params()
    row = ctx.execute(ctx.compile(retention_actor_rows_sql(query, rr, p, project=ctx.project, actions=ctx.actions,
                                                           split_people=True),
                                  values=p.values)).to_pylist()  # fmt: skip
    people, split = (int(row[0]["people"]), int(row[0]["split"])) if row else (0, 0)
    if not people or split / people <= SPLIT_WARNING_SHARE:
        return None
    prop = items[0].prop
    return (f"{split:,} of {people:,} people ({split / people:.0%}) have events with different values of the event "
            f"property {prop!r} (or without it): retention counts each event under its own value, so their "
            "returns on events without their cohort's value are lost. Break down by a person property, or by an "
            "experiment's variant with hoglab.by_variant(query, experiment).")


@register("RetentionQuery")
def run_retention(query: RetentionQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a RetentionQuery as PostHog does: a list of cohorts ``{date, label, values, breakdown_value?}``."""
    rr = retention_range(query, ctx)
    p = Params()
    rows_sql = retention_actor_rows_sql(query, rr, p, project=ctx.project, actions=ctx.actions)
    # A person has one row per (breakdown value, cohort, period): count() counts people.
    hogql = f"""
        SELECT bv, start_index, period, count() AS n FROM ({rows_sql})
        GROUP BY bv, start_index, period"""
    broken_down = _breakdown_sql(query) is not None
    cap = MAX_CELLS * (20 if broken_down else 1) + 1
    compiled = ctx.compile(hogql, values=p.values, max_limit=cap)
    found = ctx.execute(compiled).to_pylist()
    if len(found) >= cap:
        raise ValidationFailed("Too many breakdown values for a retention table.", attr="breakdownFilter")
    counts = {(str(r["bv"]), int(r["start_index"]), int(r["period"])): int(r["n"]) for r in found}
    if broken_down:
        shown, other = _ranked_values(counts, breakdown_limit(query.breakdownFilter))
        merged: dict[tuple[str, int, int], int] = {}
        for (bv, cohort_index, period), n in counts.items():
            key = (BREAKDOWN_OTHER if bv in other else bv, cohort_index, period)
            merged[key] = merged.get(key, 0) + n
        counts, values = merged, shown + ([BREAKDOWN_OTHER] if other else [])
    else:
        values = [""]
    results = []
    for bv in values:
        for start_index, cohort_start in enumerate(rr.starts):
            cohort: dict[str, Any] = {
                "date": cohort_start.isoformat(),
                "label": rr.label(start_index),
                "values": [
                    {"count": counts.get((bv, start_index, period), 0), "label": rr.label(period)}
                    for period in range(rr.lookahead)
                ],
            }
            if broken_down:
                cohort["breakdown_value"] = bv
            results.append(cohort)
    warning = breakdown_warning(query, rr, ctx) if broken_down else None
    return {
        "results": results,
        # PostHog's place for an answer's warnings (HogQLNotice messages): the client issues them.
        **({"metadata": {"warnings": [{"message": warning}]}} if warning else {}),
        "timezone": ctx.timezone,
        "resolved_date_range": {"date_from": rr.starts[0].isoformat(), "date_to": rr.end.isoformat()},
        "hogql": compiled.hogql,
        "timings": ctx.timings.to_list(),
    }
