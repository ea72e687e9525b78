"""``PathsQuery``: the most common sequences of pages, screens or events, as weighted edges between steps.

For example (a sketch of a call and its answer, not run)::

    {"kind": "PathsQuery", "pathsFilter": {"includeEventTypes": ["$pageview"], "startPoint": "https://x.io/home"}}
    -> {"results": [{"source": "1_https://x.io/home", "target": "2_https://x.io/pricing", "value": 41,
                     "average_conversion_time": 12500.0}, ...]}

PostHog's semantics (``PathsQueryRunner``), restated:

* A path item is the URL of a ``$pageview`` (``$current_url`` without a trailing slash), the ``$screen_name`` of a
  ``$screen``, the event name of any other event, or ``pathsHogQLExpression`` with the ``hogql`` type.
  ``includeEventTypes`` keeps those kinds (``custom_event``: events not starting with ``$``); without it, every
  event is a step. ``excludeEvents`` drops steps by path item (hoglab applies it with or without
  ``includeEventTypes``; PostHog only with).
* ``localPathCleaningFilters`` rewrite items in order (``replaceRegexpAll(item, regex, alias)``); then an item
  matching a ``pathGroupings`` pattern (``*`` is a wildcard) becomes the pattern. ``pathReplacements`` applies the
  project's cleaning rules: hoglab projects have none.
* A person's steps are split into sessions at gaps of 30 minutes or more (PostHog's rule; ``$session_id`` is not
  read). Consecutive repeats of an item collapse into one step (the last of them).
* ``startPoint``: the session's path from the first occurrence of it; ``endPoint``: up to the first occurrence of
  it. Only sessions that reach the point count. Then the first ``stepLimit`` steps are kept (the last ones with
  only an ``endPoint``; with both points, the first and last halves around a ``...`` step).
* An edge ``(i_source, i+1_target)`` weighs the number of session paths with those steps; ``average_conversion_time``
  is the mean time between the two steps in milliseconds. Edges outside ``[minEdgeWeight, maxEdgeWeight]`` are
  dropped, the heaviest ``edgeLimit`` kept, and then those not reachable from a first step.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from hoglab.schema import PathsQuery
from hoglab.translate.dates import QueryDateRange, resolve_date_range
from hoglab.translate.params import Params
from hoglab.translate.properties import hogql_expression
from hoglab.translate.series import series_conditions

from .base import RunContext, register
from .common import first_event_time

__all__ = ["SESSION_GAP_SECONDS", "grouping_regex", "path_steps_sql", "paths_range", "reachable_edges", "run_paths"]

SESSION_GAP_SECONDS = 30 * 60


def grouping_regex(grouping: str) -> str:
    """A ``pathGroupings`` pattern as a regular expression: the text as is, ``*`` any characters.

    >>> grouping_regex("/blog/*")
    '/blog/.*'
    """
    return re.escape(grouping).replace(r"\*", ".*")


def _item_sql(query: PathsQuery, p: Params) -> str:
    pf = query.pathsFilter
    include = pf.includeEventTypes or []
    exclude = pf.excludeEvents or []

    def wanted(kind: str) -> bool:
        return kind in include if include else kind not in exclude

    item = "event"
    if wanted("hogql") and pf.pathsHogQLExpression:
        item = f"toString({hogql_expression(pf.pathsHogQLExpression, 'pathsFilter.pathsHogQLExpression')})"
    if wanted("$pageview"):
        no_slash, kept = p.add("(.)/$"), p.add("\\1")
        url = f"replaceRegexpAll(ifNull(toString(properties.`$current_url`), ''), {no_slash}, {kept})"
        item = f"if(event = '$pageview', {url}, {item})"
    if wanted("$screen"):
        item = f"if(event = '$screen', toString(properties.`$screen_name`), {item})"
    item = f"ifNull({item}, '')"
    for rule in pf.localPathCleaningFilters or []:
        if rule.regex:
            item = f"replaceRegexpAll({item}, {p.add(rule.regex)}, {p.add(rule.alias or '')})"
    if pf.pathGroupings:
        cases = ", ".join(f"match({item}, {p.add(grouping_regex(g))}), {p.add(g)}" for g in pf.pathGroupings)
        item = f"multiIf({cases}, {item})"
    return item


def _event_type_condition(query: PathsQuery) -> str | None:
    include = query.pathsFilter.includeEventTypes or []
    kinds = []
    if "$pageview" in include:
        kinds.append("event = '$pageview'")
    if "$screen" in include:
        kinds.append("event = '$screen'")
    if "custom_event" in include:
        kinds.append("NOT startsWith(event, '$')")
    return "(" + " OR ".join(kinds) + ")" if kinds else None


def _target(text: str) -> str:
    return text[:-1] if len(text) > 1 and text.endswith("/") else text


def _limited(query: PathsQuery, p: Params) -> tuple[str, str, str | None]:
    """HogQL for the kept steps' items and times (over ``compact``/``ctimes``), and the condition to keep a path."""
    pf = query.pathsFilter
    limit = int(pf.stepLimit or 5)
    # Items are URLs without their trailing slash, so the points are compared the same way.
    start, end = (_target(point) if point else None for point in (pf.startPoint, pf.endPoint))
    if start and end:
        half = limit // 2
        first = f"arraySlice(compact, indexOf(compact, {p.add(start)}))"
        first_t = f"arraySlice(ctimes, indexOf(compact, {p.add(start)}))"
        cut = f"indexOf({first}, {p.add(end)})"
        path, times = f"arrayResize({first}, {cut})", f"arrayResize({first_t}, {cut})"

        def middle(arr: str, gap: str) -> str:
            return (
                f"if(length({arr}) > {limit}, arrayConcat(arraySlice({arr}, 1, {half}), {gap}, "
                f"arraySlice({arr}, -{half}, {half})), {arr})"
            )

        keep = f"indexOf(compact, {p.add(start)}) > 0 AND {cut} > 0"
        return middle(path, "['...']"), middle(times, f"[arrayElement({times}, {half + 1})]"), keep
    if start:
        at = f"indexOf(compact, {p.add(start)})"
        return f"arraySlice(compact, {at}, {limit})", f"arraySlice(ctimes, {at}, {limit})", f"{at} > 0"
    if end:
        at = f"indexOf(compact, {p.add(end)})"
        path, times = f"arrayResize(compact, {at})", f"arrayResize(ctimes, {at})"
        return f"arraySlice({path}, -{limit})", f"arraySlice({times}, -{limit})", f"{at} > 0"
    return f"arraySlice(compact, 1, {limit})", f"arraySlice(ctimes, 1, {limit})", None


