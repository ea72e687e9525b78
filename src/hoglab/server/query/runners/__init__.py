"""Query runners: one per query kind, each turning a validated query model into PostHog's answer for it.

Runner modules register themselves (``base.register``) when imported; :func:`load_runners` imports every module
of ``RUNNER_MODULES`` that exists, so the kinds can land one at a time.
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

RUNNER_MODULES = ("hogql", "trends", "funnels", "events", "actors")


def load_runners() -> dict[str, Runner]:
    """Import every runner module that exists; the kind → runner map."""
    for name in RUNNER_MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return RUNNERS
