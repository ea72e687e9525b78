"""The HogQL of an experiment metric: per-variant sufficient statistics, as PostHog's experiment query builder.

Every statement starts from the **exposures**, one row per person (per group for an experiment whose flag has an
``aggregation_group_type_index`` N: the exposure event's ``$group_N``, exposures without one left out; each metric
event then counts for its own ``$group_N``, as PostHog's entity key):

* the exposure events are ``$feature_flag_called`` with ``$feature_flag`` = the flag's key (variant from
  ``$feature_flag_response``), or the custom ``exposure_config`` event with its property filters, or the events of
  the ``exposure_config`` action (its node's own ``properties`` are not applied, as PostHog's; an action the
  project does not have exposes nobody), both with the variant from ``$feature/<flag>``, in ``[start, end]``,
  whose variant is one of the flag's; the project's test-account filters apply unless ``filterTestAccounts`` is
  false;
* a person's variant is the only one they were seen with, or ``$multiple`` (``exclude``: dropped from the
  answer) or the variant of their first exposure (``first_seen``); ``first_exposure_time``/``last_exposure_time``
  are their first and last exposure.

Then per person (``entity_metrics``): metric events from the first exposure on, before ``end`` plus the conversion
window, and with a window before the *last* exposure plus the window (PostHog's rule); persons without events count
with 0. **mean**: ``total`` (events), ``sum``/``avg``/``min``/``max`` of a property (missing: 0), ``unique_session``,
``dau`` (1 if any); outliers are capped at the percentiles of all exposed persons' values (``ignore_zeros`` leaves
zeros out of the upper one). **ratio**: numerator and denominator the same way, person by person. **funnel**: the
exposure is step 0 of an ordered/strict/unordered funnel over the metric's steps (the shared per-person replay of
``runners/funnel_replay.py``), within the conversion window of the exposure (3 years without one).

A metric source (or funnel step) may be an ``ActionsNode``: its events are the action's, with the node's own
``properties`` AND-ed; an action the project does not have matches no event (the metric counts 0, as PostHog's).

Percentiles use ``quantileExactInclusive``: PostHog's ``quantile`` is the same interpolation on fewer than 8,192
values and a random sample above; hoglab stays exact (and deterministic) at every size.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlglot import exp

from hoglab.schema import ActionsNode, ExperimentFunnelMetric, ExperimentMeanMetric, ExperimentRatioMetric, SeriesFields

from ...errors import ValidationFailed
from ...filters.actions import action_condition
from ...filters.params import Params
from ...filters.properties import hogql_expression, property_access, property_filters_to_hogql, test_account_filters
from ...hogql.parse import parse_hogql_expr
from ...query.runners.common import Actions, series_conditions
from ...query.runners.funnel_replay import packed_event_key, replay_expr, unpacked
from ...query.runners.funnels_sql import unordered_replay
from ..rules import FEATURE_FLAG_CALLED
from .resolve import ResolvedExperiment

__all__ = [
    "MULTIPLE_VARIANT_KEY",
    "NO_WINDOW_SECONDS",
    "exposures_sql",
    "funnel_sql",
    "mean_sql",
    "ratio_sql",
    "window_seconds",
]

MULTIPLE_VARIANT_KEY = "$multiple"
NO_WINDOW_SECONDS = 3 * 365 * 24 * 3600
"""A funnel without a conversion window: PostHog's "all events" stand-in, three years."""
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400}


def window_seconds(metric: Any) -> int:
    """The metric's conversion window in seconds, 0 without one (PostHog counts a month as 30 days here).

    >>> from hoglab.schema import parse_metric
    >>> window_seconds(parse_metric({"metric_type": "mean", "source": {"event": "buy"}, "conversion_window": 2,
    ...                              "conversion_window_unit": "day"}))
    172800
    """
    if metric.conversion_window and metric.conversion_window_unit:
        return int(metric.conversion_window) * _UNIT_SECONDS[metric.conversion_window_unit]
    return 0


