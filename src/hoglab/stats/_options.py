"""The choices every method shares: metric kinds, methods, corrections, alternatives, and the checks of α.

Literal aliases, so a wrong string is a type error before it is a :class:`~._errors.StatsInputError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ._errors import StatsInputError

__all__ = ["Alternative", "Correction", "Method", "MetricKind", "few"]

MetricKind = Literal["conversion", "count", "mean", "ratio"]
Method = Literal["frequentist", "bayesian", "sequential"]
Correction = Literal["holm", "bh", "bonferroni"]
Alternative = Literal["two-sided", "greater", "less"]

METRIC_KINDS: tuple[MetricKind, ...] = ("conversion", "count", "mean", "ratio")
METHODS: tuple[Method, ...] = ("frequentist", "bayesian", "sequential")
ALTERNATIVES: tuple[Alternative, ...] = ("two-sided", "greater", "less")


def check_alpha(alpha: float) -> float:
    if not 0.0 < float(alpha) < 1.0:
        raise StatsInputError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def check_alternative(alternative: str) -> Alternative:
    if alternative not in ALTERNATIVES:
        raise StatsInputError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    return alternative


def few(labels: Sequence[str], shown: int = 5) -> str:
    """At most ``shown`` labels, then how many more: an error names a few, never thousands.

    >>> few(["a", "b"]), few([str(i) for i in range(9)], 3)
    ("'a', 'b'", "'0', '1', '2' and 6 more")
    """
    head = ", ".join(repr(str(label)) for label in labels[:shown])
    return head if len(labels) <= shown else f"{head} and {len(labels) - shown:,} more"
