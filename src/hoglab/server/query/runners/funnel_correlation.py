"""``FunnelCorrelationQuery``: which events or properties go with converting through a funnel, PostHog's shapes.

For example (a sketch of a call and its answer, not run)::

    {"kind": "FunnelCorrelationQuery", "funnelCorrelationType": "events",
     "source": {"kind": "FunnelsActorsQuery", "source": {"kind": "FunnelsQuery", "series": [...]}}}
    -> {"results": {"events": [{"event": {"event": "watched video", "properties": {}, "elements": []},
                                "success_count": 5, "failure_count": 1, "odds_ratio": 16.5,
                                "correlation_type": "success"}, ...], "skewed": false}}

PostHog's semantics (``FunnelCorrelationQueryRunner``), restated:

* The actors are the funnel's (``FunnelsActorsQuery.funnelStep``, 1 by default: everyone who entered); an actor
  *succeeded* when it reached the last step. Its time in the funnel runs from its first step to its last one when
  it converted, else for the conversion window after its first step.
* ``events``: for each event name, the actors who did it (at least once) strictly inside their time in the funnel
  and inside the query's range, counted among the successes and the failures; the funnel's own step events (an
  action's events included) and ``funnelCorrelationExcludeEventNames`` take no part.
* ``event_with_properties``: the same over ``event::property::value`` of the events
  ``funnelCorrelationEventNames`` (string-valued properties, ``JSONExtractKeysAndValues(properties, 'String')``),
  kept where more than 2 actors did it, less ``funnelCorrelationEventExcludePropertyNames``.
* ``properties``: ``property::value`` of each actor's person (or group, with ``aggregation_group_type_index``):
  ``funnelCorrelationNames`` (a missing property is the value ``""``) or ``["$all"]`` for every string-valued
  one, less ``funnelCorrelationExcludeNames``.
* With S successes and F failures in all, a name done by s of them and f of these: its odds ratio with a prior of
  one is ((s + 1)(F − f + 1)) / ((S − s + 1)(f + 1)); ``success`` above 1, else ``failure``. Names done by fewer
  than min(25, 2% of S + F) actors are left out. The answer: the ten highest ratios of ``success``, then the ten
  lowest of ``failure`` (ties by name); ``skewed`` when S/F or F/S exceeds 10. With S or F zero: no rows, skewed.

hoglab counts each actor's set of names in one pass over the events joined to the funnel's actors (one row per
actor with a sentinel for the totals), where PostHog unions a second pass over the actors; and it compares times
to the microsecond, where PostHog truncates the event's to the second. ``$autocapture`` is read by its properties
like any event (PostHog correlates its elements chain).
"""

from __future__ import annotations

from typing import Any

from hoglab.schema import FunnelCorrelationQuery, FunnelsQuery
from hoglab.translate.params import Params
from hoglab.translate.properties import group_type_index
from hoglab.translate.series import series_events

from ...errors import ValidationFailed
from .base import RunContext, register
from .funnels import funnel_person_rows
from .funnels_sql import PERSON_ROWS_SETTINGS, window_micros

__all__ = ["MIN_ACTOR_COUNT", "MIN_ACTOR_SHARE", "PRIOR_COUNT", "correlations", "odds_ratio", "run_funnel_correlation"]

PRIOR_COUNT = 1
MIN_ACTOR_COUNT = 25
MIN_ACTOR_SHARE = 0.02
TOP = 10
TOTAL = "Total_Values_In_Query"  # PostHog's name for the totals row; no event or property::value can be it
_MAX_NAMES = 1_000_000


def odds_ratio(success: int, failure: int, success_total: int, failure_total: int) -> float:
    """The odds of converting having done it over those of not having done it, with one prior count each.

    >>> odds_ratio(5, 0, 10, 10)  # PostHog's test: 5 of 10 successes did it, no failure did
    11.0
    """
    return ((success + PRIOR_COUNT) * (failure_total - failure + PRIOR_COUNT)) / (
        (success_total - success + PRIOR_COUNT) * (failure + PRIOR_COUNT)
    )


def _actor(funnel: FunnelsQuery) -> tuple[str, str | None]:
    """The events' expression of the actor (a person, or a group of ``aggregation_group_type_index``), and the
    group type index if any; an actor of ``funnelAggregateByHogQL`` is refused (PostHog's runner joins persons or
    groups only)."""
    if funnel.funnelsFilter is not None and funnel.funnelsFilter.funnelAggregateByHogQL:
        raise ValidationFailed("Funnel correlation aggregates by persons or groups, not funnelAggregateByHogQL.",
                               attr="source.source.funnelsFilter.funnelAggregateByHogQL")  # fmt: skip
    if funnel.aggregation_group_type_index is not None:
        index = group_type_index(funnel.aggregation_group_type_index, "aggregation_group_type_index")
        return f"e.`$group_{index}`", str(index)
    return "e.person_id", None


