"""Typed warnings attached to results (never strings buried in numeric fields)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["StatsWarning", "WarningKind"]


class WarningKind(StrEnum):
    """What can make a result untrustworthy; values are stable identifiers."""

    SRM = "srm"
    """Observed traffic split differs from the expected split (sample ratio mismatch)."""
    LOW_EXPOSURE = "low_exposure"
    """An arm has fewer units than the minimum (PostHog uses 100)."""
    FEW_EVENTS = "few_events"
    """Fewer than 5 successes or failures (or events): normal approximations are rough."""
    ZERO_VARIANCE = "zero_variance"
    """Both arms have zero variance; the test statistic is undefined."""
    ZERO_BASELINE = "zero_baseline"
    """The control estimate is zero (or negative): relative lift is undefined."""


@dataclass(frozen=True)
class StatsWarning:
    """One warning: its ``kind``, the ``variant`` and ``metric`` it concerns, and a sentence."""

    kind: WarningKind
    message: str
    variant: str | None = None
    metric: str | None = None

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"
