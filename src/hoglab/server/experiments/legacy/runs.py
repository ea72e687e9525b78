"""Running an experiment metric's queries through the insight runners (``run_trends``, ``run_funnels``).

Nothing here counts events itself: the queries of :mod:`.queries` go through the same runners as ``POST /query``,
under the request's :class:`~hoglab.server.query.runners.RunContext` (HogQL team guard, row caps, statement limits,
person merges). A runner's 400 is re-addressed to the legacy field it came from; engine and HogQL failures
become the Query API's errors.

For example (a sketch of a call and its answer, not run)::

    run_trend_metric(ctx, read_metric({"insight": "TRENDS", "events": [{"id": "purchase"}]}), arms, None)
    -> TrendRun(insight=[{"breakdown_value": "control", "count": 120.0, "data": [...], ...}, ...], ...)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hoglab.translate.errors import TranslationFailed

from ...errors import ValidationFailed
from ...query.failures import api_error
from ...query.query_log import logged
from ...query.runners import RunContext
from ...query.runners.funnels import run_funnels
from ...query.runners.trends import run_trends
from .filters import CustomExposure, LegacyMetric
from .queries import Arms, count_query, exposure_query, funnel_query

__all__ = ["FunnelRun", "TrendRun", "run_funnel_metric", "run_trend_metric"]


@dataclass(frozen=True)
class TrendRun:
    """A trend metric's answers: ``insight`` (the metric by variant, as PostHog shows it), ``counts`` (the
    items whose ``count`` is each variant's event count), ``exposures`` (the items of exposed persons)."""

    insight: list[dict[str, Any]]
    counts: list[dict[str, Any]]
    exposures: list[dict[str, Any]]
    filters: dict[str, Any]
    exposure_filters: dict[str, Any]


@dataclass(frozen=True)
class FunnelRun:
    """A funnel metric's answer: one list of steps per breakdown value (every value, variants or not)."""

    steps: list[list[dict[str, Any]]]
    filters: dict[str, Any]


Runner = Callable[[Any, RunContext], Any]


def _run(runner: Runner, query: Any, ctx: RunContext, attr: Callable[[str | None], str]) -> Any:
    try:  # recorded in the project's query_log as the insight query it is
        return logged(ctx.team_id, query, lambda: runner(query, ctx), query_id=ctx.tag)
    except (ValidationFailed, TranslationFailed) as exc:  # a field refused, said as the legacy filter's field
        raise ValidationFailed(exc.detail, attr=attr(exc.attr), code=exc.code) from None
    except Exception as exc:  # engine, HogQL and runner failures: the Query API's answers for them
        raise api_error(exc) from None


def run_trend_metric(ctx: RunContext, metric: LegacyMetric, arms: Arms, custom: CustomExposure | None) -> TrendRun:
    count, filters = count_query(metric, arms)
    exposure, exposure_filters = exposure_query(metric, arms, custom)
    insight = _run(run_trends, count, ctx, metric.field_attr)["results"]
    uses_custom = custom is not None and not metric.per_user_math
    exposure_attr = "parameters__custom_exposure_filter" if uses_custom else metric.attr
    exposed = _run(run_trends, exposure, ctx, lambda _: exposure_attr)["results"]
    if metric.per_user_math:
        # Series 0 counts the metric event, series 1 its unique persons (the exposure).
        counts = [item for item in exposed if item["action"]["order"] == 0]
        exposed = [item for item in exposed if item["action"]["order"] == 1]
    else:
        counts = insight
    return TrendRun(insight, counts, exposed, filters, exposure_filters)


def run_funnel_metric(ctx: RunContext, metric: LegacyMetric, arms: Arms) -> FunnelRun:
    query, filters = funnel_query(metric, arms)
    steps = _run(run_funnels, query, ctx, metric.field_attr)["results"]
    return FunnelRun(list(steps), filters)
