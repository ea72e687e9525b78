"""PostHog's "v2" Bayesian experiment statistics (``stats_version: 2``), computed deterministically.

PostHog's v2 modules (``products/experiments/backend/hogql_queries/funnels_statistics_v2.py``,
``trends_statistics_v2_count.py``, ``trends_statistics_v2_continuous.py``; formerly under
``posthog/hogql_queries/experiments/``) draw 10,000 unseeded samples per arm. The same definitions are integrals
and finite sums here (:mod:`hoglab.stats._bayesian.quadrature`, :mod:`.v2_loss`):

* ``probability``: index 0 (the control) is P(control ≥ the best test arm); every test arm's is P(it beats the
  control), pairwise. The decision's gate is the largest of these ≥ 0.9 (``MIN_PROBABILITY_FOR_SIGNIFICANCE``).
* **funnels**: rate ~ Beta(1 + successes, 1 + failures). Any arm with fewer than 100 persons →
  ``not_enough_exposure``; gate failed → ``low_win_probability``; else the expected loss of the arm with the
  highest observed conversion rate against the best of the others, over the **Beta-Binomial** posterior
  predictive of each observed rate (K/n, K ~ BetaBinomial(n, 1 + s, 1 + f)), ≥ 0.01 → ``high_loss``, else
  ``significant``. Credible intervals: Beta quantiles.
* **counts** (events per exposed person): rate ~ Gamma(1 + count, rate = 1 + persons); the same steps, the loss
  over the Gamma posteriors, the best arm by observed rate count/persons.
* **continuous** (means of a property): the log of each arm's mean, log(m + 1e-10), is the data of a
  Normal-Inverse-Gamma model with prior μ0 = 0, κ0 = 1, α0 = 1, β0 = 1 and a fixed log-variance 0.75:
  κn = 1 + n, μn = n·log m / κn, αn = 1 + n/2, βn = 1 + 0.375·n; the log mean is Student-t with 2αn degrees of
  freedom, location μn and scale √(βn / (κn·αn)). The same steps; the best arm is the one with the largest
  *total* (PostHog's ``count`` field holds the sum), the loss is in the metric's units (e^X − 1e-10); credible
  intervals are the central t interval mapped back, floored at 0.

The second value PostHog returns (``expected_loss`` here, and ``p_value``, the field its trends answers carry it
in) is the loss when the loss step ran, else 1.0.

Two older rules PostHog's own tests still exercise are here too:

* :func:`trend_verdict_v2_early` (PostHog's first ``trends_statistics_v2.py``): rate ~ Gamma(1 + count,
  rate = 1 + exposure) with the exposure *relative* to the control, ``probability`` = P(best of all); not enough
  exposure (absolute < 100) → ``not_enough_exposure`` (1.0); best < 0.9 → ``low_win_probability`` (1.0); else
  ``significant`` (0.0). Credible intervals Gamma(1 + count, rate = 1 + absolute exposure).
* :func:`experiment_trends_verdict` (``experiment_trends_statistics.py``): P(best of all) under the same
  relative-exposure Gamma posterior; not enough exposure → (``not_enough_exposure``, 0.0); best > 0.95 (strictly)
  → (``significant``, best), else (``low_win_probability``, best). Credible intervals Gamma(count + 1,
  scale = 1/exposure) at any central ``interval``.

PostHog refuses fewer than one or more than nine test arms (``no_data`` / ``too_much_data``).

>>> v = count_verdict_v2({"control": (1000, 1000), "test": (1100, 1000)})
>>> v.significance_code.value, round(v.probability["test"], 4), round(v.expected_loss, 5)
('significant', 0.9854, 0.00024)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..._bayesian.posteriors import BetaPosterior, GammaPosterior, Posterior, StudentTPosterior
from ..._bayesian.quadrature import chance_to_be_best, chance_to_beat
from ..._errors import PostHogStatsError, StatsInputError
from .v2_loss import betabinomial_loss_against_best, loss_against_best
from .vocabulary import (
    CONTROL_VARIANT_KEY,
    EXPECTED_LOSS_SIGNIFICANCE_LEVEL,
    FF_DISTRIBUTION_THRESHOLD,
    MIN_PROBABILITY_FOR_SIGNIFICANCE,
    SignificanceCode,
    TrendInput,
    _split,
    _trend_variants,
)

__all__ = [
    "PostHogV2Verdict",
    "continuous_verdict_v2",
    "count_verdict_v2",
    "experiment_trends_verdict",
    "funnel_verdict_v2",
    "trend_verdict_v2_early",
]

_LOG_VARIANCE = 0.75
_EPSILON = 1e-10
_BOUNDS = (0.025, 0.975)
_EXPERIMENT_TRENDS_THRESHOLD = 0.95  # experiment_trends_statistics' own, strict (>) threshold


@dataclass(frozen=True)
class PostHogV2Verdict:
    """A v2 answer: each arm's probability, the decision, PostHog's second value and the intervals.

    ``expected_loss`` and ``p_value`` both hold PostHog's second return value (the loss when the loss step ran,
    else 1.0; for :func:`trend_verdict_v2_early` 0.0 when significant; for :func:`experiment_trends_verdict` the
    largest probability, or 0.0 without enough exposure): PostHog's funnel answers carry it as
    ``expected_loss``, its trends answers as ``p_value``.
    """

    probability: dict[str, float]
    significant: bool
    significance_code: SignificanceCode
    expected_loss: float
    p_value: float
    credible_intervals: dict[str, tuple[float, float]]


def _verdict(probability: dict[str, float], code: SignificanceCode, value: float,
             intervals: dict[str, tuple[float, float]]) -> PostHogV2Verdict:  # fmt: skip
    return PostHogV2Verdict(probability, code is SignificanceCode.SIGNIFICANT, code, value, value, intervals)


def _arms(variants: Mapping[str, tuple[float, float]], owner: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    if CONTROL_VARIANT_KEY not in variants:
        raise StatsInputError(f"{owner} needs a {CONTROL_VARIANT_KEY!r} arm")
    keys = [CONTROL_VARIANT_KEY, *(k for k in variants if k != CONTROL_VARIANT_KEY)]
    _check_test_count(len(keys) - 1)
    first, second = (np.array([float(variants[k][i]) for k in keys]) for i in (0, 1))
    if not (np.all(np.isfinite(first)) and np.all(np.isfinite(second))) or np.any(first < 0) or np.any(second < 0):
        raise StatsInputError(f"{owner} takes finite, non-negative numbers for every arm")
    return keys, first, second


def _check_test_count(tests: int) -> None:
    if tests < 1:
        raise PostHogStatsError("Can't calculate experiment results for less than 2 variants", "no_data")
    if tests >= 10:
        raise PostHogStatsError("Can't calculate experiment results for more than 10 variants", "too_much_data")


def _check_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    lower, upper = (float(b) for b in bounds)
    if not 0.0 < lower < upper < 1.0:
        raise StatsInputError(f"credible interval bounds must satisfy 0 < lower < upper < 1, got {bounds!r}")
    return lower, upper


def pairwise_probabilities(posterior: Posterior) -> np.ndarray:
    """PostHog's v2 ``probability``: [P(control ≥ best test arm), P(test_1 > control), ...] (control at 0).

    Examples
    --------
    >>> pairwise_probabilities(BetaPosterior([101, 81, 151], [901, 921, 851])).round(3)
    array([0.   , 0.059, 1.   ])
    """
    beat = chance_to_beat(posterior, control=0)
    beat[0] = chance_to_be_best(posterior)[0]
    return beat


def _decide(probabilities: np.ndarray, exposure: np.ndarray, observed: np.ndarray,
            loss: Callable[[int], float]) -> tuple[SignificanceCode, float]:  # fmt: skip
    if np.any(exposure < FF_DISTRIBUTION_THRESHOLD):
        return SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    if probabilities.max() < MIN_PROBABILITY_FOR_SIGNIFICANCE:
        return SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    value = loss(int(np.argmax(observed)))  # the first of equal maxima, as numpy's argmax in PostHog
    code = SignificanceCode.HIGH_LOSS if value >= EXPECTED_LOSS_SIGNIFICANCE_LEVEL else SignificanceCode.SIGNIFICANT
    return code, value


def _named(keys: list[str], values: np.ndarray) -> dict[str, float]:
    return {k: float(p) for k, p in zip(keys, values, strict=True)}


def funnel_verdict_v2(
    variants: Mapping[str, tuple[float, float]], *, bounds: tuple[float, float] = _BOUNDS
) -> PostHogV2Verdict:
    """PostHog's v2 funnel verdict from ``{key: (successes, failures)}``, deterministic.

    ``bounds`` are the credible intervals' quantiles (PostHog derives them from ``stats_config.bayesian.ci_level``,
    :func:`bayesian_interval_bounds`).

    >>> v = funnel_verdict_v2({"control": (60, 440), "test": (85, 415)})
    >>> v.significance_code.value, round(v.probability["test"], 4), round(v.expected_loss, 5)
    ('significant', 0.9875, 0.00076)
    """
    lower, upper = _check_bounds(bounds)
    keys, successes, failures = _arms(variants, "funnel_verdict_v2")
    posterior = BetaPosterior(successes + 1.0, failures + 1.0)
    probabilities = pairwise_probabilities(posterior)
    totals = successes + failures
    rates = np.divide(successes, totals, out=np.zeros_like(successes), where=totals > 0)
    code, value = _decide(
        probabilities, totals, rates, lambda best: betabinomial_loss_against_best(successes, failures, best)
    )
    lo = special.betaincinv(successes + 1.0, failures + 1.0, lower)
    hi = special.betaincinv(successes + 1.0, failures + 1.0, upper)
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return _verdict(_named(keys, probabilities), code, value, intervals)


def count_verdict_v2(
    variants: Mapping[str, tuple[float, float]], *, bounds: tuple[float, float] = _BOUNDS
) -> PostHogV2Verdict:
    """PostHog's v2 count verdict from ``{key: (count, exposed persons)}``, deterministic."""
    lower, upper = _check_bounds(bounds)
    keys, counts, persons = _arms(variants, "count_verdict_v2")
    shape, rate = counts + 1.0, persons + 1.0
    posterior = GammaPosterior(shape, rate)
    probabilities = pairwise_probabilities(posterior)
    observed = np.divide(counts, persons, out=np.zeros_like(counts), where=persons > 0)
    code, value = _decide(probabilities, persons, observed, lambda best: loss_against_best(posterior, best))
    lo, hi = special.gammaincinv(shape, lower) / rate, special.gammaincinv(shape, upper) / rate
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return _verdict(_named(keys, probabilities), code, value, intervals)


