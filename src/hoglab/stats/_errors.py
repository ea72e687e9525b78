"""Errors raised by :mod:`hoglab.stats`.

Hierarchy (each specific error also inherits the builtin it specialises, so callers
can catch either the hoglab type or the builtin)::

    StatsError
    ├── StatsInputError(ValueError)          bad or inconsistent input data
    │   └── PostHogStatsError                PostHog's own refusals, with its message and code
    └── StatsComputationError(ArithmeticError)  a numerical routine failed to converge
"""

from __future__ import annotations

from hoglab.errors import HoglabError

__all__ = ["PostHogStatsError", "StatsComputationError", "StatsError", "StatsInputError"]


class StatsError(HoglabError):
    """Root of every error raised by :mod:`hoglab.stats`."""


class StatsInputError(StatsError, ValueError):
    """Input data or arguments are invalid (negative counts, unknown control, ...)."""


class PostHogStatsError(StatsInputError):
    """A case PostHog's experiment statistics refuse, with PostHog's message and code.

    ``code`` is the DRF error code PostHog attaches (``"no_data"`` or ``"too_much_data"``),
    so the service can return the same error body.
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class StatsComputationError(StatsError, ArithmeticError):
    """A numerical routine did not reach its tolerance."""