def paths_range(query: PathsQuery, ctx: RunContext) -> QueryDateRange:
    # a range that ends before it starts selects no event: PostHog answers it with no path, not an error
    return resolve_date_range(
        query.dateRange, "day", now=ctx.now, timezone=ctx.timezone, first_event=lambda: first_event_time(ctx),
        empty_when_inverted=True,
    )  # fmt: skip


def path_steps_sql(query: PathsQuery, rng: QueryDateRange, p: Params, *, project: Any) -> str:
    """HogQL with one row per step of every kept session path: ``actor_id, path_key, last_path_key (NULL for the
    first step), conversion_time (seconds), dropoff_key`` (the path's last step)."""
    start, end = rng.bounds_utc()
    where = series_conditions(query, None, p, project=project, attr="properties", event=False)
    where += [f"timestamp >= {p.add(start)}", f"timestamp <= {p.add(end)}"]
    kinds = _event_type_condition(query)
    if kinds:
        where.append(kinds)
    item = _item_sql(query, p)
    excluded = query.pathsFilter.excludeEvents
    kept_items = f"WHERE item NOT IN {p.add(list(excluded))}" if excluded else ""
    path, times, keep = _limited(query, p)
    return f"""
        SELECT actor_id, concat(toString(tupleElement(step, 4)), '_', tupleElement(step, 1)) AS path_key,
               if(tupleElement(step, 4) > 1,
                  concat(toString(tupleElement(step, 4) - 1), '_', tupleElement(step, 3)), NULL) AS last_path_key,
               tupleElement(step, 2) AS conversion_time, dropoff_key
        FROM (
            SELECT actor_id, concat(toString(length(lim_p)), '_', arrayElement(lim_p, -1)) AS dropoff_key,
                   arrayZip(lim_p, arrayDifference(lim_t), arrayPopBack(arrayPushFront(lim_p, '')),
                            arrayEnumerate(lim_p)) AS steps
            FROM (
                SELECT actor_id, {path} AS lim_p, {times} AS lim_t FROM (
                    SELECT actor_id, arrayFilter((x, k) -> k, items, keep) AS compact,
                           arrayFilter((x, k) -> k, stamps, keep) AS ctimes
                    FROM (
                        SELECT actor_id, items, stamps,
                               arrayMap((x, y) -> x != y, items, arrayPopFront(arrayPushBack(items, ''))) AS keep
                        FROM (
                            SELECT actor_id, arrayMap(x -> tupleElement(x, 2), session) AS items,
                                   arrayMap(x -> tupleElement(x, 1), session) AS stamps
                            FROM (
                                SELECT actor_id, arraySplit((x, gap) -> gap >= {SESSION_GAP_SECONDS}, evs,
                                       arrayDifference(arrayMap(x -> tupleElement(x, 1), evs))) AS sessions
                                FROM (
                                    SELECT actor_id, arraySort(x -> tupleElement(x, 1), groupArray(tuple(t, item))) AS evs
                                    FROM (
                                        SELECT person_id AS actor_id, toUnixTimestamp64Micro(timestamp) / 1000000 AS t,
                                               {item} AS item
                                        FROM events WHERE {" AND ".join(where)}
                                    ) {kept_items}
                                    GROUP BY actor_id
                                )
                            ) ARRAY JOIN sessions AS session
                        )
                    )
                ) {"WHERE " + keep if keep else ""}
            )
        ) ARRAY JOIN steps AS step"""  # noqa: E501


