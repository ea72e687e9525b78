"""``ExperimentUnitsQuery`` on ``POST /query/arrow/``: the rows of ``hoglab.translate.metric.units.units_sql`` for
the caller's stored experiment, one per exposed unit, each metric's value exactly as ``ExperimentQuery`` sums it
(``client.experiments.units``; docs/api.md, "Metric experiments").
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hoglab.schema import ExperimentUnitsQuery
from hoglab.translate.actions import Actions
from hoglab.translate.metric.units import units_sql
from hoglab.translate.params import Params

from ...errors import ValidationFailed
from ...query.runners.base import register_bulk
from .resolve import cuped_days, resolve_experiment

if TYPE_CHECKING:
    from ...store import ProjectRecord, Store

__all__ = ["resolve_units_query"]


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
                    actions=actions, cuped_days=cuped_days(experiment))
    return sql, p.values