def _actors_sql(query: FunnelCorrelationQuery, ctx: RunContext, p: Params) -> tuple[str, Any, int]:
    """The funnel's actors: ``actor_id, success, first_us, final_us`` (``final_us`` NULL for a failure)."""
    funnel = query.source.source.model_copy(update={"breakdownFilter": None})
    n = len(funnel.series)
    step = query.source.funnelStep or 1
    if abs(step) > n or step == -1:
        raise ValidationFailed("funnelStep is out of range (1..steps, or -2..-steps for drop-offs).",
                               attr="source.funnelStep")  # fmt: skip
    persons, rng = funnel_person_rows(funnel, ctx, p)
    condition = f"step_reached >= {step - 1}" if step > 0 else f"step_reached = {-step - 2}"
    sql = (f"SELECT actor_id, step_reached = {n - 1} AS success, times[1] AS first_us, "
           f"if(success, times[{n}], NULL) AS final_us FROM ({persons}) WHERE {condition}")  # fmt: skip
    return sql, rng, n


def _step_names(query: FunnelCorrelationQuery, ctx: RunContext) -> list[str]:
    names: set[str] = set()
    for node in query.source.source.series:
        found = series_events(node, ctx.actions)
        if found:
            names.update(found)
    return sorted(names)


def _events_sql(query: FunnelCorrelationQuery, ctx: RunContext, p: Params) -> tuple[str, Any]:
    actors, rng, _ = _actors_sql(query, ctx, p)
    funnel = query.source.source
    actor, _ = _actor(funnel)
    start, end = rng.bounds_utc()
    window = window_micros(funnel.funnelsFilter)
    ts = "toUnixTimestamp64Micro(e.timestamp)"
    in_funnel = (f"{ts} > a.first_us AND {ts} < coalesce(a.final_us, a.first_us + {window}) "
                 f"AND {ts} <= {p.add(int(end.timestamp() * 1_000_000))}")  # fmt: skip
    if query.funnelCorrelationType == "events":
        excluded = sorted({*_step_names(query, ctx), *(query.funnelCorrelationExcludeEventNames or [])})
        names = f"groupUniqArrayIf(e.event, {in_funnel} AND e.event NOT IN {p.add(excluded or [''])})"
    else:
        events = list(query.funnelCorrelationEventNames or [])
        skip = list(query.funnelCorrelationEventExcludePropertyNames or [])
        steps = _step_names(query, ctx)
        pairs = (f"arrayMap(kv -> concat(e.event, '::', kv.1, '::', kv.2), arrayFilter(kv -> kv.1 NOT IN "
                 f"{p.add(skip or [''])}, JSONExtractKeysAndValues(e.properties, 'String')))")  # fmt: skip
        condition = f"{in_funnel} AND e.event IN {p.add(events)} AND e.event NOT IN {p.add(steps or [''])}"
        names = f"arrayDistinct(arrayFlatten(groupArrayIf({pairs}, {condition})))"
    sql = f"""
        SELECT name, countIf(success) AS success_count, countIf(NOT success) AS failure_count
        FROM (
            SELECT a.actor_id AS actor, any(a.success) AS success,
                   arrayJoin(arrayPushBack({names}, {p.add(TOTAL)})) AS name
            FROM events AS e
            INNER JOIN ({actors}) AS a ON {actor} = a.actor_id
            WHERE e.timestamp >= {p.add(rng.date_from)} AND e.timestamp <= {p.add(end)}
            GROUP BY actor
        )
        GROUP BY name"""
    del start
    return sql, rng


