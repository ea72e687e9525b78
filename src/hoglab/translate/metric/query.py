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
``funnel_replay.py``), within the conversion window of the exposure (3 years without one).

**Breakdowns** (``breakdownFilter``, PostHog's ``BreakdownInjector``): each unit's value of every breakdown property
is read off its *first exposure event* (``$$_posthog_breakdown_null_$$`` when missing), columns ``b1``..``b3``
group every statement, and outlier percentiles are taken per breakdown value. **CUPED** (``lookback_days``): the
same scan reaches back ``lookback_days`` before the start, and each unit's covariate is the same metric over
``[first exposure − lookback, first exposure)`` (a mean's aggregate; for a funnel, 1 if the last step's event
fired there), giving ``cov``, ``cov_squares`` and ``cov_product`` (Σ value × covariate) per group.
A metric source (or funnel step) may be an ``ActionsNode``: its events are the action's, with the node's own
``properties`` AND-ed; an action the project does not have matches no event (the metric counts 0, as PostHog's).

Percentiles use ``quantileExactInclusive``: PostHog's ``quantile`` is the same interpolation on fewer than 8,192
values and a random sample above; hoglab stays exact (and deterministic) at every size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlglot import exp

from hoglab.schema import (
    ActionsNode,
    AnyExperimentMetric,
    ExperimentFunnelMetric,
    ExperimentMeanMetric,
    ExperimentRatioMetric,
    SeriesFields,
)

from ..actions import Actions, action_condition
from ..errors import TranslationFailed
from ..funnel_replay import packed_event_key, replay_expr, unordered_replay, unpacked
from ..params import Params
from ..parse import parse_hogql_expr
from ..properties import hogql_expression, property_access, property_filters_to_hogql, test_account_filters
from ..series import series_conditions
from ..values import escape_identifier
from .experiment import ResolvedExperiment

__all__ = [
    "BREAKDOWN_NULL",
    "FEATURE_FLAG_CALLED",
    "MULTIPLE_VARIANT_KEY",
    "NO_WINDOW_SECONDS",
    "PLAIN",
    "RATIO_COVARIATE_COLUMNS",
    "MetricShape",
    "cuped_lookback",
    "exposures_sql",
    "funnel_sql",
    "mean_sql",
    "ratio_sql",
    "window_seconds",
]

FEATURE_FLAG_CALLED = "$feature_flag_called"
"""PostHog's exposure event: the SDKs send it when a flag is evaluated."""
MULTIPLE_VARIANT_KEY = "$multiple"
BREAKDOWN_NULL = "$$_posthog_breakdown_null_$$"
RATIO_COVARIATE_COLUMNS = ("pre_sum", "pre_sum_squares", "pre_denominator_sum", "pre_denominator_sum_squares",
                           "pre_product", "numerator_pre_product", "numerator_pre_denominator_product",
                           "denominator_pre_product", "denominator_pre_denominator_product")  # fmt: skip
"""A ratio metric's pre-exposure sums for hoglab's ratio CUPED (``hoglab.stats.posthog.RatioCovariate``'s fields)."""
NO_WINDOW_SECONDS = 3 * 365 * 24 * 3600
"""A funnel without a conversion window: PostHog's "all events" stand-in, three years."""
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400}


@dataclass(frozen=True)
class MetricShape:
    """What a metric's statement computes beyond the per-variant sums.

    ``breakdowns``: ``(type, property)`` pairs (event or person), one column ``b<i>`` each; ``lookback_days``: the
    CUPED pre-exposure window (``None``: no covariate).

    >>> MetricShape((("event", "$browser"),), 14).columns
    ['b1']
    """

    breakdowns: tuple[tuple[str, str], ...] = ()
    lookback_days: int | None = None

    @property
    def columns(self) -> list[str]:
        return [f"b{i}" for i in range(1, len(self.breakdowns) + 1)]

    def lead(self, alias: str = "") -> str:
        """The breakdown columns as a group list's tail (``", x.b1, x.b2"``; empty without breakdowns)."""
        return "".join(f", {alias}{c}" for c in self.columns)

    def picks(self, alias: str = "") -> str:
        """The breakdown columns as a select list's tail, named ``b<i>`` whatever table they come from."""
        return "".join(f", {alias}{c} AS {c}" for c in self.columns)

    def since(self, start: datetime) -> datetime:
        """Where the metric events' scan starts: the experiment's start, less the CUPED lookback."""
        return start - timedelta(days=self.lookback_days) if self.lookback_days else start


PLAIN = MetricShape()
"""No breakdown, no CUPED."""


@dataclass(frozen=True)
class PerUnit:
    """A metric's per-unit stage: the common table expressions it needs and a ``SELECT`` with one row per exposed
    unit (``entity_id, variant, b..`` and the metric's own ``columns``). The runner's per-variant sums
    (:meth:`aggregate`) and the units of ``ExperimentUnitsQuery`` (:meth:`statement`, ``metric/units.py``) are
    both read off it, so a unit's value is defined once.

    >>> unit = PerUnit((("exposures", "SELECT 1 AS entity_id, 'a' AS variant"),),
    ...                "SELECT entity_id, variant, 2 AS value FROM exposures", ("value",))
    >>> unit.aggregate("count() AS n", PLAIN).split(" units AS ")[1]
    '(SELECT entity_id, variant, 2 AS value FROM exposures) SELECT variant, count() AS n FROM units GROUP BY variant'
    """

    ctes: tuple[tuple[str, str], ...]
    select: str
    columns: tuple[str, ...]

    def _with(self) -> str:
        return ", ".join(f"{name} AS ({sql})" for name, sql in (*self.ctes, ("units", self.select)))

    def aggregate(self, measures: str, shape: MetricShape) -> str:
        """The per-variant (and per breakdown value) ``measures`` over the units."""
        return f"WITH {self._with()} SELECT variant{shape.lead()}, {measures} FROM units GROUP BY variant{shape.lead()}"

    def statement(self, columns: str = "*") -> str:
        """The per-unit rows themselves (``columns`` of them)."""
        return f"WITH {self._with()} SELECT {columns} FROM units"


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


def cuped_lookback(metric: AnyExperimentMetric, experiment: ResolvedExperiment, days: int | None) -> int | None:
    """The CUPED lookback in days when CUPED applies to this metric, else ``None`` (PostHog's metric check after
    ``resolve_experiment_cuped_config``; ratio metrics: hoglab's opt-in extension ``stats_config.cuped.ratio``).

    ``days`` is the experiment's lookback as the stats resolve it (``hoglab.stats.posthog.resolve_cuped``),
    ``None`` when CUPED is off.

    >>> from datetime import UTC, datetime
    >>> from hoglab.schema import parse_metric
    >>> exp = ResolvedExperiment(experiment_id=1, flag_key="f", variants=("control", "test"),
    ...                          start=datetime(2026, 1, 1, tzinfo=UTC), stats_config={"cuped": {"enabled": True}})
    >>> cuped_lookback(parse_metric({"metric_type": "mean", "source": {"event": "buy"}}), exp, 14)
    14
    >>> cuped_lookback(parse_metric({"metric_type": "funnel", "series": [{"event": "buy"}],
    ...                              "funnel_order_type": "unordered"}), exp, 14) is None
    True
    """
    if days is None:
        return None
    if metric.metric_type == "mean":
        if session_property(metric.source) is not None:
            return None  # PostHog's session-property means have no pre-exposure sessions to read
        return days
    if metric.metric_type == "funnel":
        return None if metric.funnel_order_type == "unordered" else days
    if metric.metric_type == "ratio":
        section = experiment.stats_config.get("cuped")
        return days if isinstance(section, Mapping) and section.get("ratio") is True else None
    return None


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


def breakdown_value_sql(kind: str, prop: str, p: Params) -> str:
    """One breakdown property's value of an event as text, PostHog's null label when missing.

    >>> breakdown_value_sql("person", "plan", Params())
    'coalesce(toString(person.properties.plan), {p0})'
    """
    return f"coalesce(toString({property_access(prop, kind)}), {p.add(BREAKDOWN_NULL)})"


def exposures_sql(experiment: ResolvedExperiment, p: Params, project: Any, end: datetime,
                  exposure: tuple[list[str], str] | None = None, shape: MetricShape = PLAIN,
                  first_uuid: bool = False, actions: Actions | None = None) -> str:  # fmt: skip
    """One row per exposed person: ``entity_id, variant, first_exposure_time, last_exposure_time`` and the
    breakdown values of their first exposure event, ``b1``.. (PostHog's ``BreakdownInjector``); with
    ``first_uuid``, that event's ``first_exposure_uuid`` too.

    ``exposure``: the :func:`_exposure_parts` the caller already bound to ``p`` (the funnel needs them too).
    ``actions``: the project's, for an exposure or metric that names one.
    """
    parts, variant = exposure or _exposure_parts(experiment, p, project, actions)
    if experiment.exposure_criteria.multiple_variant_handling == "first_seen":
        chosen = f"argMin({variant}, timestamp)"
    else:
        chosen = f"if(uniqExact({variant}) > 1, {p.add(MULTIPLE_VARIANT_KEY)}, any({variant}))"
    values = "".join(f", argMin({breakdown_value_sql(kind, prop, p)}, timestamp) AS {column}"
                     for (kind, prop), column in zip(shape.breakdowns, shape.columns, strict=True))  # fmt: skip
    if first_uuid:
        values += ", argMin(uuid, timestamp) AS first_exposure_uuid"
    entity = experiment.entity
    if experiment.group_type_index is not None:
        # An exposure without the group has no unit to count (PostHog's query would pool them under '').
        parts = [*parts, f"{entity} != ''"]
    return f"""
        SELECT {entity} AS entity_id, {chosen} AS variant,
               min(timestamp) AS first_exposure_time, max(timestamp) AS last_exposure_time{values}
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
        raise TranslationFailed(
            f"{text[:80]!r} can't be read as a value per event: use one sum, avg, min, max or count around a "
            "per-event expression (sum(toFloat(properties.price))), or the per-event expression alone.",
            attr=attr,
        )
    return value, aggregate


def session_property(node: SeriesFields) -> str | None:
    """The session field a mean metric's ``math_property`` names, when it is one (PostHog's
    ``is_session_property_metric``: ``math_property_type: "session_properties"``, or ``$session_duration``
    without a type, as PostHog still reads it); ``None`` for an event property.

    >>> from hoglab.schema import EventsNode
    >>> session_property(EventsNode(event="$pageview", math="sum", math_property="$session_duration"))
    '$session_duration'
    >>> session_property(EventsNode(event="buy", math="sum", math_property="price")) is None
    True
    """
    prop = node.math_property
    if node.math not in ("sum", "avg", "min", "max") or not prop:
        return None
    if prop == "$session_duration" or getattr(node, "math_property_type", None) == "session_properties":
        return str(prop)
    return None


def _value_expr(node: SeriesFields, attr: str) -> str:
    if node.math in ("sum", "avg", "min", "max"):
        return f"coalesce(toFloat({property_access(str(node.math_property))}), 0)"
    if node.math == "hogql":
        value, _ = hogql_math(node.math_hogql, f"{attr}.math_hogql")
        return f"coalesce(toFloat({hogql_expression(value, f'{attr}.math_hogql')}), 0)"
    return "toFloat(1)"


def _post_window(window: int) -> str:
    """A metric event (``m``) after the person's first exposure (``x``), within the window of the last one."""
    inside = "m.timestamp >= x.first_exposure_time"
    if window:
        inside += f" AND m.timestamp < x.last_exposure_time + toIntervalSecond({int(window)})"
    return inside


