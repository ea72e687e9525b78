"""What every request handler reaches through ``request.app.state.hoglab``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request

from .config import ServerConfig
from .query.cache import QueryCache
from .store import CohortRecord, ExperimentRecord, ProjectRecord, Store

if TYPE_CHECKING:  # types only: http/ reaches the state, so the state does not import http/
    from .engine.base import Engine
    from .http.ratelimit import RateLimiter
    from .query.jobs import QueryJobs

__all__ = [
    "CohortCalculator",
    "EventPropertySampler",
    "ExperimentResultsProvider",
    "ServiceState",
    "StartupHook",
    "get_state",
    "no_event_properties",
]

# (state, project, event names or empty for any event) -> property sets of recent events, at most ~20.
EventPropertySampler = Callable[["ServiceState", ProjectRecord, Sequence[str]], Sequence[Mapping[str, Any]]]
# (state, project, experiment, secondary metric index or None, refresh) -> the results body (JSON bytes, or a
# mapping the router encodes).
ExperimentResultsProvider = Callable[
    ["ServiceState", ProjectRecord, ExperimentRecord, "int | None", bool], "Mapping[str, Any] | bytes"
]
# (state, project, cohort) -> the cohort after computing its membership (count, last_calculation); never raises.
CohortCalculator = Callable[["ServiceState", ProjectRecord, CohortRecord], CohortRecord]
# Runs once the store is open, before the first request (e.g. seeding the demo project's events).
StartupHook = Callable[["ServiceState"], None]


def no_event_properties(
    state: ServiceState, project: ProjectRecord, events: Sequence[str]
) -> Sequence[Mapping[str, Any]]:
    """The sampler until the engine provides one: no events are known, so there are no property sets."""
    return []


@dataclass
class ServiceState:
    """The service's long-lived parts. ``engine`` is ``None`` until an engine is wired in.

    ``query_jobs`` (the async query pool) runs while the app does; ``query_cache`` holds recent query answers.
    The two hooks let the engine and results work plug in without touching the routers:
    ``sample_event_properties`` feeds ``requires_flag_implementation``; ``experiment_results`` answers
    ``results`` and ``secondary_results`` (``create_app`` sets it; while ``None``, those answer a 400
    ``no-results``);
    ``calculate_cohort`` computes a new exposure cohort's members (while ``None``, it is created empty).
    """

    config: ServerConfig
    store: Store
    limiter: RateLimiter
    engine: Engine | None = None
    owns_engine: bool = False
    sample_event_properties: EventPropertySampler = no_event_properties
    experiment_results: ExperimentResultsProvider | None = None
    calculate_cohort: CohortCalculator | None = None
    startup_hooks: tuple[StartupHook, ...] = ()
    query_jobs: QueryJobs | None = None
    query_cache: QueryCache = field(default_factory=QueryCache)
    extras: dict[str, Any] = field(default_factory=dict)


def get_state(request: Request) -> ServiceState:
    """FastAPI dependency: the ``ServiceState`` of the app serving ``request``."""
    state: ServiceState = request.app.state.hoglab
    return state
