"""The HogQL of a funnel: one row per person (and breakdown value) with the furthest step and its timings.

PostHog's funnel (its ``aggregate_funnel`` UDF, ordered and strict modes) is replayed per person over the
person's events sorted by time (``funnel_replay``: whole-array operations for plain ordered funnels, one
``arrayFold`` for the rest), so the step counts *and* the conversion times come from the same path, exclusions
included:

* Any step-1 event starts an attempt; an event of step ``k`` extends the attempt that reached step ``k-1`` if it
  is within the window of that attempt's first event (``ts - entry <= window``: an event exactly on the edge
  counts), and that attempt did not already reach step ``k``.
* The furthest step reached (first attempt to reach it) is the person's result; its step times give the
  conversion times.
* Exclusions: an exclusion event between steps ``j`` and ``j+1`` of an attempt (in its window, before it reached
  ``j+1``) taints the attempt; if the person's furthest attempt is tainted, the person leaves the funnel entirely
  (every step), unless a later clean attempt reaches the same step.
* ``strict``: every event of the person (not only step events) is replayed; an event clears the steps it does
  not match, so steps must follow one another with nothing in between.
* Events with the same timestamp are replayed in step order (PostHog permutes them; the results agree except
  for one event that matches several steps at once).

``unordered``: for every event, the distinct steps done in the window ending at it; the best window counts, its
first event per step (sorted) gives the times. Exclusions do not apply to unordered funnels (PostHog ignores them).
Times are integer microseconds (exact window edges); the answer converts to seconds.
"""

from __future__ import annotations

from typing import Any

from hoglab.schema import funnel_window_seconds
from hoglab.translate.actions import Actions
from hoglab.translate.funnel_replay import packed_event_key, replay_expr, unordered_replay, unpacked
from hoglab.translate.params import Params
from hoglab.translate.properties import property_filters_to_hogql
from hoglab.translate.series import get, series_conditions, series_events

__all__ = ["PERSON_ROWS_SETTINGS", "person_rows_sql", "window_micros"]

PERSON_ROWS_SETTINGS = {"group_by_two_level_threshold": 0, "group_by_two_level_threshold_bytes": 512 * 1024**2}
"""Settings for a query over ``person_rows_sql``: one-level aggregation by person until its state reaches 512 MiB.
A two-level one hands the replay 256 small blocks (~200 persons each at 50,000 persons), and the fold's many
expressions then cost more per block than per person: the funnel query is 1.6x slower at 1M events that way, even
at 10M. Past 512 MiB (tens of millions of events) it turns two-level, which is what lets the aggregation spill to
disk at the service's ``max_bytes_before_external_group_by`` (half the memory limit) instead of failing."""


def window_micros(funnels_filter: Any) -> int:
    """The conversion window in microseconds (PostHog counts a month as 31 days)."""
    interval = get(funnels_filter, "funnelWindowInterval", 14)
    return funnel_window_seconds(interval, get(funnels_filter, "funnelWindowIntervalUnit", "day")) * 1_000_000