def _exposure_parts(
    experiment: ResolvedExperiment, p: Params, project: Any, actions: Actions | None = None
) -> tuple[list[str], str]:
    """The conditions of an exposure event (no time bounds) and the HogQL of its variant."""
    criteria = experiment.exposure_criteria
    config = criteria.exposure_config
    timezone = getattr(project, "timezone", None) or "UTC"
    if isinstance(config, ActionsNode):
        action = (actions or {}).get(int(config.id)) if config.id is not None else None
        event = None
        parts = [
            "false" if action is None else action_condition(
                action, p, timezone=timezone, attr="exposure_criteria.exposure_config"
            )
        ]  # fmt: skip
    else:
        event = config.event if config is not None else FEATURE_FLAG_CALLED
        parts = [f"event = {p.add(event)}"]
    if config is not None and not isinstance(config, ActionsNode):
        own = property_filters_to_hogql(config.properties, p, attr="exposure_criteria.exposure_config.properties",
                                        timezone=timezone)  # fmt: skip
        if own:
            parts.append(own)
    if event == FEATURE_FLAG_CALLED:
        parts.append(f"{property_access('$feature_flag')} = {p.add(experiment.flag_key)}")
        variant = property_access("$feature_flag_response")
    else:
        variant = property_access(f"$feature/{experiment.flag_key}")
    if criteria.filterTestAccounts is not False:
        tests = property_filters_to_hogql(test_account_filters(project), p, attr="filterTestAccounts",
                                          timezone=timezone)  # fmt: skip
        if tests:
            parts.append(tests)
    parts.append(f"{variant} IN {p.add(list(experiment.variants))}")
    return parts, variant


def exposures_sql(experiment: ResolvedExperiment, p: Params, project: Any, end: datetime,
                  exposure: tuple[list[str], str] | None = None, actions: Actions | None = None) -> str:  # fmt: skip
    """One row per exposed person: ``entity_id, variant, first_exposure_time, last_exposure_time``.

    ``exposure``: the :func:`_exposure_parts` the caller already bound to ``p`` (the funnel needs them too).
    ``actions``: the project's, for an exposure or metric that names one.
    """
    parts, variant = exposure or _exposure_parts(experiment, p, project, actions)
    if experiment.exposure_criteria.multiple_variant_handling == "first_seen":
        chosen = f"argMin({variant}, timestamp)"
    else:
        chosen = f"if(uniqExact({variant}) > 1, {p.add(MULTIPLE_VARIANT_KEY)}, any({variant}))"
    entity = experiment.entity
    if experiment.group_type_index is not None:
        # An exposure without the group has no unit to count (PostHog's query would pool them under '').
        parts = [*parts, f"{entity} != ''"]
    return f"""
        SELECT {entity} AS entity_id, {chosen} AS variant,
               min(timestamp) AS first_exposure_time, max(timestamp) AS last_exposure_time
        FROM events
        WHERE timestamp >= {p.add(experiment.start)} AND timestamp <= {p.add(end)} AND {" AND ".join(parts)}
        GROUP BY entity_id
    """


_AGGREGATES = frozenset({"sum", "avg", "min", "max", "count"})
_ONE_CALL = re.compile(r"^\s*[A-Za-z_]\w*\s*\((?P<inner>.*)\)\s*$", re.S)


def hogql_math(text: str | None, attr: str) -> tuple[str, str]:
    """``math_hogql`` as PostHog's experiments read it: ``(value per event, aggregate per person)``.

    One aggregate call around an expression (``sum(toFloat(properties.price) * 2)``) gives its argument per event
    and its function per person; anything else is the value per event, summed per person.

    >>> hogql_math("avg(toFloat(properties.price))", "metric.source.math_hogql")
    ('toFloat(properties.price)', 'avg')
    >>> hogql_math("toFloat(properties.price) * 2", "metric.source.math_hogql")
    ('toFloat(properties.price) * 2', 'sum')
    """
    hogql_expression(text, attr)  # a syntax error (or no text) is a 400 naming the field
    assert isinstance(text, str)
    tree = parse_hogql_expr(text)
    function = tree.name.lower() if isinstance(tree, exp.Func) else ""
    arguments = tree.expressions if isinstance(tree, exp.Func) else []
    call = _ONE_CALL.match(text)
    plain = len(arguments) <= 1 and not any(isinstance(a, exp.Distinct) for a in arguments)
    if function not in _AGGREGATES or call is None or not plain:
        value, aggregate = text.strip(), "sum"
    elif function == "count":
        inner = call.group("inner").strip()
        value, aggregate = ("1" if inner in ("", "*") else f"({inner}) IS NOT NULL"), "sum"
    else:
        value, aggregate = call.group("inner").strip(), function
    if parse_hogql_expr(value).find(exp.AggFunc) is not None:
        # Else the engine refuses it, quoting SQL the user never wrote and naming no field.
        raise ValidationFailed(
            f"{text[:80]!r} can't be read as a value per event: use one sum, avg, min, max or count around a "
            "per-event expression (sum(toFloat(properties.price))), or the per-event expression alone.",
            attr=attr,
        )
    return value, aggregate