def _pre_window(lookback_days: int) -> str:
    """A metric event in the CUPED window, the ``lookback_days`` before the person's first exposure (PostHog's
    ``build_cuped_pre_window_predicate``; the conversion window does not apply)."""
    return (f"m.timestamp >= x.first_exposure_time - toIntervalDay({int(lookback_days)}) "
            "AND m.timestamp < x.first_exposure_time")  # fmt: skip


def _per_person(node: SeriesFields, inside: str) -> str:
    """The aggregate of a person's metric events (``m``) for which ``inside`` holds, 0 without any."""
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
                   end: datetime, window: int, shape: MetricShape, actions: Actions | None) -> str:  # fmt: skip
    """Per exposed unit: ``entity_id, variant, b..``, ``value`` and with CUPED ``covariate`` (one scan)."""
    events = _events_of(node, p, project, attr, shape.since(experiment.start), _stop(p, end, window), actions,
                        experiment.entity)  # fmt: skip
    covariate = ""
    if shape.lookback_days:
        covariate = f", {_per_person(node, _pre_window(shape.lookback_days))} AS covariate"
    return f"""
        SELECT x.entity_id AS entity_id, x.variant AS variant{shape.picks("x.")},
               {_per_person(node, _post_window(window))} AS value{covariate}
        FROM exposures AS x LEFT JOIN ({events}) AS m ON x.entity_id = m.entity_id
        GROUP BY x.entity_id, x.variant{shape.lead("x.")}
    """


