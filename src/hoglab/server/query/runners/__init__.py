"""Query runners: one per query kind, each turning a validated query model into PostHog's answer for it.

Runner modules register themselves (``base.register``) when imported; :func:`load_runners` imports every module
of ``RUNNER_MODULES`` (a new kind is a module and a name here).
"""

from __future__ import annotations

import importlib

from .base import RUNNERS, RawAnswer, RunContext, Runner, Timings, has_person_overrides, register

__all__ = [
    "RUNNERS",
    "RUNNER_MODULES",
    "RawAnswer",
    "RunContext",
    "Runner",
    "Timings",
    "has_person_overrides",
    "load_runners",
    "register",
]

RUNNER_MODULES = (
    "hogql",
    "trends",
    "funnels",
    "events",
    "actors",
    "retention",
    "lifecycle",
    "stickiness",
    "paths",
)


def load_runners() -> dict[str, Runner]:
    """Import every runner module; the kind → runner map."""
    for name in RUNNER_MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return RUNNERS