def _value_expr(node: SeriesFields, attr: str) -> str:
    if node.math in ("sum", "avg", "min", "max"):
        return f"coalesce(toFloat({property_access(str(node.math_property))}), 0)"
    if node.math == "hogql":
        value, _ = hogql_math(node.math_hogql, f"{attr}.math_hogql")
        return f"coalesce(toFloat({hogql_expression(value, f'{attr}.math_hogql')}), 0)"
    return "toFloat(1)"


def _per_person(node: SeriesFields, window: int) -> str:
    """The aggregate of a person's metric events (``m``) after their exposure (``x``), 0 without any."""
    inside = "m.timestamp >= x.first_exposure_time"
    if window:
        inside += f" AND m.timestamp < x.last_exposure_time + toIntervalSecond({int(window)})"
    math = hogql_math(node.math_hogql, "math_hogql")[1] if node.math == "hogql" else node.math
    if math == "unique_session":
        return f"toFloat(uniqExactIf(m.session_id, {inside} AND m.session_id != ''))"
    if math == "dau":
        return f"toFloat(countIf({inside}) > 0)"
    if math in ("avg", "min", "max"):
        return f"if(countIf({inside}) > 0, {math}If(m.value, {inside}), 0)"
    return f"coalesce(sumIf(m.value, {inside}), 0)"


def _events_of(node: SeriesFields, p: Params, project: Any, attr: str, start: datetime, stop: str,
               actions: Actions | None, entity: str = "person_id") -> str:  # fmt: skip
    conditions = series_conditions(None, node, p, project=project, attr=attr, actions=actions)
    where = " AND ".join([f"timestamp >= {p.add(start)}", f"timestamp < {stop}", *conditions])
    value = _value_expr(node, attr)
    return (f"SELECT {entity} AS entity_id, timestamp, {value} AS value, `$session_id` AS session_id "
            f"FROM events WHERE {where}")  # fmt: skip


def _stop(p: Params, end: datetime, window: int) -> str:
    return f"{p.add(end)} + toIntervalSecond({int(window)})"


def _entity_values(node: SeriesFields, p: Params, project: Any, attr: str, experiment: ResolvedExperiment,
                   end: datetime, window: int, actions: Actions | None) -> str:  # fmt: skip
    events = _events_of(node, p, project, attr, experiment.start, _stop(p, end, window), actions, experiment.entity)
    return f"""
        SELECT x.entity_id AS entity_id, x.variant AS variant, {_per_person(node, window)} AS value
        FROM exposures AS x LEFT JOIN ({events}) AS m ON x.entity_id = m.entity_id
        GROUP BY x.entity_id, x.variant
    """