def reachable_edges(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PostHog's last pass: keep the edges whose source is reachable from a first step (``1_...``) through the
    edges kept, so a cut-off tail of a path does not float alone.

    >>> reachable_edges([{"source": "1_a", "target": "2_b"}, {"source": "3_c", "target": "4_d"}])
    [{'source': '1_a', 'target': '2_b'}]
    """
    following: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        following[row["source"]].append(row["target"])
    seen: set[str] = set()
    stack = [row["source"] for row in rows if row["source"].startswith("1_")]
    while stack:
        node = stack.pop()
        seen.add(node)
        stack.extend(n for n in following[node] if n not in seen)
    return [row for row in rows if row["source"] in seen]


@register("PathsQuery")
def run_paths(query: PathsQuery, ctx: RunContext) -> dict[str, Any]:
    """Answer a PathsQuery as PostHog does: edges ``{source, target, value, average_conversion_time}``."""
    pf = query.pathsFilter
    rng = paths_range(query, ctx)
    p = Params()
    steps = path_steps_sql(query, rng, p, project=ctx.project)
    having = []
    if pf.minEdgeWeight:
        having.append(f"value >= {p.add(pf.minEdgeWeight)}")
    if pf.maxEdgeWeight:
        having.append(f"value <= {p.add(pf.maxEdgeWeight)}")
    limit = int(pf.edgeLimit or 50)
    hogql = f"""
        SELECT last_path_key AS source, path_key AS target, count() AS value, avg(conversion_time) AS seconds
        FROM ({steps}) WHERE last_path_key IS NOT NULL
        GROUP BY source, target {"HAVING " + " AND ".join(having) if having else ""}
        ORDER BY value DESC, source, target LIMIT {limit}"""
    compiled = ctx.compile(hogql, values=p.values, max_limit=limit)
    rows = [
        {"source": r["source"], "target": r["target"], "value": int(r["value"]),
         "average_conversion_time": float(r["seconds"]) * 1000.0}
        for r in ctx.execute(compiled).to_pylist()
    ]  # fmt: skip
    return {
        "results": reachable_edges(rows),
        "timezone": ctx.timezone,
        "resolved_date_range": rng.to_json(),
        "hogql": compiled.hogql,
        "timings": ctx.timings.to_list(),
    }