def continuous_posterior_v2(means: np.ndarray, exposures: np.ndarray) -> StudentTPosterior:
    """The Student-t posterior of each arm's log mean in PostHog's v2 continuous model."""
    kappa = 1.0 + exposures
    mu = exposures * np.log(means + _EPSILON) / kappa
    alpha = 1.0 + exposures / 2.0
    beta = 1.0 + 0.5 * exposures * _LOG_VARIANCE
    return StudentTPosterior(mu, np.sqrt(beta / (kappa * alpha)), 2.0 * alpha)


def continuous_verdict_v2(
    variants: Mapping[str, tuple[float, float]], *, bounds: tuple[float, float] = _BOUNDS
) -> PostHogV2Verdict:
    """PostHog's v2 continuous verdict from ``{key: (mean value, exposed persons)}``, deterministic.

    (PostHog's answer carries each arm's total in ``count``; the mean is total / exposure.)
    """
    lower, upper = _check_bounds(bounds)
    keys, means, exposures = _arms(variants, "continuous_verdict_v2")
    posterior = continuous_posterior_v2(means, exposures)
    probabilities = pairwise_probabilities(posterior)
    code, value = _decide(
        probabilities, exposures, means * exposures, lambda best: loss_against_best(posterior, best, log_scale=True)
    )
    half = (1.0 - (upper - lower)) / 2.0  # scipy's t.interval(upper - lower): central, whatever the bounds
    edges = posterior.ppf(np.array([[half, 1.0 - half]]))
    intervals = {
        k: (max(0.0, float(np.exp(a) - _EPSILON)), max(0.0, float(np.exp(b) - _EPSILON)))
        for k, (a, b) in zip(keys, edges, strict=True)
    }
    return _verdict(_named(keys, probabilities), code, value, intervals)