def _session_values(node: SeriesFields, p: Params, project: Any, attr: str, experiment: ResolvedExperiment,
                    end: datetime, window: int, shape: MetricShape, actions: Actions | None) -> str:  # fmt: skip
    """Per exposed unit with a session after its exposure: ``entity_id, variant, b..`` and ``value``, a session
    field's value counted once per session (PostHog's session-property mean, ``get_session_property_ctes``).

    A session is the unit's metric events sharing a ``$session_id``; it counts when its first such event is at or
    after the unit's first exposure (and within the conversion window of the last one); a unit without one is
    left out, as PostHog's inner join leaves it. Breakdown values are the session's first metric event's (the
    sessions' events, not the exposure's, as PostHog's), so a unit can count under several values.
    """
    field = escape_identifier(str(session_property(node)))
    conditions = series_conditions(None, node, p, project=project, attr=attr, actions=actions)
    where = " AND ".join([f"timestamp >= {p.add(experiment.start)}", f"timestamp < {_stop(p, end, window)}",
                          "`$session_id` != ''", *conditions])  # fmt: skip
    picks = "".join(f", argMin({breakdown_value_sql(kind, prop, p)}, timestamp) AS {column}"
                    for (kind, prop), column in zip(shape.breakdowns, shape.columns, strict=True))  # fmt: skip
    sessions = f"""
        SELECT {experiment.entity} AS entity_id, `$session_id` AS session_id, min(timestamp) AS first_time,
               any(toFloat(session.{field})) AS session_value{picks}
        FROM events WHERE {where} GROUP BY entity_id, session_id
    """
    inside = "s.first_time >= x.first_exposure_time"
    if window:
        inside += f" AND s.first_time < x.last_exposure_time + toIntervalSecond({int(window)})"
    math = node.math if node.math in ("avg", "min", "max") else "sum"
    return f"""
        SELECT x.entity_id AS entity_id, x.variant AS variant{shape.picks("s.")},
               {math}(coalesce(s.session_value, 0)) AS value
        FROM exposures AS x INNER JOIN ({sessions}) AS s ON x.entity_id = s.entity_id
        WHERE {inside}
        GROUP BY x.entity_id, x.variant{shape.lead("s.")}
    """


