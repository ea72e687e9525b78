"""Seeded Monte Carlo renderings of PostHog's legacy definitions (reference implementations).

PostHog draws 100,000 samples per arm from ``numpy.random.default_rng()`` (unseeded), once
per target arm and again for the expected loss, and counts wins in a Python loop. These
functions keep those definitions and the number of draws, vectorised and with a ``seed``,
so tests can check the deterministic verdicts against them and the benchmark can time them.
"""

from __future__ import annotations

import numpy as np

from .v1 import _funnel_answer, _posthog_probabilities, _trend_answer
from .vocabulary import (
    FunnelInput,
    FunnelVariant,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    TrendInput,
    TrendVariant,
    _funnel_variants,
    _split,
    _trend_variants,
)

__all__ = ["SIMULATIONS", "posthog_monte_carlo_funnel", "posthog_monte_carlo_trend"]

SIMULATIONS = 100_000


def _win_probabilities(draw: np.random.Generator, sample: object, k: int, simulations: int) -> np.ndarray:
    """P(arm i beats every other arm): fresh draws for every target, as PostHog does."""
    wins = np.empty(k)
    for i in range(k):
        samples = sample(draw, simulations)  # type: ignore[operator]
        others = np.delete(samples, i, axis=0).max(axis=0)
        wins[i] = np.count_nonzero(samples[i] > others) / simulations
    return wins


def posthog_monte_carlo_funnel(
    variants: FunnelInput, *, seed: int | None = None, simulations: int = SIMULATIONS
) -> PostHogFunnelVerdict:
    """PostHog's funnel verdict with its Monte Carlo probabilities and loss (seeded).

    Examples
    --------
    >>> v = posthog_monte_carlo_funnel({"control": (60, 440), "test": (85, 415)}, seed=1)
    >>> v.significance_code.value, round(v.probability["test"], 2)
    ('significant', 0.99)
    """
    control, tests = _split(_funnel_variants(variants))
    arms: tuple[FunnelVariant, ...] = (control, *tests)
    a = np.array([v.success_count + 1.0 for v in arms])
    b = np.array([v.failure_count + 1.0 for v in arms])
    rng = np.random.default_rng(seed)

    def sample(draw: np.random.Generator, n: int) -> np.ndarray:
        return draw.beta(a[:, None], b[:, None], size=(len(arms), n))

    probabilities = _posthog_probabilities(_win_probabilities(rng, sample, len(arms), simulations))

    def expected_loss(target: int, other: int) -> float:
        other_draws = rng.beta(a[other], b[other], simulations)  # this order fixes the seeded answer
        target_draws = rng.beta(a[target], b[target], simulations)
        return float(np.maximum(0.0, other_draws - target_draws).mean())

    return _funnel_answer(control, tests, probabilities, expected_loss)


def posthog_monte_carlo_trend(
    variants: TrendInput, *, seed: int | None = None, simulations: int = SIMULATIONS
) -> PostHogTrendVerdict:
    """PostHog's trend verdict with its Monte Carlo probabilities (seeded).

    Examples
    --------
    >>> v = posthog_monte_carlo_trend({"control": (120, 1000), "test": (150, 1020)}, seed=1)
    >>> v.significance_code.value, round(v.probability["test"], 2)
    ('high_p_value', 0.95)
    """
    control, tests = _split(_trend_variants(variants))
    arms: tuple[TrendVariant, ...] = (control, *tests)
    shape = np.array([v.count + 1.0 for v in arms])
    scale = 1.0 / np.array([v.exposure for v in arms])
    rng = np.random.default_rng(seed)

    def sample(draw: np.random.Generator, n: int) -> np.ndarray:
        return draw.gamma(shape[:, None], scale[:, None], size=(len(arms), n))

    probabilities = _posthog_probabilities(_win_probabilities(rng, sample, len(arms), simulations))
    return _trend_answer(control, tests, probabilities)
