"""The HogQL of a funnel: one row per person (and breakdown value) with the furthest step and its timings.

PostHog's funnel (its ``aggregate_funnel`` UDF, ordered and strict modes) is replayed per person with
``arrayFold`` over the person's events sorted by time, so the step counts *and* the conversion times come from
the same path, exclusions included:

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

from .common import get
from .properties import Params, property_filters_to_hogql

__all__ = ["fold_expr", "person_rows_sql", "unordered_expr", "window_micros"]

_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 31 * 86400}


def window_micros(funnels_filter: Any) -> int:
    """The conversion window in microseconds (PostHog counts a month as 31 days)."""
    count = int(get(funnels_filter, "funnelWindowInterval", 14))
    unit = str(get(funnels_filter, "funnelWindowIntervalUnit", "day"))
    return count * _UNIT_SECONDS[unit] * 1_000_000


def fold_expr(n: int, window: int, *, strict: bool, attribution_step: int | None) -> str:
    """``arrayFold`` over arrays ``ts, m, x, b`` (time, step bits, exclusion bits, breakdown) for value ``pv``.

    State: (entry[N], excluded[N], times[N][], max_step, max_entry, max_excluded, max_times, done).
    """
    ks = f"range(1, {n + 1})"
    prev_entry = "if(k = 1, t, s.1[k - 1])"
    prev_excl = "if(k = 1, 0, s.2[k - 1])"
    prev_times = "if(k = 1, emptyArrayInt64(), s.3[k - 1])"
    attribution = f" AND (k != {attribution_step + 1} OR bb = pv)" if attribution_step is not None else ""
    adv = (
        f"(bitTest(mm, k - 1) AND (k = 1 OR (s.1[k - 1] > 0 AND t - s.1[k - 1] <= {window}))"
        f" AND s.1[k] != {prev_entry}{attribution})"
    )
    keep = f"({adv} AND {prev_excl} = 0)"
    entry = f"arrayMap(k -> if({keep}, {prev_entry}, s.1[k]), {ks})"
    excl = f"arrayMap(k -> if({keep}, toInt64(0), s.2[k]), {ks})"
    times = f"arrayMap(k -> if({keep}, arrayPushBack({prev_times}, t), s.3[k]), {ks})"
    cand = f"arrayMax(arrayMap(k -> if({adv} AND (k > s.4 OR (k = s.4 AND s.6 = 1)), k, 0), {ks}))"
    # Exclusions only come from events that match no step (PostHog: an event is steps or exclusions).
    ex_hit = f"(mm = 0 AND bitTest(xx, i - 1) AND s.1[i] > 0 AND t - s.1[i] <= {window} AND s.1[i + 1] != s.1[i])"
    excl_after = f"arrayMap(i -> if(i < {n} AND {ex_hit}, toInt64(1), e2[i]), {ks})"
    max_ex = f"arrayExists(i -> i < {n} AND {ex_hit} AND s.4 = i AND t - s.5 <= {window}, {ks})"
    clear = f"arrayMap(k -> if(bitTest(mm, k - 1), e1[k], toInt64(0)), {ks})" if strict else "e1"
    # The new state is built from the old one in two steps, each a lambda applied to named intermediate values.
    step_two = f"""arrayMap((e1, e2, tm, c) -> tuple(
            {clear},
            {excl_after},
            {"arrayMap(k -> if(bitTest(mm, k - 1), tm[k], emptyArrayInt64()), " + ks + ")" if strict else "tm"},
            if(c > 0, c, s.4),
            if(c > 0, if(c = 1, t, s.1[c - 1]), s.5),
            if(c > 0, if(c = 1, 0, s.2[c - 1]), if({max_ex}, toInt64(1), s.6)),
            if(c > 0, arrayPushBack(if(c = 1, emptyArrayInt64(), s.3[c - 1]), t), s.7),
            if(e1[{n}] > 0, toInt64(1), toInt64(0))
        ), [{entry}], [{excl}], [{times}], [{cand}])[1]"""
    init = (
        f"tuple(arrayWithConstant({n}, toInt64(0)), arrayWithConstant({n}, toInt64(0)), "
        f"arrayWithConstant({n}, emptyArrayInt64()), toInt64(0), toInt64(0), toInt64(0), emptyArrayInt64(), toInt64(0))"
    )
    return f"arrayFold((s, t, mm, xx, bb) -> if(s.8 = 1, s, {step_two}), ts, m, x, b, {init})"


def unordered_expr(n: int, window: int) -> str:
    """For unordered funnels: (steps done in the best window, that window's sorted first time per step)."""
    in_window = f"arrayFilter((m2, t2) -> t2 <= t AND t - t2 <= {window}, m, ts)"
    firsts = (
        f"arraySort(arrayFilter(v -> v < 9223372036854775807, arrayMap(k -> arrayMin(arrayMap((t2, m2) -> "
        f"if(bitTest(m2, k - 1) AND t2 <= t AND t - t2 <= {window}, t2, 9223372036854775807), ts, m)), "
        f"range(1, {n + 1}))))"
    )
    per_end = f"arrayMap(t -> tuple(bitCount(arrayReduce('groupBitOr', {in_window})), {firsts}), ts)"
    best = f"arrayMax(arrayMap(w -> w.1, {per_end}))"
    return f"arrayFirst(w -> w.1 = {best}, {per_end})"


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
) -> str:
    """One row per person and breakdown value: ``actor_id, pv, step_reached (0-based; -1 none), times``."""
    from .common import series_conditions

    n = len(steps)
    step_conds = []
    for i, step in enumerate(steps):
        parts = series_conditions(None, step, p, project=project, attr=f"series.{i}")
        step_conds.append(" AND ".join(parts) or "true")
    mask = " + ".join(f"if({c}, {1 << i}, 0)" for i, c in enumerate(step_conds))
    xparts = []
    for j, ex in enumerate(exclusions):
        cond = " AND ".join(series_conditions(None, ex, p, project=project, attr=f"funnelsFilter.exclusions.{j}"))
        bits = sum(1 << (i - 1) for i in range(int(ex.funnelFromStep) + 1, int(ex.funnelToStep) + 1))
        xparts.append(f"if({cond or 'true'}, {bits}, 0)")
    if xparts:
        xmask = xparts[0]
        for part in xparts[1:]:
            xmask = f"bitOr({xmask}, {part})"
    else:
        xmask = "0"
    global_filter = property_filters_to_hogql(get(query, "properties"), p, attr="properties") or "true"
    relevant = "true" if order == "strict" else "(m0 != 0 OR x0 != 0)"
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
    if order == "unordered":
        body = unordered_expr(n, window)
        per_value = f"({body}) AS u, tupleElement(u, 1) - 1 AS step_reached, tupleElement(u, 2) AS times"
    else:
        fold = fold_expr(
            n, window, strict=order == "strict", attribution_step=attribution_step if attribution == "step" else None
        )
        per_value = (
            f"{fold} AS f, if(tupleElement(f, 6) = 1, -2, tupleElement(f, 4) - 1) AS step_reached, "
            f"tupleElement(f, 7) AS times"
        )
    filter_all = attribution == "all_events" and bv_expr is not None
    pick = "arrayFilter((tt, bb2) -> bb2 = pv, ts_all, b_all)" if filter_all else "ts_all"
    pick_m = "arrayFilter((mm2, bb2) -> bb2 = pv, m_all, b_all)" if filter_all else "m_all"
    pick_x = "arrayFilter((xx2, bb2) -> bb2 = pv, x_all, b_all)" if filter_all else "x_all"
    pick_b = "arrayFilter(bb2 -> bb2 = pv, b_all)" if filter_all else "b_all"
    return f"""
        SELECT actor_id, pv, {per_value}
        FROM (
            SELECT actor_id, pv, {pick} AS ts, {pick_m} AS m, {pick_x} AS x, {pick_b} AS b
            FROM (
                SELECT actor_id,
                       arraySort((e) -> (e.1, e.2), groupArray(tuple(ts0, lowest, m0, x0, b0))) AS ev,
                       arrayMap(e -> e.1, ev) AS ts_all, arrayMap(e -> e.3, ev) AS m_all,
                       arrayMap(e -> e.4, ev) AS x_all, arrayMap(e -> e.5, ev) AS b_all,
                       {prop_vals} AS pvs
                FROM (
                    SELECT {actor} AS actor_id, toUnixTimestamp64Micro(timestamp) AS ts0,
                           toInt64({mask}) AS m0, toInt64({xmask}) AS x0, {bv} AS b0,
                           if(m0 = 0, 99, log2(bitAnd(m0, -m0))) AS lowest
                    FROM events
                    WHERE timestamp >= {time_from} AND timestamp <= {time_to} AND {global_filter}
                )
                WHERE {relevant}
                GROUP BY actor_id
            )
            ARRAY JOIN pvs AS pv
        )
    """