def mean_sql(metric: ExperimentMeanMetric, experiment: ResolvedExperiment, p: Params, project: Any,
             end: datetime, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, n, total, squares`` of each variant (``$multiple`` included; the runner drops it)."""
    window = window_seconds(metric)
    exposures = exposures_sql(experiment, p, project, end, actions=actions)
    values = _entity_values(metric.source, p, project, "metric.source", experiment, end, window, actions)
    low, high = metric.lower_bound_percentile, metric.upper_bound_percentile
    if low is None and high is None:
        return f"""
            WITH exposures AS ({exposures}), entity_metrics AS ({values})
            SELECT variant, count() AS n, sum(value) AS total, sum(value * value) AS squares
            FROM entity_metrics GROUP BY variant
        """
    low_expr = "min(value)" if low is None else f"quantileExactInclusive({float(low)})(value)"
    if high is None:
        high_expr = "max(value)"
    elif metric.ignore_zeros:
        # Without a non-zero value the percentile is NaN, which would turn every capped value into NaN.
        high_expr = (f"if(countIf(value != 0) > 0, quantileExactInclusiveIf({float(high)})(value, value != 0), "
                     "max(value))")  # fmt: skip
    else:
        high_expr = f"quantileExactInclusive({float(high)})(value)"
    return f"""
        WITH exposures AS ({exposures}), entity_metrics AS ({values}),
             bounds AS (SELECT {low_expr} AS low, {high_expr} AS high FROM entity_metrics)
        SELECT variant, count() AS n, sum(capped) AS total, sum(capped * capped) AS squares
        FROM (SELECT e.variant AS variant, least(greatest(b.low, e.value), b.high) AS capped
              FROM entity_metrics AS e CROSS JOIN bounds AS b)
        GROUP BY variant
    """


def ratio_sql(metric: ExperimentRatioMetric, experiment: ResolvedExperiment, p: Params, project: Any,
              end: datetime, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, n, total, squares, denominator_sum, denominator_squares, product`` of each variant."""
    window = window_seconds(metric)
    exposures = exposures_sql(experiment, p, project, end, actions=actions)
    numerator = _entity_values(metric.numerator, p, project, "metric.numerator", experiment, end, window, actions)
    denominator = _entity_values(metric.denominator, p, project, "metric.denominator", experiment, end, window,
                                 actions)  # fmt: skip
    return f"""
        WITH exposures AS ({exposures}), numerator AS ({numerator}), denominator AS ({denominator})
        SELECT nu.variant AS variant, count() AS n, sum(nu.value) AS total, sum(nu.value * nu.value) AS squares,
               sum(de.value) AS denominator_sum, sum(de.value * de.value) AS denominator_squares,
               sum(nu.value * de.value) AS product
        FROM numerator AS nu INNER JOIN denominator AS de ON nu.entity_id = de.entity_id
        GROUP BY variant
    """


def funnel_sql(metric: ExperimentFunnelMetric, experiment: ResolvedExperiment, p: Params, project: Any,
               end: datetime, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, n, total, s1..sN`` (persons reaching each metric step) of each variant."""
    window = window_seconds(metric)
    steps: Sequence[SeriesFields] = metric.series
    n = len(steps) + 1  # step 0 is the exposure
    exposure_parts, variant = _exposure_parts(experiment, p, project, actions)
    exposure_cond = " AND ".join([f"timestamp <= {p.add(end)}", *exposure_parts])
    conds = [exposure_cond] + [
        " AND ".join(series_conditions(None, step, p, project=project, attr=f"metric.series.{i}", actions=actions))
        or "true"
        for i, step in enumerate(steps)
    ]
    mask = " + ".join(f"if({c}, {1 << i}, 0)" for i, c in enumerate(conds))
    order = metric.funnel_order_type or "ordered"
    micros = (window or NO_WINDOW_SECONDS) * 1_000_000
    if order == "unordered":
        replay = unordered_replay(n, micros)
        # PostHog's unordered funnel only sees events from the person's first exposure on.
        since = "ev.timestamp >= x.first_exposure_time"
    else:
        replay = replay_expr(n, micros, strict=order == "strict", attribution_step=None, exclusions=False)
        since = ""
    exposures = exposures_sql(experiment, p, project, end, exposure=(exposure_parts, variant))
    relevant = f"""
        SELECT {experiment.entity} AS entity_id, timestamp, toInt64({mask}) AS m0 FROM events
        WHERE timestamp >= {p.add(experiment.start)} AND timestamp <= {_stop(p, end, window)} AND m0 != 0
    """
    if since:
        relevant = f"""
            SELECT ev.entity_id AS entity_id, ev.timestamp AS timestamp, ev.m0 AS m0
            FROM ({relevant}) AS ev INNER JOIN exposures AS x ON ev.entity_id = x.entity_id WHERE {since}
        """
    # Persons never exposed replay too (their furthest step is -1) and drop out at the join with the exposures:
    # cheaper than joining every event to the exposures first, which only the unordered funnel needs.
    events = f"""
        SELECT entity_id AS actor_id, toUnixTimestamp64Micro(timestamp) AS ts0, m0,
               toInt64(log2(bitAnd(m0, -m0))) AS lowest, {packed_event_key("ts0", "lowest", "m0", "0")} AS k0
        FROM ({relevant})
    """
    counts = ", ".join(f"countIf(step_reached >= {j}) AS s{j}" for j in range(1, n))
    arrays = unpacked("ks")
    persons = f"""(SELECT actor_id, {arrays["ts"]} AS ts, {arrays["m"]} AS m
                   FROM (SELECT actor_id, arraySort(groupArray(k0)) AS ks FROM ({events}) GROUP BY actor_id))"""
    return f"""
        WITH exposures AS ({exposures}),
             reached AS ({replay.select(["actor_id"], ["ts", "m"], persons)})
        SELECT x.variant AS variant, count() AS n, countIf(r.step_reached = {n - 1}) AS total, {counts}
        FROM exposures AS x LEFT JOIN reached AS r ON x.entity_id = r.actor_id
        GROUP BY variant
    """