@dataclass(frozen=True)
class _TrendArms:
    keys: list[str]
    counts: np.ndarray
    exposure: np.ndarray  # relative to the control
    absolute: np.ndarray

    @property
    def posterior(self) -> GammaPosterior:
        return GammaPosterior(self.counts + 1.0, self.exposure + 1.0)


def _trend_arms(variants: TrendInput) -> _TrendArms:
    control, tests = _split(_trend_variants(variants))
    _check_test_count(len(tests))
    arms = (control, *tests)
    return _TrendArms([v.key for v in arms], *(np.array([getattr(v, f) for v in arms], dtype=float)
                                               for f in ("count", "exposure", "absolute_exposure")))  # fmt: skip


def trend_verdict_v2_early(variants: TrendInput, *, bounds: tuple[float, float] = _BOUNDS) -> PostHogV2Verdict:
    """PostHog's first v2 trend verdict (``trends_statistics_v2.py``), deterministic.

    Takes what :func:`trend_verdict` takes (``TrendVariant`` rows, or ``{key: (count, absolute exposure)}`` from
    which the exposure relative to the control is derived).

    >>> v = trend_verdict_v2_early({"control": (1000, 10000), "test": (1200, 12000)})
    >>> v.significance_code.value, round(v.probability["test"], 3)
    ('significant', 0.979)
    """
    lower, upper = _check_bounds(bounds)
    arms = _trend_arms(variants)
    keys, counts, absolute = arms.keys, arms.counts, arms.absolute
    best = chance_to_be_best(arms.posterior)
    if np.any(absolute < FF_DISTRIBUTION_THRESHOLD):
        code, value = SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    elif best.max() < MIN_PROBABILITY_FOR_SIGNIFICANCE:
        code, value = SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    else:
        code, value = SignificanceCode.SIGNIFICANT, 0.0
    shape, rate = counts + 1.0, absolute + 1.0
    lo, hi = special.gammaincinv(shape, lower) / rate, special.gammaincinv(shape, upper) / rate
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return _verdict(_named(keys, best), code, value, intervals)


