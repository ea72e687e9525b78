"""``ExperimentQuery``: one metric of a stored experiment, per variant, with PostHog's current statistics.

The query arrives resolved (:mod:`.resolve`: the experiment's flag, variants, dates, exposure criteria, stats
settings and the project's experiment defaults read in before the cache lookup). ``hoglab.translate.metric``
(``query.py``, ``retention.py``) writes the HogQL of the variants' sufficient statistics; :mod:`hoglab.stats.posthog`
turns them into ``baseline`` and ``variant_results`` (frequentist ``p_value``/``confidence_interval``, fixed-horizon or
sequential, or Bayesian ``chance_to_win``/``credible_interval``).

* **CUPED** (``stats_config.cuped``, else the project's default): mean metrics and ordered/strict funnels get the
  pre-exposure covariate's sums (``covariate_sum``, ``covariate_sum_squares``, ``covariate_sum_product``) and
  adjusted statistics; metrics PostHog gives none (retention, unordered funnels, means of a session property)
  silently get none, as in PostHog. Ratio metrics only with hoglab's extension ``stats_config.cuped.ratio: true``
  (:func:`hoglab.stats.posthog.experiment_results`' delta-method ratio CUPED), whose nine pre-exposure sums come
  back in each arm's ``ratio_covariate``.
* **Breakdowns** (``breakdownFilter.breakdowns``, at most three): ``breakdown_results`` has the same statistics
  per value (:func:`hoglab.stats.posthog.experiment_results_by_breakdown`), the top level is every value
  together. ``breakdown_limit`` keeps the values with the most units and sums the rest into
  ``$$_posthog_breakdown_other_$$`` (last); without one, past :data:`MAX_BREAKDOWN_VALUES` values too.

A variant nobody was exposed to answers zeros, the baseline too (PostHog adds missing variants the same way); persons
seen with several variants under ``exclude`` are left out of every variant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from hoglab.schema import AnyExperimentMetric
from hoglab.stats.posthog import (
    ExperimentStats,
    ExperimentVariantResult,
    RatioCovariate,
    experiment_results_by_breakdown,
)
from hoglab.translate.metric.experiment import ResolvedExperiment
from hoglab.translate.metric.query import (
    RATIO_COVARIATE_COLUMNS,
    MetricShape,
    cuped_lookback,
    funnel_sql,
    mean_sql,
    ratio_sql,
)
from hoglab.translate.metric.retention import retention_sql
from hoglab.translate.params import Params

from ...query.runners.base import RunContext, register
from ...query.runners.breakdowns import BREAKDOWN_OTHER
from ...query.runners.funnels_sql import PERSON_ROWS_SETTINGS
from .resolve import ResolvedExperimentQuery, baseline, cuped_days, team_defaults

__all__ = ["MAX_BREAKDOWN_VALUES", "run_experiment_query", "variant_stats"]

MAX_BREAKDOWN_VALUES = 1000
"""Breakdown values kept without a ``breakdown_limit`` (PostHog keeps them all); the rest are summed into Other, so
a property unique per person cannot make one statistical test per person."""


def variant_stats(metric_type: str, key: str, row: Mapping[str, Any] | None, steps: int = 0) -> ExperimentStats:
    """One variant's :class:`ExperimentStats` from its row of the metric's statement (zeros without a row); the
    CUPED covariate's sums when the row has them.

    >>> variant_stats("funnel", "test", {"n": 90, "total": 12, "s1": 40, "s2": 12}, steps=2).step_counts
    (40, 12)
    >>> variant_stats("mean", "control", None).number_of_samples
    0
    >>> variant_stats("mean", "test", {"n": 2, "total": 70, "squares": 2500, "cov": 11, "cov_squares": 61,
    ...                                "cov_product": 390}).covariate_sum_product
    390.0
    """
    row = row or {}
    n = int(row.get("n") or 0)
    total = float(row.get("total") or 0)
    covariate: dict[str, Any] = {}
    if "cov" in row:
        covariate = {"covariate_sum": float(row.get("cov") or 0),
                     "covariate_sum_squares": float(row.get("cov_squares") or 0),
                     "covariate_sum_product": float(row.get("cov_product") or 0)}  # fmt: skip
    if metric_type == "funnel":
        counts = tuple(int(row.get(f"s{j}") or 0) for j in range(1, steps + 1))
        return ExperimentStats(key, n, total, total, step_counts=counts, **covariate)
    squares = float(row.get("squares") or 0)
    if metric_type in ("ratio", "retention"):
        ratio = None
        if RATIO_COVARIATE_COLUMNS[0] in row:
            ratio = RatioCovariate(*(float(row.get(c) or 0) for c in RATIO_COVARIATE_COLUMNS))
        return ExperimentStats(
            key, n, total, squares,
            denominator_sum=float(row.get("denominator_sum") or 0),
            denominator_sum_squares=float(row.get("denominator_squares") or 0),
            numerator_denominator_sum_product=float(row.get("product") or 0),
            ratio_covariate=ratio,
        )  # fmt: skip
    return ExperimentStats(key, n, total, squares, **covariate)


def _shape(metric: AnyExperimentMetric, experiment: ResolvedExperiment) -> MetricShape:
    items = (metric.breakdownFilter.breakdowns or []) if metric.breakdownFilter is not None else []
    breakdowns = tuple((str(item.type or "event"), str(item.property)) for item in items)
    return MetricShape(breakdowns, cuped_lookback(metric, experiment, cuped_days(experiment)))


def _sql(metric: AnyExperimentMetric, resolved: ResolvedExperimentQuery, ctx: RunContext, p: Params,
         shape: MetricShape) -> str:  # fmt: skip
    experiment = resolved.experiment
    end = experiment.end or ctx.now
    actions = ctx.actions  # the project's, for a metric or an exposure that names one
    if metric.metric_type == "mean":
        return mean_sql(metric, experiment, p, ctx.project, end, shape, actions)
    if metric.metric_type == "ratio":
        return ratio_sql(metric, experiment, p, ctx.project, end, shape, actions)
    if metric.metric_type == "retention":
        matured = ctx.now if experiment.only_count_matured_users else None
        return retention_sql(metric, experiment, p, ctx.project, end, shape, matured_before=matured, actions=actions)
    return funnel_sql(metric, experiment, p, ctx.project, end, shape, actions)


def _limited(rows: list[tuple[tuple[str, ...], ExperimentStats]], limit: int | None,
             width: int) -> list[tuple[tuple[str, ...], ExperimentStats]]:  # fmt: skip
    """The rows of the ``limit`` values with the most units (ties by value), the others' as one Other value."""
    units: Counter[tuple[str, ...]] = Counter()
    for value, stats in rows:
        units[value] += stats.number_of_samples
    keep_count = limit if limit is not None else MAX_BREAKDOWN_VALUES
    if len(units) <= keep_count:
        return rows
    kept = {value for value, _ in sorted(units.items(), key=lambda item: (-item[1], item[0]))[:keep_count]}
    other = (BREAKDOWN_OTHER,) * width
    return [(value if value in kept else other, stats) for value, stats in rows]


