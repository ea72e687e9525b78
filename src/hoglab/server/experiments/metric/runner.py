"""``ExperimentQuery``: one metric of a stored experiment, per variant, with PostHog's current statistics.

The query arrives resolved (:mod:`.resolve`: the experiment's flag, variants, dates, exposure criteria and
stats method read in before the cache lookup). :mod:`.query` writes the HogQL of the variants' sufficient
statistics; :func:`hoglab.stats.posthog.experiment_results` turns them into ``baseline`` and ``variant_results``
(frequentist ``p_value``/``confidence_interval`` or Bayesian ``chance_to_win``/``credible_interval``).

A variant nobody was exposed to answers zeros (PostHog adds missing variants the same way); persons seen with
several variants under ``exclude`` are left out of every variant.
"""

from __future__ import annotations

from typing import Any

from hoglab.schema import CONTROL_VARIANT_KEY
from hoglab.stats.posthog import ExperimentStats, experiment_results

from ...filters.params import Params
from ...query.runners.base import RunContext, register
from ...query.runners.funnels_sql import PERSON_ROWS_SETTINGS
from .query import funnel_sql, mean_sql, ratio_sql
from .resolve import ResolvedExperimentQuery

__all__ = ["run_experiment_query", "variant_stats"]


def variant_stats(metric_type: str, key: str, row: dict[str, Any] | None, steps: int = 0) -> ExperimentStats:
    """One variant's :class:`ExperimentStats` from its row of the metric's statement (zeros without a row).

    >>> variant_stats("funnel", "test", {"n": 90, "total": 12, "s1": 40, "s2": 12}, steps=2).step_counts
    (40, 12)
    >>> variant_stats("mean", "control", None).number_of_samples
    0
    """
    row = row or {}
    n = int(row.get("n") or 0)
    total = float(row.get("total") or 0)
    if metric_type == "funnel":
        counts = tuple(int(row.get(f"s{j}") or 0) for j in range(1, steps + 1))
        return ExperimentStats(key, n, total, total, step_counts=counts)
    squares = float(row.get("squares") or 0)
    if metric_type == "ratio":
        return ExperimentStats(
            key, n, total, squares,
            denominator_sum=float(row.get("denominator_sum") or 0),
            denominator_sum_squares=float(row.get("denominator_squares") or 0),
            numerator_denominator_sum_product=float(row.get("product") or 0),
        )  # fmt: skip
    return ExperimentStats(key, n, total, squares)


@register("ExperimentQuery")
def run_experiment_query(resolved: ResolvedExperimentQuery, ctx: RunContext) -> dict[str, Any]:
    """PostHog's ``ExperimentQueryResponse`` for the metric: ``baseline`` (control) and ``variant_results``."""
    experiment, metric = resolved.experiment, resolved.query.metric
    end = experiment.end or ctx.now
    p = Params()
    steps = 0
    if metric.metric_type == "mean":
        sql = mean_sql(metric, experiment, p, ctx.project, end, ctx.actions)
    elif metric.metric_type == "ratio":
        sql = ratio_sql(metric, experiment, p, ctx.project, end, ctx.actions)
    else:
        steps = len(metric.series)
        sql = funnel_sql(metric, experiment, p, ctx.project, end, ctx.actions)
    # One-level aggregation by person suits the funnel's replay (see funnels_sql.PERSON_ROWS_SETTINGS).
    settings = PERSON_ROWS_SETTINGS if metric.metric_type == "funnel" else None
    table = ctx.execute(ctx.compile(sql, values=p.values), settings=settings)
    rows = {str(row["variant"]): row for row in table.to_pylist()}
    stats = {key: variant_stats(metric.metric_type, key, rows.get(key), steps) for key in experiment.variants}
    baseline = stats[CONTROL_VARIANT_KEY]
    others = [s for key, s in stats.items() if key != CONTROL_VARIANT_KEY]
    base, results = experiment_results(
        metric.metric_type, baseline, others, stats_config=experiment.stats_config, goal=metric.goal or "increase"
    )
    return {
        "kind": "ExperimentQuery",
        "metric": metric.to_json_dict(),
        "baseline": base.to_posthog(baseline=True),
        "variant_results": [result.to_posthog() for result in results],
    }