def experiment_trends_verdict(variants: TrendInput, *, interval: float = 0.95) -> PostHogV2Verdict:
    """PostHog's ``experiment_trends_statistics`` verdict, deterministic (see the module docstring).

    >>> v = experiment_trends_verdict([("control", 100, 1.0, 1000), ("test", 150, 1.0, 1000)])
    >>> v.significance_code.value, round(v.p_value, 4)
    ('significant', 0.9992)
    """
    if not 0.0 < interval < 1.0:
        raise StatsInputError(f"interval must be in (0, 1), got {interval!r}")
    arms = _trend_arms(variants)
    keys, counts = arms.keys, arms.counts
    best = chance_to_be_best(arms.posterior)
    if np.any(arms.absolute < FF_DISTRIBUTION_THRESHOLD):
        code, value = SignificanceCode.NOT_ENOUGH_EXPOSURE, 0.0
    else:
        value = float(best.max())
        significant = value > _EXPERIMENT_TRENDS_THRESHOLD
        code = SignificanceCode.SIGNIFICANT if significant else SignificanceCode.LOW_WIN_PROBABILITY
    tail = (1.0 - interval) / 2.0
    scale = 1.0 / arms.exposure  # Gamma(count + 1, scale = 1/exposure): this rule's intervals have no prior
    lo, hi = special.gammaincinv(counts + 1.0, tail) * scale, special.gammaincinv(counts + 1.0, 1.0 - tail) * scale
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return _verdict(_named(keys, best), code, value, intervals)
