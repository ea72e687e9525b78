"""PostHog's "v2" Bayesian experiment statistics (``stats_version: 2``), computed deterministically.

PostHog's v2 modules (``posthog/hogql_queries/experiments/funnels_statistics_v2.py``,
``trends_statistics_v2_count.py``, ``trends_statistics_v2_continuous.py``) draw 10,000 unseeded samples per arm.
The same definitions are integrals, evaluated here by quadrature (:mod:`._bayes`, :mod:`._loss`):

* **funnels**: conversion rate ~ Beta(1 + successes, 1 + failures). ``probability`` of each arm, the control
  included, is P(it is the best). Any arm with fewer than 100 persons → ``not_enough_exposure``; else the
  highest probability ≥ 0.9 → ``significant`` (``p_value`` 0), otherwise ``low_win_probability`` (1). (This v2
  has no expected-loss step.) Credible intervals: Beta quantiles 2.5% and 97.5%.
* **counts** (events per exposed person): rate ~ Gamma(1 + count, rate = 1 + persons). Not enough exposure
  (< 100 persons in any arm), then low win probability as above, then the expected loss of the arm with the
  highest observed rate against the best of the others, E[max(0, max_j λ_j − λ_best)], ≥ 0.01 → ``high_loss``,
  else ``significant``. Credible intervals: Gamma quantiles.
* **continuous** (means of a property): the log of each arm's mean, log(m + 1e-10), is the data of a
  Normal-Inverse-Gamma model with prior μ0 = 0, κ0 = 1, α0 = 1, β0 = 1 and a fixed log-variance 0.75:
  κn = 1 + n, μn = n·log m / κn, αn = 1 + n/2, βn = 1 + 0.375·n; the posterior of the log mean is Student-t with
  2αn degrees of freedom, location μn and scale √(βn / (κn·αn)). Probabilities and the decision as for counts,
  the loss in the metric's own units (e^X − 1e-10); credible intervals are the t interval mapped back, floored
  at 0.

PostHog refuses fewer than one or more than nine test arms (``no_data`` / ``too_much_data``).

>>> v = count_verdict_v2({"control": (1000, 1000), "test": (1100, 1000)})
>>> v.significance_code.value, round(v.probability["test"], 4), round(v.expected_loss, 5)
('significant', 0.9854, 0.00024)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special

from ._bayes import chance_to_be_best
from ._errors import PostHogStatsError, StatsInputError
from ._loss import loss_against_best
from ._posteriors import BetaPosterior, GammaPosterior, Posterior, StudentTPosterior
from ._posthog_types import (
    CONTROL_VARIANT_KEY,
    EXPECTED_LOSS_SIGNIFICANCE_LEVEL,
    FF_DISTRIBUTION_THRESHOLD,
    MIN_PROBABILITY_FOR_SIGNIFICANCE,
    SignificanceCode,
)

__all__ = ["PostHogV2Verdict", "continuous_verdict_v2", "count_verdict_v2", "funnel_verdict_v2"]

_LOG_VARIANCE = 0.75
_EPSILON = 1e-10


@dataclass(frozen=True)
class PostHogV2Verdict:
    """A v2 answer: each arm's chance of being best, the decision, the loss (or p-value) and intervals.

    ``expected_loss`` is 1.0 unless the decision reached the loss step (PostHog's value); funnels have no loss
    step and report ``p_value`` 0.0 when significant, 1.0 otherwise.
    """

    probability: dict[str, float]
    significant: bool
    significance_code: SignificanceCode
    expected_loss: float
    p_value: float
    credible_intervals: dict[str, tuple[float, float]]


def _arms(variants: Mapping[str, tuple[float, float]], owner: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    if CONTROL_VARIANT_KEY not in variants:
        raise StatsInputError(f"{owner} needs a {CONTROL_VARIANT_KEY!r} arm")
    keys = [CONTROL_VARIANT_KEY, *(k for k in variants if k != CONTROL_VARIANT_KEY)]
    tests = len(keys) - 1
    if tests < 1:
        raise PostHogStatsError("Can't calculate experiment results for less than 2 variants", "no_data")
    if tests >= 10:
        raise PostHogStatsError("Can't calculate experiment results for more than 10 variants", "too_much_data")
    first, second = (np.array([float(variants[k][i]) for k in keys]) for i in (0, 1))
    if not (np.all(np.isfinite(first)) and np.all(np.isfinite(second))) or np.any(first < 0) or np.any(second < 0):
        raise StatsInputError(f"{owner} takes finite, non-negative numbers for every arm")
    return keys, first, second


def _decide(keys: list[str], posterior: Posterior, observed: np.ndarray, exposure: np.ndarray, *,
            log_scale: bool = False) -> tuple[dict[str, float], SignificanceCode, float]:  # fmt: skip
    probabilities = chance_to_be_best(posterior)
    probability = {k: float(p) for k, p in zip(keys, probabilities, strict=True)}
    if np.any(exposure < FF_DISTRIBUTION_THRESHOLD):
        return probability, SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    if probabilities.max() < MIN_PROBABILITY_FOR_SIGNIFICANCE:
        return probability, SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    best = int(np.argmax(observed))  # the first of equal maxima, as numpy's argmax in PostHog
    loss = loss_against_best(posterior, best, log_scale=log_scale)
    code = SignificanceCode.HIGH_LOSS if loss >= EXPECTED_LOSS_SIGNIFICANCE_LEVEL else SignificanceCode.SIGNIFICANT
    return probability, code, loss


def funnel_verdict_v2(variants: Mapping[str, tuple[float, float]]) -> PostHogV2Verdict:
    """PostHog's v2 funnel verdict from ``{key: (successes, failures)}``, deterministic.

    >>> v = funnel_verdict_v2({"control": (60, 440), "test": (85, 415)})
    >>> v.significance_code.value, round(v.probability["test"], 4), v.p_value
    ('significant', 0.9875, 0.0)
    """
    keys, successes, failures = _arms(variants, "funnel_verdict_v2")
    posterior = BetaPosterior(successes + 1.0, failures + 1.0)
    probability = {k: float(p) for k, p in zip(keys, chance_to_be_best(posterior), strict=True)}
    if np.any(successes + failures < FF_DISTRIBUTION_THRESHOLD):
        code, p_value = SignificanceCode.NOT_ENOUGH_EXPOSURE, 1.0
    elif max(probability.values()) >= MIN_PROBABILITY_FOR_SIGNIFICANCE:
        code, p_value = SignificanceCode.SIGNIFICANT, 0.0
    else:
        code, p_value = SignificanceCode.LOW_WIN_PROBABILITY, 1.0
    lo = special.betaincinv(successes + 1.0, failures + 1.0, 0.025)
    hi = special.betaincinv(successes + 1.0, failures + 1.0, 0.975)
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return PostHogV2Verdict(probability, code is SignificanceCode.SIGNIFICANT, code, 1.0, p_value, intervals)


def count_verdict_v2(variants: Mapping[str, tuple[float, float]]) -> PostHogV2Verdict:
    """PostHog's v2 count verdict from ``{key: (count, exposed persons)}``, deterministic."""
    keys, counts, persons = _arms(variants, "count_verdict_v2")
    shape, rate = counts + 1.0, persons + 1.0
    posterior = GammaPosterior(shape, rate)
    observed = np.divide(counts, persons, out=np.zeros_like(counts), where=persons > 0)
    probability, code, loss = _decide(keys, posterior, observed, persons)
    lo, hi = special.gammaincinv(shape, 0.025) / rate, special.gammaincinv(shape, 0.975) / rate
    intervals = {k: (float(a), float(b)) for k, a, b in zip(keys, lo, hi, strict=True)}
    return PostHogV2Verdict(probability, code is SignificanceCode.SIGNIFICANT, code, loss, 1.0, intervals)


def continuous_posterior_v2(means: np.ndarray, exposures: np.ndarray) -> StudentTPosterior:
    """The Student-t posterior of each arm's log mean in PostHog's v2 continuous model."""
    kappa = 1.0 + exposures
    mu = exposures * np.log(means + _EPSILON) / kappa
    alpha = 1.0 + exposures / 2.0
    beta = 1.0 + 0.5 * exposures * _LOG_VARIANCE
    return StudentTPosterior(mu, np.sqrt(beta / (kappa * alpha)), 2.0 * alpha)


def continuous_verdict_v2(variants: Mapping[str, tuple[float, float]]) -> PostHogV2Verdict:
    """PostHog's v2 continuous verdict from ``{key: (mean value, exposed persons)}``, deterministic."""
    keys, means, exposures = _arms(variants, "continuous_verdict_v2")
    posterior = continuous_posterior_v2(means, exposures)
    probability, code, loss = _decide(keys, posterior, means, exposures, log_scale=True)
    edges = posterior.ppf(np.array([[0.025, 0.975]]))
    intervals = {
        k: (max(0.0, float(np.exp(a) - _EPSILON)), max(0.0, float(np.exp(b) - _EPSILON)))
        for k, (a, b) in zip(keys, edges, strict=True)
    }
    return PostHogV2Verdict(probability, code is SignificanceCode.SIGNIFICANT, code, loss, 1.0, intervals)