def _covariate_sums(shape: MetricShape, value: str = "value") -> str:
    if not shape.lookback_days:
        return ""
    return (f", sum(covariate) AS cov, sum(covariate * covariate) AS cov_squares, "
            f"sum({value} * covariate) AS cov_product")  # fmt: skip


def mean_units(metric: ExperimentMeanMetric, experiment: ResolvedExperiment, p: Params, project: Any,
               end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> PerUnit:  # fmt: skip
    """Each exposed unit's ``value`` (capped at the outlier percentiles when the metric sets them) and, with CUPED,
    its ``covariate``."""
    window = window_seconds(metric)
    exposures = exposures_sql(experiment, p, project, end, shape=shape, actions=actions)
    read = _session_values if session_property(metric.source) is not None else _entity_values
    values = read(metric.source, p, project, "metric.source", experiment, end, window, shape, actions)
    low, high = metric.lower_bound_percentile, metric.upper_bound_percentile
    covariate = ", e.covariate AS covariate" if shape.lookback_days else ""
    columns = ("value", "covariate") if shape.lookback_days else ("value",)
    if low is None and high is None:
        select = f"SELECT e.entity_id AS entity_id, e.variant AS variant{shape.picks('e.')}, e.value AS value" \
                 f"{covariate} FROM entity_metrics AS e"  # fmt: skip
        return PerUnit((("exposures", exposures), ("entity_metrics", values)), select, columns)
    low_expr = "min(value)" if low is None else f"quantileExactInclusive({float(low)})(value)"
    if high is None:
        high_expr = "max(value)"
    elif metric.ignore_zeros:
        # Without a non-zero value the percentile is NaN, which would turn every capped value into NaN.
        high_expr = (f"if(countIf(value != 0) > 0, quantileExactInclusiveIf({float(high)})(value, value != 0), "
                     "max(value))")  # fmt: skip
    else:
        high_expr = f"quantileExactInclusive({float(high)})(value)"
    # Percentiles per breakdown value, as PostHog's percentiles CTE groups by the breakdown columns.
    if shape.columns:
        by = " AND ".join(f"bd.{c} = e.{c}" for c in shape.columns)
        bounds = f"SELECT {', '.join(shape.columns)}, {low_expr} AS low, {high_expr} AS high FROM entity_metrics " \
                 f"GROUP BY {', '.join(shape.columns)}"
        joined = f"entity_metrics AS e INNER JOIN bounds AS bd ON {by}"
    else:
        bounds = f"SELECT {low_expr} AS low, {high_expr} AS high FROM entity_metrics"
        joined = "entity_metrics AS e CROSS JOIN bounds AS bd"
    select = f"""SELECT e.entity_id AS entity_id, e.variant AS variant{shape.picks("e.")},
                        least(greatest(bd.low, e.value), bd.high) AS value{covariate}
                 FROM {joined}"""
    return PerUnit((("exposures", exposures), ("entity_metrics", values), ("bounds", bounds)), select, columns)


def mean_sql(metric: ExperimentMeanMetric, experiment: ResolvedExperiment, p: Params, project: Any,
             end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, b.., n, total, squares`` (and the CUPED sums) of each variant and breakdown value (``$multiple``
    included; the runner drops it): the sums of :func:`mean_units`."""
    units = mean_units(metric, experiment, p, project, end, shape, actions)
    return units.aggregate(f"count() AS n, sum(value) AS total, sum(value * value) AS squares"
                           f"{_covariate_sums(shape)}", shape)  # fmt: skip


def ratio_units(metric: ExperimentRatioMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> PerUnit:  # fmt: skip
    """Each exposed unit's ``numerator`` and ``denominator`` (each a mean metric's value) and, with a lookback,
    their pre-exposure ``numerator_covariate`` and ``denominator_covariate``."""
    window = window_seconds(metric)
    exposures = exposures_sql(experiment, p, project, end, shape=shape, actions=actions)
    numerator = _entity_values(metric.numerator, p, project, "metric.numerator", experiment, end, window, shape,
                               actions)  # fmt: skip
    denominator = _entity_values(metric.denominator, p, project, "metric.denominator", experiment, end, window,
                                 shape, actions)  # fmt: skip
    columns: tuple[str, ...] = ("numerator", "denominator")
    pre = ""
    if shape.lookback_days:
        columns += ("numerator_covariate", "denominator_covariate")
        pre = ", nu.covariate AS numerator_covariate, de.covariate AS denominator_covariate"
    select = f"""SELECT nu.entity_id AS entity_id, nu.variant AS variant{shape.picks("nu.")},
                        nu.value AS numerator, de.value AS denominator{pre}
                 FROM numerator AS nu INNER JOIN denominator AS de ON nu.entity_id = de.entity_id"""
    ctes = (("exposures", exposures), ("numerator", numerator), ("denominator", denominator))
    return PerUnit(ctes, select, columns)


def ratio_sql(metric: ExperimentRatioMetric, experiment: ResolvedExperiment, p: Params, project: Any,
              end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, b.., n, total, squares, denominator_sum, denominator_squares, product`` of each variant and
    breakdown value (the sums of :func:`ratio_units`); with a lookback, hoglab's ratio CUPED sums too
    (:data:`RATIO_COVARIATE_COLUMNS`: y, d the unit's numerator and denominator, a, b the same over the
    pre-exposure window)."""
    units = ratio_units(metric, experiment, p, project, end, shape, actions)
    pre = ""
    if shape.lookback_days:
        y, d, a, b = "numerator", "denominator", "numerator_covariate", "denominator_covariate"
        products = (a, f"{a} * {a}", b, f"{b} * {b}", f"{a} * {b}", f"{y} * {a}", f"{y} * {b}", f"{d} * {a}",
                    f"{d} * {b}")  # fmt: skip
        pre = "".join(f", sum({e}) AS {name}" for e, name in zip(products, RATIO_COVARIATE_COLUMNS, strict=True))
    measures = ("count() AS n, sum(numerator) AS total, sum(numerator * numerator) AS squares, "
                "sum(denominator) AS denominator_sum, sum(denominator * denominator) AS denominator_squares, "
                f"sum(numerator * denominator) AS product{pre}")  # fmt: skip
    return units.aggregate(measures, shape)


def funnel_units(metric: ExperimentFunnelMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                 end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> PerUnit:  # fmt: skip
    """Each exposed unit's ``step`` (the furthest metric step reached, 0 for the exposure alone; the replay's
    default for a unit without metric events) and ``value`` (1 when it reached the last step); with a lookback, the
    0/1 ``covariate`` "did the last step's event in the pre-exposure window" (PostHog's
    ``build_funnel_covariate_value_expr``; an unordered funnel gets none)."""
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
    lookback = shape.lookback_days if order != "unordered" else None
    if order == "unordered":
        replay = unordered_replay(n, micros)
        # PostHog's unordered funnel only sees events from the person's first exposure on.
        since = "ev.timestamp >= x.first_exposure_time"
    else:
        replay = replay_expr(n, micros, strict=order == "strict", attribution_step=None, exclusions=False)
        since = ""
    exposures = exposures_sql(experiment, p, project, end, exposure=(exposure_parts, variant), shape=shape,
                              actions=actions)  # fmt: skip
    # With CUPED the one scan reaches back by the lookback (PostHog's extend_date_from_for_funnel_cuped); the
    # replay still only sees events from the start, the earlier ones feed the covariate alone.
    scan_from = shape.since(experiment.start) if lookback else experiment.start
    relevant = f"""
        SELECT {experiment.entity} AS entity_id, timestamp, toInt64({mask}) AS m0 FROM events
        WHERE timestamp >= {p.add(scan_from)} AND timestamp <= {_stop(p, end, window)} AND m0 != 0
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
    arrays = unpacked("ks")
    keep, covariate = ["actor_id"], ""
    if lookback:
        start_us = p.add(int(experiment.start.timestamp() * 1_000_000))
        grouped = (f"arraySort(groupArrayIf(k0, ts0 >= {start_us})) AS ks, "
                   f"groupArrayIf(ts0, bitAnd(m0, {1 << (n - 1)}) != 0) AS last_step_times")  # fmt: skip
        keep.append("last_step_times")
        first = "toUnixTimestamp64Micro(x.first_exposure_time)"
        pre = f"t >= {first} - {int(lookback) * 86_400_000_000} AND t < {first}"
        covariate = f", if(arrayExists(t -> {pre}, r.last_step_times), 1, 0) AS covariate"
    else:
        grouped = "arraySort(groupArray(k0)) AS ks"
    persons = f"""(SELECT {", ".join(keep)}, {arrays["ts"]} AS ts, {arrays["m"]} AS m
                   FROM (SELECT actor_id, {grouped} FROM ({events}) GROUP BY actor_id))"""
    select = f"""SELECT x.entity_id AS entity_id, x.variant AS variant{shape.picks("x.")}, r.step_reached AS step,
                        if(r.step_reached = {n - 1}, 1, 0) AS value{covariate}
                 FROM exposures AS x LEFT JOIN reached AS r ON x.entity_id = r.actor_id"""
    ctes = (("exposures", exposures), ("reached", replay.select(keep, ["ts", "m"], persons)))
    return PerUnit(ctes, select, ("step", "value", "covariate") if covariate else ("step", "value"))


def funnel_sql(metric: ExperimentFunnelMetric, experiment: ResolvedExperiment, p: Params, project: Any,
               end: datetime, shape: MetricShape = PLAIN, actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, b.., n, total, s1..sN`` (units reaching each metric step) of each variant and breakdown value;
    with a lookback, ``cov, cov_squares, cov_product`` of the 0/1 covariate: the sums of :func:`funnel_units`."""
    units = funnel_units(metric, experiment, p, project, end, shape, actions)
    n = len(metric.series) + 1
    counts = ", ".join(f"countIf(step >= {j}) AS s{j}" for j in range(1, n))
    sums = ""
    if "covariate" in units.columns:
        sums = ", sum(covariate) AS cov, sum(covariate) AS cov_squares, sum(value * covariate) AS cov_product"
    return units.aggregate(f"count() AS n, countIf(step = {n - 1}) AS total, {counts}{sums}", shape)
