"""Helpers for reproducing PostHog's own statistics test cases: PostHog's inputs and expected numbers are data
here, checked with PostHog's tolerances (``assertAlmostEqual(places=k)`` means |a − b| < ½·10⁻ᵏ; ``delta=d``
means |a − b| ≤ d). Where PostHog's number is a Monte Carlo draw, hoglab's deterministic value must lie within
PostHog's stated band; a Monte Carlo mean PostHog asserts to be exactly 0 (no draw lost anything) must be below
``MC_ZERO`` here."""

from __future__ import annotations

MC_ZERO = 1e-5  # a 10,000-draw mean of max(0, ·) that PostHog finds exactly 0: the true value is far below 1e-4


def places(actual: float, expected: float, k: int) -> bool:
    return abs(actual - expected) < 0.5 * 10.0**-k


def near(actual: float, expected: float, delta: float) -> bool:
    return abs(actual - expected) <= delta