def _properties_sql(query: FunnelCorrelationQuery, ctx: RunContext, p: Params) -> tuple[str, Any]:
    actors, rng, _ = _actors_sql(query, ctx, p)
    _, group = _actor(query.source.source)
    names = list(query.funnelCorrelationNames or [])
    skip = list(query.funnelCorrelationExcludeNames or [])
    if group is None:
        joined = "LEFT JOIN (SELECT id, properties AS props FROM persons) AS o ON o.id = a.actor_id"
    else:
        joined = (f"LEFT JOIN (SELECT key, properties AS props FROM groups WHERE index = {group}) AS o "
                  "ON o.key = a.actor_id")  # fmt: skip
    if "$all" in names:
        pairs = "JSONExtractKeysAndValues(ifNull(o.props, '{}'), 'String')"
    else:
        empty = p.add("{}")
        values = ", ".join(f"JSONExtractString(ifNull(o.props, {empty}), {p.add(name)})" for name in names)
        pairs = f"arrayZip({p.add(names)}, [{values}])"
    kept = f"arrayMap(kv -> concat(kv.1, '::', kv.2), arrayFilter(kv -> kv.1 NOT IN {p.add(skip or [''])}, {pairs}))"
    sql = f"""
        SELECT name, countIf(success) AS success_count, countIf(NOT success) AS failure_count
        FROM (
            SELECT a.success AS success, arrayJoin(arrayPushBack(arrayDistinct({kept}), {p.add(TOTAL)})) AS name
            FROM ({actors}) AS a
            {joined}
        )
        GROUP BY name"""
    return sql, rng


def _insignificant(success: int, failure: int, total: int) -> bool:
    return success + failure < min(MIN_ACTOR_COUNT, MIN_ACTOR_SHARE * total)


def correlations(rows: list[dict[str, Any]], kind: str) -> tuple[list[dict[str, Any]], bool]:
    """The answer's ``events`` and ``skewed`` from the counts per name (with the totals row)."""
    totals = next((r for r in rows if r["name"] == TOTAL), None)
    success_total = int(totals["success_count"]) if totals else 0
    failure_total = int(totals["failure_count"]) if totals else 0
    if not success_total or not failure_total:
        return [], True
    skewed = success_total / failure_total > 10 or failure_total / success_total > 10
    found: list[dict[str, Any]] = []
    for row in rows:
        success, failure = int(row["success_count"]), int(row["failure_count"])
        if row["name"] == TOTAL or _insignificant(success, failure, success_total + failure_total):
            continue
        if kind == "event_with_properties" and success + failure <= 2:
            continue
        ratio = odds_ratio(success, failure, success_total, failure_total)
        found.append({"event": {"event": str(row["name"]), "properties": {}, "elements": []}, "name": str(row["name"]),
                      "success_count": success, "failure_count": failure, "odds_ratio": ratio,
                      "correlation_type": "success" if ratio > 1 else "failure"})  # fmt: skip
    positive = sorted((f for f in found if f["correlation_type"] == "success"),
                      key=lambda f: (-float(f["odds_ratio"]), str(f["name"])))  # fmt: skip
    negative = sorted((f for f in found if f["correlation_type"] == "failure"),
                      key=lambda f: (f["odds_ratio"], f["name"]))  # fmt: skip
    return [{k: v for k, v in f.items() if k != "name"} for f in positive[:TOP] + negative[:TOP]], skewed


@register("FunnelCorrelationQuery")
def run_funnel_correlation(query: FunnelCorrelationQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a FunnelCorrelationQuery: ``results: {events, skewed}`` with the HogQL that counted them."""
    if len(query.source.source.series) < 2:
        raise ValidationFailed("A funnel correlation needs a funnel of at least two steps.",
                               attr="source.source.series")  # fmt: skip
    if query.funnelCorrelationType == "properties" and not query.funnelCorrelationNames:
        raise ValidationFailed("Property Correlation expects at least one property to run correlation on.",
                               attr="funnelCorrelationNames")  # fmt: skip
    if query.funnelCorrelationType == "event_with_properties" and not query.funnelCorrelationEventNames:
        raise ValidationFailed("Event Property Correlation expects at least one event name to run correlation on.",
                               attr="funnelCorrelationEventNames")  # fmt: skip
    p = Params()
    build = _properties_sql if query.funnelCorrelationType == "properties" else _events_sql
    sql, rng = build(query, ctx, p)
    compiled = ctx.compile(sql, values=p.values, max_limit=_MAX_NAMES)
    rows = ctx.execute(compiled, settings=PERSON_ROWS_SETTINGS).to_pylist()
    events, skewed = correlations(rows, query.funnelCorrelationType)
    return {
        "results": {"events": events, "skewed": skewed},
        "columns": ["name", "success_count", "failure_count"],
        "types": [["name", "String"], ["success_count", "UInt64"], ["failure_count", "UInt64"]],
        "hasMore": False,
        "limit": None,
        "offset": None,
        "timezone": ctx.timezone,
        "resolved_date_range": rng.to_json(),
        "hogql": compiled.hogql,
        "timings": ctx.timings.to_list(),
    }