def person_rows_sql(
    query: Any,
    steps: list[Any],
    p: Params,
    *,
    project: Any,
    time_from: str,
    time_to: str,
    bv_expr: str | None,
    attribution: str,
    attribution_step: int,
    order: str,
    window: int,
    exclusions: list[Any],
    actor: str,
    actor_condition: str = "true",
    actions: Actions | None = None,
) -> str:
    """One row per person (or ``actor``: a group's key) and breakdown value: ``actor_id, pv, step_reached
    (0-based; -1 none), times``; only events meeting ``actor_condition`` take part; ``actions``: the project's,
    for steps and exclusions that name one."""
    n = len(steps)
    step_conds = []
    for i, step in enumerate(steps):
        parts = series_conditions(None, step, p, project=project, attr=f"series.{i}", actions=actions)
        step_conds.append(" AND ".join(parts) or "true")
    mask = " + ".join(f"if({c}, {1 << i}, 0)" for i, c in enumerate(step_conds))
    xparts = []
    for j, ex in enumerate(exclusions):
        cond = " AND ".join(series_conditions(None, ex, p, project=project, attr=f"funnelsFilter.exclusions.{j}",
                                              actions=actions))  # fmt: skip
        bits = sum(1 << (i - 1) for i in range(int(ex.funnelFromStep) + 1, int(ex.funnelToStep) + 1))
        xparts.append(f"if({cond or 'true'}, {bits}, 0)")
    if xparts:
        xmask = xparts[0]
        for part in xparts[1:]:
            xmask = f"bitOr({xmask}, {part})"
    else:
        xmask = "0"
    timezone = getattr(project, "timezone", None) or "UTC"
    global_filter = (
        property_filters_to_hogql(get(query, "properties"), p, attr="properties", timezone=timezone) or "true"
    )
    relevant = "true" if order == "strict" else "(m0 != 0 OR x0 != 0)"
    names = [series_events(node, actions) for node in [*steps, *exclusions]]
    if order != "strict" and None not in names:
        # Only these events can be relevant; said in the WHERE, the sort key (team, day, event) skips the others.
        wanted = sorted({name for found in names if found is not None for name in found})
        global_filter = f"event IN {p.add(wanted)} AND {global_filter}" if wanted else "false"
    bv = bv_expr or "''"
    if bv_expr is None:
        prop_vals = "['']"
    elif attribution == "first_touch":
        prop_vals = "[argMinIf(b0, ts0, b0 != '')]"
    elif attribution == "last_touch":
        prop_vals = "[argMaxIf(b0, ts0, b0 != '')]"
    elif attribution == "step":
        prop_vals = f"if(countIf(bitTest(m0, {attribution_step})) > 0, groupUniqArrayIf(b0, bitTest(m0, {attribution_step})), [''])"  # noqa: E501
    else:
        prop_vals = "groupUniqArray(b0)"
    filter_all = attribution == "all_events" and bv_expr is not None
    step_value = attribution_step if attribution == "step" and bv_expr is not None else None
    # Only the arrays the replay reads are collected: every array costs memory and time for each event.
    columns = ["ts", "m"] + (["x"] if exclusions else []) + (["b"] if filter_all or step_value is not None else [])
    if order == "unordered":
        replay = unordered_replay(n, window)
    else:
        replay = replay_expr(
            n, window, strict=order == "strict", attribution_step=step_value, exclusions=bool(exclusions)
        )
    # One packed key per event sorts time, step and exclusion bits together (ties in time in step order); a
    # breakdown value, when the replay reads one, is sorted by the same keys.
    arrays = unpacked("ks")
    unzipped = ", ".join(
        ["arraySort(groupArray(k0)) AS ks"]
        + [f"{arrays[c]} AS {c}_all" for c in columns if c != "b"]
        + (["arraySort((v, k) -> k, groupArray(b0), groupArray(k0)) AS b_all"] if "b" in columns else [])
    )
    if filter_all:
        picked = ", ".join(
            "arrayFilter(bb2 -> bb2 = pv, b_all) AS b"
            if c == "b"
            else f"arrayFilter((v, bb2) -> bb2 = pv, {c}_all, b_all) AS {c}"
            for c in columns
        )
    else:
        picked = ", ".join(f"{c}_all AS {c}" for c in columns)
    source = f"""(
            SELECT actor_id, pv, {picked}
            FROM (
                SELECT actor_id, {unzipped}, {prop_vals} AS pvs
                FROM (
                    SELECT {actor} AS actor_id, toUnixTimestamp64Micro(timestamp) AS ts0,
                           toInt64({mask}) AS m0, toInt64({xmask}) AS x0, {bv} AS b0,
                           if(m0 = 0, 99, toInt64(log2(greatest(bitAnd(m0, -m0), 1)))) AS lowest,
                           {packed_event_key("ts0", "lowest", "m0", "x0")} AS k0
                    FROM events
                    WHERE timestamp >= {time_from} AND timestamp <= {time_to} AND {global_filter}
                          AND {actor_condition}
                )
                WHERE {relevant}
                GROUP BY actor_id
            )
            ARRAY JOIN pvs AS pv
        )"""
    return replay.select(["actor_id", "pv"], columns, source)
