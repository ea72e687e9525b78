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
* ``p<j>``: the unit's ``properties[j]`` (the person's current properties; a group's for an experiment by group).

The statement is HogQL, compiled like any other under the caller's project; ``POST /query/arrow/`` answers it with
every row (``query/bulk.py``). The toolkit compiles the same HogQL for a PostHog project and pages it.

    statement = units_sql(experiment, [metric], ["plan"], Params(), project, end, now)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hoglab.schema import AnyExperimentMetric, ExperimentUnitsQuery

from ...errors import ValidationFailed
from ...filters.params import Params
from ...hogql.values import escape_identifier
from ...query.runners.base import register_bulk
from ...query.runners.common import Actions
from .query import PerUnit, Shape, exposures_sql, funnel_units, mean_units, ratio_units
from .resolve import ResolvedExperiment, resolve_experiment
from .retention import retention_units
from .runner import cuped_lookback

if TYPE_CHECKING:
    from ...store import ProjectRecord, Store

__all__ = ["metric_units", "resolve_units_query", "units_sql"]


def metric_units(metric: AnyExperimentMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                 end: datetime, now: datetime, actions: Actions | None = None) -> PerUnit:  # fmt: skip
    """The per-unit stage the runner aggregates for ``metric`` (its breakdowns and CUPED setting included, as they
    change the values: outliers are capped per breakdown value)."""
    items = (metric.breakdownFilter.breakdowns or []) if metric.breakdownFilter is not None else []
    shape = Shape(tuple((str(i.type or "event"), str(i.property)) for i in items), cuped_lookback(metric, experiment))
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
              limit: int | None = None, actions: Actions | None = None) -> str:  # fmt: skip
    """HogQL with one row per exposed unit of ``experiment`` (see the module's columns), ordered by the unit's id
    as text; ``after`` and ``limit`` make it one keyset page (PostHog refuses OFFSET to personal API keys)."""
    picks = ["x.entity_id AS entity_id", "x.variant AS variant", "x.first_exposure_time AS first_exposure_time"]
    joins = []
    for i, metric in enumerate(metrics):
        units = metric_units(metric, experiment, p, project, end, now, actions)
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
        picks += [f"pp.properties.{escape_identifier(name)} AS p{j}" for j, name in enumerate(properties)]
    return f"""
        SELECT {", ".join(picks)}
        FROM ({exposures_sql(experiment, p, project, end, actions=actions)}) AS x
        {" ".join(joins)}
        WHERE x.variant IN {p.add(list(experiment.variants))}{page}
        ORDER BY toString(x.entity_id){"" if limit is None else f" LIMIT {int(limit)}"}
    """


@register_bulk("ExperimentUnitsQuery")
def resolve_units_query(data: dict[str, Any], project: ProjectRecord, store: Store, now: datetime,
                        actions: Actions) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """The HogQL and values of a units query (its JSON) on the project's stored experiment: a wrong field is a 400
    naming it, another project's experiment a 404, a draft a 400, as for ``ExperimentQuery``."""
    try:
        query = ExperimentUnitsQuery.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "__".join(str(part) for part in first.get("loc", ()))
        raise ValidationFailed(f"{first.get('msg')}", attr=f"query__{where}" if where else "query") from None
    experiment = resolve_experiment(store, project, query.experiment_id)
    p = Params()
    sql = units_sql(experiment, query.metrics, query.properties, p, project, experiment.end or now, now,
                    actions=actions)
    return sql, p.values