def _order(value: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    return (BREAKDOWN_OTHER in value, value)


def _answer(result: ExperimentVariantResult, *, baseline: bool = False) -> dict[str, Any]:
    body = result.to_posthog(baseline=baseline)
    covariate = result.stats.ratio_covariate
    if covariate is not None:  # hoglab's ratio CUPED extension: its pre-exposure sums, by name
        body["ratio_covariate"] = dict(zip(RATIO_COVARIATE_COLUMNS, covariate.values(), strict=True))
    return body


def _arms(base: ExperimentVariantResult, others: Iterable[ExperimentVariantResult]) -> dict[str, Any]:
    return {"baseline": _answer(base, baseline=True), "variants": [_answer(r) for r in others]}


@register("ExperimentQuery")
def run_experiment_query(resolved: ResolvedExperimentQuery, ctx: RunContext) -> dict[str, Any]:
    """PostHog's ``ExperimentQueryResponse`` for the metric: ``baseline`` and ``variant_results`` (and
    ``breakdown_results`` with a breakdown)."""
    experiment, metric = resolved.experiment, resolved.query.metric
    shape = _shape(metric, experiment)
    p = Params()
    sql = _sql(metric, resolved, ctx, p, shape)
    # One-level aggregation by person suits the funnel's replay (see funnels_sql.PERSON_ROWS_SETTINGS).
    settings = PERSON_ROWS_SETTINGS if metric.metric_type == "funnel" else None
    table = ctx.execute(ctx.compile(sql, values=p.values), settings=settings).to_pylist()
    steps = len(metric.series) if metric.metric_type == "funnel" else 0
    wanted = set(experiment.variants)
    rows = [
        (tuple(str(row[c]) for c in shape.columns), variant_stats(metric.metric_type, str(row["variant"]), row, steps))
        for row in table
        if str(row["variant"]) in wanted  # $multiple (exclude) belongs to no variant
    ]
    options: dict[str, Any] = {
        "stats_config": experiment.stats_config, "goal": metric.goal or "increase",
        "cuped": shape.lookback_days is not None, "team": team_defaults(experiment.team_config),
    }  # fmt: skip
    baseline_key = baseline(experiment)  # hoglab's compare_to_holdout makes it the holdout arm (resolve.py)
    if not rows:  # nobody exposed yet: every variant answers zeros
        rows = [((), variant_stats(metric.metric_type, baseline_key, None, steps))]
    elif baseline_key not in {stats.key for _, stats in rows}:
        # Nobody exposed to the baseline: it answers zeros, as every variant does (PostHog's _add_missing_variants);
        # a row of the statement with every statistic 0 keeps the others' shape (CUPED sums, ratio covariates).
        zero = dict.fromkeys(table[0], 0)
        rows.append((rows[0][0], variant_stats(metric.metric_type, baseline_key, zero, steps)))
    limit = metric.breakdownFilter.breakdown_limit if metric.breakdownFilter is not None else None
    if shape.columns:
        rows = _limited(rows, limit, len(shape.columns))
    results = experiment_results_by_breakdown(
        metric.metric_type, rows, baseline_key=baseline_key, variant_keys=experiment.variants, **options
    )
    base, others = results.overall
    answer: dict[str, Any] = {
        "kind": "ExperimentQuery",
        "metric": metric.to_json_dict(),
        "baseline": _answer(base, baseline=True),
        "variant_results": [_answer(r) for r in others],
    }
    if shape.columns:
        answer["breakdown_results"] = [
            {"breakdown_value": list(value), **_arms(*results.by_breakdown[value])}
            for value in sorted(results.by_breakdown, key=_order)
        ]
    return answer
