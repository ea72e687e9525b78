"""``ServiceState.experiment_results``: plan the metric, answer from the cache or compute, wrap as PostHog does.

The answer is ``{"result": {...}, "last_refresh": "<UTC>Z", "is_cached": bool}``; for ``secondary_results`` the
``result`` is ``{"result": {variant: value}, ...the same payload as a primary metric}``.

Caching (PostHog: one hour, in Redis): answers are kept in the service's result cache
(``state.query_cache``) for ``experiment_results_ttl_seconds`` (an hour by default) under a key made of what
the result depends on: the project and its time zone, the experiment, which metric, the metric's filters, the
custom exposure filter, the flag's key and variants, and the start and end dates. Editing any of them asks for a
new key; new events change the engine's data version, which the cache compares on every read (chDB counts its
own writes), so they are seen at once. ``?refresh=<anything>`` recomputes and stores the new answer.

Drafts (no ``start_date``) and experiments starting in the future have no window to count in: they answer
PostHog's no-data 400 (``no-results``, every flag true) without reading the events. A running experiment is
counted up to now, a finished one up to its ``end_date``.

For example (a sketch of a call and its answer, not run)::

    experiment_results(state, project, record, None, False)
    -> b'{"result":{"insight":[...],"probability":{"control":0.03,"test":0.97},...},"last_refresh":"...Z",
          "is_cached":false}'
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from hoglab.translate.budget import CompileBudget

from ...engine.base import EngineError
from ...engine.limits import LimitedEngine, statement_limits
from ...errors import InternalError, ResourceNotFound
from ...query.answers import dumps, join_members
from ...query.cache import cache_key, data_version
from ...query.failures import api_error
from ...query.fairness import FairGate, ProjectBusy
from ...query.jobs import iso, tag_for
from ...query.runners import RunContext, has_person_overrides
from ...store import ExperimentRecord, FlagRecord, ProjectRecord
from ...store.db import utcnow
from .filters import CustomExposure, LegacyMetric, read_custom_exposure, read_metric
from .queries import Arms
from .runs import run_funnel_metric, run_trend_metric
from .verdicts import check_variants, funnel_result, secondary_values, trend_result

if TYPE_CHECKING:
    from ...state import ServiceState

__all__ = ["Plan", "compute", "experiment_results", "plan_for"]


@dataclass(frozen=True)
class Plan:
    """What one results request computes: the metric, its custom exposure, the flag's variants, the cache key."""

    metric: LegacyMetric
    custom: CustomExposure | None
    flag_key: str
    variants: tuple[str, ...]
    secondary: bool
    cache_key: str
    group_type_index: int | None = None


def plan_for(project: ProjectRecord, record: ExperimentRecord, flag: FlagRecord, index: int | None) -> Plan:
    """Read the metric (primary when ``index`` is None) and everything the answer depends on; 400s come here,
    before the cache is consulted."""
    if index is None:
        filters, attr = record.filters, "filters"
    else:
        entry = (record.secondary_metrics or [])[index]
        filters = entry.get("filters") if isinstance(entry, Mapping) else None
        attr = f"secondary_metrics__{index}__filters"
    metric = read_metric(filters, attr)
    custom = None
    raw_custom = (record.parameters or {}).get("custom_exposure_filter")
    if index is None and metric.insight == "TRENDS" and raw_custom:  # PostHog reads it for the primary only
        custom = read_custom_exposure(raw_custom)
    variants = tuple(str(v["key"]) for v in flag.variants if isinstance(v, Mapping) and v.get("key"))
    # The unit the experiment randomises: the metric's group type, else its flag's (PostHog sets it there).
    group = metric.group_type_index
    if group is None:
        flagged = (flag.filters or {}).get("aggregation_group_type_index")
        group = flagged if isinstance(flagged, int) and not isinstance(flagged, bool) and 0 <= flagged <= 4 else None
    depends_on = {
        "experiment": record.id,
        "metric": "primary" if index is None else index,
        "filters": metric.raw,
        "custom_exposure_filter": custom.raw if custom else None,
        "flag": flag.key,
        "variants": variants,
        "start": iso(record.start_date),
        "end": iso(record.end_date),
        "group_type_index": group,
    }
    key = "experiment_" + cache_key(project.id, depends_on, timezone=project.timezone or "UTC")
    return Plan(metric, custom, flag.key, variants, index is not None, key, group)


