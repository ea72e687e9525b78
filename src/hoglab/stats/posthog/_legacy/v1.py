"""PostHog-compatible experiment verdicts (legacy "v1" statistics), computed deterministically.

PostHog estimates each probability and the expected loss from 100,000 unseeded random
draws, so the same data give different answers on every call. Here the same definitions
are evaluated as one-dimensional integrals (:mod:`hoglab.stats._bayesian.quadrature`), to ~1e-10, with PostHog's
thresholds and decision order unchanged. :mod:`.v1_monte_carlo` keeps a seeded Monte Carlo
rendering of PostHog's definitions as the reference the tests and the benchmark use.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

from ..._bayesian.posteriors import BetaPosterior, GammaPosterior
from ..._bayesian.quadrature import Grid, chance_to_be_best, pairwise_loss
from ..._errors import StatsInputError
from ..._frequentist.counts import poisson_tails
from ..._statistics import Count
from .vocabulary import (
    EXPECTED_LOSS_SIGNIFICANCE_LEVEL,
    FF_DISTRIBUTION_THRESHOLD,
    MIN_PROBABILITY_FOR_SIGNIFICANCE,
    P_VALUE_SIGNIFICANCE_LEVEL,
    FunnelInput,
    FunnelVariant,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    SignificanceCode,
    TrendInput,
    TrendVariant,
    _check_count,
    _funnel_variants,
    _split,
    _trend_variants,
)

__all__ = ["funnel_verdict", "posthog_funnel_sample_size", "posthog_poisson_p_value", "trend_verdict"]


def funnel_verdict(variants: FunnelInput) -> PostHogFunnelVerdict:
    """PostHog's funnel experiment verdict, deterministic.

    Each arm's conversion rate has the posterior Beta(1 + successes, 1 + failures).
    ``probability`` of a test arm is P(its rate exceeds every other arm's); the control gets
    ``max(0, 1 − Σ test probabilities)``. Then, in PostHog's order: any arm with fewer than
    100 units → ``not_enough_exposure``; neither the control nor the tests together reach
    0.9 → ``low_win_probability``; the expected loss (VWO SmartStats, PostHog's definition:
    best test arm by observed rate against the control, or the control against it when the
    control converts better) ≥ 0.01 → ``high_loss``; otherwise ``significant``. The
    ``expected_loss`` field is 1 for the first two codes, as in PostHog.

    Examples
    --------
    >>> v = funnel_verdict({"control": (60, 440), "test": (85, 415)})
    >>> v.significance_code.value, round(v.probability["test"], 4), round(v.expected_loss, 5)
    ('significant', 0.9875, 0.0001)
    """
    control, tests = _split(_funnel_variants(variants))
    arms = (control, *tests)
    posterior = BetaPosterior.from_counts([v.success_count for v in arms], [v.failure_count for v in arms])
    probabilities = _posthog_probabilities(chance_to_be_best(posterior, Grid.for_posterior(posterior)))

    return _funnel_answer(
        control, tests, probabilities, lambda target, other: pairwise_loss(posterior, target=target, other=other)
    )


def _funnel_answer(
    control: FunnelVariant,
    tests: tuple[FunnelVariant, ...],
    probabilities: list[float],
    expected_loss: Callable[[int, int], float],
) -> PostHogFunnelVerdict:
    """The funnel verdict from the arms' probabilities (control first), whichever way they were computed: here and
    in :mod:`.v1_monte_carlo`."""
    arms = (control, *tests)
    code, loss = _funnel_significance(control, tests, probabilities, expected_loss)
    return PostHogFunnelVerdict(
        probability={v.key: p for v, p in zip(arms, probabilities, strict=True)},
        significant=code is SignificanceCode.SIGNIFICANT,
        significance_code=code,
        expected_loss=loss,
        credible_intervals=_funnel_intervals(arms),
        variants=arms,
    )


def _funnel_significance(
    control: FunnelVariant,
    tests: tuple[FunnelVariant, ...],
    probabilities: list[float],
    expected_loss: Callable[[int, int], float],
) -> tuple[SignificanceCode, float]:
    """PostHog's funnel decision order; ``expected_loss(target, other)`` is E[max(0, other − target)] of the
    arms at those positions (control first), by quadrature here and by draws in :mod:`.v1_monte_carlo`."""
    if any(v.total < FF_DISTRIBUTION_THRESHOLD for v in (*tests, control)):
        return SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    if _low_win_probability(probabilities):
        return SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    rates = [v.success_count / v.total for v in tests]
    best = int(np.argmax(rates)) + 1  # first maximum, like Python's max()
    control_rate = control.success_count / control.total
    loss = expected_loss(best, 0) if rates[best - 1] > control_rate else expected_loss(0, best)
    if loss >= EXPECTED_LOSS_SIGNIFICANCE_LEVEL:
        return SignificanceCode.HIGH_LOSS, loss
    return SignificanceCode.SIGNIFICANT, loss


def trend_verdict(variants: TrendInput) -> PostHogTrendVerdict:
    """PostHog's trend (count) experiment verdict, deterministic.

    Each arm's event rate has the posterior Gamma(count + 1, scale = 1/exposure) with
    ``exposure`` relative to the control; probabilities as in :func:`funnel_verdict`.
    Decision: any arm with ``absolute_exposure`` below 100 → ``not_enough_exposure``;
    low win probability as for funnels; then the exact Poisson p-value of the control
    against the test arm with the largest ``count`` (:func:`posthog_poisson_p_value`)
    ≥ 0.05 → ``high_p_value``; otherwise ``significant``. ``p_value`` is 1 for the first
    two codes. Credible intervals are per exposed unit: Gamma(count + 1, scale =
    1/absolute_exposure) quantiles.

    A mapping ``key -> (count, absolute_exposure)`` is also accepted; relative exposures are
    then computed against the control, as PostHog does.

    Examples
    --------
    >>> v = trend_verdict({"control": (120, 1000), "test": (150, 1020)})
    >>> v.significance_code.value, round(v.probability["test"], 4), round(v.p_value, 4)
    ('high_p_value', 0.9516, 0.1089)
    """
    control, tests = _split(_trend_variants(variants))
    arms = (control, *tests)
    posterior = GammaPosterior(np.array([v.count + 1.0 for v in arms]), np.array([v.exposure for v in arms]))
    return _trend_answer(control, tests, _posthog_probabilities(chance_to_be_best(posterior)))


def _trend_answer(
    control: TrendVariant, tests: tuple[TrendVariant, ...], probabilities: list[float]
) -> PostHogTrendVerdict:
    """The trend verdict from the arms' probabilities (control first), whichever way they were computed: here and
    in :mod:`.v1_monte_carlo`."""
    arms = (control, *tests)
    code, p_value = _trend_significance(control, tests, probabilities)
    return PostHogTrendVerdict(
        probability={v.key: p for v, p in zip(arms, probabilities, strict=True)},
        significant=code is SignificanceCode.SIGNIFICANT,
        significance_code=code,
        p_value=p_value,
        credible_intervals=_trend_intervals(arms),
        variants=arms,
    )


def _trend_significance(
    control: TrendVariant, tests: tuple[TrendVariant, ...], probabilities: list[float]
) -> tuple[SignificanceCode, float]:
    if any(v.absolute_exposure < FF_DISTRIBUTION_THRESHOLD for v in (*tests, control)):
        return SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    if _low_win_probability(probabilities):
        return SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    best = tests[int(np.argmax([v.count for v in tests]))]
    p_value = posthog_poisson_p_value(control.count, control.exposure, best.count, best.exposure)
    if p_value >= P_VALUE_SIGNIFICANCE_LEVEL:
        return SignificanceCode.HIGH_P_VALUE, p_value
    return SignificanceCode.SIGNIFICANT, p_value


def posthog_poisson_p_value(
    control_count: float, control_exposure: float, test_count: float, test_exposure: float
) -> float:
    """PostHog's two-sided exact Poisson p-value, ``min(1, 2·min(P(X ≤ k), P(X ≥ k)))``.

    X ~ Binomial(k_C + k_T, e_T/(e_C + e_T)) and k = ⌈k_T⌉. Integer counts use the
    incomplete-beta tails (exact, any size). PostHog sums the binomial terms with ``lgamma``
    even for fractional counts (property sums), where the terms are not a distribution;
    that sum is reproduced term by term for fractional counts.

    Examples
    --------
    >>> round(posthog_poisson_p_value(120, 1.0, 150, 1.02), 6)
    0.108854
    """
    for name, value in (("control_count", control_count), ("test_count", test_count)):
        _check_count("posthog_poisson_p_value", name, value)
    if not (control_exposure > 0 and test_exposure > 0):
        raise StatsInputError("posthog_poisson_p_value needs positive exposures")
    if float(control_count).is_integer() and float(test_count).is_integer():
        low, high = poisson_tails(Count(control_count, control_exposure), Count(test_count, test_exposure))
        return min(1.0, 2.0 * min(low, high))
    return _fractional_poisson_p_value(control_count, control_exposure, test_count, test_exposure)


def _fractional_poisson_p_value(c_count: float, c_exp: float, t_count: float, t_exp: float) -> float:
    r = t_exp / (c_exp + t_exp)
    n = c_count + t_count
    k = math.ceil(t_count)

    def terms(i: np.ndarray) -> float:
        log_c = special.gammaln(n + 1.0) - special.gammaln(i + 1.0) - special.gammaln(n - i + 1.0)
        with np.errstate(invalid="ignore"):
            log_t = log_c + i * math.log(r) + (n - i) * math.log1p(-r)
        return float(np.exp(log_t).sum())

    low = terms(np.arange(0, k + 1, dtype=float))
    high = terms(np.arange(k, math.ceil(n) + 1, dtype=float))
    return min(1.0, 2.0 * min(low, high))


def posthog_funnel_sample_size(conversion_rate_percent: float, mde_percent: float) -> int:
    """PostHog's rule-of-thumb units per variant: ⌈1600·p·(1 − p/100)/MDE²⌉, p and MDE in %.

    This is 16·σ²/δ² (Lehr's rule: α = 0.05 two-sided, power 0.8); 0 when the MDE is 0.
    :func:`hoglab.stats.sample_size` gives the exact normal-theory answer.

    Examples
    --------
    >>> posthog_funnel_sample_size(20, 30), posthog_funnel_sample_size(20, 1)
    (29, 25600)
    """
    if not mde_percent:
        return 0
    return math.ceil(
        1600.0 * conversion_rate_percent * (1.0 - conversion_rate_percent / 100.0) / mde_percent**2
    )


def _posthog_probabilities(best: np.ndarray) -> list[float]:
    tests = [float(p) for p in best[1:]]
    return [max(0.0, 1.0 - sum(tests)), *tests]


def _low_win_probability(probabilities: list[float]) -> bool:
    return (
        probabilities[0] < MIN_PROBABILITY_FOR_SIGNIFICANCE
        and sum(probabilities[1:]) < MIN_PROBABILITY_FOR_SIGNIFICANCE
    )


def _trend_intervals(arms: tuple[TrendVariant, ...]) -> dict[str, tuple[float, float]]:
    """95% credible intervals per exposed unit: Gamma(count + 1, scale = 1/absolute_exposure) quantiles."""
    shape = np.array([v.count + 1.0 for v in arms])
    scale = 1.0 / np.array([v.absolute_exposure for v in arms])
    lo = special.gammaincinv(shape, 0.025) * scale
    hi = special.gammaincinv(shape, 0.975) * scale
    return {v.key: (float(a), float(b)) for v, a, b in zip(arms, lo, hi, strict=True)}


def _funnel_intervals(arms: tuple[FunnelVariant, ...]) -> dict[str, tuple[float, float]]:
    """95% credible intervals of the conversion rates: Beta(1 + successes, 1 + failures) quantiles."""
    alpha = np.array([1.0 + v.success_count for v in arms])
    beta = np.array([1.0 + v.failure_count for v in arms])
    lo = special.betaincinv(alpha, beta, 0.025)
    hi = special.betaincinv(alpha, beta, 0.975)
    return {v.key: (float(a), float(b)) for v, a, b in zip(arms, lo, hi, strict=True)}
