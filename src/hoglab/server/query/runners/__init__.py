"""Query runners: one per query kind, each turning a validated query model into PostHog's answer for it.

Runner modules register themselves (``base.register``) when imported; :func:`load_runners` imports every module
of ``RUNNER_MODULES`` (a new kind is a module and a name here: relative to this package, or a full module path
for runners that live with their domain, like the experiment queries).
"""

from __future__ import annotations

import importlib

from .base import (
    BULK_STATEMENTS,
    RESOLVERS,
    RUNNERS,
    RawAnswer,
    RunContext,
    Runner,
    Timings,
    has_person_overrides,
    register,
    register_bulk,
    register_resolver,
)

__all__ = [
    "BULK_STATEMENTS",
    "RESOLVERS",
    "RUNNERS",
    "RUNNER_MODULES",
    "RawAnswer",
    "RunContext",
    "Runner",
    "Timings",
    "has_person_overrides",
    "load_runners",
    "register",
    "register_bulk",
    "register_resolver",
]

RUNNER_MODULES = (
    "hogql",
    "trends",
    "funnels",
    "funnel_correlation",
    "events",
    "actors",
    "hoglab.server.experiments.metric.runner",
    "hoglab.server.experiments.metric.exposures",
    "hoglab.server.experiments.metric.units",
    "retention",
    "lifecycle",
    "stickiness",
    "paths",
    "groups",
)


def load_runners() -> dict[str, Runner]:
    """Import every runner module; the kind → runner map."""
    for name in RUNNER_MODULES:
        importlib.import_module(name if "." in name else f"{__name__}.{name}")
    return RUNNERS