def compute(ctx: RunContext, plan: Plan, arms: Arms) -> dict[str, Any]:
    """The ``result`` object of the answer, from the events."""
    metric = plan.metric
    if metric.insight == "TRENDS":
        run = run_trend_metric(ctx, metric, arms, plan.custom)
        result = trend_result(run, plan.variants, validate=not plan.secondary)
        insight: list[Any] = run.insight
    else:
        result = funnel_result(run_funnel_metric(ctx, metric, arms), plan.variants, validate=not plan.secondary)
        insight = result["insight"]
    if not plan.secondary:
        return result
    values = secondary_values(insight, plan.variants, funnel=metric.insight == "FUNNELS",
                              per_user_math=metric.per_user_math)  # fmt: skip
    return {"result": values, **result}


def _arms(record: ExperimentRecord, plan: Plan, project: ProjectRecord, now: datetime) -> Arms:
    start = record.start_date
    if start is None or start > now:
        check_variants([], plan.variants, any_rows=False)  # raises: nothing can have been exposed yet
    assert start is not None
    end = record.end_date if record.end_date is not None and record.end_date < now else None
    return Arms(plan.flag_key, plan.variants, start, end, project.timezone or "UTC", plan.group_type_index)


def _wrap(body: bytes, last_refresh: datetime, *, cached: bool) -> bytes:
    return join_members(b'"result":' + body, dumps({"last_refresh": iso(last_refresh), "is_cached": cached})[1:-1])


def experiment_results(
    state: ServiceState, project: ProjectRecord, record: ExperimentRecord, index: int | None, refresh: bool
) -> bytes:
    """The JSON answer of ``results`` (``index`` None) or ``secondary_results?id=index``."""
    engine = state.engine
    if engine is None:
        raise InternalError("The events engine is not running.")
    flag = state.store.flags.get(record.feature_flag_id)
    if flag is None:
        raise ResourceNotFound()
    plan = plan_for(project, record, flag, index)
    cache = state.query_cache
    now = utcnow()
    try:
        version = data_version(engine)
    except EngineError as exc:
        raise api_error(exc) from None
    if not refresh:
        entry = cache.get(plan.cache_key, version=version)
        if entry is not None and entry.age(now) < timedelta(seconds=state.config.experiment_results_ttl_seconds):
            return _wrap(entry.body, entry.last_refresh, cached=True)
    arms = _arms(record, plan, project, now)
    overrides = cache.person_overrides(project.id, version, lambda: has_person_overrides(engine, project.id))
    gate = FairGate.for_engine(engine, state.config)
    # The project's share of the memory budget and of compiling, as for its queries (engine/memory.py).
    view = LimitedEngine(engine, statement_limits(state.config, getattr(engine, "memory", None)),
                         project_id=project.id)  # fmt: skip
    ctx = RunContext(
        project=project,
        engine=view,
        now=now,
        tag=tag_for(project.id, f"experiment-{record.id}-{uuid.uuid4().hex[:12]}"),
        person_overrides=overrides,
        compile_budget=CompileBudget.from_config(state.config),
        compile_slot=partial(gate.compiling, project.id),
    )
    try:  # the project's share of the engine, as for its queries (query/fairness.py)
        with gate.hold(project_id=project.id, key_id=None), view:
            body = dumps(compute(ctx, plan, arms))
    except ProjectBusy as exc:
        raise api_error(exc) from None
    done = utcnow()
    cache.put(plan.cache_key, body, version=version, now=done)
    return _wrap(body, done, cached=False)
