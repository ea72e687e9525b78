"""``ExperimentUnitsQuery``: one row per exposed unit, each metric's value exactly as ``ExperimentQuery`` sums it.

hoglab's extension for the analyst who models the data herself (``client.experiments.units``). The rows come from
the same per-unit stages the runner aggregates (:class:`.query.PerUnit`: :func:`.query.mean_units`,
:func:`.query.ratio_units`, :func:`.query.funnel_units`, :func:`.retention.retention_units`), so a unit's value has
one definition and the per-variant sums of the rows are the runner's sums:

* ``entity_id``, ``variant``, ``first_exposure_time`` (the exposure rules of :mod:`.query`; units seen with
  several variants under ``exclude`` are left out, as the runner leaves them out of every variant);
* per metric ``i`` (columns ``m<i>_<name>``): a mean's ``value`` (capped as the runner caps it), a ratio's
  ``numerator`` and ``denominator``, a funnel's ``step`` (furthest step reached) and ``value`` (1: converted), a
  retention metric's ``value`` (1: retained); with CUPED the ``covariate`` (a ratio: ``numerator_covariate`` and
  ``denominator_covariate``); and ``m<i>_counted``, 0 for a unit the metric does not count (a retention metric
  counts only the units that did its start event);
* ``p<j>``: the unit's ``properties[j]``: the person's current property (a group's for an experiment by group), else,
  where the unit lacks it, the property of its first exposure event (an event property such as ``$device_type``);
  ``s<j>`` says which: ``person`` (or ``group``), ``exposure event``, or empty when neither has it.

The holdout's units (its flag value ``holdout-<id>``) are rows too, with their arm as ``variant``.

The statement is HogQL: the service compiles it under the caller's project and answers ``POST /query/arrow/`` with
every row (``server/experiments/metric/units.py``, ``query/bulk.py``); the toolkit sends the same HogQL to a PostHog
project and pages it (``client/_units.py``).

    statement = units_sql(experiment, [metric], ["plan"], Params(), project, end, now, cuped_days=None)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hoglab.schema import AnyExperimentMetric

from ..actions import Actions
from ..params import Params
from ..values import escape_identifier
from .experiment import ResolvedExperiment
from .query import (
    BREAKDOWN_NULL,
    MetricShape,
    PerUnit,
    cuped_lookback,
    exposures_sql,
    funnel_units,
    mean_units,
    ratio_units,
)
from .retention import retention_units

__all__ = ["metric_units", "units_sql"]


def metric_units(metric: AnyExperimentMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                 end: datetime, now: datetime, actions: Actions | None = None, *,
                 cuped_days: int | None) -> PerUnit:  # fmt: skip
    """The per-unit stage the runner aggregates for ``metric`` (its breakdowns and CUPED setting included, as they
    change the values: outliers are capped per breakdown value). ``cuped_days``: the experiment's CUPED lookback as
    the stats resolve it, ``None`` when CUPED is off (:func:`.query.cuped_lookback`)."""
    items = (metric.breakdownFilter.breakdowns or []) if metric.breakdownFilter is not None else []
    lookback = cuped_lookback(metric, experiment, cuped_days)
    shape = MetricShape(tuple((str(i.type or "event"), str(i.property)) for i in items), lookback)
    if metric.metric_type == "mean":
        return mean_units(metric, experiment, p, project, end, shape, actions)
    if metric.metric_type == "ratio":
        return ratio_units(metric, experiment, p, project, end, shape, actions)
    if metric.metric_type == "retention":
        matured = now if experiment.only_count_matured_users else None
        return retention_units(metric, experiment, p, project, end, shape, matured_before=matured, actions=actions)
    return funnel_units(metric, experiment, p, project, end, shape, actions)


def units_sql(experiment: ResolvedExperiment, metrics: Sequence[AnyExperimentMetric], properties: Sequence[str],
              p: Params, project: Any, end: datetime, now: datetime, *, after: str | None = None,
              limit: int | None = None, actions: Actions | None = None,
              cuped_days: int | None) -> str:  # fmt: skip
    """HogQL with one row per exposed unit of ``experiment`` (see the module's columns), ordered by the unit's id
    as text; ``after`` and ``limit`` make it one keyset page (PostHog refuses OFFSET to personal API keys)."""
    holdout = experiment.holdout_key
    if holdout and holdout not in experiment.variants:
        # The holdout's units are rows too (as hoglab's compare_to_holdout reads them: a metric's outlier caps are
        # then pooled over every arm).
        experiment = experiment.model_copy(update={"variants": (*experiment.variants, holdout)})
    picks = ["x.entity_id AS entity_id", "x.variant AS variant", "x.first_exposure_time AS first_exposure_time"]
    joins = []
    # Each property's value on the first exposure event (PostHog's BreakdownInjector): the fallback for a unit
    # whose person (or group) lacks it.
    shape = MetricShape(tuple(("event", str(name)) for name in properties))
    for i, metric in enumerate(metrics):
        units = metric_units(metric, experiment, p, project, end, now, actions, cuped_days=cuped_days)
        own = ", ".join(units.columns)
        statement = units.statement(f"entity_id, {own}, 1 AS counted")
        joins.append(f"LEFT JOIN ({statement}) AS u{i} ON u{i}.entity_id = x.entity_id")
        picks += [f"u{i}.{column} AS m{i}_{column}" for column in (*units.columns, "counted")]
    page = "" if after is None else f" AND toString(x.entity_id) > {p.add(after)}"
    if properties:
        group = getattr(experiment, "group_type_index", None)
        if group is None:
            joins.append("LEFT JOIN persons AS pp ON pp.id = x.entity_id")
        else:  # an experiment by group: its units are groups of that type, with their own properties
            joins.append(f"LEFT JOIN (SELECT key, properties FROM groups WHERE index = {int(group)}) AS pp "
                         "ON pp.key = x.entity_id")  # fmt: skip
        owner = "person" if group is None else "group"
        null = p.add(BREAKDOWN_NULL)
        for j, (name, column) in enumerate(zip(properties, shape.columns, strict=True)):
            own = f"pp.properties.{escape_identifier(name)}"
            picks.append(f"if({own} IS NOT NULL, toString({own}), nullIf(x.{column}, {null})) AS p{j}")
            picks.append(f"multiIf({own} IS NOT NULL, {p.add(owner)}, x.{column} != {null}, "
                         f"{p.add('exposure event')}, '') AS s{j}")  # fmt: skip
    return f"""
        SELECT {", ".join(picks)}
        FROM ({exposures_sql(experiment, p, project, end, actions=actions, shape=shape)}) AS x
        {" ".join(joins)}
        WHERE x.variant IN {p.add(list(experiment.variants))}{page}
        ORDER BY toString(x.entity_id){"" if limit is None else f" LIMIT {int(limit)}"}
    """
